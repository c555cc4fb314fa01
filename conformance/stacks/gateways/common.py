"""What the gateway stacks share: the gateway's own message per model turn, kept as a team's history keeps it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from conformance.kit.task import ModelTurn, Task, ToolResults, TranscriptEntry, UserMessage
from conformance.kit.types import ModelResponse, RetryableError, Text, Unsupported
from conformance.stacks.stack import Endpoint


class Memory:
    """Per replay session, each response a stack returned and the gateway's own message behind it.

    A team keeps the gateway's message objects in its history and sends them back as they came (with the thinking
    blocks, signatures and provider fields the gateway hides there); the neutral transcript holds the contract's
    responses. This finds the gateway's message of each model turn again, by the response object itself."""

    def __init__(self) -> None:
        self.sessions: dict[str, list[tuple[ModelResponse, Any]]] = {}

    def start(self, endpoint: Endpoint, transcript: Sequence[TranscriptEntry]) -> None:
        """Forget a session's messages when its row starts again (a transcript with no model turn yet)."""
        if not any(isinstance(entry, ModelTurn) for entry in transcript):
            self.sessions[endpoint.base_url] = []

    def keep(self, endpoint: Endpoint, response: ModelResponse, message: Any) -> ModelResponse:
        """Remember the gateway's message behind ``response``; returns ``response``."""
        self.sessions.setdefault(endpoint.base_url, []).append((response, message))
        return response

    def message(self, endpoint: Endpoint, response: ModelResponse) -> Any:
        """The gateway's message behind ``response``, or None when the stack kept none (an error turn). The loop may
        hand back a copy with the parsed answer filled in (``Text.parsed``, for a task with an output schema): that
        copy finds its message too."""
        bare = dataclasses.replace(response, parsed=None) if isinstance(response, Text) else response
        for kept, message in self.sessions.get(endpoint.base_url, []):
            if kept is response or kept == bare:
                return message
        # A turn another route answered (a conversation moved to another vendor mid-way, docs/contract.md,
        # "Switching vendors"): the team's history holds that route's message, found by the response object itself.
        for kept, message in (pair for pairs in self.sessions.values() for pair in pairs):
            if kept is response:
                return message
        return None


def openai_messages(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint,
                    memory: Memory) -> list[dict[str, Any]]:
    """The transcript as OpenAI Chat messages (the shape LiteLLM takes for every vendor): the instructions as the
    system message, each model turn as the gateway returned it, each result as a ``tool`` message."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": task.instructions}] if task.instructions else []
    for entry in transcript:
        if isinstance(entry, UserMessage):
            messages.append({"role": "user", "content": entry.text})
        elif isinstance(entry, ModelTurn):
            kept = memory.message(endpoint, entry.response)
            messages.append(kept if kept is not None else _rebuilt(entry.response))
        elif isinstance(entry, ToolResults):
            messages += [{"role": "tool", "tool_call_id": result.call.call_id,
                          "content": json.dumps(dict(result.output), ensure_ascii=False)} for result in entry.results]
    return messages


def _rebuilt(response: ModelResponse) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": getattr(response, "text", None)}
    if response.calls:
        message["tool_calls"] = [{"id": call.call_id, "type": "function",
                                  "function": {"name": call.name, "arguments": call.arguments}}
                                 for call in response.calls]
    return message


def openai_tools(task: Task) -> dict[str, Any]:
    """The task's tools, tool choice, output schema and token cap as OpenAI Chat parameters."""
    params: dict[str, Any] = {"max_tokens": task.max_output_tokens}
    if task.tools:
        params["tools"] = [{"type": "function", "function": {"name": tool.name, "description": tool.description,
                                                             "parameters": dict(tool.parameters)}}
                           for tool in task.tools]
        params["tool_choice"] = ({"type": "function", "function": {"name": task.tool_name}}
                                 if task.tool_choice == "tool" else task.tool_choice)
    if task.output_schema is not None:
        params["response_format"] = {"type": "json_schema", "json_schema": {
            "name": task.output_schema_name, "schema": dict(task.output_schema), "strict": True}}
    return params


