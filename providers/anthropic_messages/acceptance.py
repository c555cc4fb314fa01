"""What the Messages API refuses before it answers, as ``Rule``s (``Wire.acceptance``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from conformance.kit.adapter import Rule


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _tool_results(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """After an assistant turn with ``tool_use`` blocks, the next message is the user's, and its content starts with
    one ``tool_result`` per ``tool_use``, before any other block; no result answers a call that was not made."""
    messages = request.get("messages") or []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        before = messages[index - 1] if index > 0 else None
        called = [block.get("id") for block in _blocks(before) if isinstance(block, dict)
                  and block.get("type") == "tool_use"] if isinstance(before, dict) and before.get(
            "role") == "assistant" else []
        blocks = _blocks(message)
        kinds = [block.get("type") if isinstance(block, dict) else None for block in blocks]
        results = [block.get("tool_use_id") for block in blocks if isinstance(block, dict)
                   and block.get("type") == "tool_result"]
        if results and kinds[:len(results)] != ["tool_result"] * len(results):
            yield f"/messages/{index}/content", "tool_result blocks come first in the content, before any other block"
        for position, answered in enumerate(results):
            if answered not in called:
                yield f"/messages/{index}/content/{position}/tool_use_id", \
                    f"{answered!r} answers no tool_use of the assistant message before it"
        for call in called:
            if results.count(call) != 1:
                yield f"/messages/{index}/content", f"tool_use {call!r} needs exactly one tool_result here, " \
                                                    f"found {results.count(call)}"
    if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant" and any(
            isinstance(block, dict) and block.get("type") == "tool_use" for block in _blocks(messages[-1])):
        yield f"/messages/{len(messages) - 1}", "a tool_use turn is last: its results are not sent"


RULES = (
    Rule(id="tool-results-first",
         source="docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use (\"Handling results\": "
                "tool_result blocks must immediately follow their tool_use and come first in the user message)",
         check=_tool_results),
)
