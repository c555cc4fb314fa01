"""Wire drift: what a new set of recordings carries that the provider's previous set never had (docs/record.md,
"Drift"). Run by ``conformance drift OLD NEW`` on two cases folders, and by ``conformance record`` when it replaces
a provider's fixtures.

For each provider, each set's vocabulary is read from every recorded body and stream event: the key paths (array
indices as ``*``), the stop values, the item and event types, the values of the fields that name a kind of thing
(``ENUM_KEYS``), the usage counters. What the new set has and the old never had is listed, and so are counters that
vanished. For each entry the drift says whether the adapter reads it, body and stream alike (a key path or counter
is read when taking it out of the new recordings changes how the adapter classifies a turn; a value is read when
putting an unseen one in its place changes it; for a stop value or item type, changes the kind), and which rows'
classification moved between the two sets.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.cases import Case
from conformance.engine.forward import (
    UNSEEN,
    UNSEEN_MEMBER,
    _Event,
    _event_body,
    _event_type,
    _get,
    _has,
    _objects,
    _pattern,
    _read_stream,
    _set,
    _write_stream,
)
from conformance.engine.loop import replay_turn
from conformance.kit.adapter import Adapter, Shape


@dataclass
class Vocabulary:
    """What one provider's recordings say, each thing with the first fixture that says it."""

    paths: dict[str, str] = field(default_factory=dict)
    stops: dict[str, str] = field(default_factory=dict)
    items: dict[str, str] = field(default_factory=dict)
    events: dict[str, str] = field(default_factory=dict)
    counters: dict[str, str] = field(default_factory=dict)
    enums: dict[str, str] = field(default_factory=dict)
    """``<pattern> = <value>`` (``stream <event type>: <pattern> = <value>`` in a stream)."""


ENUM_KEYS = re.compile(r"(type|status|role|object|service_tier|modality|.*[rR]eason)")
"""Keys whose string value names a kind of thing (a block's ``type``, an item's ``status``, a ``role``, a
``finishReason``), whose new values the drift lists; the stop value and the item type are listed on their own."""


def _item_places(shape: Shape) -> list[tuple[str | None, str]]:
    """Where a stream's events carry an item, read off ``Shape.stream_item``'s templates: (event type or None, the
    item's pattern in the event's data, array indices as ``*``)."""
    places: list[tuple[str | None, str]] = []

    def walk(value: Any, pattern: str, kind: str | None) -> None:
        if value == "{item}" or (isinstance(value, dict) and "{item}" in value):
            places.append((kind, pattern))
        elif isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{pattern}/{key}", kind)
        elif isinstance(value, list):
            for inner in value:
                walk(inner, f"{pattern}/*", kind)

    for template in shape.stream_item:
        if shape.event_type == "member" and len(template) == 1:
            ((member, inner),) = template.items()
            walk(inner, "", member)
        else:
            kind = template.get(shape.event_type) if shape.event_type is not None else None
            walk(template, "", kind if isinstance(kind, str) else None)
    return places


def _item_name(item: Any, shape: Shape) -> str | None:
    name = (item.get(shape.item_type) if shape.item_type else next(iter(item), None)) if isinstance(item, dict) \
        else None
    return name if isinstance(name, str) else None


def _at(value: Any, pattern: str) -> Iterator[tuple[str, Any]]:
    """Each value at ``pattern`` (``*`` for any array index), with its pointer."""
    for pointer, found in _objects_and_values(value):
        if _pattern(pointer) == pattern:
            yield pointer, found


