"""Secrets that no single line shows: a stream's text and arguments arrive a few characters per event, and tool-call
arguments and many error messages are JSON inside a JSON string, escaped on the line (docs/hardening.md).

Every string value of a JSON document, or of each JSON event of a stream (SSE ``data:`` lines, JSON lines), is
decoded and appended to the others found at the same place (its key path, list positions dropped), in order; a
string that is itself JSON is decoded and walked too. Each joined text is then scanned as lines are
(``conformance.replay.hygiene.line_kinds``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.kit.jsontext import parse_json

# How deep JSON inside JSON strings is followed (arguments holding a document holding another is rare; a bound
# keeps a hostile file linear).
MAX_INNER = 3


def joined_kinds(text: str) -> list[tuple[int, str]]:
    """(line, kind) of each secret found in the joined values: the line is the first one that contributed to the
    joined text it was found in."""
    from conformance.replay.hygiene import line_kinds  # noqa: PLC0415 - hygiene's scan calls this module

    pieces: dict[str, list[str]] = {}
    first: dict[str, int] = {}
    for number, document in _documents(text):
        for path, value in _strings(document, "", 0):
            pieces.setdefault(path, []).append(value)
            first.setdefault(path, number)
    found: list[tuple[int, str]] = []
    for path, values in pieces.items():
        for line in "".join(values).splitlines():
            found.extend((first[path], kind) for kind in line_kinds(line) if (first[path], kind) not in found)
    return found


def _documents(text: str) -> Iterator[tuple[int, Any]]:
    """The JSON documents of a file: the whole text when it is one, else each ``data:`` payload or JSON line."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            yield 1, parse_json(text)
            return
        except ValueError:
            pass
    for number, line in enumerate(text.splitlines(), start=1):
        payload = line[5:].strip() if line.startswith("data:") else line.strip()
        if payload[:1] not in ("{", "["):
            continue
        try:
            yield number, parse_json(payload)
        except ValueError:
            continue


def _strings(value: Any, path: str, inner: int) -> Iterator[tuple[str, str]]:
    """Every string under ``value`` with its key path; a string holding JSON is walked as well."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}", inner)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, path, inner)
    elif isinstance(value, str):
        yield path, value
        if inner < MAX_INNER and value.lstrip()[:1] in ("{", "["):
            try:
                decoded = parse_json(value)
            except ValueError:
                return
            yield from _strings(decoded, f"{path}<json>", inner + 1)
