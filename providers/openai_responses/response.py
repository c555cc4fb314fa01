"""A Responses JSON body → one contract kind (wire-formats §1b, §8 "OpenAI Responses")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.calls import call_from_json_string, classify_calls
from conformance.types import (
    Empty,
    FatalError,
    Incomplete,
    ModelResponse,
    Refusal,
    RetryableError,
    Text,
    ToolCall,
    Unsupported,
)
from providers.openai_responses.usage import normalize_usage

# incomplete_details.reason → (kind, reason or refusal source). `max_messages` is undocumented and
# `steered` only happens over WebSocket; both are truncations we cannot resume from here.
INCOMPLETE_REASONS: dict[str, tuple[str, str]] = {
    "max_output_tokens": ("incomplete", "max_tokens"),
    "content_filter": ("refusal", "filter"),
    "max_messages": ("incomplete", "other"),
    "steered": ("incomplete", "other"),
}

# error.code of a `status: failed` body → (kind, reason).
FAILED_CODES: dict[str, tuple[str, str]] = {
    "server_error": ("retryable_error", "server_error"),
    "rate_limit_exceeded": ("retryable_error", "rate_limit"),
    "vector_store_timeout": ("retryable_error", "timeout"),
    "invalid_prompt": ("fatal_error", "policy"),
    "bio_policy": ("fatal_error", "policy"),
    "misalignment_policy_violation": ("fatal_error", "policy"),
    "data_residency_mismatch": ("fatal_error", "invalid_request"),
    "invalid_image": ("fatal_error", "invalid_request"),
    "invalid_image_format": ("fatal_error", "invalid_request"),
    "invalid_base64_image": ("fatal_error", "invalid_request"),
    "invalid_image_url": ("fatal_error", "invalid_request"),
    "image_too_large": ("fatal_error", "invalid_request"),
    "image_too_small": ("fatal_error", "invalid_request"),
    "image_parse_error": ("fatal_error", "invalid_request"),
    "image_content_policy_violation": ("fatal_error", "policy"),
    "invalid_image_mode": ("fatal_error", "invalid_request"),
    "image_file_too_large": ("fatal_error", "invalid_request"),
    "unsupported_image_media_type": ("fatal_error", "invalid_request"),
    "empty_image_file": ("fatal_error", "invalid_request"),
    "failed_to_download_image": ("fatal_error", "invalid_request"),
    "image_file_not_found": ("fatal_error", "invalid_request"),
}

# Output items that are client tool calls.
CALL_ITEMS = frozenset({"function_call", "custom_tool_call"})

# Items kept in the transcript but not a kind by themselves: reasoning, compaction, programmatic tool
# calling, hosted tools the server already ran, and echoed outputs.
IGNORED_ITEMS = frozenset(
    {
        "reasoning",
        "compaction",
        "program",
        "program_output",
        "additional_tools",
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "tool_search_output",
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "mcp_approval_response",
    }
)

# Built-in tools the client would have to run; this suite runs function tools only, so they are not
# supported (a `tool_search_call` is one only when its execution is "client").
CLIENT_BUILTIN_ITEMS = frozenset(
    {"computer_call", "local_shell_call", "shell_call", "apply_patch_call", "mcp_approval_request"}
)


def classify_body(body: Any) -> ModelResponse:
    if not isinstance(body, dict):
        return Unsupported(raw=f"body={type(body).__name__}", raw_type=f"body of type {type(body).__name__}")
    common: dict[str, Any] = {
        "response_id": _string(body.get("id")),
        "model": _string(body.get("model")),
        "usage": normalize_usage(body.get("usage")),
    }
    output = body.get("output")
    items = tuple(output) if isinstance(output, list) else ()
    common["output_items"] = items
    status = body.get("status")

    if status == "failed":
        return _failed(body.get("error"), common)
    if status == "cancelled":
        return FatalError(raw="status=cancelled", reason="cancelled", **common)
    if status not in ("completed", "incomplete"):
        # queued / in_progress only come from background mode, which the suite does not poll.
        return Unsupported(raw=f"status={status}", raw_type=f"status={status}", **common)
    if not isinstance(output, list):
        return Unsupported(raw="output", raw_type="output is not a list", **common)

    scan = _scan_items(items)
    if scan.refusal is not None:
        return Refusal(raw=scan.refusal_raw, source="model", text=scan.refusal, **common)
    if status == "incomplete":
        return _incomplete(body.get("incomplete_details"), scan.text, common)
    if scan.unknown is not None:
        return Unsupported(raw=scan.unknown_raw, raw_type=scan.unknown, **common)
    if scan.calls:
        return classify_calls("status=completed", scan.calls, scan.text, common)
    if scan.text:
        return Text(raw="status=completed", text=scan.text, **common)
    return Empty(raw="status=completed", **common)


class _Scan:
    """What the output items hold, gathered in one pass."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.texts: list[str] = []
        self.refusal: str | None = None
        self.refusal_raw = ""
        self.unknown: str | None = None
        self.unknown_raw = ""

    @property
    def text(self) -> str | None:
        return "".join(self.texts) if self.texts else None

    def mark_unknown(self, name: str, raw: str) -> None:
        if self.unknown is None:
            self.unknown, self.unknown_raw = name, raw