def sdk_error(provider: str, error: BaseException) -> ModelResponse | None:
    """The vendor SDK exception a gateway raised (or wrapped: it is searched along ``__cause__``/``__context__``),
    read as each SDK's own stack reads it — status, error body, response headers — through the vendor's error table;
    None when no SDK exception with a status is in the chain (the caller's own bug, reported as the row's error)."""
    from conformance.engine.registry import builtin_adapters  # noqa: PLC0415 - registry imports the adapters

    classify = builtin_adapters()[provider].classify_error
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not kept for kept in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    # The innermost exception first: the vendor SDK's own, with the response headers a wrapper (pydantic-ai's
    # ModelHTTPError, LangChain's) does not carry.
    for current in reversed(chain):
        if type(current).__name__ == "EventStreamError":  # botocore: an exception frame mid-stream, by member name
            return _bedrock_frame(current)
        read = _status_body_headers(current)
        if read is not None:
            return classify(*read)
        if type(current).__module__.startswith("openai") and hasattr(current, "body"):
            # openai's APIError without a status: an error event inside a 200 stream, its error object in `.body`.
            from conformance.providers.openai_common.errors import classify_stream_error  # noqa: PLC0415

            return classify_stream_error(current.body if isinstance(current.body, dict) else str(current))
    return None


def _status_body_headers(error: BaseException) -> tuple[int, Any, dict[str, str]] | None:
    response = getattr(error, "response", None)
    if isinstance(response, dict) and "Error" in response:  # botocore ClientError / EventStreamError
        details = response.get("Error", {})
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
        return int(status), {"message": details.get("Message")}, {"x-amzn-errortype": str(details.get("Code", ""))}
    headers = {str(name).lower(): str(value) for name, value in dict(getattr(response, "headers", None) or {}).items()}
    status = getattr(error, "status_code", None)  # openai, anthropic
    if isinstance(status, int) and hasattr(error, "body"):
        body = error.body  # openai keeps the envelope's `error` member, anthropic the whole envelope
        if isinstance(body, dict) and "error" not in body and "message" in body:
            body = {"error": body}
        return status, body, headers
    code = getattr(error, "code", None)  # google-genai APIError: the status and the parsed error body
    if isinstance(code, int) and hasattr(error, "details"):
        return code, error.details, headers
    return None


def raised(error: BaseException) -> ModelResponse:
    """A gateway exception that carries no vendor error. A connection that failed or timed out (Python's
    ``ConnectionError``/``TimeoutError``, as langchain-aws raises for a Bedrock stream without ``messageStop``) may
    succeed again: retryable, ``interrupted``. Anything else (a parse failure on a shape the gateway does not know,
    a ``ValueError`` for a stream error event) tells business code nothing of what the wire said, so the turn is
    ``unsupported`` with the exception named as its raw value — never a guess at the kind."""
    first = (str(error).strip().splitlines() or [""])[0][:200]
    raw = f"raised {type(error).__name__}"
    if isinstance(error, (ConnectionError, TimeoutError)):
        return RetryableError(raw=raw, reason="interrupted", message=first or None)
    return Unsupported(raw=raw, raw_type=f"{type(error).__name__}: {first}")


def _bedrock_frame(error: Any) -> ModelResponse:
    """A ConverseStream exception frame as the ``.jsonl`` member line it was, read by the stream assembler (as the
    boto3 stack reads it)."""
    from conformance.providers.bedrock_converse.stream import assemble_stream  # noqa: PLC0415

    details = error.response.get("Error", {})
    member = str(details.get("Code") or "internalServerException")
    return assemble_stream([json.dumps({member: {"message": details.get("Message")}}).encode("utf-8") + b"\n"]).response
