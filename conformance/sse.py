"""Reading recorded streams from bytes, one line at a time: server-sent events and JSON-lines transcripts.

Lines end in LF, CRLF or a lone CR (the SSE rule), and are split on bytes: ``str.splitlines()`` would also
split on U+2028 and friends, which may sit unescaped inside a JSON payload. Memory stays proportional to
one event, never to the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event: its ``event:`` name (None when absent) and its joined ``data:`` lines."""

    event: str | None
    data: str
    id: str | None = None
    retry: int | None = None


def read_chunks(path: str, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """A file as a stream of byte chunks, so a large transcript is never held whole."""
    with open(path, "rb") as stream:
        while chunk := stream.read(size):
            yield chunk


def iter_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Lines without their terminator; a final line without one is still yielded.

    ``bytes.splitlines`` splits only on LF, CR and CRLF (unlike ``str.splitlines``), which is the SSE rule.
    """
    pending = b""
    for chunk in chunks:
        if not chunk:
            continue
        if pending:
            chunk = pending + chunk
        lines = chunk.splitlines(keepends=True)
        last = lines.pop()
        for line in lines:
            yield line[:-2] if line[-2:] == b"\r\n" else line[:-1]
        if last[-1:] == b"\n":
            yield last[:-2] if last[-2:] == b"\r\n" else last[:-1]
            pending = b""
        else:
            pending = last  # a partial line, or a CR that may be the first half of a CRLF
    if pending:
        yield pending[:-1] if pending[-1:] == b"\r" else pending


def iter_events(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Server-sent events per the WHATWG rules, except that a last event without its blank line is still
    dispatched: a recording cut after the final ``data:`` line keeps what arrived, and the assembler decides
    whether the stream finished."""
    event: str | None = None
    data: list[bytes] = []
    event_id: str | None = None
    retry: int | None = None
    for raw in iter_lines(chunks):
        if not raw:
            if data:
                yield ServerSentEvent(event, b"\n".join(data).decode("utf-8", errors="replace"), event_id, retry)
            event, data, retry = None, [], None
            continue
        if raw[:5] == b"data:":  # the common case first
            data.append(raw[6:] if raw[5:6] == b" " else raw[5:])
            continue
        if raw[:1] == b":":
            continue  # a comment or keep-alive
        name, colon, value = raw.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"event":
            event = value.decode("utf-8", errors="replace")
        elif name == b"id" and b"\0" not in value:
            event_id = value.decode("utf-8", errors="replace")
        elif name == b"retry" and value.isdigit():
            retry = int(value)
        elif name == b"data":
            data.append(value)  # a bare `data` line: an empty data value
    if data:
        yield ServerSentEvent(event, b"\n".join(data).decode("utf-8", errors="replace"), event_id, retry)
