"""Reading values back from wire JSON that may hold anything: each reader returns the value when it has the type
asked for, and a neutral default otherwise (never an exception)."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
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


NAMED_SUBSCHEMAS = frozenset({"properties", "$defs", "definitions", "defs"})
"""Keys that hold subschemas by name (``defs`` is Gemini's ``Schema`` spelling of ``$defs``)."""


def schema_nodes(schema: Any, pointer: str, into: Collection[str]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every object of a JSON-Schema-like tree with its JSON pointer: ``schema`` itself, then, depth first, what the
    keys of ``into`` hold (named subschemas under ``NAMED_SUBSCHEMAS``, a list of them, or one). Each vendor's
    dialect names the keys it has subschemas under; anything that is not an object is not a node."""
    if not isinstance(schema, Mapping):
        return
    yield pointer, schema
    for key in into:
        value = schema.get(key)
        if key in NAMED_SUBSCHEMAS and isinstance(value, Mapping):
            children = [(f"{pointer}/{key}/{_escaped(str(name))}", child) for name, child in value.items()]
        elif isinstance(value, list):
            children = [(f"{pointer}/{key}/{index}", child) for index, child in enumerate(value)]
        else:
            children = [(f"{pointer}/{key}", value)]
        for where, child in children:
            yield from schema_nodes(child, where, into)


def _escaped(name: str) -> str:
    """A JSON pointer token (RFC 6901)."""
    return name.replace("~", "~0").replace("/", "~1")


def strings_in(value: Any) -> Iterator[str]:
    """Every string value inside nested JSON objects and arrays (keys aside)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


SIGNATURE, ENCRYPTED, REASONING_TEXT = "signature", "encrypted content", "reasoning text"
"""What a piece of a vendor's reasoning is (``Wire.reasoning``): an opaque signature, encrypted reasoning, or the
reasoning's text."""


def reasoning_piece(found: dict[str, str], value: Any, what: str) -> None:
    """Add ``value`` to ``found`` as ``what`` when it is a non-empty string."""
    if isinstance(value, str) and value:
        found[value] = what