def _objects_and_values(value: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    yield pointer, value
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _objects_and_values(inner, f"{pointer}/{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _objects_and_values(inner, f"{pointer}/{index}")


def _enum_leaves(value: Any, skip: set[str]) -> Iterator[tuple[str, str]]:
    """(pattern, value) of every string under an ``ENUM_KEYS`` key, but at the patterns ``skip`` names."""
    for pointer, found in _leaves(value):
        key = pointer.rpartition("/")[2]
        if isinstance(found, str) and ENUM_KEYS.fullmatch(key) and _pattern(pointer) not in skip:
            yield _pattern(pointer), found


def _leaves(value: Any) -> Iterator[tuple[str, Any]]:
    """Every value in ``value`` that is not an object or an array, with its pointer."""
    return ((pointer, found) for pointer, found in _objects_and_values(value) if not isinstance(found, dict | list))


def _read_body(vocabulary: Vocabulary, body: Any, shape: Shape, where: str, prefix: str = "") -> None:
    for pointer, _ in _objects(body):
        for key in _get(body, pointer):
            vocabulary.paths.setdefault(prefix + _pattern(f"{pointer}/{key}"), where)
    if shape.stop is not None and _has(body, shape.stop) and isinstance(_get(body, shape.stop), str):
        vocabulary.stops.setdefault(_get(body, shape.stop), where)
    if shape.items is not None and _has(body, shape.items) and isinstance(_get(body, shape.items), list):
        for item in _get(body, shape.items):
            name = (item.get(shape.item_type) if shape.item_type else next(iter(item), None)) \
                if isinstance(item, dict) else None
            if isinstance(name, str):
                vocabulary.items.setdefault(name, where)
    for pattern, value in _enum_leaves(body, _named_elsewhere(shape)):
        vocabulary.enums.setdefault(f"{prefix}{pattern} = {value}", where)
    if shape.usage is not None and _has(body, shape.usage):
        for pointer, value in _leaves(_get(body, shape.usage)):
            if isinstance(value, int | float) and not isinstance(value, bool):
                vocabulary.counters.setdefault(_pattern(pointer), where)


def vocabulary(cases: Sequence[Case], provider: str, shape: Shape) -> Vocabulary:
    """The vocabulary of ``provider``'s recordings across ``cases``."""
    found = Vocabulary()
    for case in sorted(cases, key=lambda case: case.id):
        fixtures = case.providers.get(provider)
        for turn in fixtures.turns if fixtures is not None else ():
            if turn.status < 400 and turn.has_body:
                _read_body(found, turn.body, shape, turn.source)
            if turn.stream is not None:
                for event in _read_stream(turn.stream.read_text(encoding="utf-8"), turn.stream.suffix == ".jsonl"):
                    _read_event(found, event, shape, turn.stream_source)
    return found


def _read_event(vocabulary: Vocabulary, event: _Event, shape: Shape, where: str) -> None:
    kind = _event_type(event, shape) or "chunk"
    vocabulary.events.setdefault(kind, where)
    body = _event_body(event, shape)
    if not isinstance(body, dict):
        return
    for pointer, _ in _objects(body):
        for key in _get(body, pointer):
            vocabulary.paths.setdefault(f"stream {kind}: " + _pattern(f"{pointer}/{key}"), where)
    for wanted, pointer in shape.stream_stop:
        if (wanted is None or wanted == kind) and _has(body, pointer) and isinstance(_get(body, pointer), str):
            vocabulary.stops.setdefault(_get(body, pointer), where)
    for wanted, pattern in _item_places(shape):
        if wanted is None or wanted == kind:
            for _, item in _at(body, pattern):
                if (name := _item_name(item, shape)) is not None:
                    vocabulary.items.setdefault(name, where)
    for pattern, value in _enum_leaves(body, _named_elsewhere(shape, stream=True)):
        vocabulary.enums.setdefault(f"stream {kind}: {pattern} = {value}", where)


def _named_elsewhere(shape: Shape, stream: bool = False) -> set[str]:
    """The patterns of the stop value and the item type: listed as stop values and item types, not as enums."""
    if stream:
        return {_pattern(pointer) for _, pointer in shape.stream_stop} | {
            f"{pattern}/{shape.item_type}" for _, pattern in _item_places(shape) if shape.item_type}
    named = {_pattern(shape.stop)} if shape.stop else set()
    if shape.items and shape.item_type:
        named.add(_pattern(f"{shape.items}/0/{shape.item_type}"))
    return named


@dataclass(frozen=True)
class Drift:
    """One thing the new recordings carry that the old never had (or a counter they lost)."""

    provider: str
    what: str
    """``key path``, ``stop value``, ``item type``, ``event type``, ``counter`` or ``counter gone``."""
    value: str
    where: str
    """The first fixture of the new set that carries it (of the old set, for a counter gone)."""
    read: bool | None
    """Whether the adapter reads it (None: not measured, e.g. a path only streams carry)."""

    def line(self) -> str:
        """One line for the terminal and the record output."""
        reads = {True: "the adapter reads it", False: "the adapter does not read it", None: "not measured"}[self.read]
        return f"{self.provider}: new {self.what} {self.value} ({self.where}; {reads})" if self.what != "counter gone" \
            else f"{self.provider}: counter gone {self.value} (was in {self.where})"


def _without_key(body: Any, pattern: str) -> Any:
    """``body`` with every key at the object level ``pattern`` names taken out."""
    changed = copy.deepcopy(body)
    parent_pattern, _, key = pattern.rpartition("/")
    for pointer, value in _objects(changed):
        if _pattern(pointer) == parent_pattern and key in value:
            del value[key]
    return changed


def _body_is_read(adapter: Adapter, cases: Sequence[Case], provider: str, change: Callable[[Any], Any],
                  whole: bool = True) -> bool | None:
    """Whether the adapter's reading of a recorded success body moves when ``change`` (a body → the changed copy, or
    None when it has nothing to change) is applied: the whole reading (``whole``) or its kind. None: no body has what
    ``change`` changes. The body-side twin of ``_stream_is_read``."""
    seen = False
    for case in cases:
        fixtures = case.providers.get(provider)
        for turn in fixtures.turns if fixtures is not None else ():
            changed = change(turn.body) if turn.status < 400 and turn.has_body else None
            if changed is None:
                continue
            seen = True
            try:
                before, after = adapter.classify_body(turn.body), adapter.classify_body(changed)
            except Exception:  # noqa: BLE001 - an adapter that breaks without it, or on the unseen value, reads it
                return True
            if (_reading(before) != _reading(after)) if whole else (before.kind != after.kind):
                return True
    return False if seen else None


def _key_is_read(adapter: Adapter, cases: Sequence[Case], provider: str, pattern: str) -> bool | None:
    if pattern.startswith("stream "):
        return None
    def without(body: Any) -> Any:
        carries = any(_pattern(f"{pointer}/{key}") == pattern for pointer, value in _objects(body) for key in value)
        return _without_key(body, pattern) if carries else None

    return bool(_body_is_read(adapter, cases, provider, without))


def _value_is_read(adapter: Adapter, cases: Sequence[Case], provider: str, shape: Shape, what: str,
                   value: str) -> bool | None:
    """A stop value or item type is read when the adapter tells it from an unseen one: put ``future_release`` in its
    place in a turn that carries it, and the turn's kind changes (None: no body carries it)."""
    return _body_is_read(adapter, cases, provider, lambda body: _swapped(body, shape, what, value), whole=False)


def _swapped(body: Any, shape: Shape, what: str, value: str) -> Any:
    """``body`` with ``value`` (a stop value or an item type) replaced by an unseen one; None when it lacks it."""
    changed = copy.deepcopy(body)
    if what == "stop value":
        if shape.stop is None or not _has(changed, shape.stop) or _get(changed, shape.stop) != value:
            return None
        _set(changed, shape.stop, UNSEEN)
        return changed
    listed = _get(changed, shape.items) if shape.items is not None and _has(changed, shape.items) else None
    items: list[Any] = listed if isinstance(listed, list) else []
    found = False
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        if shape.item_type is not None and item.get(shape.item_type) == value:
            item[shape.item_type], found = UNSEEN, True
        elif shape.item_type is None and value in item and len(item) == 1:
            items[index], found = {UNSEEN_MEMBER: item[value]}, True
    return changed if found else None


def _stream_is_read(adapter: Adapter, cases: Sequence[Case], provider: str, shape: Shape,
                    change: Callable[[_Event], bool], whole: bool = True) -> bool | None:
    """Whether the adapter's reading of a recorded stream moves when ``change`` (which says whether it changed the
    event) is applied to every event of it: the whole response (``whole``) or its kind. None: no stream has what
    ``change`` changes, or the adapter reads no streams."""
    if adapter.assemble_stream is None:
        return None
    seen = False
    for case in cases:
        fixtures = case.providers.get(provider)
        for turn in fixtures.turns if fixtures is not None else ():
            if turn.status >= 400 or turn.stream is None:
                continue
            jsonl = turn.stream.suffix == ".jsonl"
            events = _read_stream(turn.stream.read_text(encoding="utf-8"), jsonl)
            changed = copy.deepcopy(events)
            if not [event for event in changed if change(event)]:
                continue
            seen = True
            try:
                before, after = (adapter.assemble_stream([_write_stream(each, jsonl).encode()]).response
                                 for each in (events, changed))
            except Exception:  # noqa: BLE001 - an adapter that breaks without it, or on the unseen value, reads it
                return True
            if (_reading(before) != _reading(after)) if whole else (before.kind != after.kind):
                return True
    return False if seen else None


def _reading(response: Any) -> str:
    return json.dumps(response.to_dict(), sort_keys=True, default=str)


def _stream_change(shape: Shape, what: str, value: str) -> Callable[[_Event], bool]:
    """The change that tells whether the adapter reads ``value`` in a stream: a key path (``stream <event type>:
    <pattern>``) taken out, or a stop value, item type or enum value (``stream <event type>: <pattern> = <value>``)
    replaced by an unseen one. The change says whether it changed the event."""
    def change(event: _Event) -> bool:
        body = _event_body(event, shape)
        if not isinstance(body, dict):
            return False
        kind = _event_type(event, shape) or "chunk"
        if what in ("key path", "enum value"):
            return _path_change(body, kind, what, value)
        if what == "stop value":
            places = [pointer for wanted, pointer in shape.stream_stop if (wanted is None or wanted == kind)
                      and _has(body, pointer) and _get(body, pointer) == value]
            for pointer in places:
                _set(body, pointer, UNSEEN)
            return bool(places)
        return _item_change(body, kind, shape, value)
    return change


def _path_change(body: dict[str, Any], kind: str, what: str, value: str) -> bool:
    where, _, enum = value.partition(" = ")
    wanted, _, pattern = where.removeprefix("stream ").partition(": ")
    parent_pattern, _, key = pattern.rpartition("/")
    hits = [found for pointer, found in _objects_and_values(body) if wanted == kind
            and _pattern(pointer) == parent_pattern and isinstance(found, dict) and key in found
            and (what == "key path" or found[key] == enum)]
    for found in hits:
        if what == "key path":
            del found[key]
        else:
            found[key] = UNSEEN
    return bool(hits)


def _item_change(body: dict[str, Any], kind: str, shape: Shape, value: str) -> bool:
    done = False
    for wanted, pattern in _item_places(shape):
        for pointer, item in list(_at(body, pattern)) if wanted is None or wanted == kind else ():
            if _item_name(item, shape) != value:
                continue
            if shape.item_type is not None:
                item[shape.item_type] = UNSEEN
            else:
                _set(body, pointer, {UNSEEN_MEMBER: item[value], **{k: v for k, v in item.items() if k != value}})
            done = True
    return done


def _body_enum_is_read(adapter: Adapter, cases: Sequence[Case], provider: str, value: str) -> bool | None:
    """A body's enum value (``<pattern> = <value>``) is read when an unseen one in its place changes the reading."""
    pattern, _, enum = value.partition(" = ")
    parent_pattern, _, key = pattern.rpartition("/")

    def swapped(body: Any) -> Any:
        changed = copy.deepcopy(body)
        hits = [found for pointer, found in _objects_and_values(changed) if _pattern(pointer) == parent_pattern
                and isinstance(found, dict) and found.get(key) == enum]
        for found in hits:
            found[key] = UNSEEN
        return changed if hits else None

    return _body_is_read(adapter, cases, provider, swapped)


def drift(old: Sequence[Case], new: Sequence[Case], provider: str, adapter: Adapter) -> list[Drift]:
    """What ``new``'s recordings of ``provider`` carry that ``old``'s never had, and the counters they lost."""
    shape = adapter.wire.shape if adapter.wire is not None else None
    if shape is None:
        return []
    return drift_from(vocabulary(old, provider, shape), new, provider, adapter)


def drift_from(before: Vocabulary, new: Sequence[Case], provider: str, adapter: Adapter) -> list[Drift]:
    """``drift`` against a vocabulary read before (``conformance record`` reads the old recordings' before it
    replaces them)."""
    shape = adapter.wire.shape if adapter.wire is not None else None
    if shape is None:
        return []
    after = vocabulary(new, provider, shape)
    out: list[Drift] = []
    for what, mine, theirs in (("key path", after.paths, before.paths), ("stop value", after.stops, before.stops),
                               ("item type", after.items, before.items), ("event type", after.events, before.events),
                               ("enum value", after.enums, before.enums), ("counter", after.counters, before.counters)):
        for value in sorted(set(mine) - set(theirs)):
            read: bool | None
            if value.startswith("stream ") and what in ("key path", "enum value"):
                read = _stream_is_read(adapter, new, provider, shape, _stream_change(shape, what, value))
            elif what in ("key path", "counter"):
                pattern = value if what == "key path" else f"{shape.usage}{value}"
                read = _key_is_read(adapter, new, provider, _pattern(pattern))
            elif what == "event type":
                read = None  # an event type has no place to take it out of: the event.unseen mutants ask that
            elif what == "enum value":
                read = _body_enum_is_read(adapter, new, provider, value)
            else:
                read = _value_is_read(adapter, new, provider, shape, what, value)
                if read is None:  # only streams carry it
                    read = _stream_is_read(adapter, new, provider, shape, _stream_change(shape, what, value),
                                           whole=False)
            out.append(Drift(provider, what, value, mine[value], read))
    out += [Drift(provider, "counter gone", value, before.counters[value], None)
            for value in sorted(set(before.counters) - set(after.counters))]
    return out


def moved_rows(old: Sequence[Case], new: Sequence[Case], provider: str, adapter: Adapter) -> list[str]:
    """The turns, by case and mode, whose classification differs between the two sets (same case ids)."""
    by_id = {case.id: case for case in old}
    lines = []
    for case in sorted(new, key=lambda case: case.id):
        was = by_id.get(case.id)
        if was is None or provider not in case.providers or provider not in was.providers:
            continue
        for mode in ("body", "stream"):
            pairs = zip(was.providers[provider].turns, case.providers[provider].turns, strict=False)
            for number, (old_turn, new_turn) in enumerate(pairs, start=1):
                if not (old_turn.replayable(mode) and new_turn.replayable(mode)):
                    continue
                try:
                    a, b = replay_turn(adapter, old_turn, mode)[0], replay_turn(adapter, new_turn, mode)[0]
                except Exception as error:  # noqa: BLE001 - the adapter's exception is a finding, named
                    lines.append(f"{provider}: {case.id} turn {number} ({mode}): the adapter raised "
                                 f"{type(error).__name__}: {str(error)[:200]}")
                    continue
                if (a.kind, a.raw) != (b.kind, b.raw):
                    lines.append(f"{provider}: {case.id} turn {number} ({mode}): {a.kind} ({a.raw}) → {b.kind} "
                                 f"({b.raw})")
    return lines
