"""Forward-compatibility mutants: the shapes a vendor's next release may send, made from the recorded fixtures, and
the rule each must meet (docs/forward.md, docs/contract.md "Forward compatibility").

A mutant is one recorded turn with one change a release makes: an unseen stop value, an unseen item type alone or
beside the known ones, an unknown field, a known optional field missing, a new usage counter, a new error code at a
known status, a known stop value in a new letter case; in a stream, an unseen event type between known ones, an
unknown field in an event, an unseen stop value. Everything else about the turn stays as recorded: the JSON, the
server-sent events framing and the event-stream lines are rebuilt whole, so a mutant is a valid wire shape apart
from its change. Where an API keeps each of those things is its ``Wire.shape`` (``conformance.kit.adapter.Shape``);
this module names no vendor.

The generator is deterministic: the same fixtures give the same mutants, byte for byte, in the same order.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from conformance.engine.cases import Case, ProviderFixtures
from conformance.engine.rows import Mode
from conformance.kit.adapter import Shape

Rule = Literal["unsupported", "same_kind", "same_kind_or_unsupported", "same_usage", "same_reading", "error_kind"]
RULES: dict[str, str] = {
    "unsupported": "read as unsupported, the unseen value named (never a guessed kind, never text or stop); for an "
                   "unseen item where the stop value decides the kind before the content does (a refusal, a "
                   "truncation, a failure, the vendor's own malformed-call verdict: docs/contract.md, precedence), "
                   "that kind",
    "same_kind": "read as the same kind, text and calls as the recorded turn (the change tolerated)",
    "same_kind_or_unsupported": "read as the same kind, or as unsupported: never as another kind",
    "same_usage": "read as the same kind, text and calls with the same usage totals, the new counter kept in "
                  "raw_usage",
    "error_kind": "read as an error kind (retryable or fatal), never a success kind, never an exception",
    "same_reading": "read as the recorded stream is: the same kind, text, calls and usage totals (the same events, "
                    "framed or delivered another way)",
}
STOP_DECIDES = frozenset({"refusal", "incomplete", "retryable_error", "fatal_error", "invalid_tool_call"})
"""Kinds the stop value decides before the content (docs/contract.md, "Precedence")."""
UNSEEN = "future_release"
"""The value every unseen stop, item, event, field and counter carries: what ``unsupported`` must name."""
UNSEEN_MEMBER = "futureRelease"
"""The member name of an unseen item or event where an item is an object named by its one member."""


@dataclass(frozen=True, slots=True)
class Family:
    """One kind of change a release makes."""

    name: str
    mode: Mode
    rule: Rule
    what: str


FAMILIES: tuple[Family, ...] = (
    Family("stop.unseen", "body", "unsupported", "an unseen stop or finish value"),
    Family("stop.case", "body", "same_kind_or_unsupported", "a known stop value in upper case"),
    Family("item.unseen_alone", "body", "unsupported", "an unseen output item, content block or part, alone"),
    Family("item.unseen_beside", "body", "unsupported", "an unseen output item, content block or part after the "
                                                        "known ones"),
    Family("field.extra", "body", "same_kind", "an unknown field, at each object level the API's bodies have"),
    Family("field.missing", "body", "same_kind", "a known optional field missing"),
    Family("usage.new_counter", "body", "same_usage", "a new usage counter"),
    Family("error.new_code", "body", "error_kind", "a new error code and type at a known HTTP status"),
    Family("event.unseen", "stream", "same_kind", "an unseen stream event type between known ones"),
    Family("event.extra_field", "stream", "same_kind", "an unknown field in a stream event, for each event type"),
    Family("item.unseen_beside", "stream", "unsupported", "an unseen output item, content block or part streamed "
                                                          "before the stop, beside the known ones"),
    Family("field.missing", "stream", "same_kind", "a known optional field missing from every event that has it"),
    Family("stop.unseen", "stream", "unsupported", "an unseen stop or finish value in the stream"),
    Family("stop.case", "stream", "same_kind_or_unsupported", "the stream's known stop value in another letter case"),
    Family("usage.new_counter", "stream", "same_usage", "a new counter in the stream's usage object"),
    # Framing: the same events, cut, joined or spelled another way, as networks, proxies and other servers deliver
    # them (docs/forward.md, "Framing").
    Family("frame.split", "stream", "same_reading", "the same bytes in reads of 1 and of 7 bytes: every event, line "
                                                    "end and multi-byte character cut somewhere"),
    Family("frame.merged", "stream", "same_reading", "the whole stream in one read"),
    Family("frame.line_ends", "stream", "same_reading", "the other line ends server-sent events allow (LF ↔ CRLF)"),
    Family("frame.keepalive", "stream", "same_reading", "a comment line (`: keep-alive`) before, between and after "
                                                        "the events"),
    Family("frame.interleaved", "stream", "same_reading", "parallel tool calls' fragments interleaved, and several "
                                                          "calls' fragments in one chunk, where the API allows it"),
)
BY_NAME = {(family.name, family.mode): family for family in FAMILIES}


@dataclass(frozen=True, slots=True)
class Mutant:
    """One turn of one case, changed as a release would change it."""

    id: str
    """``<case>/turn<N>/<mode>/<family>[@<pointer>]``: stable, and unique within an API's mutants."""
    case: str
    turn: int
    family: Family
    change: str
    """What was changed, in words (``/choices/0/finish_reason: stop → future_release``)."""
    data: Any
    """The changed body (JSON value), error body, or stream transcript (text)."""
    headers: Mapping[str, str] | None = None
    """The changed response headers, for a change made there (an error type an API sends in a header)."""
    reads: int | None = None
    """For a stream: the size of the reads it is delivered in (0: one read), None as a recording is delivered."""


