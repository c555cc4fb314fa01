"""The reasoning a Gemini answer carries (``Wire.reasoning``): parts marked ``thought`` (their text) and the
``thoughtSignature`` on a part (ai.google.dev/gemini-api/docs/thought-signatures)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.kit.values import REASONING_TEXT, SIGNATURE, reasoning_piece


def reasoning_in(items: Sequence[Any]) -> dict[str, str]:
    """Each piece of reasoning in the answer's content (``output_items``), with what it is."""
    found: dict[str, str] = {}
    for content in items:
        for part in (content.get("parts") if isinstance(content, dict) else None) or []:
            if not isinstance(part, dict):
                continue
            reasoning_piece(found, part.get("thoughtSignature"), SIGNATURE)
            if part.get("thought") is True:
                reasoning_piece(found, part.get("text"), REASONING_TEXT)
    return found
