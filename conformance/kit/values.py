"""Reading values back from wire JSON that may hold anything: each reader returns the value when it has the type
asked for, and a neutral default otherwise (never an exception)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def text_of(value: Any, key: str = "text") -> str | None:
    """A slot's text: a string as is, or the ``key`` strings of a list of blocks or parts joined; None when the slot
    holds no text."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [block[key] for block in value if isinstance(block, Mapping) and isinstance(block.get(key), str)]
        return "".join(texts) if texts else None
    return None


def string_or_none(value: Any) -> str | None:
    """``value`` when it is a string, else None (read back from a request that may be anything)."""
    return value if isinstance(value, str) else None


def int_or_none(value: Any) -> int | None:
    """``value`` when it is an integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def list_or_empty(value: Any) -> list[Any]:
    """``value`` when it is a list, else [] (read back from a request that may be anything)."""
    return value if isinstance(value, list) else []


def description_of(tool: Mapping[str, Any]) -> str:
    """A tool's description as sent, "" when it carries none."""
    value = tool.get("description")
    return value if isinstance(value, str) else ""


def nonempty_string_or_none(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None
