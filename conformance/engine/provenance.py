"""Where each recording came from, and how old it is (docs/record.md, "Provenance and age").

``conformance record`` writes a sidecar, ``provenance.json``, into each provider folder it records: per turn file,
when it was recorded, against which model id, the class of the upstream's host (``loopback`` or ``remote``: never
the host, a key or an account), with which client and which suite version. Fixtures written by hand say so, in the
provider folder's sidecar or, for a whole cases folder, in ``<cases>/provenance.json``::

    {"hand_written": true, "why": "written from the vendor's documented shapes"}

The loader checks each sidecar (``check``); ``conformance validate --max-age DAYS`` fails on recordings older than
that; the report records the oldest recording per provider (``ages``).
"""

from __future__ import annotations

import datetime as dt
import functools
import ipaddress
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from conformance.kit.jsontext import parse_json

SIDECAR = "provenance.json"
ENTRY_KEYS = {"recorded_at", "model", "host", "client", "suite"}
OPTIONAL_KEYS = {"served_model"}
"""The model id the response named, when the API's responses name one (``Shape.model``) and it differs from the
requested ``model`` (an alias resolved to a dated snapshot)."""
HOST_CLASSES = ("loopback", "remote")


def host_class(url: str) -> str:
    """``loopback`` for 127.0.0.1, ::1 and localhost, else ``remote``: the host itself is not kept."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return "loopback"
    try:
        return "loopback" if ipaddress.ip_address(host).is_loopback else "remote"
    except ValueError:
        return "remote"


def entry(model: str, upstream: str, client: str, suite: str, now: dt.datetime | None = None) -> dict[str, str]:
    """One recorded turn's provenance."""
    when = (now or dt.datetime.now(dt.UTC)).replace(microsecond=0)
    return {"recorded_at": when.isoformat().replace("+00:00", "Z"), "model": model, "host": host_class(upstream),
            "client": client, "suite": suite}


def served_model(name: str, data: bytes, pointers: Iterable[str]) -> str | None:
    """The model id a recorded turn file names at one of ``pointers`` (``Shape.model``): in a body, or in the first
    stream event (a ``.sse`` data line or a ``.jsonl`` line) that has it; None when none does."""
    text = data.decode("utf-8", errors="replace")
    if name.endswith(".sse"):
        values = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    elif name.endswith(".jsonl"):
        values = text.splitlines()
    else:
        values = [text]
    for raw in values:
        try:
            value = parse_json(raw)
        except ValueError:
            continue
        for pointer in pointers:
            found: Any = value
            for token in pointer.split("/")[1:]:
                found = found.get(token) if isinstance(found, dict) else None
            if isinstance(found, str) and found:
                return found
    return None


def parse_time(value: Any) -> dt.datetime | None:
    """An ISO 8601 UTC time (``2026-12-02T06:40:00Z``), or None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(dt.UTC) if parsed.tzinfo is not None else None


def read(path: Path) -> Any:
    """A sidecar's JSON value (ValueError when it is not JSON or nests too deep: ``kit.jsontext.parse_json``)."""
    return parse_json(path.read_text(encoding="utf-8"))


def check(path: Path, turn_files: Iterable[str], problem: Callable[[str, str, str], None]) -> dict[str, Any] | None:
    """The sidecar at ``path`` when it is well formed; else None, each problem reported as (pointer, what, fix).
    ``turn_files``: the provider folder's turn files, which every entry must name."""
    try:
        document = read(path)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        problem("", f"{path.name} is not JSON ({error})", "write it as conformance record does, or remove it")
        return None
    if not isinstance(document, dict):
        problem("", f"{path.name} is not an object", 'write {"turns": {...}} or {"hand_written": true, "why": "..."}')
        return None
    if document.get("hand_written") is True:
        if not isinstance(document.get("why"), str) or not document["why"].strip():
            problem("/why", "a hand-written fixture set says why (where its shapes come from)",
                    'add "why": "written from the vendor\'s documented shapes"')
            return None
        return document
    turns = document.get("turns")
    if not isinstance(turns, dict):
        problem("/turns", "no turns: a sidecar lists each recorded turn file, or says hand_written",
                'write {"turns": {"turn1.json": {...}}} or {"hand_written": true, "why": "..."}')
        return None
    known = set(turn_files)
    found = False
    for name, value in turns.items():
        pointer = f"/turns/{name.replace('~', '~0').replace('/', '~1')}"
        if name not in known:
            problem(pointer, f"names {name}, which is not a turn file of this folder",
                    "remove the entry, or record the turn again")
            found = True
            continue
        if not isinstance(value, dict) or not ENTRY_KEYS <= set(value) <= ENTRY_KEYS | OPTIONAL_KEYS \
                or parse_time(value.get("recorded_at")) is None or value.get("host") not in HOST_CLASSES \
                or not all(isinstance(value[key], str) for key in value):
            problem(pointer, f"is not a provenance entry ({', '.join(sorted(ENTRY_KEYS))}, and optionally "
                    f"{', '.join(sorted(OPTIONAL_KEYS))}, each a string; recorded_at an ISO 8601 UTC time; host "
                    f"{' or '.join(HOST_CLASSES)})", "write it as conformance record does")
            found = True
    return None if found else document


