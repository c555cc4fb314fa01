"""Reference gateway stacks through LangChain chat models, one per vendor API (docs/gateways.md).

``ChatOpenAI`` (Chat Completions, and the Responses API with ``use_responses_api=True``), ``ChatAnthropic``,
``ChatBedrockConverse`` and ``ChatGoogleGenerativeAI`` each answer with one ``AIMessage`` (an ``AIMessageChunk`` sum
when streamed). The mapping reads it as a careful team would:

- the vendor's own stop value from ``response_metadata`` (``finish_reason``, ``stop_reason``, ``stopReason``, or
  the Responses ``status`` and ``incomplete_details``) through the vendor adapter's own table;
- the text and refusal content blocks, a Chat refusal in ``additional_kwargs["refusal"]``;
- ``tool_calls`` and ``invalid_tool_calls`` (arguments that did not parse);
- ``usage_metadata``, with its cache and reasoning details;
- the vendor's response id and model from ``response_metadata`` (``AIMessage.id`` is LangChain's own run id).

A content block of a type the mapping does not know makes the turn ``unsupported``, as the raw adapters do. An
output schema is bound as ``with_structured_output(method="json_schema")`` binds it for each model (the provider's
native structured-output parameter), and the ``AIMessage`` is read before any parser. Errors are the vendor SDK's
exceptions (LangChain re-raises them, or raises its own with the SDK's as the cause): their status, body and headers
go through the vendor's error table (``conformance/stacks/gateways/common.py``). Each model turn's ``AIMessage`` is
sent back as LangChain returned it.

Offline: fake keys, ``max_retries=0`` (boto3: one attempt), ``AWS_EC2_METADATA_DISABLED=true`` and explicit AWS
credentials (``ChatBedrockConverse`` builds a second, control-plane client that would otherwise walk the credential
chain). The chat models send through the vendor SDKs' own HTTP clients, which the stacks build from the model's
settings: its rows use the loopback server.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.kit.calls import call_from_json_string, call_from_object
from conformance.kit.task import ModelTurn, Task, ToolResults, TranscriptEntry, UserMessage
from conformance.kit.types import ModelResponse, RetryableError, Unsupported, Usage
from conformance.kit.verdict import ANSWER, Content, Verdict, resolve
from conformance.providers.anthropic_messages.response import STOP_REASONS as ANTHROPIC_STOPS
from conformance.providers.bedrock_converse.response import STOP_REASONS as BEDROCK_STOPS
from conformance.providers.gemini.response import FINISH_REASONS as GEMINI_FINISHES
from conformance.providers.gemini.response import without_candidates
from conformance.providers.openai_chat.response import FINISH_REASONS as CHAT_FINISHES
from conformance.providers.openai_responses.response import INCOMPLETE_REASONS
from conformance.stacks.gateways.common import Memory, raised, sdk_error
from conformance.stacks.stack import Endpoint, Stack, client_for, retry_options
from conformance.stacks.transports import genai_tls, shared_tls

MEMORY = Memory()
# Models LangChain decides nothing from (it picks request features by model family for Bedrock and Gemini): the ids
# a team's configuration would name.
MODELS = {"bedrock-converse": "anthropic.claude-3-5-sonnet-20240620-v1:0", "gemini": "gemini-2.5-flash"}
# Where each chat model keeps the vendor's stop value in `response_metadata`, and the vendor adapter's table.
STOPS: dict[str, tuple[str, Mapping[str, Verdict]]] = {
    "openai-chat": ("finish_reason", CHAT_FINISHES),
    "anthropic-messages": ("stop_reason", ANTHROPIC_STOPS),
    "bedrock-converse": ("stopReason", BEDROCK_STOPS),
    "gemini": ("finish_reason", GEMINI_FINISHES),
}
# Content block types that carry no answer of their own: the tool call blocks LangChain also lists in `tool_calls`,
# reasoning, and the thought signatures it keeps beside them.
IGNORED_BLOCKS = frozenset({"tool_use", "tool_call", "function_call", "thinking", "redacted_thinking", "reasoning",
                            "reasoningContent", "server_tool_use"})
REQUIRES = {
    "openai-chat": ("langchain_openai",), "openai-responses": ("langchain_openai",),
    "anthropic-messages": ("langchain_anthropic",), "bedrock-converse": ("langchain_aws",),
    "gemini": ("langchain_google_genai",),
}


def _chat_model(provider: str, task: Task, endpoint: Endpoint) -> Any:
    """The session's chat model, built on its first turn and kept for the next (``client_for``), as a team keeps the
    chat model it configured instead of building one per call."""
    model, max_tokens = MODELS.get(provider, task.model), task.max_output_tokens
    return client_for(endpoint, lambda endpoint: _configured(provider, model, max_tokens, endpoint))


def _configured(provider: str, model: str, max_tokens: int | None, endpoint: Endpoint) -> Any:
    """The chat model a team would configure, pointed at the replay session."""
    if provider in ("openai-chat", "openai-responses"):
        from langchain_openai import ChatOpenAI  # noqa: PLC0415 - an optional extra
        from openai import DefaultAsyncHttpxClient, DefaultHttpxClient  # noqa: PLC0415

        # The options as a dict: the models' pydantic aliases (max_tokens, api_key as a plain string) are what their
        # documentation shows, and what mypy's view of the constructors does not take.
        options: dict[str, Any] = {
            "model": model, "base_url": endpoint.base_url + "/v1", "api_key": "sk-replay",
            **retry_options(endpoint, {"max_retries": 0}),
            "max_tokens": max_tokens, "stream_usage": True,
            "use_responses_api": provider == "openai-responses",
            # Both clients with the shared TLS context (conformance.stacks.transports.shared_tls).
            "http_client": DefaultHttpxClient(verify=shared_tls()),
            "http_async_client": DefaultAsyncHttpxClient(verify=shared_tls())}
        return ChatOpenAI(**options)
    if provider == "anthropic-messages":
        from langchain_anthropic import ChatAnthropic  # noqa: PLC0415

        options = {"model": model, "base_url": endpoint.base_url, "api_key": "sk-ant-replay",
                   **retry_options(endpoint, {"max_retries": 0}), "max_tokens": max_tokens, "stream_usage": True}
        return ChatAnthropic(**options)
    if provider == "bedrock-converse":
        from langchain_aws import ChatBedrockConverse  # noqa: PLC0415

        options = {"model": model, "endpoint_url": endpoint.base_url, "region_name": "us-east-1",
                   "aws_access_key_id": "replay", "aws_secret_access_key": "replay",
                   "max_tokens": max_tokens, "config": _bedrock_config(endpoint),
                   # Both clients from one boto3 session, as a service shares its session (below).
                   "client": _bedrock_client("bedrock-runtime", endpoint),
                   "bedrock_client": _bedrock_client("bedrock", endpoint)}
        return ChatBedrockConverse(**options)
    from langchain_google_genai import ChatGoogleGenerativeAI  # noqa: PLC0415

    return ChatGoogleGenerativeAI(model=model, google_api_key="replay", base_url=endpoint.base_url,
                                  **retry_options(endpoint, {"max_retries": 0}), max_output_tokens=max_tokens,
                                  client_args=genai_tls()["client_args"])  # the shared TLS context, for both sides


def _bedrock_config(endpoint: Endpoint) -> Any:
    """The botocore configuration the Bedrock chat model is given: one attempt (botocore's default retries for the
    retry lane)."""
    from botocore.config import Config  # noqa: PLC0415

    return Config(**retry_options(endpoint, {"retries": {"total_max_attempts": 1, "mode": "standard"}}))


def _bedrock_client(service: str, endpoint: Endpoint) -> Any:
    """A client of ``service`` at the session's URL with the configuration ``ChatBedrockConverse`` would give its own
    (``_get_effective_config`` in ``langchain_aws/chat_models/bedrock_converse.py``: ours merged with its timeout and
    retry fields, all unset here). Left to build them, the chat model makes a new boto3 ``Session`` per client
    (``create_aws_client`` in ``langchain_aws/utils.py``), whose fresh botocore loader reads and parses the service
    model and endpoint JSON again: two thirds of a Bedrock row's time."""
    from botocore.config import Config  # noqa: PLC0415

    config = _bedrock_config(endpoint).merge(Config(connect_timeout=None, read_timeout=None, retries=None))
    return _boto3_session().client(service, region_name="us-east-1", endpoint_url=endpoint.base_url, config=config)


