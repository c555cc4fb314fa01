"""Reference gateway stacks through LiteLLM's ``litellm.completion``, one per vendor API (docs/gateways.md).

LiteLLM answers every vendor with one OpenAI-Chat-shaped ``ModelResponse``. The mapping reads it as a careful team
would: the vendor's own stop value where LiteLLM keeps it (``message.provider_specific_fields["stop_reason"]`` for
Anthropic refusals and paused turns), else ``choices[0].finish_reason`` through the Chat table; the message's
text, ``refusal`` and ``tool_calls``; the usage object, cache creation included. Errors arrive as LiteLLM's
exception classes (subclasses of the openai SDK's): their ``status_code``, the vendor's error body LiteLLM keeps in
the message, and ``litellm_response_headers`` go through the vendor's own error table. The gateway's message of each
turn is sent back as LiteLLM returned it (``conformance/stacks/gateways/common.py``).

Offline (../docs/gateways.md): ``LITELLM_OFFLINE_MODE=true`` before the import (it would fetch its model cost map),
fake keys, ``max_retries=0``/``num_retries=0``, ``AWS_EC2_METADATA_DISABLED=true``. LiteLLM sends through its own
httpx client (and the openai SDK's for OpenAI routes), which the in-process seam does not reach: its rows always use
the loopback server.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from collections.abc import Sequence
from typing import Any

from conformance.engine.registry import builtin_adapters
from conformance.kit.calls import call_from_json_string
from conformance.kit.task import Task, TranscriptEntry
from conformance.kit.types import ModelResponse, RetryableError, Unsupported, Usage
from conformance.kit.usage import count
from conformance.kit.verdict import Content, resolve
from conformance.providers.anthropic_messages.response import STOP_REASONS
from conformance.providers.gemini.response import FINISH_REASONS as GEMINI_FINISH_REASONS
from conformance.providers.openai_chat.response import FINISH_REASONS
from conformance.stacks.gateways.common import Memory, openai_messages, openai_tools
from conformance.stacks.stack import Endpoint, Stack, retry_options

# provider → (LiteLLM model prefix, what LiteLLM's api_base needs after the session root)
ROUTES = {
    "openai-chat": ("openai/", "/v1"),
    "openai-responses": ("openai/responses/", "/v1"),
    "anthropic-messages": ("anthropic/", ""),
    "gemini": ("gemini/", "/v1beta"),  # LiteLLM appends /models/...; the version must be in the base
    "bedrock-converse": ("bedrock/converse/", ""),
}
# LiteLLM decides from the model id what a model takes: it refuses `tools` for a Bedrock id it does not know
# (`litellm.UnsupportedParamsError`) and sends the system message of an unknown Gemini model as a user message. The
# stack names models LiteLLM's bundled model map knows, as a team's configuration would.
MODELS = {"bedrock-converse": "anthropic.claude-3-5-sonnet-20240620-v1:0", "gemini": "gemini-2.5-flash"}
MEMORY = Memory()
# Where LiteLLM keeps each vendor's own stop value, and the vendor adapter's table that reads it.
VENDOR_STOPS = {"anthropic-messages": ("provider_specific_fields.stop_reason", STOP_REASONS),
                "gemini": ("provider_specific_fields.native_finish_reason", GEMINI_FINISH_REASONS)}


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")  # else the import fetches the model cost map
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the same switch in releases before it
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    import litellm  # noqa: PLC0415 - an optional extra

    # Its "Provider List: ..." banner on every exception, and a warning per unmapped finish reason, would bury the
    # run's own output; what LiteLLM did with each value is what the findings report.
    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    return litellm


def close_abandoned_streams(error: BaseException) -> None:
    """Close the HTTP response a LiteLLM stream that raised ``error`` left open. Its Bedrock route reads the event
    stream through a generator over httpx's ``Response.iter_bytes``; when the stream ends in an exception event, the
    response is never closed and stays reachable only from the exception's traceback, in a reference cycle. The
    cyclic garbage collector would close it whenever it next runs, which can be inside the next request while that
    request holds httpcore's connection-pool lock: closing the stream takes the same lock, which is not re-entrant,
    and the process hangs (``httpcore/_sync/connection_pool.py``, ``PoolByteStream.close``). Closed here, between two
    requests, no lock is held: every response a frame of the error's traceback (or of its causes') holds, directly
    or as the generator reading it."""
    import httpx  # noqa: PLC0415 - LiteLLM's own HTTP client

    seen: set[int] = set()
    chain: BaseException | None = error
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        trace = chain.__traceback__
        while trace is not None:
            for value in list(trace.tb_frame.f_locals.values()):
                frame = getattr(value, "gi_frame", None)
                owner = frame.f_locals.get("self") if frame is not None else value
                if isinstance(owner, httpx.Response) and not owner.is_closed:
                    owner.close()
            trace = trace.tb_next
        chain = chain.__cause__ or chain.__context__


def caller(provider: str) -> Any:
    """The stack's ``call`` for one vendor API behind LiteLLM."""
    prefix, suffix = ROUTES[provider]
    classify_error = builtin_adapters()[provider].classify_error

    def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
        """One ``litellm.completion`` call, mapped to one kind."""
        litellm = _litellm()
        import openai  # noqa: PLC0415 - LiteLLM's exceptions subclass the openai SDK's

        MEMORY.start(endpoint, transcript)
        model = MODELS.get(provider, task.model)
        params: dict[str, Any] = {
            "model": prefix + model, "messages": openai_messages(task, transcript, endpoint, MEMORY),
            "api_base": endpoint.base_url + suffix, "api_key": "sk-replay",
            **retry_options(endpoint, {"max_retries": 0, "num_retries": 0}),
            **openai_tools(task)}
        if provider == "bedrock-converse":
            params.update(aws_access_key_id="replay", aws_secret_access_key="replay", aws_region_name="us-east-1")
        seen: dict[str, Any] = {}
        try:
            if endpoint.stream:
                chunks = []
                for chunk in litellm.completion(**params, stream=True, stream_options={"include_usage": True}):
                    seen.setdefault("id", chunk.id)
                    seen.setdefault("model", chunk.model)
                    chunks.append(chunk)
                response = litellm.stream_chunk_builder(chunks, messages=params["messages"])
            else:
                response = litellm.completion(**params)
        except openai.APIError as error:
            if endpoint.stream:
                close_abandoned_streams(error)
            return _from_error(error, classify_error, seen)
        if response is None:  # a stream that gave no chunk: stream_chunk_builder has nothing to build
            return RetryableError(raw="stream without a chunk", reason="interrupted")
        return _from_response(provider, response, endpoint)

    return call