def file_provenance(path: Path, sidecar_of: Callable[[Path], Mapping[str, Any] | None] | None = None) -> str:
    """What is known of one fixture file's origin: ``hand_written``, its ``recorded_at`` time, or "" (unknown).
    ``sidecar_of`` reads a folder's sidecar (``folder_sidecar``, or a cache of it over many files)."""
    sidecar = (sidecar_of or folder_sidecar)(path.parent)
    if sidecar is None:
        return ""
    if sidecar.get("hand_written") is True:
        return "hand_written"
    turns = sidecar.get("turns")
    value = turns.get(path.name) if isinstance(turns, dict) else None
    when = parse_time(value.get("recorded_at")) if isinstance(value, dict) else None
    return when.isoformat().replace("+00:00", "Z") if when is not None else ""


def provenance_of(cases: Iterable[Any], ran: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Per fixture file the (case id, lane) pairs ran on, as reports show it, its ``file_provenance``."""
    from conformance.engine.fixtures import fixture_paths  # noqa: PLC0415 - fixtures' loader imports this module

    sidecar_of = functools.lru_cache(maxsize=None)(folder_sidecar)  # each folder's sidecar read once, not per file
    return {shown: file_provenance(path, sidecar_of) for shown, path in fixture_paths(cases, ran).items()}


def ages(provenance: Mapping[str, str], now: dt.datetime | None = None) -> dict[str, dict[str, Any]]:
    """The oldest recording per provider folder (the folder's name), from each fixture file's provenance
    (``provenance_of``): ``oldest`` (its time, None when none is known), ``days`` (its age), ``recorded`` (files with
    a recorded time), ``hand_written``, ``unknown``. Empty when no file has any provenance."""
    now = now or dt.datetime.now(dt.UTC)
    out: dict[str, dict[str, Any]] = {}
    for shown, known in sorted(provenance.items()):
        slot = out.setdefault(Path(shown).parent.name, {"oldest": None, "days": None, "recorded": 0,
                                                        "hand_written": 0, "unknown": 0})
        when = parse_time(known)
        if known == "hand_written":
            slot["hand_written"] += 1
        elif when is None:
            slot["unknown"] += 1
        else:
            slot["recorded"] += 1
            spelled = when.isoformat().replace("+00:00", "Z")
            if slot["oldest"] is None or when < parse_time(slot["oldest"]):  # type: ignore[operator]
                slot["oldest"], slot["days"] = spelled, (now - when).days
    return dict(sorted(out.items())) if any(provenance.values()) else {}


def merged_ages(parts: Iterable[Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The ``ages`` of shards of one run (their cases, so their files, apart) as the whole run's."""
    out: dict[str, dict[str, Any]] = {}
    for part in parts:
        for provider, age in (part.items() if isinstance(part, Mapping) else ()):
            if not isinstance(age, Mapping):
                continue  # not what this version writes: left out rather than guessed at
            slot = out.setdefault(str(provider), {"oldest": None, "days": None, "recorded": 0, "hand_written": 0,
                                                  "unknown": 0})
            for name in ("recorded", "hand_written", "unknown"):
                count = age.get(name)
                slot[name] += count if isinstance(count, int) and not isinstance(count, bool) else 0
            when = parse_time(age.get("oldest"))
            if when is not None and (slot["oldest"] is None or when < parse_time(slot["oldest"])):  # type: ignore[operator]
                slot["oldest"] = when.isoformat().replace("+00:00", "Z")
                slot["days"] = age.get("days") if isinstance(age.get("days"), int) else None
    return dict(sorted(out.items()))


def folder_sidecar(folder: Path) -> Mapping[str, Any] | None:
    """The sidecar that applies to a provider folder: its own, else its cases folder's (the nearest folder above it
    with a ``world.yaml``), if any and readable."""
    roots = [parent for parent in folder.parents if (parent / "world.yaml").is_file()][:1]
    for candidate in (folder / SIDECAR, *(root / SIDECAR for root in roots)):
        if candidate.is_file():
            try:
                value = read(candidate)
            except (OSError, ValueError):
                return None
            return value if isinstance(value, dict) else None
    return None


def too_old(files: Iterable[str], max_age_days: int, now: dt.datetime | None = None) -> list[tuple[str, int, str]]:
    """The recorded turn files older than ``max_age_days``: (path, age in days, recorded_at), oldest first."""
    now = now or dt.datetime.now(dt.UTC)
    old = []
    for name in files:
        path = Path(name)
        sidecar = folder_sidecar(path.parent)
        turns: dict[str, Any] = sidecar["turns"] if sidecar is not None and isinstance(sidecar.get("turns"),
                                                                                        dict) else {}
        value = turns.get(path.name)
        when = parse_time(value.get("recorded_at")) if isinstance(value, dict) else None
        if when is not None and ((now - when).days > max_age_days or when > now + dt.timedelta(days=1)):
            old.append((name, (now - when).days, when.isoformat().replace("+00:00", "Z")))
    return sorted(old, key=lambda item: (-item[1], item[0]))
