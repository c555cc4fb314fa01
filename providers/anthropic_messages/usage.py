"""Messages ``usage`` → normalized usage. ``input_tokens`` excludes cache reads and writes, so they are added."""

from __future__ import annotations

from typing import Any

from conformance.kit.types import Usage
from conformance.kit.usage import NO_BILLING, Billing, add, count


def normalize_usage(raw: Any) -> Usage | None:
    """The Anthropic Messages usage object → normalized usage (None when there is none).

    With compaction, ``usage.iterations`` lists every sampling pass of the request (the compaction pass first),
    each billed, while the top-level counts are the final pass only. The normalized counts are then the sum over
    the iterations, so the billed compaction pass is not invisible; a field some iteration leaves out is unknown
    (docs/contract.md, "Usage"). ``raw`` keeps the vendor's object, iterations included.
    """
    if not isinstance(raw, dict):
        return None
    iterations = raw.get("iterations")
    passes = [_counts(raw)]
    if isinstance(iterations, list) and iterations and all(isinstance(item, dict) for item in iterations):
        passes = [_counts(item) for item in iterations]
    input_tokens = _sum(passes, "input_tokens")
    output_tokens = _sum(passes, "output_tokens")
    return Usage(
        input_tokens=input_tokens,
        cached_input_tokens=_sum(passes, "cached_input_tokens"),
        cache_write_tokens=_sum(passes, "cache_write_tokens"),
        output_tokens=output_tokens,
        reasoning_tokens=count(raw, "output_tokens_details", "thinking_tokens"),
        # The API reports no total; it is computed only when both halves are known.
        total_tokens=input_tokens + output_tokens if input_tokens is not None and output_tokens is not None else None,
        raw=raw,
    )


def _counts(usage: dict[str, Any]) -> dict[str, int | None]:
    """One pass's counts; ``input_tokens`` excludes cache reads and writes, so they are added."""
    cache_read = count(usage, "cache_read_input_tokens")
    cache_write = count(usage, "cache_creation_input_tokens")
    if cache_write is None:
        cache_write = add(count(usage, "cache_creation", "ephemeral_5m_input_tokens"),
                          count(usage, "cache_creation", "ephemeral_1h_input_tokens"))
    uncached = count(usage, "input_tokens")
    return {
        "input_tokens": add(uncached, cache_read, cache_write) if uncached is not None else None,
        "cached_input_tokens": cache_read,
        "cache_write_tokens": cache_write,
        "output_tokens": count(usage, "output_tokens"),
    }


def _sum(passes: list[dict[str, int | None]], field: str) -> int | None:
    values = [counts[field] for counts in passes]
    if any(value is None for value in values):
        return None
    return sum(value for value in values if value is not None)


def billing(raw: Any) -> Billing:
    """What the usage object says of the charge beyond the counts (``Wire.billing``, docs/cost.md): the cache writes
    of the 1-hour lifetime (``cache_creation.ephemeral_1h_input_tokens``), summed over the sampling passes of a
    compacted request, and that request's last pass alone (the top-level counts), which is all a cost that misses
    ``usage.iterations`` prices (docs.anthropic.com/en/docs/build-with-claude/compaction)."""
    if not isinstance(raw, dict):
        return NO_BILLING
    iterations = raw.get("iterations")
    passes: list[Any] = [raw]
    if isinstance(iterations, list) and iterations and all(isinstance(item, dict) for item in iterations):
        passes = iterations
    compacted = passes is iterations
    hour = sum(count(item, "cache_creation", "ephemeral_1h_input_tokens") or 0 for item in passes)
    final = None
    if compacted:
        final = {**_counts(raw), "reasoning_tokens": None}
    return Billing(cache_write_1h_tokens=hour, final_pass=final)
