"""Gemini ``usageMetadata`` → normalized usage (google.genai.types.GenerateContentResponseUsageMetadata;
docs/contract.md, "Usage").

``candidatesTokenCount`` excludes thoughts and ``promptTokenCount`` excludes server-side tool results, so
both are added back; ``promptTokenCount`` already includes cached content, which is not added again.

The REST API is the proto3 JSON mapping of ``UsageMetadata``, whose counters are plain ``int32`` without
presence: a zero count is left out of the JSON. Inside a present ``usageMetadata`` an absent counter is 0; only
a missing ``usageMetadata`` is unknown (docs/contract.md, "Usage").
"""

from __future__ import annotations

from typing import Any

from conformance.kit.types import Usage
from conformance.kit.usage import add, count_or_zero


def normalize_usage(raw: Any) -> Usage | None:
    """The Gemini usage object → normalized usage (None when there is none)."""
    if not isinstance(raw, dict):
        return None
    thoughts = count_or_zero(raw, "thoughtsTokenCount")
    return Usage(
        input_tokens=add(count_or_zero(raw, "promptTokenCount"), count_or_zero(raw, "toolUsePromptTokenCount")),
        cached_input_tokens=count_or_zero(raw, "cachedContentTokenCount"),
        # Gemini reports no cache-write count: explicit caches are created and billed through cachedContents.
        cache_write_tokens=None,
        output_tokens=add(count_or_zero(raw, "candidatesTokenCount"), thoughts),
        reasoning_tokens=thoughts,
        total_tokens=count_or_zero(raw, "totalTokenCount"),
        raw=raw,
    )