@functools.cache
def _boto3_session() -> Any:
    """One boto3 session with the replay's credentials for every Bedrock client of this process."""
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # before any client exists
    import boto3  # noqa: PLC0415

    return boto3.Session(aws_access_key_id="replay", aws_secret_access_key="replay")


def _bound(provider: str, chat: Any, task: Task) -> Any:
    """The chat model with the task's tools and output schema bound."""
    if task.tools:
        # Strict function tools for OpenAI, as the raw adapters send them (and as ChatOpenAI needs them beside an
        # output schema: it then calls the SDK's `parse`, which refuses a tool without `strict: true`; `bind_tools`'s
        # own `strict=` leaves a tool given in the OpenAI format as it is).
        strict = {"strict": True} if provider in ("openai-chat", "openai-responses") else {}
        tools = [{"type": "function", "function": {"name": tool.name, "description": tool.description,
                                                   "parameters": dict(tool.parameters), **strict}}
                 for tool in task.tools]
        chat = chat.bind_tools(tools, tool_choice=_tool_choice(provider, task))
    schema = task.output_schema
    if schema is None:
        return chat
    if provider == "gemini":
        return chat.bind(response_mime_type="application/json", response_json_schema=dict(schema))
    if provider == "bedrock-converse":
        return chat.bind(output_config={"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {
            "schema": json.dumps(schema), "name": task.output_schema_name}}}})
    # ChatOpenAI sends it as it is (Responses: as `text.format`); ChatAnthropic as `output_config.format`.
    return chat.bind(response_format={"type": "json_schema", "json_schema": {
        "name": task.output_schema_name, "schema": dict(schema), "strict": True}})