def _from_response(provider: str, response: Any, endpoint: Endpoint) -> ModelResponse:
    usage = getattr(response, "usage", None)
    common: dict[str, Any] = {"response_id": response.id, "model": response.model, "usage": _usage(usage)}
    cost = reported_cost(response)
    if cost is not None:  # checked against the price table by the report (docs/cost.md)
        common["provider_details"] = {"reported_cost": {"litellm response_cost": cost}}
    if not response.choices:
        return Unsupported(raw="choices", raw_type="a response without choices[0]", **common)
    choice = response.choices[0]
    message = choice.message
    stop = vendor_stop(provider, choice)
    if stop is not None:  # the vendor's own value, where LiteLLM keeps it
        where, table = VENDOR_STOPS[provider]
        raw, verdict = f"{where}={stop}", table.get(stop)
    else:
        raw, verdict = f"finish_reason={choice.finish_reason}", FINISH_REASONS.get(str(choice.finish_reason))
    if verdict is None:
        return Unsupported(raw=raw, raw_type=raw, **common)
    content = Content()
    if isinstance(message.content, str) and message.content:
        content.texts.append(message.content)
    refusal = getattr(message, "refusal", None)
    if isinstance(refusal, str) and refusal:
        content.mark_refusal(refusal, "message.refusal")
    for index, tool_call in enumerate(message.tool_calls or []):
        if tool_call.type != "function":
            content.mark_unknown(f"tool call type {tool_call.type}", f"tool_calls[{index}].type={tool_call.type}")
            break
        content.calls.append(call_from_json_string(tool_call.id, tool_call.function.name,
                                                   tool_call.function.arguments))
    result = resolve(verdict, raw, content, common)
    return MEMORY.keep(endpoint, result, message.model_dump(exclude_none=True, warnings=False))


