"""A Messages JSON body → one contract kind (anthropic.types.Message; docs/contract.md)."""

from __future__ import annotations

from typing import Any

from conformance.kit.calls import call_from_object
from conformance.kit.types import ModelResponse, Unsupported
from conformance.kit.verdict import ANSWER, CALLS_EXPECTED, Content, Refused, Truncated, Verdict, decides_alone, resolve
from conformance.providers.anthropic_messages.errors import classify_error
from conformance.providers.anthropic_messages.usage import normalize_usage

# stop_reason (anthropic.types.StopReason) → verdict. end_turn / stop_sequence / tool_use leave it to the content
# blocks: tool_use blocks win whatever the stop reason says, and tool_use promises at least one.
STOP_REASONS: dict[str, Verdict] = {
    "end_turn": ANSWER,
    "stop_sequence": ANSWER,
    "tool_use": CALLS_EXPECTED,
    "max_tokens": Truncated("max_tokens"),
    "model_context_window_exceeded": Truncated("context_window"),
    "pause_turn": Truncated("pause_turn"),  # a server-tool loop paused; resend to continue
    "refusal": Refused("model"),  # streaming safety classifiers stepped in; see stop_details
    "compaction": Truncated("other"),  # beta
}

# Blocks kept in the transcript but not a kind by themselves: thinking, and hosted tools the server ran.
IGNORED_BLOCKS = frozenset(
    {
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "container_upload",
        "mcp_tool_use",
        "mcp_tool_result",
        "mcp_tool_listing",
        "advisor_tool_result",
        "compaction",
        "fallback",
    }
)


def classify_body(body: Any) -> ModelResponse:
    """A successful (HTTP 2xx) Anthropic Messages body → one contract kind."""
    if isinstance(body, dict) and body.get("type") == "error":
        # An error object delivered with HTTP 200 (the SDK reports such errors with status 200).
        return classify_error(200, body, {})
    if not isinstance(body, dict) or body.get("type") != "message":
        kind = body.get("type") if isinstance(body, dict) else type(body).__name__
        return Unsupported(raw=f"type={kind}", raw_type=f"body of type {kind}")
    content = body.get("content")
    blocks = tuple(content) if isinstance(content, list) else ()
    common: dict[str, Any] = {
        "response_id": body.get("id") if isinstance(body.get("id"), str) else None,
        "model": body.get("model") if isinstance(body.get("model"), str) else None,
        "usage": normalize_usage(body.get("usage")),
        "output_items": ({"role": "assistant", "content": list(blocks)},),
    }
    stop = body.get("stop_reason")
    raw = f"stop_reason={stop}"
    mapped = STOP_REASONS.get(stop) if isinstance(stop, str) else None
    if mapped is None:
        return Unsupported(raw=raw, raw_type=f"stop_reason={stop}", **common)
    verdict = mapped
    if not isinstance(content, list) and not decides_alone(verdict):
        return Unsupported(raw=raw, raw_type="content is not a list", **common)
    if isinstance(verdict, Refused):
        details = body.get("stop_details")
        category = details.get("category") if isinstance(details, dict) else None
        if isinstance(category, str):
            common["provider_details"] = {"category": category}
    return resolve(verdict, raw, _scan(blocks), common, detail="stop_reason tool_use without a tool_use block")


def _scan(blocks: tuple[Any, ...]) -> Content:
    content = Content()
    for index, block in enumerate(blocks):
        block_type = block.get("type") if isinstance(block, dict) else None
        block_type = block_type if isinstance(block_type, str) else None
        if block_type == "text" and isinstance(block.get("text"), str):
            content.texts.append(block["text"])
        elif block_type == "tool_use":
            content.calls.append(call_from_object(block.get("id"), block.get("name"), block.get("input")))
        elif block_type not in IGNORED_BLOCKS:
            content.mark_unknown(str(block_type), f"content[{index}].type={block_type}")
    return content
