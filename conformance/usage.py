"""Reading vendor usage counts: a count is a non-negative integer or it is unknown (None), never 0."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def count(container: Any, *path: str) -> int | None:
    """The integer at ``path`` inside nested mappings, or None when absent or not a count."""
    value: Any = container
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def add(*values: int | None) -> int | None:
    """The sum of the counts that are known; None when none is."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None
