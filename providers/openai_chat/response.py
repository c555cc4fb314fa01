"""A Chat Completions JSON body → one contract kind (openai.types.chat.ChatCompletion; docs/contract.md,
"OpenAI-compatible servers")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.calls import call_from_json_string
from conformance.kit.types import ModelResponse, ToolCall, Unsupported
from conformance.kit.values import string_or_none
from conformance.kit.verdict import (
    ANSWER,
    Content,
    ContentDecides,
    Failed,
    Refused,
    Truncated,
    Verdict,
    decides_alone,
    resolve,
)
from conformance.providers.openai_chat.usage import normalize_usage

# choices[0].finish_reason (openai.types.chat.chat_completion.Choice) → verdict. "stop" and "tool_calls" leave
# it to the message: a forced named tool returns its calls with "stop" (vllm-project/vllm#25054).
FINISH_REASONS: dict[str, Verdict] = {
    "stop": ANSWER,
    # Together ends a complete answer with "eos" (end of sequence), in bodies and streams, where OpenAI says "stop".
    "eos": ANSWER,
    "tool_calls": ANSWER,
    "function_call": ANSWER,
    "length": Truncated("max_tokens"),
    "content_filter": Refused("filter"),
    # OpenAI-compatible servers (docs/contract.md, "OpenAI-compatible servers"):
    "model_context_window_exceeded": Truncated("context_window"),  # GLM / Z.ai, gateways
    "model_length": Truncated("context_window"),  # Mistral
    "insufficient_system_resource": Failed(retryable=True, reason="overloaded"),  # DeepSeek
    "abort": Failed(retryable=True, reason="server_error"),  # vLLM
    "error": Failed(retryable=True, reason="server_error"),  # Mistral
}

# Message keys a follow-up request may carry for an assistant message; response-only keys such as
# `annotations` and `audio` are not part of the assistant message parameter.
REPLAYED_MESSAGE_KEYS = ("role", "content", "refusal", "tool_calls", "function_call", "reasoning_details")
# DeepSeek's thinking mode needs a tool-calling message's `reasoning_content` back in every later request, and
# ignores (deepseek-reasoner refused) it on a message without calls (api-docs.deepseek.com/guides/thinking_mode).
REPLAYED_WITH_CALLS = ("reasoning_content",)


def classify_body(body: Any) -> ModelResponse:
    """A successful (HTTP 2xx) Chat Completions body → one contract kind."""
    if not isinstance(body, dict):
        return Unsupported(raw=f"body={type(body).__name__}", raw_type=f"body of type {type(body).__name__}")
    common: dict[str, Any] = {
        "response_id": string_or_none(body.get("id")),
        "model": string_or_none(body.get("model")),
        "usage": normalize_usage(body.get("usage")),
    }
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Unsupported(raw="choices", raw_type="a body without choices[0]", **common)
    choice = choices[0]
    finish = choice.get("finish_reason")
    raw = f"finish_reason={finish}"
    if finish is None or finish == "":
        # Some gateways (OpenRouter, for several upstream models) never send a finish reason, in a body or a
        # stream: a complete message is then decided by what it holds (docs/contract.md, "No finish reason").
        finish, raw = "stop", "finish_reason absent"
    verdict = FINISH_REASONS.get(finish) if isinstance(finish, str) else None
    if verdict is None:
        return Unsupported(raw=raw, raw_type=f"finish_reason={finish}", **common)
    message = choice.get("message")
    if not isinstance(message, dict):
        # Azure's content filter answers `finish_reason: content_filter` with no message key at all: a stop value
        # that decides alone is read before any look at the content (docs/contract.md, "Rules decided from live
        # traffic").
        if decides_alone(verdict):
            return resolve(verdict, raw, Content(), common)
        return Unsupported(raw="choices[0].message", raw_type="a choice without a message", **common)
    replayed = REPLAYED_MESSAGE_KEYS + (REPLAYED_WITH_CALLS if message.get("tool_calls") else ())
    common["output_items"] = ({key: message[key] for key in replayed if key in message},)
    content, legacy = _scan_message(message, raw)
    if legacy and isinstance(verdict, ContentDecides):
        raw = f"{raw}/message.function_call"
    return resolve(verdict, raw, content, common)


def _scan_message(message: Mapping[str, Any], raw: str) -> tuple[Content, bool]:
    """The message's text, refusal and calls; True when the calls came in the legacy ``function_call`` shape."""
    content = Content()
    text = message.get("content")
    if isinstance(text, str):
        content.texts.append(text)
    elif text is not None:
        # A server that puts a JSON object (Cloudflare Workers AI with a JSON response format) or another non-string
        # value in `content` delivered something; it is named, never dropped as empty nor re-serialized as a guess.
        content.mark_unknown(f"message.content of type {_json_type(text)} (a string was expected)",
                             f"message.content={_json_type(text)}")
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        content.mark_refusal(refusal, "message.refusal")
    tool_calls = message.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        content.mark_unknown("message.tool_calls is not a list", "message.tool_calls")
        return content, False
    for index, entry in enumerate(tool_calls or []):
        entry_type = entry.get("type") if isinstance(entry, dict) else None
        if entry_type == "function" and isinstance(entry.get("function"), Mapping):
            function = entry["function"]
            arguments = function.get("arguments")
            content.calls.append(call_from_json_string(entry.get("id"), function.get("name"), arguments))
        elif entry_type == "custom" and isinstance(entry.get("custom"), Mapping):
            custom = entry["custom"]
            content.calls.append(call_from_json_string(entry.get("id"), custom.get("name"), custom.get("input")))
        else:
            what = (f"a {entry_type} tool call without its {entry_type} object" if entry_type in ("function", "custom")
                    else f"tool call type {entry_type}")
            content.mark_unknown(what, f"tool_calls[{index}].type={entry_type}")
            return content, False
    legacy = message.get("function_call")
    if content.calls or not isinstance(legacy, dict):
        return content, False
    # The legacy shape carries no id; one is made up and flagged (docs/contract.md).
    legacy_call = call_from_json_string("function_call-0", legacy.get("name"), legacy.get("arguments"))
    content.calls.append(ToolCall(call_id=legacy_call.call_id, name=legacy_call.name, arguments=legacy_call.arguments,
                                  parsed_arguments=legacy_call.parsed_arguments, synthesized_id=True))
    return content, True


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type."""
    names = {dict: "object", list: "array", bool: "boolean", int: "number", float: "number", str: "string"}
    return names.get(type(value), type(value).__name__)
