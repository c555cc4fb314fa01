"""Messages ``usage`` → normalized usage. ``input_tokens`` excludes cache reads and writes, so they are added."""

from __future__ import annotations

from typing import Any

from conformance.types import Usage
from conformance.usage import add, count


def normalize_usage(raw: Any) -> Usage | None:
    """The Anthropic Messages usage object → normalized usage (None when there is none)."""
    if not isinstance(raw, dict):
        return None
    cache_read = count(raw, "cache_read_input_tokens")
    cache_write = count(raw, "cache_creation_input_tokens")
    if cache_write is None:
        cache_write = add(count(raw, "cache_creation", "ephemeral_5m_input_tokens"),
                          count(raw, "cache_creation", "ephemeral_1h_input_tokens"))
    uncached = count(raw, "input_tokens")
    input_tokens = add(uncached, cache_read, cache_write) if uncached is not None else None
    output_tokens = count(raw, "output_tokens")
    return Usage(
        input_tokens=input_tokens,
        cached_input_tokens=cache_read,
        cache_write_tokens=cache_write,
        output_tokens=output_tokens,
        reasoning_tokens=count(raw, "output_tokens_details", "thinking_tokens"),
        # The API reports no total; it is computed only when both halves are known.
        total_tokens=input_tokens + output_tokens if input_tokens is not None and output_tokens is not None else None,
        raw=raw,
    )
