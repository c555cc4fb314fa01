"""What the Converse API refuses before it answers, as ``Rule``s (``Wire.acceptance``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from conformance.kit.adapter import Rule


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def _ids(message: Any, member: str) -> list[Any]:
    return [block[member].get("toolUseId") for block in _blocks(message) if isinstance(block.get(member), dict)]


def _roles(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """The conversation starts with a user message and alternates user and assistant."""
    messages = request.get("messages") or []
    if messages and isinstance(messages[0], dict) and messages[0].get("role") != "user":
        yield "/messages/0/role", "a conversation starts with a user message"
    for index in range(1, len(messages)):
        before, message = messages[index - 1], messages[index]
        if isinstance(before, dict) and isinstance(message, dict) and before.get("role") == message.get("role"):
            yield (f"/messages/{index}/role", f"two {message.get('role')} messages in a row: the roles alternate")


def _results(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """After an assistant message with ``toolUse`` blocks, the next (user) message holds a ``toolResult`` for each
    of their ids and no other; a user message with results holds no text beside them."""
    messages = request.get("messages") or []
    for index, message in enumerate(messages):
        results = _ids(message, "toolResult")
        before = messages[index - 1] if index > 0 else None
        called = _ids(before, "toolUse") if isinstance(before, dict) and before.get("role") == "assistant" else []
        if not results and not called:
            continue
        missing = [call for call in called if call not in results]
        if missing:
            yield f"/messages/{index}/content", f"toolResult blocks are expected here for the ids {missing}"
        extra = [result for result in results if result not in called]
        if extra:
            yield (f"/messages/{index}/content", f"the toolResult blocks for {extra} answer no toolUse of the "
                   "previous turn")
        if results and any("text" in block for block in _blocks(message)):
            yield f"/messages/{index}/content", "text blocks and toolResult blocks cannot be in the same turn"


RULES = (
    Rule(id="roles-alternate",
         source="docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html (messages: the "
                "conversation starts with a user message and alternates user and assistant)",
         check=_roles),
    Rule(id="tool-results-answer-tool-uses",
         source="docs.aws.amazon.com/bedrock/latest/userguide/tool-use-inference-call.html (the user message after "
                "toolUse blocks returns one toolResult per toolUseId) and the API's ValidationExceptions for results "
                "that exceed or miss them or share the turn with text",
         check=_results),
)
