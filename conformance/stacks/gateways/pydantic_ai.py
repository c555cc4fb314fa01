"""Reference gateway stacks through pydantic-ai's direct model requests, one per vendor API (docs/gateways.md).

``pydantic_ai.direct.model_request_sync`` (``model_request_stream_sync`` for a stream, its final response) with
``OpenAIChatModel``, ``OpenAIResponsesModel``, ``AnthropicModel``, ``GoogleModel`` and ``BedrockConverseModel``,
each over a vendor SDK client the stack builds (fake key, the session's base URL, retries off). Each answers with a
``pydantic_ai.messages.ModelResponse``; the mapping reads it as a careful team would:

- the vendor's own stop value, kept in ``provider_details["finish_reason"]``, through the vendor adapter's table
  (never the normalized ``finish_reason``: it says ``stop`` for a Responses tool call, ``None`` for ``pause_turn``);
- ``TextPart`` text, a refusal in ``provider_details["refusal"]``, ``ToolCallPart`` calls (their arguments as sent);
- ``usage`` (``RequestUsage``: ``input_tokens`` counts cache reads and writes), ``provider_response_id``,
  ``model_name``.

A part of a kind the mapping does not know makes the turn ``unsupported``. Errors are pydantic-ai's
``ModelHTTPError`` with the vendor SDK's exception as its cause: status, body and headers go through the vendor's
error table (``conformance/stacks/gateways/common.py``). Each model turn's ``ModelResponse`` is sent back as pydantic-ai
returned it. The task's tools, tool choice, output schema (``output_mode="native"``) and token cap go in as
``ModelRequestParameters`` and ``ModelSettings``, so nothing is left to an agent's defaults.
"""

from __future__ import annotations

import dataclasses
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
from conformance.stacks.stack import Endpoint, Stack, retry_options
from conformance.stacks.transports import genai_tls, shared_tls

MEMORY = Memory()
# pydantic-ai decides from the model's name what it may send (its model profiles: native structured output, tool
# and output-schema together on Gemini, `max_completion_tokens` for OpenAI reasoning models). The stack names the
# models the fixtures answered with, as a team's configuration would; the Bedrock id is one its profiles know.
MODELS = {"openai-chat": "gpt-5.5", "openai-responses": "gpt-5.5", "anthropic-messages": "claude-sonnet-5",
          "gemini": "gemini-3.5-flash", "bedrock-converse": "anthropic.claude-sonnet-4-5-20250929-v1:0"}
# The vendor adapter's table for the raw stop value pydantic-ai keeps in provider_details["finish_reason"].
STOPS: dict[str, Mapping[str, Verdict]] = {
    "openai-chat": CHAT_FINISHES, "anthropic-messages": ANTHROPIC_STOPS, "bedrock-converse": BEDROCK_STOPS,
    "gemini": GEMINI_FINISHES}
# Parts that carry no answer of their own: reasoning, and the hosted tools the server already ran.
IGNORED_PARTS = frozenset({"thinking", "builtin-tool-call", "builtin-tool-return", "native-tool-call",
                           "native-tool-return"})


def _model(provider: str, task: Task, endpoint: Endpoint) -> Any:
    """The pydantic-ai model over a vendor SDK client pointed at the replay session, retries off."""
    name = MODELS.get(provider, task.model)
    if provider in ("openai-chat", "openai-responses"):
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient  # noqa: PLC0415 - optional extras
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # noqa: PLC0415
        from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

        openai_client = AsyncOpenAI(base_url=endpoint.base_url + "/v1", api_key="sk-replay",
                                    **retry_options(endpoint, {"max_retries": 0}),
                                    http_client=DefaultAsyncHttpxClient(verify=shared_tls()))
        model_class = OpenAIChatModel if provider == "openai-chat" else OpenAIResponsesModel
        return model_class(name, provider=OpenAIProvider(openai_client=openai_client))
    if provider == "anthropic-messages":
        from anthropic import AsyncAnthropic  # noqa: PLC0415
        from anthropic import DefaultAsyncHttpxClient as AnthropicHttpxClient  # noqa: PLC0415
        from pydantic_ai.models.anthropic import AnthropicModel  # noqa: PLC0415
        from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: PLC0415

        anthropic_client = AsyncAnthropic(base_url=endpoint.base_url, api_key="sk-ant-replay",
                                          **retry_options(endpoint, {"max_retries": 0}),
                                          http_client=AnthropicHttpxClient(verify=shared_tls()))
        return AnthropicModel(name, provider=AnthropicProvider(anthropic_client=anthropic_client))
    if provider == "bedrock-converse":
        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        import boto3  # noqa: PLC0415
        from botocore.config import Config  # noqa: PLC0415
        from pydantic_ai.models.bedrock import BedrockConverseModel  # noqa: PLC0415
        from pydantic_ai.providers.bedrock import BedrockProvider  # noqa: PLC0415

        bedrock_client = boto3.client("bedrock-runtime", endpoint_url=endpoint.base_url, region_name="us-east-1",
                              aws_access_key_id="replay", aws_secret_access_key="replay",
                              config=Config(**retry_options(
                                  endpoint, {"retries": {"total_max_attempts": 1, "mode": "standard"}})))
        return BedrockConverseModel(name, provider=BedrockProvider(bedrock_client=bedrock_client))
    from google import genai  # noqa: PLC0415
    from pydantic_ai.models.google import GoogleModel  # noqa: PLC0415
    from pydantic_ai.providers.google import GoogleProvider  # noqa: PLC0415

    tls = genai_tls()
    google_client = genai.Client(api_key="replay", http_options=genai.types.HttpOptions(
        base_url=endpoint.base_url, api_version="v1beta", client_args=tls["client_args"],
        async_client_args=tls["async_client_args"]))
    return GoogleModel(name, provider=GoogleProvider(client=google_client))


