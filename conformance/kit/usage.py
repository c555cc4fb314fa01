"""Reading vendor usage counts: a count is a non-negative integer or it is unknown (None), never 0."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def count(container: Any, *path: str) -> int | None:
    """The integer at ``path`` inside nested objects, or None when absent or not a count."""
    value: Any = container
    for key in path:
        if type(value) is not dict:  # JSON objects are dicts; this runs for every usage field of every turn
            return None
        value = value.get(key)
    if type(value) is not int or value < 0:  # bool is a subclass of int, and excluded by the exact type check
        return None
    return value


def add(*values: int | None) -> int | None:
    """The sum of the counts that are known; None when none is."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def count_or_zero(container: Any, key: str) -> int | None:
    """A proto3 JSON counter: absent inside a present object means 0 (proto3 leaves a zero scalar out of its JSON
    mapping, protobuf.dev/programming-guides/json), present but not a count means unknown (None)."""
    if type(container) is not dict:
        return None
    if key not in container:
        return 0
    return count(container, key)


@dataclass(frozen=True, slots=True)
class Billing:
    """What a turn's vendor usage says of its charge beyond the contract's counts (``Wire.billing``,
    docs/cost.md): read by the API's adapter, so that pricing knows no vendor's usage object."""

    cache_write_1h_tokens: int = 0
    """Of the cache writes, those of the longer lifetime, billed at its own rate (the price file's
    ``cache_write_1h``)."""
    final_pass: Mapping[str, int | None] | None = None
    """For a request the vendor ran in several sampling passes (compaction), the last pass's counts alone, as the
    contract names them: what a cost that misses the earlier passes is priced from. None for one pass."""
    reported_cost: float | None = None
    """The charge in USD the wire itself reports for the turn (OpenRouter's ``usage.cost``), to check."""


NO_BILLING = Billing()