def _tool_choice(provider: str, task: Task) -> str:
    """The task's tool choice in the words ``bind_tools`` takes for this model (a tool's name forces it)."""
    if task.tool_choice == "tool" and task.tool_name:
        return task.tool_name
    if task.tool_choice == "required" and provider not in ("openai-chat", "openai-responses"):
        return "any"
    return task.tool_choice


def _messages(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: PLC0415

    messages: list[Any] = [SystemMessage(task.instructions)] if task.instructions else []
    for entry in transcript:
        if isinstance(entry, UserMessage):
            messages.append(HumanMessage(entry.text))
        elif isinstance(entry, ModelTurn):
            kept = MEMORY.message(endpoint, entry.response)
            messages.append(kept if kept is not None else AIMessage(
                content=getattr(entry.response, "text", None) or "",
                tool_calls=[{"id": call.call_id, "name": call.name, "args": dict(call.parsed_arguments or {})}
                            for call in entry.response.calls]))
        elif isinstance(entry, ToolResults):
            messages += [ToolMessage(json.dumps(dict(result.output), ensure_ascii=False),
                                     tool_call_id=result.call.call_id, status="error" if result.is_error else "success")
                         for result in entry.results]
    return messages


def caller(provider: str) -> Any:
    """The stack's ``call`` for one vendor API behind its LangChain chat model."""

    def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
        """One ``invoke`` (or ``stream``, the chunks summed) of the chat model, mapped to one kind."""
        MEMORY.start(endpoint, transcript)
        runnable = _bound(provider, _chat_model(provider, task, endpoint), task)
        messages = _messages(task, transcript, endpoint)
        message: Any = None
        try:
            if endpoint.stream:
                for chunk in runnable.stream(messages):
                    message = chunk if message is None else message + chunk
            else:
                message = runnable.invoke(messages)
        except Exception as error:  # noqa: BLE001 - the SDK's exception, wrapped or not, is the turn's answer
            return _with_seen(sdk_error(provider, error) or raised(error), message)
        if message is None:
            return RetryableError(raw="stream without a chunk", reason="interrupted")
        return MEMORY.keep(endpoint, _from_message(provider, message, endpoint.stream), message)

    return call


def _with_seen(result: ModelResponse, message: Any) -> ModelResponse:
    """A mid-stream error with the response id and model the chunks before it had given (as the SDK stacks keep
    them)."""
    if message is None:
        return result
    metadata = message.response_metadata
    return dataclasses.replace(result, response_id=_response_id(metadata), model=_model(metadata))


def _response_id(metadata: Mapping[str, Any]) -> str | None:
    value = metadata.get("id")
    return value if isinstance(value, str) and value else None


def _model(metadata: Mapping[str, Any]) -> str | None:
    value = metadata.get("model_name") or metadata.get("model")
    return value if isinstance(value, str) and value else None


def _from_message(provider: str, message: Any, streamed: bool) -> ModelResponse:
    metadata = message.response_metadata
    common: dict[str, Any] = {"response_id": _response_id(metadata), "model": _model(metadata),
                              "usage": _usage(message.usage_metadata)}
    raw, verdict, stop = _stop(provider, metadata)
    blocked = _block_reason(metadata) if provider == "gemini" and stop is None else None
    if blocked is not None:  # a blocked prompt: no candidate, the reason in `prompt_feedback`
        return without_candidates(blocked, common)
    content = _content(message)
    if stop is None and streamed:  # the stream ended before the vendor said why it stopped
        return RetryableError(raw="stream ended without a stop value", reason="interrupted",
                              text="".join(content.texts) or None, **common)
    if verdict is None:
        return Unsupported(raw=raw, raw_type=raw, **common)
    return resolve(verdict, raw, content, common)


def _block_reason(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    """ChatGoogleGenerativeAI's ``prompt_feedback`` (the SDK's enum and snake_case names) in the REST shape the
    Gemini reader takes, or None without a block reason."""
    feedback = metadata.get("prompt_feedback")
    if not isinstance(feedback, Mapping) or feedback.get("block_reason") is None:
        return None
    block = feedback["block_reason"]
    return {"blockReason": str(getattr(block, "value", block)),
            "blockReasonMessage": feedback.get("block_reason_message")}


def _content(message: Any) -> Content:
    """The message's text, refusal and calls; a content block of a type the mapping does not know marks it."""
    content = Content()
    blocks: list[Any] = [message.content] if isinstance(message.content, str) else list(message.content)
    for index, block in enumerate(blocks):
        if isinstance(block, str):
            if block:
                content.texts.append(block)
            continue
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                content.texts.append(block["text"])
        elif kind == "refusal":
            content.mark_refusal(str(block.get("refusal", "")), f"content[{index}].type=refusal")
        elif kind not in IGNORED_BLOCKS:
            content.mark_unknown(str(kind), f"content[{index}].type={kind}")
    refusal = message.additional_kwargs.get("refusal")
    if isinstance(refusal, str) and refusal:
        content.mark_refusal(refusal, "additional_kwargs.refusal")
    for call in message.tool_calls:
        content.calls.append(call_from_object(call.get("id") or "", call["name"], call["args"]))
    for call in getattr(message, "invalid_tool_calls", []):
        content.calls.append(call_from_json_string(call.get("id") or "", call.get("name") or "",
                                                   call.get("args") or ""))
    return content


def _stop(provider: str, metadata: Mapping[str, Any]) -> tuple[str, Verdict | None, Any]:
    """(raw, verdict, the stop value) from ``response_metadata``."""
    if provider == "openai-responses":
        status = metadata.get("status")
        if status == "completed":
            return "status=completed", ANSWER, status
        details = metadata.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        verdict = INCOMPLETE_REASONS.get(reason) if status == "incomplete" and isinstance(reason, str) else None
        return (f"status={status}/{reason}" if status == "incomplete" else f"status={status}"), verdict, status
    key, table = STOPS[provider]
    stop = metadata.get(key)
    return f"{key}={stop}", table.get(stop) if isinstance(stop, str) else None, stop


def _usage(usage: Any) -> Usage | None:
    """``usage_metadata`` (``input_tokens`` counts cache reads and writes) with its cache and reasoning details."""
    if not isinstance(usage, Mapping):
        return None
    raw = json.loads(json.dumps(dict(usage), default=str))
    inputs = raw.get("input_token_details") or {}
    outputs = raw.get("output_token_details") or {}
    return Usage(input_tokens=_int(raw.get("input_tokens")), cached_input_tokens=_int(inputs.get("cache_read")),
                 cache_write_tokens=_int(inputs.get("cache_creation")), output_tokens=_int(raw.get("output_tokens")),
                 reasoning_tokens=_int(outputs.get("reasoning")), total_tokens=_int(raw.get("total_tokens")), raw=raw)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


MODEL_CLASSES = {"openai-chat": "ChatOpenAI", "openai-responses": "ChatOpenAI(use_responses_api=True)",
                 "anthropic-messages": "ChatAnthropic", "bedrock-converse": "ChatBedrockConverse",
                 "gemini": "ChatGoogleGenerativeAI"}
PACKAGES = {"langchain_openai": ("langchain-core", "langchain-openai", "openai"),
            "langchain_anthropic": ("langchain-core", "langchain-anthropic", "anthropic"),
            "langchain_aws": ("langchain-core", "langchain-aws", "boto3"),
            "langchain_google_genai": ("langchain-core", "langchain-google-genai", "google-genai")}


def _stack(provider: str) -> Stack:
    return Stack(id="langchain", provider=provider, call=caller(provider), requires=REQUIRES[provider],
                 packages=PACKAGES[REQUIRES[provider][0]], extra="gateways", in_process=False,
                 description=f"LangChain {MODEL_CLASSES[provider]}, invoke and stream")


STACKS = {provider: _stack(provider) for provider in REQUIRES}
OPENAI_CHAT, OPENAI_RESPONSES = STACKS["openai-chat"], STACKS["openai-responses"]
ANTHROPIC_MESSAGES, GEMINI, BEDROCK_CONVERSE = (STACKS["anthropic-messages"], STACKS["gemini"],
                                                STACKS["bedrock-converse"])
