"""What every stream assembler shares: the per-turn stream summary and the rules for broken streams.

Rules, the same for every vendor (documented in docs/streaming.md):
- no terminal event → ``retryable_error`` / ``interrupted``, usage unknown (None), partial text kept in
  ``text`` but never promoted to an answer, partial tool calls never executed;
- an event that cannot be parsed as JSON → the stream is treated as cut at that point (interrupted);
- events after the terminal event are ignored (counted in the summary);
- unknown event types are counted and otherwise ignored; unknown items, blocks or parts they carry
  still surface as ``unsupported`` through the assembled response.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.types import ModelResponse, RetryableError


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
        if self.terminal:
            self.ignored_after_terminal += 1
        self.events[event_type] = self.events.get(event_type, 0) + 1
        if self.first is None:
            self.first = event_type
        self.last = event_type

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": dict(sorted(self.events.items())),
            "event_count": sum(self.events.values()),
            "first": self.first,
            "last": self.last,
            "terminal": self.terminal,
            "ignored_after_terminal": self.ignored_after_terminal,
            "duplicates": self.duplicates,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamResult:
    """An assembled stream: the same kind a body gives, plus how the stream went."""

    response: ModelResponse
    summary: StreamSummary


def interrupted(summary: StreamSummary, text_parts: Iterable[str], *, response_id: str | None = None,
                model: str | None = None, detail: str = "") -> StreamResult:
    """The result of a stream that ended without its terminal event."""
    text = "".join(text_parts) or None
    raw = f"stream ended after {summary.last or 'no event'} without a terminal event"
    return StreamResult(
        response=RetryableError(raw=raw + (f" ({detail})" if detail else ""), reason="interrupted",
                                response_id=response_id, model=model, usage=None, text=text),
        summary=summary,
    )
