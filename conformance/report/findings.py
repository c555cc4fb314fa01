"""What a stack hides: each stack row compared, field by field, with the raw adapter's row on the same fixtures
(docs/stacks.md, "Findings").

The raw adapter reads the recorded wire itself, so its row is what the wire said. A stack row (an SDK, a gateway)
is what the team's business code gets through that layer. Every field where the two part is a finding: the kind,
the reason, the raw vendor value (kept or gone), each call's id, name and arguments, each usage count (equal, gone,
invented, changed), the response id and the model, and on the request side what each request re-sent. Nothing is
declared by hand to be found; a stack declares only the findings its team accepts (``Stack.accepted``), each with
its reason, and ``conformance diff`` calls a new finding that is not accepted a regression.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from conformance.engine.rows import Lane, Mode
from conformance.kit.types import USAGE_FIELDS

Effect = Literal["lost", "invented", "changed"]
Add = Callable[[str, "Effect", Any, Any, str], None]
"""Records one finding of the turn being compared: field, effect, wire value, stack value, meaning."""
"""``lost``: the wire had a value, the stack gives none; ``invented``: the stack gives a value the wire never sent;
``changed``: both have one, and they differ."""


OVERRIDDEN = frozenset({"outcome", "turns", "kind", "reason"})
"""The fields a declared difference speaks for: the row's outcome and turn chain."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One field where a stack row parts from the raw adapter's row."""

    stack: str
    """The stack row's provider column, ``<provider>@<stack>``."""
    case: str
    mode: Mode
    turn: int | None
    """The 1-based turn; None for the row as a whole (its outcome, its number of turns)."""
    field: str
    """``kind``, ``reason``, ``raw``, ``calls[N].id``, ``calls[N].name``, ``calls[N].arguments``, ``usage.<field>``,
    ``response_id``, ``model``, ``text``, ``http_status``, ``retry_after_s``, ``outcome``, ``turns``,
    ``request.signatures``, ``request.results``."""
    effect: Effect
    wire: Any
    """What the wire said (the raw adapter's value)."""
    stack_value: Any
    """What the stack gives."""
    meaning: str
    """What business code behind the stack can no longer tell."""
    accepted: str | None = None
    """The team's reason when the stack declares this finding accepted."""

    @property
    def key(self) -> tuple[str, str, str, int, str]:
        """Identity across two reports: the same field of the same turn of the same row."""
        return self.stack, self.case, self.mode, self.turn or 0, self.field

    def to_dict(self) -> dict[str, Any]:
        """As builtins, for ``report.json``."""
        return {"stack": self.stack, "case": self.case, "mode": self.mode, "turn": self.turn, "field": self.field,
                "effect": self.effect, "wire": self.wire, "stack_value": self.stack_value, "meaning": self.meaning,
                "accepted": self.accepted}


def find_all(rows: Iterable[Mapping[str, Any]],
             accepted: Mapping[str, Mapping[str, str]] | None = None) -> list[Finding]:
    """Every finding of every stack row that has a raw row beside it (same case, provider and mode). ``accepted``:
    per stack row id, the fields its team accepts (``field`` for every case, ``field@case`` for one), each with
    the reason."""
    rows = list(rows)
    by_key = {(row["case"], row["provider"], row["mode"]): row for row in rows}
    found: list[Finding] = []
    for row in rows:
        if row.get("stack", "raw") == "raw":
            continue
        wire = by_key.get((row["case"], Lane.parse(row["provider"]).fixtures, row["mode"]))
        if wire is None or wire.get("stack", "raw") != "raw" or wire.get("error") or row.get("error"):
            continue
        declared = (accepted or {}).get(row["provider"], {})
        # A telemetry lane's client is its stack's: its row is compared with the stack's row when that ran, so what
        # the lane adds is only what installing the instrumentation changed; its spans are compared with the wire.
        reference = by_key.get((row["case"], row["provider"].rsplit(TELEMETRY, 1)[0], row["mode"]), wire) \
            if row.get("telemetry") else wire
        if reference.get("error"):
            reference = wire
        # A row run under a declared difference (``Stack.differences``) accepts what that difference states; an
        # override the stack row only inherited from its vendor (the raw row has the same) accepts nothing.
        override = (row.get("override") or {}).get("why")
        if override and override == (reference.get("override") or {}).get("why"):
            override = None
        for finding in [*compare_rows(reference, row), *compare_spans(wire, row)]:
            reason = declared.get(f"{finding.field}@{finding.case}") or declared.get(finding.field)
            if reason is None and override and finding.field in OVERRIDDEN:
                reason = override
            found.append(_with_reason(finding, reason) if reason else finding)
    return sorted(found, key=lambda finding: finding.key)


TELEMETRY = "+"
"""Between a stack's id and its instrumentation's in a telemetry lane (``conformance.stacks.telemetry.PLUS``)."""


