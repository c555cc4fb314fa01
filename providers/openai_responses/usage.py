"""Responses ``usage`` → normalized usage: input already includes cached tokens, output includes reasoning."""

from __future__ import annotations

from typing import Any

from conformance.kit.types import Usage
from conformance.kit.usage import count


def normalize_usage(raw: Any) -> Usage | None:
    """The Responses usage object → normalized usage (None when there is none)."""
    if not isinstance(raw, dict):
        return None
    return Usage(
        input_tokens=count(raw, "input_tokens"),
        cached_input_tokens=count(raw, "input_tokens_details", "cached_tokens"),
        cache_write_tokens=count(raw, "input_tokens_details", "cache_write_tokens"),
        output_tokens=count(raw, "output_tokens"),
        reasoning_tokens=count(raw, "output_tokens_details", "reasoning_tokens"),
        total_tokens=count(raw, "total_tokens"),
        raw=raw,
    )
