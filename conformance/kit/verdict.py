"""What a vendor's stop value says, and the one precedence rule that turns it and the content into a kind.

An adapter's tables map each vendor value (a stop reason, a finish reason, a status) to a ``Verdict``; its
scanner gathers what the content holds into a ``Content``; ``resolve`` decides, the same way for every vendor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.kit.calls import classify_calls
from conformance.kit.types import (
    Empty,
    FatalError,
    Incomplete,
    IncompleteReason,
    InvalidToolCall,
    ModelResponse,
    Refusal,
    RefusalSource,
    RetryableError,
    Text,
    ToolCall,
    Unsupported,
)


@dataclass(frozen=True, slots=True)
class ContentDecides:
    """The value says the model finished; what the content holds decides (calls, text or nothing)."""

    calls_required: bool = False
    """The value promises client tool calls (``tool_use``): a turn without one is an invalid tool call."""


@dataclass(frozen=True, slots=True)
class Truncated:
    """Generation stopped before a usable answer."""

    reason: IncompleteReason


@dataclass(frozen=True, slots=True)
class Refused:
    """The vendor declined: the model itself or a filter."""

    source: RefusalSource


@dataclass(frozen=True, slots=True)
class Failed:
    """The response is an error in disguise (a finish value that means the server failed)."""

    retryable: bool
    reason: str


@dataclass(frozen=True, slots=True)
class MalformedCall:
    """The vendor's own verdict that the model's tool call cannot be used."""

    undeclared_tool: bool = False
    """The vendor says the model called a tool that was not declared."""


@dataclass(frozen=True, slots=True)
class NotUsable:
    """A known value that names no outcome this suite can use: ``unsupported``, never guessed."""


Verdict = ContentDecides | Truncated | Refused | Failed | MalformedCall | NotUsable

ANSWER = ContentDecides()
CALLS_EXPECTED = ContentDecides(calls_required=True)


def decides_alone(verdict: Verdict) -> bool:
    """True when the stop value decides the kind by itself (a failure, a refusal, a truncation, a malformed call,
    a value naming nothing usable): a missing or unreadable content container must not pre-empt it. Only
    ``ContentDecides`` needs the content (docs/contract.md, "Kinds")."""
    return not isinstance(verdict, ContentDecides)


@dataclass(slots=True)
class Content:
    """What a response's items, blocks or parts hold, gathered in one pass by the adapter's scanner."""

    calls: list[ToolCall] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    refusal: str | None = None
    """An explicit refusal in the content (a refusal part or field), with ``refusal_raw`` naming where."""
    refusal_raw: str = ""
    unknown: str | None = None
    """The first thing the adapter does not know, by name, with ``unknown_raw`` naming where."""
    unknown_raw: str = ""

    @property
    def text(self) -> str | None:
        """The text gathered so far, or None when there is none."""
        return "".join(self.texts) if self.texts else None

    def mark_unknown(self, name: str, raw: str) -> None:
        """Remember the first thing the adapter does not know, by name and place."""
        if self.unknown is None:
            self.unknown, self.unknown_raw = name, raw

    def mark_refusal(self, text: str, raw: str) -> None:
        """Remember the first explicit refusal in the content, and where it was."""
        if self.refusal is None:
            self.refusal, self.refusal_raw = text, raw


def resolve(verdict: Verdict, raw: str, content: Content, common: Mapping[str, Any], *,
            message: str | None = None, detail: str | None = None) -> ModelResponse:
    """The kind of a response, by one precedence (docs/contract.md, "Kinds").

    A failure the stop value reports comes first; then an explicit refusal in the content; then a refusal or a
    truncation the stop value reports; then the vendor's own malformed-call verdict; then a value that names
    nothing usable. Only when the stop value leaves it to the content: something unknown in it makes the turn
    ``unsupported``; else client tool calls (``tool_calls``, or ``invalid_tool_call`` when one cannot run as
    sent); else — when calls were promised — ``invalid_tool_call``; else text; else ``empty``.

    ``message`` is the vendor's message for errors; ``detail`` explains an invalid tool call.
    """
    if isinstance(verdict, Failed):
        if verdict.retryable:
            return RetryableError(raw=raw, reason=verdict.reason, message=message, **common)
        return FatalError(raw=raw, reason=verdict.reason, message=message, **common)
    if content.refusal is not None:
        return Refusal(raw=content.refusal_raw, source="model", text=content.refusal, **common)
    if isinstance(verdict, Refused):
        return Refusal(raw=raw, source=verdict.source, text=content.text, **common)
    if isinstance(verdict, Truncated):
        return Incomplete(raw=raw, reason=verdict.reason, text=content.text, **common)
    if isinstance(verdict, MalformedCall):
        return InvalidToolCall(raw=raw, detail=detail or f"the vendor reported a malformed tool call ({raw})",
                               tool_calls=tuple(content.calls), undeclared_tool=verdict.undeclared_tool, **common)
    if isinstance(verdict, NotUsable):
        return Unsupported(raw=raw, raw_type=raw, **common)
    return _from_content(verdict, raw, content, common, detail)


def _from_content(verdict: ContentDecides, raw: str, content: Content, common: Mapping[str, Any],
                  detail: str | None) -> ModelResponse:
    if content.unknown is not None:
        return Unsupported(raw=content.unknown_raw, raw_type=content.unknown, **common)
    calls: Sequence[ToolCall] = content.calls
    if calls:
        return classify_calls(raw, calls, content.text, common)
    if verdict.calls_required:
        return InvalidToolCall(raw=raw, detail=detail or f"{raw} without a tool call", **common)
    if content.text:
        return Text(raw=raw, text=content.text, **common)
    return Empty(raw=raw, **common)
