"""Wire drift: what a new set of recordings carries that the provider's previous set never had (docs/record.md,
"Drift"). Run by ``conformance drift OLD NEW`` on two cases folders, and by ``conformance record`` when it replaces
a provider's fixtures.

For each provider, each set's vocabulary is read from every recorded body and stream event: the key paths (array
indices as ``*``), the stop values, the item and event types, the usage counters. What the new set has and the old
never had is listed, and so are counters that vanished. For each entry the drift says whether the adapter reads it
(a key path or counter is read when taking it out of the new recordings changes how the adapter classifies a
turn; a stop value or item type is read when putting an unseen one in its place changes the kind), and which rows'
classification moved between the two sets.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.cases import Case
from conformance.engine.forward import (
    UNSEEN,
    UNSEEN_MEMBER,
    _event_body,
    _event_type,
    _get,
    _has,
    _objects,
    _pattern,
    _read_stream,
    _set,
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


def _leaves(value: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{pointer}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{pointer}/{index}")
    else:
        yield pointer, value


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
                events = _read_stream(turn.stream.read_text(encoding="utf-8"), turn.stream.suffix == ".jsonl")
                for event in events:
                    kind = _event_type(event, shape) or "chunk"
                    found.events.setdefault(kind, turn.stream_source)
                    body = _event_body(event, shape)
                    if isinstance(body, dict):
                        for pointer, _ in _objects(body):
                            for key in _get(body, pointer):
                                found.paths.setdefault(f"stream {kind}: " + _pattern(f"{pointer}/{key}"),
                                                       turn.stream_source)
                        for wanted, pointer in shape.stream_stop:
                            if (wanted is None or wanted == kind) and _has(body, pointer) and isinstance(
                                    _get(body, pointer), str):
                                found.stops.setdefault(_get(body, pointer), turn.stream_source)
    return found


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


def _classified(adapter: Adapter, body: Any) -> str:
    return json.dumps(adapter.classify_body(body).to_dict(), sort_keys=True, default=str)


def _without_key(body: Any, pattern: str) -> Any:
    """``body`` with every key at the object level ``pattern`` names taken out."""
    changed = copy.deepcopy(body)
    parent_pattern, _, key = pattern.rpartition("/")
    for pointer, value in _objects(changed):
        if _pattern(pointer) == parent_pattern and key in value:
            del value[key]
    return changed


def _key_is_read(adapter: Adapter, cases: Sequence[Case], provider: str, pattern: str) -> bool | None:
    if pattern.startswith("stream "):
        return None
    for case in cases:
        fixtures = case.providers.get(provider)
        for turn in fixtures.turns if fixtures is not None else ():
            if turn.status >= 400 or not turn.has_body or not any(
                    _pattern(f"{pointer}/{key}") == pattern for pointer, value in _objects(turn.body) for key in value):
                continue
            try:
                if _classified(adapter, turn.body) != _classified(adapter, _without_key(turn.body, pattern)):
                    return True
            except Exception:  # noqa: BLE001 - an adapter that breaks without the key reads it
                return True
    return False


def _value_is_read(adapter: Adapter, cases: Sequence[Case], provider: str, shape: Shape, what: str,
                   value: str) -> bool | None:
    """A stop value or item type is read when the adapter tells it from an unseen one: put ``future_release`` in its
    place in a turn that carries it, and the turn's kind changes (None: no body carries it)."""
    seen = False
    for case in cases:
        fixtures = case.providers.get(provider)
        for turn in fixtures.turns if fixtures is not None else ():
            if turn.status >= 400 or not turn.has_body:
                continue
            swapped = _swapped(turn.body, shape, what, value)
            if swapped is None:
                continue
            seen = True
            try:
                if adapter.classify_body(turn.body).kind != adapter.classify_body(swapped).kind:
                    return True
            except Exception:  # noqa: BLE001 - an adapter that breaks on the unseen value tells them apart
                return True
    return False if seen else None


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
                               ("counter", after.counters, before.counters)):
        for value in sorted(set(mine) - set(theirs)):
            if what in ("key path", "counter"):
                pattern = value if what == "key path" else f"{shape.usage}{value}"
                read = _key_is_read(adapter, new, provider, _pattern(pattern))
            elif what == "event type":
                read = None
            else:
                read = _value_is_read(adapter, new, provider, shape, what, value)
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
