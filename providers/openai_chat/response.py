"""A Chat Completions JSON body → one contract kind (openai.types.chat.ChatCompletion; docs/contract.md,
"OpenAI-compatible servers")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.calls import call_from_json_string, classify_calls
from conformance.types import (
    Empty,
    Incomplete,
    ModelResponse,
    Refusal,
    RetryableError,
    Text,
    ToolCall,
    Unsupported,
)
from providers.openai_chat.usage import normalize_usage

# choices[0].finish_reason → (kind, reason or source). "stop" and "tool_calls" are decided by the
# message itself: a forced named tool returns its calls with "stop" (vllm-project/vllm#25054).
FINISH_REASONS: dict[str, tuple[str, str]] = {
    "stop": ("answer", ""),
    "tool_calls": ("answer", ""),
    "function_call": ("answer", ""),
    "length": ("incomplete", "max_tokens"),
    "content_filter": ("refusal", "filter"),
    # OpenAI-compatible servers (docs/contract.md, "OpenAI-compatible servers"):
    "model_context_window_exceeded": ("incomplete", "context_window"),  # GLM / Z.ai, gateways
    "model_length": ("incomplete", "context_window"),  # Mistral
    "insufficient_system_resource": ("retryable_error", "overloaded"),  # DeepSeek
    "abort": ("retryable_error", "server_error"),  # vLLM
    "error": ("retryable_error", "server_error"),  # Mistral
}

# Message keys a follow-up request may carry for an assistant message; response-only keys such as
# `annotations` and `audio` are not part of the assistant message parameter.
REPLAYED_MESSAGE_KEYS = ("role", "content", "refusal", "tool_calls", "function_call")


def classify_body(body: Any) -> ModelResponse:
    if not isinstance(body, dict):
        return Unsupported(raw=f"body={type(body).__name__}", raw_type=f"body of type {type(body).__name__}")
    common: dict[str, Any] = {
        "response_id": _string(body.get("id")),
        "model": _string(body.get("model")),
        "usage": normalize_usage(body.get("usage")),
    }
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Unsupported(raw="choices", raw_type="a body without choices[0]", **common)
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        return Unsupported(raw="choices[0].message", raw_type="a choice without a message", **common)
    common["output_items"] = ({key: message[key] for key in REPLAYED_MESSAGE_KEYS if key in message},)
    finish = choice.get("finish_reason")
    raw = f"finish_reason={finish}"
    if finish is None or finish == "":
        # Some gateways (OpenRouter, for several upstream models) never send a finish reason, in a body or a
        # stream: a complete message is then decided by what it holds (docs/contract.md, "No finish reason").
        finish, raw = "stop", "finish_reason absent"
    mapped = FINISH_REASONS.get(finish) if isinstance(finish, str) else None
    if mapped is None:
        return Unsupported(raw=raw, raw_type=f"finish_reason={finish}", **common)
    kind, value = mapped
    content = message.get("content")
    text = content if isinstance(content, str) else None

    if kind == "retryable_error":
        return RetryableError(raw=raw, reason=value, **common)
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        return Refusal(raw="message.refusal", source="model", text=refusal, **common)
    if kind == "refusal":
        return Refusal(raw=raw, source=value, text=text, **common)
    if kind == "incomplete":
        return Incomplete(raw=raw, reason=value, text=text, **common)
    return _answer(message, raw, text, common)


def _answer(message: Mapping[str, Any], raw: str, text: str | None, common: dict[str, Any]) -> ModelResponse:
    calls: list[ToolCall] = []
    tool_calls = message.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        return Unsupported(raw=raw, raw_type="message.tool_calls is not a list", **common)
    for index, entry in enumerate(tool_calls or []):
        entry_type = entry.get("type") if isinstance(entry, dict) else None
        if entry_type == "function" and isinstance(entry.get("function"), Mapping):
            function = entry["function"]
            calls.append(call_from_json_string(entry.get("id"), function.get("name"), function.get("arguments")))
        elif entry_type == "custom" and isinstance(entry.get("custom"), Mapping):
            custom = entry["custom"]
            calls.append(call_from_json_string(entry.get("id"), custom.get("name"), custom.get("input")))
        else:
            return Unsupported(raw=raw, raw_type=f"tool_calls[{index}].type={entry_type}", **common)
    legacy = message.get("function_call")
    if not calls and isinstance(legacy, dict):
        # The legacy shape carries no id; one is made up and flagged (docs/contract.md).
        legacy_call = call_from_json_string("function_call-0", legacy.get("name"), legacy.get("arguments"))
        calls.append(
            ToolCall(
                call_id=legacy_call.call_id,
                name=legacy_call.name,
                arguments=legacy_call.arguments,
                parsed_arguments=legacy_call.parsed_arguments,
                synthesized_id=True,
            )
        )
        raw = f"{raw}/message.function_call"
    if calls:
        return classify_calls(raw, calls, text, common)
    if text:
        return Text(raw=raw, text=text, **common)
    return Empty(raw=raw, **common)


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None
