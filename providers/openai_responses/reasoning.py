"""The reasoning a Responses answer carries (``Wire.reasoning``): ``reasoning`` output items, their
``encrypted_content`` and the text of their summary and content parts
(platform.openai.com/docs/guides/reasoning, the SDK's ResponseReasoningItem)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.kit.values import ENCRYPTED, REASONING_TEXT, reasoning_piece


def reasoning_in(items: Sequence[Any]) -> dict[str, str]:
    """Each piece of reasoning in the answer's output items, with what it is."""
    found: dict[str, str] = {}
    for item in items:
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        reasoning_piece(found, item.get("encrypted_content"), ENCRYPTED)
        for part in [*(item.get("summary") or []), *(item.get("content") or [])]:
            if isinstance(part, dict):
                reasoning_piece(found, part.get("text"), REASONING_TEXT)
    return found
