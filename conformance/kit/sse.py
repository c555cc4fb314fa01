"""Reading recorded streams from bytes, one line at a time: server-sent events and JSON-lines transcripts.

Lines end in LF, CRLF or a lone CR (the SSE rule), and are split on bytes: ``str.splitlines()`` would also
split on U+2028 and friends, which may sit unescaped inside a JSON payload. Memory stays proportional to
one event, never to the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

CHUNK_BYTES = 64 * 1024


class ServerSentEvent(NamedTuple):
    """One dispatched event: its ``event:`` name (None when absent) and its joined ``data:`` lines.

    A named tuple rather than a frozen dataclass: one is built per event, and this is the hot path."""

    event: str | None
    data: str
    id: str | None = None
    retry: int | None = None


def read_chunks(path: str, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """A file as a stream of byte chunks, so a large transcript is never held whole."""
    with open(path, "rb") as stream:
        while chunk := stream.read(size):
            yield chunk


def _line_batches(chunks: Iterable[bytes]) -> Iterator[list[bytes]]:
    """Complete lines, terminators still attached, one list per chunk (a loop per line is the hot path).

    ``bytes.splitlines`` splits only on LF, CR and CRLF (unlike ``str.splitlines``), which is the SSE rule.
    A CR at a chunk's end waits for the next chunk, where it may turn out to be half of a CRLF.
    """
    # Pieces of an unfinished line are kept apart and joined once, when its end arrives: joining on every
    # chunk would copy a long line once per chunk (quadratic in its length).
    pending: list[bytes] = []
    for chunk in chunks:
        if not chunk:
            continue
        if 10 not in chunk and 13 not in chunk:  # LF, CR: an int needle costs a tenth of a bytes one
            pending.append(chunk)
            continue
        if pending:
            pending.append(chunk)
            chunk = b"".join(pending)
            pending = []
        lines = chunk.splitlines(keepends=True)
        if not lines[-1].endswith(b"\n"):
            pending.append(lines.pop())
        if lines:
            yield lines
    if pending:
        yield [b"".join(pending)]


def iter_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Lines without their terminator; a final line without one is still yielded."""
    for batch in _line_batches(chunks):
        for line in batch:
            yield line.rstrip(b"\r\n")


def _other_field(raw: bytes, data: list[bytes], event_id: str | None,
                 retry: int | None) -> tuple[str | None, int | None]:
    """The rare fields (``id``, ``retry``, a bare ``data`` line); unknown field names are ignored."""
    name, colon, value = raw.partition(b":")
    if colon and value.startswith(b" "):
        value = value[1:]
    if name == b"id" and b"\0" not in value:
        return value.decode("utf-8", errors="replace"), retry
    if name == b"retry" and value.isdigit() and len(value) <= 12:  # milliseconds; longer is noise
        return event_id, int(value)
    if name == b"data":
        data.append(value)  # a bare `data` line: an empty data value
    return event_id, retry


def iter_events(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Server-sent events per the WHATWG rules, except that a last event without its blank line is still
    dispatched: a recording cut after the final ``data:`` line keeps what arrived, and the assembler decides
    whether the stream finished."""
    event: str | None = None
    data: list[bytes] = []
    event_id: str | None = None
    retry: int | None = None
    names: dict[bytes, str] = {}
    for batch in _line_batches(chunks):
        for line in batch:
            raw = line.rstrip(b"\r\n")
            if not raw:
                if data:
                    yield ServerSentEvent(event, b"\n".join(data).decode("utf-8", errors="replace"), event_id, retry)
                event, data, retry = None, [], None
            elif raw.startswith(b"data:"):  # the common cases first
                data.append(raw[6:] if raw.startswith(b"data: ") else raw[5:])
            elif raw.startswith(b"event:"):
                value = raw[7:] if raw.startswith(b"event: ") else raw[6:]
                event = names.get(value) or names.setdefault(value, value.decode("utf-8", errors="replace"))
            elif not raw.startswith(b":"):  # a line starting with ':' is a comment or keep-alive
                event_id, retry = _other_field(raw, data, event_id, retry)
    if data:
        yield ServerSentEvent(event, b"\n".join(data).decode("utf-8", errors="replace"), event_id, retry)
