"""Gemini ``usageMetadata`` → normalized usage (google.genai.types.GenerateContentResponseUsageMetadata;
docs/contract.md, "Usage").

``candidatesTokenCount`` excludes thoughts and ``promptTokenCount`` excludes server-side tool results, so
both are added back; ``promptTokenCount`` already includes cached content, which is not added again.
"""

from __future__ import annotations

from typing import Any

from conformance.types import Usage
from conformance.usage import add, count


def normalize_usage(raw: Any) -> Usage | None:
    """The Gemini usage object → normalized usage (None when there is none)."""
    if not isinstance(raw, dict):
        return None
    thoughts = count(raw, "thoughtsTokenCount")
    return Usage(
        input_tokens=add(count(raw, "promptTokenCount"), count(raw, "toolUsePromptTokenCount")),
        cached_input_tokens=count(raw, "cachedContentTokenCount"),
        # Gemini reports no cache-write count: explicit caches are created and billed through cachedContents.
        cache_write_tokens=None,
        output_tokens=add(count(raw, "candidatesTokenCount"), thoughts),
        reasoning_tokens=thoughts,
        total_tokens=count(raw, "totalTokenCount"),
        raw=raw,
    )
