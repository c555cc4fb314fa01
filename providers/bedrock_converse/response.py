"""A Converse JSON body → one contract kind (botocore bedrock-runtime ConverseResponse; docs/contract.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.calls import call_from_object
from conformance.kit.types import ModelResponse, Unsupported
from conformance.kit.verdict import (
    ANSWER,
    CALLS_EXPECTED,
    Content,
    Failed,
    MalformedCall,
    Refused,
    Truncated,
    Verdict,
    decides_alone,
    resolve,
)
from conformance.providers.bedrock_converse.usage import normalize_usage

# stopReason (botocore bedrock-runtime StopReason, 9 values in botocore 1.44.8) → verdict. The content decides
# end_turn and stop_sequence: client toolUse blocks → tool_calls whatever the stop reason, text → text, nothing →
# empty. `tool_use` is an answer that must hold a client toolUse block.
STOP_REASONS: dict[str, Verdict] = {
    "end_turn": ANSWER,
    "stop_sequence": ANSWER,
    "tool_use": CALLS_EXPECTED,
    "max_tokens": Truncated("max_tokens"),
    "model_context_window_exceeded": Truncated("context_window"),
    # A Bedrock guardrail, or the model vendor's own filter: the content holds the configured blocked message.
    "guardrail_intervened": Refused("filter"),
    "content_filtered": Refused("filter"),
    # docs/contract.md: a vendor signal that the tool call could not be parsed is an invalid_tool_call.
    "malformed_tool_use": MalformedCall(),
    # The model produced output Bedrock could not parse; nothing about the request is wrong.
    "malformed_model_output": Failed(retryable=True, reason="server_error"),
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
    """A successful (HTTP 2xx) Bedrock Converse body → one contract kind."""
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
    verdict = STOP_REASONS.get(stop) if isinstance(stop, str) else None
    if verdict is None:
        return Unsupported(raw=raw, raw_type=raw, **common)
    if isinstance(verdict, Failed):
        return resolve(verdict, raw, Content(), common)
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        # A stop value that decides alone (a filter, a truncation) is not pre-empted by a missing content list.
        if decides_alone(verdict):
            return resolve(verdict, raw, Content(), common)
        return Unsupported(raw=raw, raw_type="output.message without a content list", **common)
    scan = _scan_blocks(content)
    if scan.citations:
        common["provider_details"] = {"citations": scan.citations}
    detail = ("stopReason=malformed_tool_use: the model sent a tool call Bedrock could not parse"
              if isinstance(verdict, MalformedCall) else "stop reason tool_use without a toolUse block")
    return resolve(verdict, raw, scan, common, detail=detail)


class _Scan(Content):
    """What the content blocks hold; cited sources go to the extras."""

    def __init__(self) -> None:
        super().__init__()
        self.citations: list[Any] = []


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
    extras (``provider_details.citations``). Nova web grounding sends blocks with ``citations`` only, after the
    text they cite (botocore's CitationsContentBlock requires neither member): such a block adds no text."""
    content = citations_content.get("content")
    citations = citations_content.get("citations")
    if content is None and isinstance(citations, list):
        scan.citations.extend(citations)
        return
    if not isinstance(content, list) or not all(isinstance(item, dict) for item in content):
        scan.mark_unknown("citationsContent without a content list", f"{where}.content")
        return
    for item in content:
        text = item.get("text")
        if isinstance(text, str):
            scan.texts.append(text)
        elif item:
            scan.mark_unknown("citationsContent content item without text", f"{where}.content")
    scan.citations.extend(citations if isinstance(citations, list) else [])
