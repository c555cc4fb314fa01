"""What report.md and the run's summary read of a row, and nothing more (docs/performance.md, "The report in
groups").

A 20,000-row report keeps every row's brief in memory while report.md is written (its tables walk the rows several
times), but never every whole row: a brief is a few hundred bytes where a parsed row is about ten kilobytes. Both
renderings read rows only through ``Brief``, so what they show is what a brief holds: a field they start to read
must be added here, and mypy says so.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.engine.rows import status_of
from conformance.kit.types import USAGE_FIELDS

PREFIX_MOVED = "static prefix changed"
"""The correlation problem that says a row's static prefix was not byte-stable across its turns."""


@dataclass(frozen=True, slots=True)
class RequestBrief:
    """One sent request's record, as the "Requests per provider" table counts it."""

    prefix_bytes: int
    checked: bool
    problems: int


@dataclass(frozen=True, slots=True)
class TurnBrief:
    """One turn: its kind, the vendor's raw value behind it, its request's record (None: no request kept)."""

    kind: str
    raw: Any
    request: RequestBrief | None


@dataclass(frozen=True, slots=True)
class Brief:
    """One row as report.md and the summary read it."""

    case: str
    provider: str
    mode: str
    status: str
    """``passed``, ``failed`` or ``waived`` (``conformance.engine.rows.status_of``)."""
    failures: tuple[str, ...]
    outcome: str
    expected: str
    """The expected outcome."""
    override: str | None
    """A declared override's reason; None when the row has none."""
    waived: tuple[tuple[str, ...], tuple[str, ...]] | None
    """A waiver's reasons and the failures it waives; None when none applied."""
    usage: tuple[int | None, ...] | None
    """The row's counts in ``USAGE_FIELDS`` order; None when the row reports no usage."""
    cost: float | None
    prefix_moved: bool
    """A correlation problem says the static prefix changed across the row's turns."""
    turns: tuple[TurnBrief, ...]

    def count(self, name: str) -> int | None:
        """One usage count by its contract name (None: not reported)."""
        return None if self.usage is None else self.usage[USAGE_FIELDS.index(name)]


def _shared(value: Any) -> Any:
    """A repeated short string (a case, lane, mode, kind or outcome) kept once, whichever row it came from."""
    return sys.intern(value) if isinstance(value, str) else value


def brief_of(row: Mapping[str, Any]) -> Brief:
    """A row's brief."""
    correlation = row.get("correlation")
    usage = row.get("usage")
    waived = row.get("waived")
    override = row.get("override")
    turns = []
    for turn in row["turns"]:
        record = turn.get("request")
        request = None if record is None else RequestBrief(record["prefix_bytes"], bool(record["checked"]),
                                                           len(record["problems"]))
        turns.append(TurnBrief(_shared(turn["kind"]), _shared(turn["raw"]), request))
    return Brief(
        case=_shared(row["case"]), provider=_shared(row["provider"]), mode=_shared(row["mode"]),
        status=status_of(row), failures=tuple(row["failures"]), outcome=_shared(row["outcome"]),
        expected=_shared(row["expected"]["outcome"]), override=override["why"] if override else None,
        waived=(tuple(waived.get("why", [])), tuple(waived.get("failures", []))) if waived else None,
        usage=tuple(usage.get(name) for name in USAGE_FIELDS) if usage else None, cost=row.get("cost"),
        prefix_moved=any(PREFIX_MOVED in problem for problem in correlation["problems"]) if correlation else False,
        turns=tuple(turns))


def briefs_of(rows: Iterable[Mapping[str, Any]]) -> list[Brief]:
    """The rows' briefs: those a report built in groups kept (``conformance.report.kept.KeptRows``), or made now."""
    kept = getattr(rows, "briefs", None)
    return list(kept) if kept is not None else [brief_of(row) for row in rows]
