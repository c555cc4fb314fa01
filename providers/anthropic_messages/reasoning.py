"""The reasoning a Messages answer carries (``Wire.reasoning``): ``thinking`` blocks (their text and signature) and
``redacted_thinking`` blocks (their encrypted ``data``),
docs.anthropic.com/en/docs/build-with-claude/extended-thinking."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.kit.values import ENCRYPTED, REASONING_TEXT, SIGNATURE, reasoning_piece


def reasoning_in(items: Sequence[Any]) -> dict[str, str]:
    """Each piece of reasoning in the answer's message (``output_items``), with what it is."""
    found: dict[str, str] = {}
    for message in items:
        for block in (message.get("content") if isinstance(message, dict) else None) or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "thinking":
                reasoning_piece(found, block.get("thinking"), REASONING_TEXT)
                reasoning_piece(found, block.get("signature"), SIGNATURE)
            elif block.get("type") == "redacted_thinking":
                reasoning_piece(found, block.get("data"), ENCRYPTED)
    return found
