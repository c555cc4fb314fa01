"""Converse ``usage`` → normalized usage: ``inputTokens`` excludes the cache buckets, so they are added back."""

from __future__ import annotations

from typing import Any

from conformance.kit.types import Usage
from conformance.kit.usage import add, count


def normalize_usage(raw: Any) -> Usage | None:
    """The Bedrock Converse usage object → normalized usage (None when there is none)."""
    if not isinstance(raw, dict):
        return None
    uncached = count(raw, "inputTokens")
    cache_read = count(raw, "cacheReadInputTokens")
    cache_write = count(raw, "cacheWriteInputTokens")
    return Usage(
        # inputTokens excludes cache reads and writes, like Anthropic's (botocore bedrock-runtime TokenUsage,
        # crmne/ruby_llm#832).
        # Without inputTokens the prompt total is unknown: the cache buckets alone would understate it.
        input_tokens=add(uncached, cache_read, cache_write) if uncached is not None else None,
        cached_input_tokens=cache_read,
        cache_write_tokens=cache_write,
        output_tokens=count(raw, "outputTokens"),
        # Converse reports no reasoning-token count (botocore bedrock-runtime TokenUsage).
        reasoning_tokens=None,
        total_tokens=count(raw, "totalTokens"),
        raw=raw,
    )
