"""The reasoning a Converse answer carries (``Wire.reasoning``): ``reasoningContent`` blocks, their
``reasoningText`` (text and signature) or ``redactedContent`` (the SDK's ReasoningContentBlock)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.kit.values import ENCRYPTED, REASONING_TEXT, SIGNATURE, reasoning_piece


def reasoning_in(items: Sequence[Any]) -> dict[str, str]:
    """Each piece of reasoning in the answer's message (``output_items``), with what it is."""
    found: dict[str, str] = {}
    for message in items:
        for block in (message.get("content") if isinstance(message, dict) else None) or []:
            reasoning = block.get("reasoningContent") if isinstance(block, dict) else None
            if not isinstance(reasoning, dict):
                continue
            text = reasoning.get("reasoningText")
            if isinstance(text, dict):
                reasoning_piece(found, text.get("text"), REASONING_TEXT)
                reasoning_piece(found, text.get("signature"), SIGNATURE)
            reasoning_piece(found, reasoning.get("redactedContent"), ENCRYPTED)
    return found