# --- JSON pointers ---------------------------------------------------------------------------------------------------

def _tokens(pointer: str) -> list[str]:
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer.split("/")[1:]] if pointer else []


def _get(value: Any, pointer: str) -> Any:
    for token in _tokens(pointer):
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            raise KeyError(pointer)
    return value


def _parent(value: Any, pointer: str) -> tuple[Any, str]:
    tokens = _tokens(pointer)
    parent = _get(value, "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in tokens[:-1]))
    return parent, tokens[-1]


def _set(value: Any, pointer: str, new: Any) -> None:
    parent, key = _parent(value, pointer)
    if isinstance(parent, list):
        parent[int(key)] = new
    else:
        parent[key] = new


def _has(value: Any, pointer: str) -> bool:
    try:
        _get(value, pointer)
    except KeyError:
        return False
    return True


def _objects(value: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object in ``value`` with its pointer, depth first, in key order."""
    if isinstance(value, dict):
        yield pointer, value
        for key in value:
            yield from _objects(value[key], f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _objects(item, f"{pointer}/{index}")


def _pattern(pointer: str) -> str:
    """A pointer with its array indices taken out: the object level it names, whatever the array's length."""
    return re.sub(r"/\d+(?=/|$)", "/*", pointer)


# --- Streams ---------------------------------------------------------------------------------------------------------

@dataclass
class _Event:
    """One stream event: its SSE ``event:`` name (None for a data-only event or a ``.jsonl`` line) and its data."""

    name: str | None
    data: Any
    raw: str | None = None
    """A block that is not JSON data (a comment, ``data: [DONE]``), kept as it was."""


def _read_stream(text: str, jsonl: bool) -> list[_Event]:
    if jsonl:
        events = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                events.append(_Event(None, json.loads(line)))
            except ValueError:  # kept as it was: the adapter's reading of it is what the run checks
                events.append(_Event(None, None, line))
        return events
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        try:
            events.append(_Event(name, json.loads("\n".join(data))) if data else _Event(name, None, block))
        except ValueError:
            events.append(_Event(name, None, block))
    return events


def _write_stream(events: list[_Event], jsonl: bool) -> str:
    if jsonl:
        return "".join((event.raw if event.raw is not None else json.dumps(event.data, separators=(",", ":"),
                                                                             ensure_ascii=False)) + "\n"
                       for event in events)
    blocks = []
    for event in events:
        if event.raw is not None:
            blocks.append(event.raw)
            continue
        data = json.dumps(event.data, separators=(",", ":"), ensure_ascii=False)
        blocks.append((f"event: {event.name}\n" if event.name else "") + f"data: {data}")
    return "\n\n".join(blocks) + "\n\n"


def _event_type(event: _Event, shape: Shape) -> str | None:
    if not isinstance(event.data, dict):
        return None
    if shape.event_type == "member":
        return next(iter(event.data), None) if len(event.data) == 1 else None
    if shape.event_type is not None:
        value = event.data.get(shape.event_type)
        return value if isinstance(value, str) else event.name
    return None


def _event_body(event: _Event, shape: Shape) -> Any:
    """The object a stream stop pointer reads: a member event's inner object, else the data."""
    if shape.event_type == "member" and isinstance(event.data, dict) and len(event.data) == 1:
        return next(iter(event.data.values()))
    return event.data


# --- The generator ---------------------------------------------------------------------------------------------------

def _unseen_item(shape: Shape) -> dict[str, Any]:
    if shape.item_type is None:
        return {UNSEEN_MEMBER: {"note": "a part type this release adds"}}
    return {shape.item_type: UNSEEN, "id": "item_future_1", "note": "an item type this release adds"}


def body_mutants(case: Case, turn: int, body: Any, shape: Shape, seen: set[str]) -> Iterator[Mutant]:
    """The body families for one recorded success body; ``seen`` (object levels already given an unknown field, for
    the API) keeps ``field.extra`` to one mutant per level."""
    base = f"{case.id}/turn{turn}/body"

    def make(family: str, change: str, data: Any, where: str = "") -> Mutant:
        return Mutant(f"{base}/{family}" + (f"@{where}" if where else ""), case.id, turn,
                      BY_NAME[(family, "body")], change, data)

    yield from _stop_and_item_mutants(body, shape, make)
    # An item that is a union (one member names it) cannot take a second member: that is an unseen item, above.
    unions = {*shape.unions, *([f"{_pattern(shape.items)}/*"] if shape.items is not None and shape.item_type is None
                               else [])}
    for pointer, _ in _objects(body):
        level = _pattern(pointer)
        if level in seen or level in unions or any(level == opaque or level.startswith(opaque + "/")
                                                   for opaque in shape.opaque):
            continue
        seen.add(level)
        changed = copy.deepcopy(body)
        target = _get(changed, pointer)
        target[UNSEEN] = {"note": "a field this release adds"}
        yield make("field.extra", f"{pointer or '/'}: + {UNSEEN}", changed, pointer or "/")
    for pointer in shape.optional:
        if _has(body, pointer):
            changed = copy.deepcopy(body)
            parent, key = _parent(changed, pointer)
            del parent[key]
            yield make("field.missing", f"{pointer} missing", changed, pointer)
    if shape.usage is not None and _has(body, shape.usage) and isinstance(_get(body, shape.usage), dict):
        changed = copy.deepcopy(body)
        _get(changed, shape.usage)[f"{UNSEEN}_tokens"] = 7
        yield make("usage.new_counter", f"{shape.usage}: + {UNSEEN}_tokens: 7", changed)


def _stop_and_item_mutants(body: Any, shape: Shape, make: Any) -> Iterator[Mutant]:
    """``stop.unseen``, ``stop.case``, ``item.unseen_alone`` and ``item.unseen_beside`` of one body."""
    if shape.stop is not None and _has(body, shape.stop) and isinstance(_get(body, shape.stop), str):
        recorded = _get(body, shape.stop)
        # A new letter case: upper for a lower-case value, lower for an upper-case one (Gemini's STOP → stop).
        recased = recorded.upper() if recorded != recorded.upper() else recorded.lower()
        for family, value in (("stop.unseen", UNSEEN), ("stop.case", recased)):
            if value == recorded:
                continue
            changed = copy.deepcopy(body)
            _set(changed, shape.stop, value)
            yield make(family, f"{shape.stop}: {recorded} → {value}", changed)
    if shape.items is not None and _has(body, shape.items) and isinstance(_get(body, shape.items), list):
        for family in ("item.unseen_alone", "item.unseen_beside"):
            changed = copy.deepcopy(body)
            items = _get(changed, shape.items)
            if family == "item.unseen_alone":
                items.clear()
            items.append(_unseen_item(shape))
            yield make(family, f"{shape.items}: {'only ' if family.endswith('alone') else ''}an item of type {UNSEEN}",
                       changed)


def error_mutants(case: Case, turn: int, body: Any, shape: Shape,
                  headers: Mapping[str, str] | None = None) -> Iterator[Mutant]:
    """``error.new_code``: each code or type the error body names, and the error-type header (``Shape.error_header``),
    set to an unseen one."""
    changed = copy.deepcopy(body)
    moved = [pointer for pointer in shape.error_code if _has(changed, pointer) and isinstance(
        _get(changed, pointer), str)]
    for pointer in moved:
        _set(changed, pointer, UNSEEN)
    said = [f"{pointer} → {UNSEEN}" for pointer in moved]
    new_headers = None
    named = {name.lower(): name for name in headers or {}}
    if shape.error_header is not None and shape.error_header in named:
        new_headers = {**(headers or {}), named[shape.error_header]: f"{UNSEEN}Exception"}
        said.append(f"header {shape.error_header}: → {UNSEEN}Exception")
    if said:
        yield Mutant(f"{case.id}/turn{turn}/body/error.new_code", case.id, turn, BY_NAME[("error.new_code", "body")],
                     ", ".join(said), changed, new_headers)


def stream_mutants(case: Case, turn: int, text: str, shape: Shape, jsonl: bool, seen: set[str]) -> Iterator[Mutant]:
    """The stream families for one recorded stream; ``seen`` keeps ``event.extra_field`` to one mutant per event type
    for the API."""
    base = f"{case.id}/turn{turn}/stream"
    events = _read_stream(text, jsonl)

    def make(family: str, change: str, changed: list[_Event], where: str = "") -> Mutant:
        return Mutant(f"{base}/{family}" + (f"@{where}" if where else ""), case.id, turn,
                      BY_NAME[(family, "stream")], change, _write_stream(changed, jsonl))

    if shape.event_type is not None and len(events) >= 2:
        yield make("event.unseen", f"an event of type {UNSEEN} after the first", _with_unseen_event(events, shape))
    for index, event in enumerate(events):
        kind = _event_type(event, shape) if shape.event_type is not None else "chunk"
        if kind is None or kind in seen or not isinstance(event.data, dict):
            continue
        seen.add(kind)
        changed = copy.deepcopy(events)
        target = _event_body(changed[index], shape)
        if isinstance(target, dict):
            target[UNSEEN] = {"note": "a field this release adds"}
            yield make("event.extra_field", f"event {index + 1} ({kind}): + {UNSEEN}", changed, kind)
    yield from _stream_stop_and_usage(events, shape, make)
    yield from _framing(base, case, turn, text, events, shape, jsonl)
    if shape.stream_item:
        changed, said = _with_unseen_item(events, shape)
        yield make("item.unseen_beside", said, changed)
    for wanted, pointer in shape.stream_optional:
        changed = copy.deepcopy(events)
        dropped = 0
        for event in changed:
            body = _event_body(event, shape)
            if (wanted is None or _event_type(event, shape) == wanted) and _has(body, pointer):
                parent, key = _parent(body, pointer)
                del parent[key]
                dropped += 1
        if dropped:
            yield make("field.missing", f"{pointer} missing from {dropped} event{'s' * (dropped > 1)}", changed,
                       (wanted or "") + pointer)


SPLITS = (1, 7)
"""The read sizes of ``frame.split``: one byte cuts every boundary; seven drifts across events of any length."""
KEEPALIVE = ": keep-alive"
"""An SSE comment line: a line that starts with a colon is ignored (WHATWG HTML, "Server-sent events", 9.2.6)."""


def _framing(base: str, case: Case, turn: int, text: str, events: list[_Event], shape: Shape,
             jsonl: bool) -> Iterator[Mutant]:
    """The ``frame.*`` families of one stream: its events unchanged, delivered or framed another way."""
    def make(family: str, change: str, data: str, where: str = "", reads: int | None = None) -> Mutant:
        return Mutant(f"{base}/{family}" + (f"@{where}" if where else ""), case.id, turn,
                      BY_NAME[(family, "stream")], change, data, reads=reads)

    for size in SPLITS:
        yield make("frame.split", f"delivered in reads of {size} byte{'s' * (size > 1)}", text, str(size), size)
    yield make("frame.merged", "delivered in one read", text, reads=0)
    if not jsonl:  # a `.jsonl` transcript goes on the wire as binary frames: no line ends, no comments
        crlf = "\r\n" in text
        yield make("frame.line_ends", "CRLF line ends → LF" if crlf else "LF line ends → CRLF",
                   text.replace("\r\n", "\n") if crlf else text.replace("\n", "\r\n"))
        end = "\r\n" if crlf else "\n"
        blocks = [block for block in text.split(end * 2) if block.strip()]
        with_comments = (end * 2).join([KEEPALIVE, *(part for block in blocks for part in (block, KEEPALIVE))])
        yield make("frame.keepalive", f"{len(blocks) + 1} comment lines ({KEEPALIVE!r}) around {len(blocks)} events",
                   with_comments + end * 2)
    if shape.stream_calls is not None and shape.stream_index is not None:
        yield from _interleaved(events, shape, jsonl, make)


def _interleaved(events: list[_Event], shape: Shape, jsonl: bool, make: Any) -> Iterator[Mutant]:
    """``frame.interleaved``: where a stream has two or more calls, their fragments taken in turn (``@alternate``),
    and each turn's fragments in one chunk (``@together``); every call's own fragments in their recorded order."""
    assert shape.stream_calls is not None and shape.stream_index is not None
    slots: list[int] = []  # the events that carry call fragments, in order
    by_call: dict[Any, list[int]] = {}
    for index, event in enumerate(events):
        deltas = _get_or_none(_event_body(event, shape), shape.stream_calls)
        if isinstance(deltas, list) and len(deltas) == 1 and isinstance(deltas[0], dict):
            slots.append(index)
            by_call.setdefault(deltas[0].get(shape.stream_index), []).append(index)
        elif isinstance(deltas, list) and deltas:
            return  # already several calls to a chunk: recorded that way, nothing to recombine
    if len(by_call) < 2:
        return
    rounds = [[queue[depth] for queue in by_call.values() if depth < len(queue)]
              for depth in range(max(len(queue) for queue in by_call.values()))]
    alternate = copy.deepcopy(events)
    for slot, source in zip(slots, (index for taken in rounds for index in taken), strict=True):
        alternate[slot] = copy.deepcopy(events[source])
    yield make("frame.interleaved", f"{len(by_call)} calls' {len(slots)} fragments taken in turn",
               _write_stream(alternate, jsonl), "alternate")
    together: list[_Event] = []
    first = slots[0]
    for index, event in enumerate(events):
        if index == first:
            for taken in rounds:
                merged = copy.deepcopy(events[taken[0]])
                _set(_event_body(merged, shape), shape.stream_calls,
                     [_get(_event_body(events[source], shape), shape.stream_calls)[0] for source in taken])
                together.append(merged)
        elif index not in slots:
            together.append(copy.deepcopy(event))
    yield make("frame.interleaved", f"{len(by_call)} calls' {len(slots)} fragments in {len(rounds)} chunks, one "
                                    "fragment of each call to a chunk", _write_stream(together, jsonl), "together")


def _stream_stop_and_usage(events: list[_Event], shape: Shape, make: Any) -> Iterator[Mutant]:
    """``stop.unseen``, ``stop.case`` and ``usage.new_counter`` of one stream."""
    found = _last(events, shape, shape.stream_stop, str)
    if found is not None:
        index, pointer, recorded = found
        recased = recorded.upper() if recorded != recorded.upper() else recorded.lower()
        for family, value in (("stop.unseen", UNSEEN), ("stop.case", recased)):
            if value != recorded:
                changed = copy.deepcopy(events)
                _set(_event_body(changed[index], shape), pointer, value)
                yield make(family, f"event {index + 1}: {pointer}: {recorded} → {value}", changed)
    found = _last(events, shape, shape.stream_usage, dict)
    if found is not None:
        index, pointer, _ = found
        changed = copy.deepcopy(events)
        _get(_event_body(changed[index], shape), pointer)[f"{UNSEEN}_tokens"] = 7
        yield make("usage.new_counter", f"event {index + 1}: {pointer}: + {UNSEEN}_tokens: 7", changed)


def _last(events: list[_Event], shape: Shape, places: Sequence[tuple[str | None, str]],
          kind: type) -> tuple[int, str, Any] | None:
    """The last event carrying a value of type ``kind`` at one of ``places``: its index, the pointer, the value."""
    for index in reversed(range(len(events))):
        event = events[index]
        for wanted, pointer in places:
            if wanted is not None and _event_type(event, shape) != wanted:
                continue
            body = _event_body(event, shape)
            if _has(body, pointer) and isinstance(_get(body, pointer), kind):
                return index, pointer, _get(body, pointer)
    return None


def _with_unseen_event(events: list[_Event], shape: Shape) -> list[_Event]:
    """The events with one of an unseen type after the first."""
    if shape.event_type == "member":
        unseen = _Event(None, {UNSEEN_MEMBER: {"note": "an event type this release adds"}})
    else:
        unseen = _Event(UNSEEN if events[0].name else None, {str(shape.event_type): UNSEEN,
                                                              "note": "an event type this release adds"})
    return _inserted(events, 1, [unseen], shape)


def _inserted(events: list[_Event], at: int, new: list[_Event], shape: Shape) -> list[_Event]:
    """``events`` with ``new`` before position ``at``. Numbered events (``Shape.event_sequence``) stay numbered in
    order: the new ones take the numbers after the event before them, and every later one moves up."""
    changed = copy.deepcopy(events)
    key = shape.event_sequence
    before = changed[at - 1].data if at > 0 else None
    if key is not None and isinstance(before, dict) and isinstance(before.get(key), int):
        for offset, event in enumerate(new, start=1):
            if isinstance(event.data, dict):
                event.data[key] = before[key] + offset
        for event in changed[at:]:
            if isinstance(event.data, dict) and isinstance(event.data.get(key), int):
                event.data[key] += len(new)
    changed[at:at] = new
    return changed


def _largest(value: Any, key: str) -> int:
    """The largest integer any object in ``value`` keeps under ``key`` (-1 when none does)."""
    if isinstance(value, dict):
        own = value.get(key)
        return max([own if isinstance(own, int) and not isinstance(own, bool) else -1,
                    *(_largest(inner, key) for inner in value.values())])
    if isinstance(value, list):
        return max([-1, *(_largest(inner, key) for inner in value)])
    return -1


def _filled(template: Any, item: dict[str, Any], index: int) -> Any:
    """A ``Shape.stream_item`` template with the unseen item and the next index in place: ``"{item}"`` is the item,
    an object with a ``"{item}"`` key is the item with the object's other keys beside it, ``"{index}"`` the index."""
    if template == "{item}":
        return copy.deepcopy(item)
    if template == "{index}":
        return index
    if isinstance(template, dict):
        filled = {key: _filled(inner, item, index) for key, inner in template.items() if key != "{item}"}
        return {**copy.deepcopy(item), **filled} if "{item}" in template else filled
    if isinstance(template, list):
        return [_filled(inner, item, index) for inner in template]
    return template


def _with_unseen_item(events: list[_Event], shape: Shape) -> tuple[list[_Event], str]:
    """The events with the ones that carry an unseen item (``Shape.stream_item``) before the event that says why the
    stream stopped (before the last event when none does), and the item appended where the stream repeats its whole
    output (``Shape.stream_final_items``); and what was changed, in words."""
    stop = _last(events, shape, shape.stream_stop, str)
    at = stop[0] if stop is not None else max(len(events) - 1, 0)
    while at > 0 and events[at].raw is not None and events[at - 1].raw is not None:
        at -= 1  # never between two kept blocks (a comment and `[DONE]`)
    index = max((_largest(event.data, shape.stream_index) for event in events), default=-1) + 1 \
        if shape.stream_index is not None else 0
    item = _unseen_item(shape)
    neighbour = next((event.data for event in reversed(events[:at]) if isinstance(event.data, dict)), {})
    new = []
    for template in shape.stream_item:
        data = {**{key: copy.deepcopy(neighbour[key]) for key in shape.stream_envelope if key in neighbour},
                **_filled(template, item, index)}
        kind = data.get(shape.event_type) if shape.event_type not in (None, "member") else None
        new.append(_Event(kind if isinstance(kind, str) and events and events[0].name else None, data))
    changed = _inserted(events, at, new, shape)
    for event in changed[at + len(new):]:
        for wanted, pointer in shape.stream_final_items:
            body = _event_body(event, shape)
            if (wanted is None or _event_type(event, shape) == wanted) and isinstance(_get_or_none(body, pointer),
                                                                                        list):
                _get(body, pointer).append(copy.deepcopy(item))
    return changed, f"{len(new)} event{'s' * (len(new) > 1)} before event {at + 1} carrying an item of type {UNSEEN}"


def _get_or_none(value: Any, pointer: str) -> Any:
    return _get(value, pointer) if _has(value, pointer) else None


def mutants_for(cases: Sequence[Case], provider: str, shape: Shape | None) -> list[Mutant]:
    """Every mutant of ``provider``'s recorded turns across ``cases``, in case and turn order."""
    if shape is None:
        return []
    out: list[Mutant] = []
    for case in sorted(cases, key=lambda case: case.id):
        fixtures = case.providers.get(provider)
        if fixtures is None:
            continue
        # One unknown field per object level and per event type within a case: a case's mutants do not depend on
        # which other cases are loaded, so a shard makes the same ones as the whole run.
        seen_levels: set[str] = set()
        seen_events: set[str] = set()
        for number, turn in enumerate(fixtures.turns, start=1):
            if turn.status >= 400:
                out += error_mutants(case, number, turn.body, shape, turn.headers)
                continue
            if turn.has_body:
                out += body_mutants(case, number, turn.body, shape, seen_levels)
            if turn.stream is not None:
                out += stream_mutants(case, number, turn.stream.read_bytes().decode("utf-8"), shape,
                                      turn.stream.suffix == ".jsonl", seen_events)
    return out


def digest(mutants: Sequence[Mutant]) -> str:
    """One digest of every mutant's id and bytes: the same fixtures give the same digest."""
    hashed = hashlib.sha256()
    for mutant in mutants:
        data = mutant.data if isinstance(mutant.data, str) else json.dumps(mutant.data, sort_keys=True)
        hashed.update(f"{mutant.id}\n{data}\n".encode())
        if mutant.headers is not None:
            hashed.update(json.dumps(dict(mutant.headers), sort_keys=True).encode())
    return hashed.hexdigest()[:16]


def mutated_case(case: Case, provider: str, mutant: Mutant, folder: Path) -> Case:
    """``case`` with the mutant's turn in place of the recorded one, for ``provider`` (a stream written under
    ``folder``, which the caller removes)."""
    fixtures = case.providers[provider]
    turns = list(fixtures.turns)
    recorded = turns[mutant.turn - 1]
    if mutant.family.mode == "stream":
        name = hashlib.sha256(mutant.id.encode()).hexdigest()[:16] + (recorded.stream.suffix if recorded.stream
                                                                       else ".sse")
        path = folder / name
        path.write_bytes(mutant.data.encode("utf-8"))  # byte for byte: a text write would change line ends
        turns[mutant.turn - 1] = dataclasses.replace(recorded, stream=path, stream_source=f"mutant {mutant.id}",
                                                     stream_reads=mutant.reads)
    else:
        turns[mutant.turn - 1] = dataclasses.replace(recorded, body=mutant.data, source=f"mutant {mutant.id}",
                                                     body_path=None,  # served from the value, not the file
                                                     headers=mutant.headers if mutant.headers is not None
                                                     else recorded.headers)
    return dataclasses.replace(case, providers={**case.providers, provider: ProviderFixtures(
        turns=tuple(turns), override=fixtures.override)})


# --- The rules -------------------------------------------------------------------------------------------------------

Verdict = Literal["held", "unnamed", "guessed", "changed", "crashed"]
VERDICTS: tuple[Verdict, ...] = ("held", "unnamed", "guessed", "changed", "crashed")


def judge(mutant: Mutant, original: dict[str, Any], row: dict[str, Any]) -> tuple[Verdict, str]:
    """Whether a lane's row for the mutant meets the family's rule, against its row for the recorded case:
    ``held``; ``unnamed`` (unsupported, but the unseen value not named); ``guessed`` (an unseen stop or item read as
    a known kind); ``changed`` (an addition that moved the kind or the totals); ``crashed`` (the code under test
    raised). The second value says what the row read."""
    if row.get("error"):
        error = row["error"]
        return "crashed", f"{error.get('type')}: {str(error.get('message'))[:160]}"
    turns, before = row.get("turns") or [], original.get("turns") or []
    if len(turns) < mutant.turn or len(before) < mutant.turn:
        return "changed", f"the loop ended after turn {len(turns)} ({row.get('outcome')})"
    turn, was = turns[mutant.turn - 1], before[mutant.turn - 1]
    read = f"{turn.get('kind')} ({turn.get('raw')})"
    if mutant.family.rule == "unsupported":
        if turn.get("kind") != "unsupported":
            decided = mutant.family.name.startswith("item.") and turn.get("kind") == was.get("kind") in STOP_DECIDES
            return ("held" if decided else "guessed"), read
        said = json.dumps([turn.get("raw"), row.get("detail")], default=str)
        named = UNSEEN in said or UNSEEN_MEMBER in said or was.get("kind") == "unsupported"
        return ("held" if named else "unnamed"), read
    if mutant.family.rule == "error_kind":
        return ("held" if turn.get("kind") in ("retryable_error", "fatal_error") else "changed"), read
    if turn.get("kind") == was.get("kind"):
        if mutant.family.rule in ("same_usage", "same_reading") and turn.get("usage") != was.get("usage"):
            return "changed", f"usage {was.get('usage')} → {turn.get('usage')}"
        if mutant.family.rule == "same_usage" and turn.get("raw_usage") is not None and \
                f"{UNSEEN}_tokens" not in json.dumps(turn.get("raw_usage")):
            return "changed", f"the new counter {UNSEEN}_tokens is not kept in raw_usage"
        for name in ("text", "calls"):  # tolerated means read the same: the answer and the calls kept whole
            if mutant.family.rule in ("same_kind", "same_usage", "same_reading") and turn.get(name) != was.get(name):
                return "changed", f"{name} {str(was.get(name))[:60]} → {str(turn.get(name))[:60]}"
        return "held", read
    if mutant.family.rule == "same_kind_or_unsupported" and turn.get("kind") == "unsupported":
        return "held", read
    return "changed", f"{was.get('kind')} → {read}"


# --- The matrix ------------------------------------------------------------------------------------------------------

def family_key(family: Family) -> str:
    """``stop.unseen (body)``: a family in one mode, a column of the matrix."""
    return f"{family.name} ({family.mode})"


@dataclass
class Matrix:
    """What every lane did with every mutant: counts per lane and family, and each mutant a lane did not hold."""

    mutants: dict[str, int] = dataclasses.field(default_factory=dict)
    """Mutants per API."""
    digests: dict[str, str] = dataclasses.field(default_factory=dict)
    """Per API, the digest of its mutants (``digest``): the same fixtures give the same one."""
    lanes: dict[str, dict[str, dict[str, int]]] = dataclasses.field(default_factory=dict)
    """Lane → family key → verdict → count."""
    no_shape: list[str] = dataclasses.field(default_factory=list)
    """Lanes whose adapter's wire has no ``Shape``: no mutant can be made for them."""
    not_held: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Each mutant a lane did not hold: lane, mutant, family, verdict, what it read, the change (and for a crash the
    last frames of the code's traceback)."""

    def add(self, lane: str, mutant: Mutant, verdict: Verdict, read: str, row: dict[str, Any] | None = None) -> None:
        """Count one lane's verdict on one mutant; a crash keeps the end of the code's traceback (``row``'s)."""
        cell = self.lanes.setdefault(lane, {}).setdefault(family_key(mutant.family), dict.fromkeys(VERDICTS, 0))
        cell[verdict] += 1
        if verdict != "held":
            entry: dict[str, Any] = {"lane": lane, "mutant": mutant.id, "family": family_key(mutant.family),
                                     "verdict": verdict, "read": read, "change": mutant.change}
            error = (row or {}).get("error")
            if verdict == "crashed" and isinstance(error, dict) and error.get("traceback"):
                entry["traceback"] = list(error["traceback"])[-4:]
            self.not_held.append(entry)

    def to_dict(self) -> dict[str, Any]:
        """The report's ``forward`` section."""
        return {"rules": {family_key(family): RULES[family.rule] for family in FAMILIES},
                "mutants": dict(sorted(self.mutants.items())), "digests": dict(sorted(self.digests.items())),
                "lanes": {lane: dict(sorted(cells.items())) for lane, cells in sorted(self.lanes.items())},
                "no_shape": sorted(set(self.no_shape)),
                "not_held": sorted(self.not_held, key=lambda entry: (entry["lane"], entry["mutant"]))}



def merged(sections: Sequence[Any]) -> dict[str, Any] | None:
    """The ``forward`` sections of the shards of one run (whole cases apart) as the whole run's: the counts added,
    the mutants not held joined; None when no shard has one. A section that is not one this version writes is left
    out of the sum rather than guessed at."""
    parts = [section for section in sections if isinstance(section, dict) and isinstance(section.get("lanes"), dict)]
    if not parts:
        return None
    matrix = Matrix()
    for part in parts:
        for api, count in (part.get("mutants") or {}).items():
            if isinstance(count, int):
                matrix.mutants[api] = matrix.mutants.get(api, 0) + count
        for lane, cells in part["lanes"].items():
            for family, cell in (cells.items() if isinstance(cells, dict) else ()):
                into = matrix.lanes.setdefault(lane, {}).setdefault(family, dict.fromkeys(VERDICTS, 0))
                for verdict, count in (cell.items() if isinstance(cell, dict) else ()):
                    if verdict in into and isinstance(count, int):
                        into[verdict] += count
        matrix.no_shape += [lane for lane in part.get("no_shape") or [] if isinstance(lane, str)]
        matrix.not_held += [entry for entry in part.get("not_held") or [] if isinstance(entry, dict)
                            and isinstance(entry.get("lane"), str) and isinstance(entry.get("mutant"), str)]
    # Each shard's digest covers its own cases' mutants: the run's is the digest of theirs, in shard order.
    for api in matrix.mutants:
        hashed = hashlib.sha256()
        for part in parts:
            hashed.update(str((part.get("digests") or {}).get(api, "")).encode())
        matrix.digests[api] = hashed.hexdigest()[:16] if len(parts) > 1 else str(
            (parts[0].get("digests") or {}).get(api, ""))
    return matrix.to_dict()
