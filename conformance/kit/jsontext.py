"""Parsing JSON from recordings with a depth bound: hostile nesting is "not JSON", never a RecursionError.

Python's parser recurses once per level and raises RecursionError near 1,000 levels; code that walks a
value afterwards (copying, serializing) recurses too. Real wire payloads nest a few levels, tool arguments
a few dozen, so anything deeper than ``MAX_DEPTH`` is refused as a ValueError, which every caller already
treats as "not JSON" (an argument string that is not an object, a stream cut at that event, a fixture error).
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 128

_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__, untyped


class TooDeep(ValueError):
    """JSON nested deeper than MAX_DEPTH."""


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` with the depth bound (raises ValueError for text that is not JSON or nests too deep)."""
    try:
        value = _parse_str(text) if isinstance(text, str) else json.loads(text)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    # Only text with that many brackets can nest that deep: the walk below is skipped for ordinary payloads.
    if len(text) <= 2 * MAX_DEPTH:  # too short to open and close MAX_DEPTH levels: the common stream delta
        return value
    opened = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    if opened > MAX_DEPTH and depth_of(value) > MAX_DEPTH:
        raise TooDeep(f"JSON nested deeper than {MAX_DEPTH} levels")
    return value


def _parse_str(text: str) -> Any:
    # json.loads with the whitespace checks hoisted: this runs once per stream event.
    try:
        value, end = _scan_once(text, 0)
    except StopIteration:
        return json.loads(text)  # leading whitespace or not JSON: let json explain
    if end != len(text) and text[end:].strip():
        return json.loads(text)
    return value


def depth_of(value: Any) -> int:
    """Nesting depth of a parsed value (a scalar is 0), walked without recursion."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > MAX_DEPTH:
                return deepest
        pending.extend((child, depth) for child in children)
    return deepest