def compare_spans(wire: Mapping[str, Any], row: Mapping[str, Any]) -> list[Finding]:
    """A telemetry lane's findings: each turn's span reading against the raw row's turn, field by field under the
    convention's attribute names (``conformance.report.telemetry``)."""
    reading = row.get("telemetry")
    if not isinstance(reading, dict):
        return []
    from conformance.report.telemetry import compare_turn  # noqa: PLC0415 - only telemetry lanes read spans

    by_turn = {entry.get("turn"): entry for entry in reading.get("turns") or [] if isinstance(entry, dict)}
    out: list[Finding] = []
    for turn in wire["turns"]:
        entry = by_turn.get(turn["turn"])
        if entry is None:
            continue  # the stack's client made no call for this turn: the row's own findings say so
        for field, effect, was, now, meaning in compare_turn(turn, entry):
            out.append(Finding(row["provider"], row["case"], row["mode"], turn["turn"], field, effect, was, now,
                               meaning))
    return out


def _with_reason(finding: Finding, reason: str) -> Finding:
    return Finding(finding.stack, finding.case, finding.mode, finding.turn, finding.field, finding.effect,
                   finding.wire, finding.stack_value, finding.meaning, reason)


def compare_rows(wire: Mapping[str, Any], stack: Mapping[str, Any]) -> list[Finding]:
    """The findings of one stack row against the raw row of the same case, provider and mode."""
    out: list[Finding] = []

    def add(turn: int | None, field: str, effect: Effect, was: Any, now: Any, meaning: str) -> None:
        out.append(Finding(stack["provider"], stack["case"], stack["mode"], turn, field, effect, was, now, meaning))

    if wire["outcome"] != stack["outcome"]:
        add(None, "outcome", "changed", wire["outcome"], stack["outcome"],
            f"the loop ends {stack['outcome']} where the wire leads to {wire['outcome']}")
    _compare_acceptance(wire, stack, add)
    wire_turns, stack_turns = wire["turns"], stack["turns"]
    if len(wire_turns) != len(stack_turns):
        add(None, "turns", "changed", len(wire_turns), len(stack_turns),
            f"{len(stack_turns)} turn(s) where the wire has {len(wire_turns)}")
    for was, now in zip(wire_turns, stack_turns, strict=False):
        _compare_turn(was, now, functools.partial(add, was["turn"]))
    return out


REFUSED = re.compile(r"^request: turns? (?P<turns>[\d, ]+): the vendor would refuse it \((?P<rule>[^,]+), .*?\): "
                     r"(?P<pointer>/.*?): (?P<what>.*)$")
"""A request-contract failure naming a vendor rule (``conformance.engine.request_check.acceptance_problems``)."""


def _compare_acceptance(wire: Mapping[str, Any], stack: Mapping[str, Any],
                        add: Callable[[int | None, str, Effect, Any, Any, str], None]) -> None:
    """A request the stack sends that the vendor would refuse, where the raw adapter's request is accepted: the
    layer's own doing (a gateway that rewrites the schema or the history), one finding per rule and turn."""
    accepted = {(match["rule"], match["pointer"]) for failure in wire.get("failures") or []
                if isinstance(failure, str) and (match := REFUSED.match(failure))}
    seen: set[tuple[int, str]] = set()
    for failure in stack.get("failures") or []:
        match = REFUSED.match(failure) if isinstance(failure, str) else None
        if match is None or (match["rule"], match["pointer"]) in accepted:
            continue
        for turn in (int(number) for number in match["turns"].replace(" ", "").split(",") if number):
            if (turn, match["rule"]) in seen:
                continue  # one finding per rule and turn: its first place is named
            seen.add((turn, match["rule"]))
            add(turn, f"request.{match['rule']}", "changed", None, f"{match['pointer']}: {match['what']}",
                f"the layer sends a request the vendor refuses ({match['rule']}): {match['pointer']}: "
                f"{match['what']}")


