"""The report row, its turns, the lane and the mode, typed (docs/contract.md, "Report"): still builtins, so a row
is plain JSON on disk and across pytest-xdist, and mypy checks every reader.

A row's ``provider`` field holds its **lane**: ``<provider>[~variant][@stack]`` — the vendor API whose fixtures it
replays, maybe a recorded model variant of them, maybe through a stack's real client. ``Lane`` parses it once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

Mode = Literal["body", "stream"]
"""How a turn is replayed: the whole body, or the recorded stream."""
MODES: tuple[Mode, ...] = ("body", "stream")

VARIANT = "~"
"""Between a provider id and a model variant's name: ``openai-chat~gpt-5.5-mini`` (docs/record.md, "Model
variants")."""
STACK = "@"
"""Between a lane's fixtures and the stack whose client ran them: ``openai-chat@litellm`` (docs/stacks.md)."""


@dataclass(frozen=True, slots=True)
class Lane:
    """A column of the matrix: ``provider`` (the vendor API), its recorded model ``variant`` and the ``stack``."""

    provider: str
    variant: str | None = None
    stack: str | None = None

    @classmethod
    def parse(cls, text: str) -> Lane:
        """``openai-chat~mini@litellm`` → Lane("openai-chat", "mini", "litellm")."""
        fixtures, _, stack = text.partition(STACK)
        provider, _, variant = fixtures.partition(VARIANT)
        return cls(provider, variant or None, stack or None)

    @property
    def fixtures(self) -> str:
        """The fixture set it replays: the provider, or its variant (``openai-chat~mini``)."""
        return self.provider if self.variant is None else f"{self.provider}{VARIANT}{self.variant}"

    @property
    def raw(self) -> bool:
        """A lane of the adapter alone, on the provider's own fixtures: no variant, no stack."""
        return self.variant is None and self.stack is None

    def __str__(self) -> str:
        return self.fixtures if self.stack is None else f"{self.fixtures}{STACK}{self.stack}"


class Call(TypedDict):
    """A tool call of a turn."""

    call_id: str | None
    name: str
    arguments: Any
    synthesized_id: bool


class Turn(TypedDict):
    """One replayed turn of a row: where it was recorded, what it was classified as, the request sent before it."""

    turn: int
    fixture: str
    http_status: int | None
    kind: str
    raw: str
    calls: list[Call]
    text: str | None
    usage: dict[str, int | None] | None
    raw_usage: dict[str, Any] | None
    response_id: str | None
    model: str | None
    stream: dict[str, Any] | None
    request: NotRequired[dict[str, Any]]
    reason: NotRequired[str | None]
    source: NotRequired[str | None]
    message: NotRequired[str | None]
    detail: NotRequired[str | None]
    raw_type: NotRequired[str | None]
    retry_after_s: NotRequired[float | None]
    parsed: NotRequired[Any]
    undeclared_tool: NotRequired[str | None]
    provider_details: NotRequired[dict[str, Any]]


class Correlation(TypedDict):
    """What the correlation check found on a row's requests."""

    calls: int
    results: int
    matched: int
    ids_unique: bool
    synthesized_ids: int
    problems: list[str]


class RowError(TypedDict):
    """Where and how an adapter broke a row."""

    type: str
    message: str
    turn: int
    phase: str
    fixture: str | None
    traceback: list[str]


class Row(TypedDict):
    """One case × lane × mode: what was expected, what happened turn by turn, and whether it passed."""

    case: str
    scenario: str
    title: str
    provider: str
    """The lane (``Lane.parse``)."""
    stack: str
    mode: Mode
    expected: dict[str, Any]
    override: dict[str, str] | None
    outcome: str
    detail: str | None
    passed: bool
    failures: list[str]
    turns: list[Turn]
    correlation: Correlation | None
    usage: dict[str, int | None] | None
    receipts: list[Any]
    leaks: list[Any]
    world_writes: list[Any]
    error: RowError | None
    waived: NotRequired[dict[str, list[str]]]
    """Present when a waiver of the lane covered failures of the row (``conformance.kit.waiver``): ``why`` (the
    reasons) and ``failures`` (what they covered). A row whose failures are all waived is waived, never passed."""
    telemetry: NotRequired[TelemetryReading]
    """A telemetry lane's row (``conformance.stacks.telemetry``): what its instrumentation's spans said per turn."""


class SpanReading(TypedDict):
    """One call of a telemetry lane: the inference spans that ended during it."""

    turn: int
    spans: int
    """How many inference spans ended (one is right; none is a turn the telemetry does not see)."""
    attributes: dict[str, Any]
    """The spans read under the GenAI convention's names, off the one that carries the counts
    (``conformance.report.telemetry.read_spans``)."""


class TelemetryReading(TypedDict):
    """The spans of a telemetry lane's row."""

    instrumentation: str
    dialect: str
    turns: list[SpanReading]


def status_of(row: Mapping[str, Any]) -> str:
    """``passed``, ``failed`` or ``waived`` (not passed, and every failure waived)."""
    if row.get("passed"):
        return "passed"
    return "waived" if row.get("waived") and not row.get("failures") else "failed"


def lane_of(row: Row) -> Lane:
    """The row's lane, parsed."""
    return Lane.parse(row["provider"])


def row_key(row: Row) -> tuple[str, str, str]:
    """Case, lane and mode: a row's key in a report."""
    return row["case"], row["provider"], row["mode"]