def _parameters(task: Task, model: Any) -> tuple[Any, dict[str, Any]]:
    """The task as ``ModelRequestParameters`` (tools, output schema) and ``ModelSettings`` (token cap, tool
    choice). An output schema goes as the vendor's native structured output where the model's profile allows it
    (``output_mode="native"``), else as pydantic-ai's default for an agent's structured output: an output tool the
    model must call (``output_mode="tool"``), whose arguments are the answer."""
    from pydantic_ai.models import ModelRequestParameters  # noqa: PLC0415
    from pydantic_ai.output import OutputObjectDefinition  # noqa: PLC0415
    from pydantic_ai.tools import ToolDefinition  # noqa: PLC0415

    tools = [ToolDefinition(name=tool.name, description=tool.description,
                            parameters_json_schema=dict(tool.parameters), strict=True) for tool in task.tools]
    output: dict[str, Any] = {}
    if task.output_schema is not None and _native_output(model, bool(tools)):
        output = {"output_mode": "native", "output_object": OutputObjectDefinition(
            json_schema=dict(task.output_schema), name=task.output_schema_name, strict=True)}
    elif task.output_schema is not None:
        output = {"output_mode": "tool", "allow_text_output": False, "output_tools": [ToolDefinition(
            name=task.output_schema_name, parameters_json_schema=dict(task.output_schema), kind="output",
            description="The final answer.")]}
    settings: dict[str, Any] = {"max_tokens": task.max_output_tokens}
    if task.tools:
        # A list of names forces a call to one of them; the scalars are the vendors' own words.
        settings["tool_choice"] = [task.tool_name] if task.tool_choice == "tool" and task.tool_name \
            else task.tool_choice
    return ModelRequestParameters(function_tools=tools, **output), settings


def _native_output(model: Any, with_tools: bool) -> bool:
    profile = model.profile
    if not profile.get("supports_json_schema_output", False):
        return False
    return not with_tools or profile.get("google_supports_tool_combination", True)


