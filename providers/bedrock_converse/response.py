"""A Converse JSON body → one contract kind (botocore bedrock-runtime ConverseResponse; docs/contract.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.calls import call_from_object, classify_calls
from conformance.types import (
    Empty,
    Incomplete,
    InvalidToolCall,
    ModelResponse,
    Refusal,
    RetryableError,
    Text,
    ToolCall,
    Unsupported,
)
from providers.bedrock_converse.usage import normalize_usage

# stopReason (service model `StopReason`, 9 values in botocore 1.44.8) → (kind, reason or refusal source).
# "answer" means the content decides: client toolUse blocks → tool_calls whatever the stop reason, text →
# text, nothing → empty. `tool_use` is an answer that must hold a client toolUse block.
STOP_REASONS: dict[str, tuple[str, str]] = {
    "end_turn": ("answer", ""),
    "stop_sequence": ("answer", ""),
    "tool_use": ("tool_calls", ""),
    "max_tokens": ("incomplete", "max_tokens"),
    "model_context_window_exceeded": ("incomplete", "context_window"),
    # A Bedrock guardrail, or the model vendor's own filter: the content holds the configured blocked message.
    "guardrail_intervened": ("refusal", "filter"),
    "content_filtered": ("refusal", "filter"),
    # docs/contract.md: a vendor signal that the tool call could not be parsed is an invalid_tool_call.
    "malformed_tool_use": ("invalid_tool_call", ""),
    # The model produced output Bedrock could not parse; nothing about the request is wrong.
    "malformed_model_output": ("retryable_error", "server_error"),
}

# ContentBlock members kept in the transcript but not a kind by themselves: reasoning, the blocks of
# server-executed tools, and blocks that only belong in requests. `citationsContent` is not here: its
# `content` holds answer text (the cited words), read in order with the text blocks.
IGNORED_BLOCKS = frozenset({"reasoningContent", "toolResult", "cachePoint", "guardContent", "searchResult"})

# toolUse.type → who runs the call. botocore's `ToolUseType` lists only server_tool_use, but Claude and Nova
# models on Bedrock send `tool_use` on every client call (bodies and contentBlockStart.start.toolUse); an
# absent type is a client call too. Any other value is not guessed (docs/contract.md, "Bedrock tool calls").
TOOL_USE_TYPES: dict[str | None, str] = {None: "client", "tool_use": "client", "server_tool_use": "server"}


def classify_body(body: Any) -> ModelResponse:
    if not isinstance(body, dict):
        return Unsupported(raw=f"body={type(body).__name__}", raw_type=f"body of type {type(body).__name__}")
    output = body.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    # Converse sends no response id (the request id is only a header) and no model name.
    common: dict[str, Any] = {
        "response_id": None,
        "model": None,
        "usage": normalize_usage(body.get("usage")),
        "output_items": (message,) if isinstance(message, dict) else (),
    }
    stop = body.get("stopReason")
    raw = f"stopReason={stop}"
    mapped = STOP_REASONS.get(stop) if isinstance(stop, str) else None
    if mapped is None:
        return Unsupported(raw=raw, raw_type=raw, **common)
    kind, value = mapped
    if kind == "retryable_error":
        return RetryableError(raw=raw, reason=value, **common)
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return Unsupported(raw=raw, raw_type="output.message without a content list", **common)

    scan = _scan_blocks(content)
    if scan.citations:
        common["provider_details"] = {"citations": scan.citations}
    if kind == "refusal":
        return Refusal(raw=raw, source=value, text=scan.text, **common)
    if kind == "incomplete":
        return Incomplete(raw=raw, reason=value, text=scan.text, **common)
    if kind == "invalid_tool_call":
        detail = "stopReason=malformed_tool_use: the model sent a tool call Bedrock could not parse"
        return InvalidToolCall(raw=raw, detail=detail, tool_calls=tuple(scan.calls), **common)
    return _answer(scan, raw, kind == "tool_calls", common)


def _answer(scan: _Scan, raw: str, calls_expected: bool, common: dict[str, Any]) -> ModelResponse:
    if scan.unknown is not None:
        return Unsupported(raw=scan.unknown_raw, raw_type=scan.unknown, **common)
    if scan.calls:
        return classify_calls(raw, scan.calls, scan.text, common)
    if calls_expected:
        return InvalidToolCall(raw=raw, detail="stop reason tool_use without a toolUse block", **common)
    if scan.text:
        return Text(raw=raw, text=scan.text, **common)
    return Empty(raw=raw, **common)


class _Scan:
    """What the content blocks hold, gathered in one pass."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.texts: list[str] = []
        self.citations: list[Any] = []
        self.unknown: str | None = None
        self.unknown_raw = ""

    @property
    def text(self) -> str | None:
        return "".join(self.texts) if self.texts else None

    def mark_unknown(self, name: str, raw: str) -> None:
        if self.unknown is None:
            self.unknown, self.unknown_raw = name, raw


def _scan_blocks(content: list[Any]) -> _Scan:
    scan = _Scan()
    for index, block in enumerate(content):
        where = f"output.message.content[{index}]"
        # ContentBlock is a union: exactly one member per block.
        if not isinstance(block, dict) or len(block) != 1:
            scan.mark_unknown(f"content block that is not a one-member object at {where}", where)
            continue
        key, value = next(iter(block.items()))
        where = f"{where}.{key}"
        if key == "text" and isinstance(value, str):
            scan.texts.append(value)
        elif key == "toolUse" and isinstance(value, dict):
            _scan_tool_use(value, where, scan)
        elif key == "citationsContent" and isinstance(value, dict):
            _scan_citations(value, where, scan)
        elif key in ("text", "toolUse", "citationsContent"):
            scan.mark_unknown(f"{key} block holding a {type(value).__name__}", where)
        elif key not in IGNORED_BLOCKS:
            scan.mark_unknown(f"content block {key}", where)
    return scan


def _scan_tool_use(tool_use: Mapping[str, Any], where: str, scan: _Scan) -> None:
    tool_use_type = tool_use.get("type")
    runner = TOOL_USE_TYPES.get(tool_use_type) if isinstance(tool_use_type, str | None) else None
    if runner == "client":
        scan.calls.append(call_from_object(tool_use.get("toolUseId"), tool_use.get("name"), tool_use.get("input")))
    elif runner is None:
        scan.mark_unknown(f"toolUse type {tool_use_type}", f"{where}.type={tool_use_type}")


def _scan_citations(citations_content: Mapping[str, Any], where: str, scan: _Scan) -> None:
    """A ``citationsContent`` block: its ``content[].text`` is part of the answer, its ``citations`` go to the
    extras (``provider_details.citations``)."""
    content = citations_content.get("content")
    if not isinstance(content, list) or not all(isinstance(item, dict) for item in content):
        scan.mark_unknown("citationsContent without a content list", f"{where}.content")
        return
    for item in content:
        text = item.get("text")
        if isinstance(text, str):
            scan.texts.append(text)
        elif item:
            scan.mark_unknown("citationsContent content item without text", f"{where}.content")
    citations = citations_content.get("citations")
    scan.citations.extend(citations if isinstance(citations, list) else [])