def _scan_items(items: tuple[Any, ...]) -> _Scan:
    scan = _Scan()
    for index, item in enumerate(items):
        item_type = item.get("type") if isinstance(item, dict) else None
        where = f"output[{index}].type={item_type}"
        if not isinstance(item, dict) or not isinstance(item_type, str):
            scan.mark_unknown(f"output[{index}] without a type", f"output[{index}]")
        elif item_type == "message":
            _scan_message(item, index, scan)
        elif item_type in CALL_ITEMS:
            arguments = item.get("arguments") if item_type == "function_call" else item.get("input")
            scan.calls.append(call_from_json_string(item.get("call_id"), item.get("name"), arguments))
        elif item_type == "tool_search_call" and item.get("execution") != "client" or item_type in IGNORED_ITEMS:
            continue
        elif item_type in CLIENT_BUILTIN_ITEMS or item_type == "tool_search_call":
            scan.mark_unknown(f"{item_type} (a built-in tool the client must run)", where)
        else:
            scan.mark_unknown(item_type, where)
    return scan


def _scan_message(item: Mapping[str, Any], index: int, scan: _Scan) -> None:
    content = item.get("content")
    if not isinstance(content, list):
        scan.mark_unknown("message without a content list", f"output[{index}].content")
        return
    for part_index, part in enumerate(content):
        part_type = part.get("type") if isinstance(part, dict) else None
        where = f"output[{index}].content[{part_index}].type={part_type}"
        if part_type == "output_text" and isinstance(part.get("text"), str):
            scan.texts.append(part["text"])
        elif part_type == "refusal" and scan.refusal is None:
            refusal = part.get("refusal")
            scan.refusal = refusal if isinstance(refusal, str) else ""
            scan.refusal_raw = where
        else:
            scan.mark_unknown(f"content part {part_type}", where)


def _incomplete(details: Any, text: str | None, common: dict[str, Any]) -> ModelResponse:
    reason = details.get("reason") if isinstance(details, dict) else None
    raw = f"status=incomplete/{reason}"
    mapped = INCOMPLETE_REASONS.get(reason) if isinstance(reason, str) else None
    if mapped is None:
        return Unsupported(raw=raw, raw_type=f"incomplete_details.reason={reason}", **common)
    kind, value = mapped
    if kind == "refusal":
        return Refusal(raw=raw, source=value, text=text, **common)
    return Incomplete(raw=raw, reason=value, text=text, **common)


def _failed(error: Any, common: dict[str, Any]) -> ModelResponse:
    code = error.get("code") if isinstance(error, dict) else None
    message = _string(error.get("message")) if isinstance(error, dict) else None
    raw = f"status=failed/{code}"
    mapped = FAILED_CODES.get(code) if isinstance(code, str) else None
    if code is None:
        # A failure that names no code is treated like the stream's code-less failure: retryable.
        mapped = ("retryable_error", "server_error")
    if mapped is None:
        return Unsupported(raw=raw, raw_type=f"error.code={code}", **common)
    kind, reason = mapped
    details = {}
    misalignment = error.get("misalignment") if isinstance(error, dict) else None
    if isinstance(misalignment, dict) and isinstance(misalignment.get("error_type"), str):
        details["misalignment_error_type"] = misalignment["error_type"]
    if kind == "retryable_error":
        return RetryableError(raw=raw, reason=reason, message=message, provider_details=details, **common)
    return FatalError(raw=raw, reason=reason, message=message, provider_details=details, **common)


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None