def _compare_turn(was: Mapping[str, Any], now: Mapping[str, Any], add: Add) -> None:
    _compare_request(was.get("request"), now.get("request"), add)  # sent before the response: compared always
    if was["kind"] != now["kind"]:
        add("kind", "changed", was["kind"], now["kind"], f"{_a(was['kind'])} turn reads as {now['kind']}")
        return  # the other fields belong to different kinds: one finding says it
    reason, stack_reason = was.get("reason") or was.get("source"), now.get("reason") or now.get("source")
    if reason != stack_reason:
        add("reason", _effect(reason, stack_reason), reason, stack_reason,
            f"{reason} reads as {stack_reason}" if reason and stack_reason else
            f"the reason {reason} is gone" if reason else f"a reason {stack_reason} the wire did not give")
    value = _raw_value(was.get("raw"))
    if value and value not in (now.get("raw") or ""):
        add("raw", "lost", was.get("raw"), now.get("raw"), f"the vendor's own value {value!r} is gone")
    _compare_calls(was.get("calls") or [], now.get("calls") or [], add)
    _compare_usage(was.get("usage"), now.get("usage"), add)
    for field, what in (("response_id", "the vendor's response id"), ("model", "the model the vendor named")):
        if was.get(field) != now.get(field):
            add(field, _effect(was.get(field), now.get(field)), was.get(field), now.get(field),
                f"{what} is gone" if now.get(field) is None else
                f"{what} is replaced" if was.get(field) is not None else f"{what} is one the wire never sent")
    for field, what in (("http_status", "the HTTP status"), ("retry_after_s", "the retry delay")):
        if was.get(field) != now.get(field):
            add(field, _effect(was.get(field), now.get(field)), was.get(field), now.get(field),
                f"{what} the vendor sent is gone" if now.get(field) is None else f"{what} is not the vendor's")
    if (was.get("text") or None) != (now.get("text") or None):
        add("text", _effect(was.get("text") or None, now.get("text") or None), was.get("text"), now.get("text"),
            "the text differs from what the vendor sent")


def _raw_value(raw: Any) -> str:
    """The vendor's own value in a raw string (``stop_reason=refusal`` → ``refusal``); "" when there is none to
    look for (an HTTP status, a stream that ended, a value both layers spell alike by construction)."""
    if not isinstance(raw, str) or "=" not in raw:
        return ""
    value = raw.rsplit("=", 1)[1].strip()
    return value if value and value not in ("None", "null") and not value.isdigit() else ""


def _compare_calls(was: list[Mapping[str, Any]], now: list[Mapping[str, Any]], add: Add) -> None:
    for index, (call, mapped) in enumerate(zip(was, now, strict=False)):
        where = f"calls[{index + 1}]"  # one finding per call: two calls of a turn are two keys
        if not call.get("synthesized_id") and call.get("call_id") != mapped.get("call_id"):  # a made-up id may differ
            add(f"{where}.id", _effect(call.get("call_id"), mapped.get("call_id")), call.get("call_id"),
                mapped.get("call_id"), f"call {index + 1}'s id no longer matches the wire")
        if call.get("name") != mapped.get("name"):
            add(f"{where}.name", "changed", call.get("name"), mapped.get("name"),
                f"call {index + 1} names another tool")
        if not _same_arguments(call.get("arguments"), mapped.get("arguments")):
            add(f"{where}.arguments", "changed", call.get("arguments"), mapped.get("arguments"),
                f"call {index + 1}'s arguments differ from the wire")
    if len(was) != len(now):
        add("calls", "changed", len(was), len(now), f"{len(now)} call(s) where the wire has {len(was)}")


def _same_arguments(was: Any, now: Any) -> bool:
    """Equal as JSON values: ``{"a": 1}`` and ``{"a":1}`` are the same arguments, spelled by two serializers."""
    if was == now:
        return True
    try:
        return bool(json.loads(was) == json.loads(now))
    except (TypeError, ValueError):
        return False


def _compare_usage(was: Mapping[str, Any] | None, now: Mapping[str, Any] | None, add: Add) -> None:
    for name in USAGE_FIELDS:
        count, stack_count = (was or {}).get(name), (now or {}).get(name)
        if count == stack_count:
            continue
        effect = _effect(count, stack_count)
        meaning = {"lost": f"{name} is unknown, though the vendor sent {count}",
                   "invented": f"{name} reads {stack_count}, a count the vendor never sent",
                   "changed": f"{name} reads {stack_count}; the vendor sent {count}"}[effect]
        add(f"usage.{name}", effect, count, stack_count, meaning)


def _compare_request(was: Mapping[str, Any] | None, now: Mapping[str, Any] | None, add: Add) -> None:
    """What the request of the turn re-sent: reasoning signatures and the results' ids, as the raw adapter reads
    both requests (``conversation`` in each turn's request record)."""
    if not was or not now or was.get("conversation") is None or now.get("conversation") is None:
        return
    signatures = [sum(entry.get("signatures", 0) for entry in record["conversation"]) for record in (was, now)]
    if signatures[0] != signatures[1]:
        add("request.signatures", _effect(signatures[0] or None, signatures[1] or None), signatures[0],
            signatures[1], f"the request re-sends {signatures[1]} reasoning signature(s) where the adapter sends "
                           f"{signatures[0]}: the vendor cannot continue the same reasoning")
    results = [[result["call_id"] for entry in record["conversation"] for result in entry.get("results", [])]
               for record in (was, now)]
    if results[0] != results[1]:
        add("request.results", "changed", results[0], results[1],
            "the results re-sent echo other call ids than the adapter's")


def _effect(was: Any, now: Any) -> Effect:
    if was is not None and now is None:
        return "lost"
    if was is None and now is not None:
        return "invented"
    return "changed"


def _a(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"