def reported_cost(response: Any) -> float | None:
    """What LiteLLM says the call cost: ``response._hidden_params["response_cost"]``, which ``completion`` sets on
    a body; None when it sets none (a stream built by ``stream_chunk_builder``, a model it does not price).
    ``litellm.completion_cost`` is not called: for some models it counts tokens with a tokenizer it downloads."""
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def vendor_stop(provider: str, choice: Any) -> str | None:
    """The vendor's own stop value where LiteLLM keeps it: Anthropic's ``stop_reason`` in the message's
    ``provider_specific_fields`` (for ``refusal``, ``pause_turn``), Gemini's ``finishReason`` as the choice's
    ``provider_specific_fields["native_finish_reason"]``; None elsewhere."""
    if provider == "anthropic-messages":
        stop = (getattr(choice.message, "provider_specific_fields", None) or {}).get("stop_reason")
    elif provider == "gemini":
        stop = (getattr(choice, "provider_specific_fields", None) or {}).get("native_finish_reason")
    else:
        stop = None
    return stop if isinstance(stop, str) else None


def _usage(usage: Any) -> Usage | None:
    """LiteLLM's usage (Chat-shaped; ``prompt_tokens`` counts cache reads) with the cache counts it keeps beside."""
    if usage is None:
        return None
    raw = usage.model_dump(mode="json", exclude_none=True, warnings=False)
    prompt, completion = count(raw, "prompt_tokens"), count(raw, "completion_tokens")
    written = count(raw, "cache_creation_input_tokens")
    if written is None:
        written = count(raw, "prompt_tokens_details", "cache_creation_tokens")
    return Usage(input_tokens=prompt, cached_input_tokens=count(raw, "prompt_tokens_details", "cached_tokens"),
                 cache_write_tokens=written, output_tokens=completion,
                 reasoning_tokens=count(raw, "completion_tokens_details", "reasoning_tokens"),
                 total_tokens=count(raw, "total_tokens"), raw=raw)


def _from_error(error: Any, classify_error: Any, seen: dict[str, Any]) -> ModelResponse:
    """A LiteLLM exception: its status, the vendor's error body it keeps in the message, its response headers."""
    status = getattr(error, "status_code", None)
    headers = {str(name).lower(): str(value)
               for name, value in dict(getattr(error, "litellm_response_headers", None) or {}).items()}
    # On the OpenAI routes the openai SDK raised underneath: its parsed error object is in `.body` (the envelope's
    # `error` member), with the vendor's code; the other routes keep the vendor's body inside the message.
    kept = getattr(error, "body", None)
    body = {"error": kept} if isinstance(kept, dict) and "error" not in kept else kept if isinstance(kept, dict) \
        else _body_in(str(getattr(error, "message", "") or error))
    if not headers:
        response = getattr(error, "response", None)
        headers = {str(name).lower(): str(value) for name, value in dict(getattr(response, "headers", {})).items()}
    if not isinstance(status, int):
        return RetryableError(raw=f"{type(error).__name__} without a status", reason="server_error",
                              message=str(error)[:300], response_id=seen.get("id"), model=seen.get("model"))
    result = classify_error(status, body, headers)
    return result if not seen else _with(result, seen)


def _with(result: ModelResponse, seen: dict[str, Any]) -> ModelResponse:
    return dataclasses.replace(result, response_id=seen.get("id"), model=seen.get("model"))


def _body_in(message: str) -> Any:
    """The first JSON object in LiteLLM's message (``AnthropicException - {"type": "error", ...}``), or the text."""
    match = re.search(r"\{.*\}", message, re.DOTALL)
    if match:
        try:
            return json.loads(match.group(0))
        except ValueError:
            pass
    return message


def _stack(provider: str) -> Stack:
    return Stack(id="litellm", provider=provider, call=caller(provider), requires=("litellm",), extra="gateways",
                 in_process=False,
                 description=f"LiteLLM litellm.completion, model {ROUTES[provider][0]}… (body and stream)")


STACKS = {provider: _stack(provider) for provider in ROUTES}
OPENAI_CHAT, OPENAI_RESPONSES = STACKS["openai-chat"], STACKS["openai-responses"]
ANTHROPIC_MESSAGES, GEMINI, BEDROCK_CONVERSE = (STACKS["anthropic-messages"], STACKS["gemini"],
                                                STACKS["bedrock-converse"])