def _messages(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> list[Any]:
    from pydantic_ai.messages import (  # noqa: PLC0415
        ModelRequest,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.messages import ModelResponse as PydanticResponse  # noqa: PLC0415

    messages: list[Any] = []
    system = [SystemPromptPart(content=task.instructions)] if task.instructions else []
    for entry in transcript:
        if isinstance(entry, UserMessage):
            messages.append(ModelRequest(parts=[*system, UserPromptPart(content=entry.text)]))
            system = []
        elif isinstance(entry, ModelTurn):
            kept = MEMORY.message(endpoint, entry.response)
            text = getattr(entry.response, "text", None)
            messages.append(kept if kept is not None else PydanticResponse(parts=[
                *([TextPart(content=text)] if text else []),
                *(ToolCallPart(tool_name=call.name, args=call.arguments, tool_call_id=call.call_id)
                  for call in entry.response.calls)]))
        elif isinstance(entry, ToolResults):
            messages.append(ModelRequest(parts=[
                ToolReturnPart(tool_name=result.call.name, content=dict(result.output),
                               tool_call_id=result.call.call_id) for result in entry.results]))
    return messages


def caller(provider: str) -> Any:
    """The stack's ``call`` for one vendor API behind pydantic-ai."""

    def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
        """One direct model request (streamed: its final response), mapped to one kind."""
        from pydantic_ai import direct  # noqa: PLC0415 - an optional extra

        MEMORY.start(endpoint, transcript)
        model = _model(provider, task, endpoint)
        parameters, settings = _parameters(task, model)
        messages = _messages(task, transcript, endpoint)
        response: Any = None
        try:
            if endpoint.stream:
                with direct.model_request_stream_sync(model, messages, model_settings=settings,  # type: ignore[arg-type]
                                                      model_request_parameters=parameters) as stream:
                    for _event in stream:
                        pass
                    response = stream.response
            else:
                response = direct.model_request_sync(model, messages, model_settings=settings,  # type: ignore[arg-type]
                                                     model_request_parameters=parameters)
        except Exception as error:  # noqa: BLE001 - the SDK's exception, wrapped or not, is the turn's answer
            return sdk_error(provider, error) or raised(error)
        outputs = {tool.name for tool in parameters.output_tools}
        return MEMORY.keep(endpoint, _from_response(provider, response, endpoint.stream, outputs), response)

    return call


def _from_response(provider: str, response: Any, streamed: bool, outputs: set[str]) -> ModelResponse:
    details = response.provider_details or {}
    common: dict[str, Any] = {"response_id": response.provider_response_id or None,
                              "model": response.model_name or None, "usage": _usage(response.usage)}
    stop = vendor_stop(response)
    content = _content(response.parts, outputs)
    block = details.get("block_reason") if provider == "gemini" else None
    if isinstance(block, str) and block:  # a blocked prompt: no candidate, the reason kept beside
        return without_candidates({"blockReason": block}, common)
    refusal = details.get("refusal")
    if isinstance(refusal, str) and refusal:  # OpenAI: the refusal text replaces the raw finish reason
        content.mark_refusal(refusal, "provider_details.refusal")
        if stop is None:
            return resolve(ANSWER, "provider_details.refusal", content, common)
    if stop is None and streamed:  # the stream ended before the vendor said why it stopped
        return RetryableError(raw="stream ended without a stop value", reason="interrupted",
                              text="".join(content.texts) or None, **common)
    raw = f"provider_details.finish_reason={stop}"
    if provider == "openai-responses" and isinstance(stop, str) and stop in INCOMPLETE_REASONS:
        raw = f"status=incomplete/{stop}"  # an incomplete reason is all pydantic-ai keeps; it says the status
    verdict = _verdict(provider, stop)
    if verdict is None:
        return Unsupported(raw=raw, raw_type=raw, **common)
    return resolve(verdict, raw, content, common)


def vendor_stop(response: Any) -> Any:
    """The vendor's own stop value, which pydantic-ai keeps in ``provider_details["finish_reason"]`` (for Responses:
    the status, or the incomplete reason)."""
    return (response.provider_details or {}).get("finish_reason")


def _verdict(provider: str, stop: Any) -> Verdict | None:
    if not isinstance(stop, str):
        return None
    if provider != "openai-responses":
        return STOPS[provider].get(stop)
    # Responses: `completed`, or the reason an incomplete response gives (incomplete_details.reason).
    return ANSWER if stop == "completed" else INCOMPLETE_REASONS.get(stop)


def _content(parts: Sequence[Any], outputs: set[str]) -> Content:
    """The parts' text and calls; a call to an output tool is the answer, its arguments the answer's text."""
    content = Content()
    for index, part in enumerate(parts):
        kind = getattr(part, "part_kind", type(part).__name__)
        if kind == "text":
            if part.content:
                content.texts.append(part.content)
        elif kind == "tool-call" and part.tool_name in outputs:
            content.texts.append(part.args if isinstance(part.args, str) else json.dumps(part.args))
        elif kind == "tool-call":
            args = part.args
            content.calls.append(call_from_object(part.tool_call_id, part.tool_name, args) if isinstance(args, dict)
                                 else call_from_json_string(part.tool_call_id, part.tool_name, args or ""))
        elif kind not in IGNORED_PARTS:
            content.mark_unknown(str(kind), f"parts[{index}].part_kind={kind}")
    return content


def _usage(usage: Any) -> Usage | None:
    """``RequestUsage``'s typed counts (``input_tokens`` counts cache reads and writes; a count the vendor did not
    send reads 0 there); the vendor's own counts are kept in ``details``."""
    if usage is None:
        return None
    raw = json.loads(json.dumps(dataclasses.asdict(usage), default=str))
    return Usage(input_tokens=usage.input_tokens, cached_input_tokens=usage.cache_read_tokens,
                 cache_write_tokens=usage.cache_write_tokens, output_tokens=usage.output_tokens,
                 reasoning_tokens=usage.output_reasoning_tokens, total_tokens=usage.total_tokens, raw=raw)


MODEL_CLASSES = {"openai-chat": "OpenAIChatModel", "openai-responses": "OpenAIResponsesModel",
                 "anthropic-messages": "AnthropicModel", "bedrock-converse": "BedrockConverseModel",
                 "gemini": "GoogleModel"}
SDKS = {"openai-chat": "openai", "openai-responses": "openai", "anthropic-messages": "anthropic",
        "bedrock-converse": "boto3", "gemini": "google.genai"}


def _stack(provider: str) -> Stack:
    sdk = SDKS[provider]
    return Stack(id="pydantic-ai", provider=provider, call=caller(provider), requires=("pydantic_ai", sdk),
                 packages=("pydantic-ai-slim", sdk.replace(".", "-")), extra="gateways", in_process=False,
                 description=f"pydantic-ai {MODEL_CLASSES[provider]}, direct.model_request_sync and "
                             "model_request_stream_sync")


STACKS = {provider: _stack(provider) for provider in MODEL_CLASSES}
OPENAI_CHAT, OPENAI_RESPONSES = STACKS["openai-chat"], STACKS["openai-responses"]
ANTHROPIC_MESSAGES, GEMINI, BEDROCK_CONVERSE = (STACKS["anthropic-messages"], STACKS["gemini"],
                                                STACKS["bedrock-converse"])
