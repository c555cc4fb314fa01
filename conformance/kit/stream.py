"""What every stream assembler shares: the per-turn stream summary and the rules for broken streams.

Rules, the same for every vendor (documented in docs/streaming.md):
- no terminal event, or a terminal event while a streamed payload was still open (a Gemini call whose
  arguments were still arriving) → ``retryable_error`` / ``interrupted``, usage unknown (None), partial text kept in
  ``text`` but never promoted to an answer, partial tool calls never executed;
- an event that cannot be parsed as JSON → the stream is treated as cut at that point (interrupted);
- events after the terminal event are ignored (counted in the summary);
- unknown event types are counted and otherwise ignored; unknown items, blocks or parts they carry
  still surface as ``unsupported`` through the assembled response.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.kit.jsontext import parse_json
from conformance.kit.types import ModelResponse, RetryableError


@dataclass(slots=True)
class StreamSummary:
    """Seed 000's stream record: event count per type, first and last event, terminal event seen."""

    events: dict[str, int] = field(default_factory=dict)
    first: str | None = None
    last: str | None = None
    terminal: bool = False
    ignored_after_terminal: int = 0
    duplicates: int = 0

    def count(self, event_type: str) -> None:
        """Count one event of ``event_type`` (after the terminal event, also as ignored)."""
        if self.terminal:
            self.ignored_after_terminal += 1
        events = self.events
        if event_type in events:
            events[event_type] += 1
        else:
            events[event_type] = 1
            if self.first is None:
                self.first = event_type
        self.last = event_type

    def to_dict(self) -> dict[str, Any]:
        """The value as builtins, for the report and ``inspect``."""
        return {
            "events": dict(sorted(self.events.items())),
            "event_count": sum(self.events.values()),
            "first": self.first,
            "last": self.last,
            "terminal": self.terminal,
            "ignored_after_terminal": self.ignored_after_terminal,
            "duplicates": self.duplicates,
        }


def parse_event(text: str | bytes) -> Any:
    """One event's JSON payload (``conformance.kit.jsontext.parse_json``: raises ValueError for text that is not
    JSON or nests too deep)."""
    return parse_json(text)


class TextBuffer:
    """Joins many small string pieces without keeping each one: a list of them costs ~50 bytes a piece,
    which on a long stream is more than the text itself."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = io.StringIO()

    def append(self, piece: str) -> None:
        """Add one piece."""
        self._buffer.write(piece)

    def value(self) -> str:
        """The joined text."""
        return self._buffer.getvalue()


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamResult:
    """An assembled stream: the same kind a body gives, plus how the stream went."""

    response: ModelResponse
    summary: StreamSummary


def interrupted(summary: StreamSummary, text_parts: Iterable[str], *, response_id: str | None = None,
                model: str | None = None, detail: str = "", raw: str | None = None) -> StreamResult:
    """The result of a stream that ended without its terminal event (or, with ``raw``, ended mid-payload)."""
    text = "".join(text_parts) or None
    if raw is None:
        raw = f"stream ended after {summary.last or 'no event'} without a terminal event"
        raw += f" ({detail})" if detail else ""
    return StreamResult(
        response=RetryableError(raw=raw, reason="interrupted",
                                response_id=response_id, model=model, usage=None, text=text),
        summary=summary,
    )
