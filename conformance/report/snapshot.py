"""The normalized classification of one report row (what a reviewer must see change, and nothing else), and the
snapshot files the pytest case items check it against."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from filelock import FileLock

from conformance.engine.rows import Mode, Row
from conformance.errors import InputError, Problem
from conformance.report.files import write_atomic

SAME_AS_BODY = "same as body"

TURN_KEYS = ("kind", "reason", "source", "raw", "raw_type", "http_status", "retry_after_s", "detail")


def normalized_row(row: Row) -> dict[str, Any]:
    """Kinds, reasons, raw values, call ids and names, usage, correlation and outcome; no raw bodies."""
    turns = []
    for turn in row["turns"]:
        fields: Mapping[str, Any] = turn  # read by name: TURN_KEYS are Turn's
        entry = {key: fields[key] for key in TURN_KEYS if fields.get(key) is not None}
        entry["calls"] = [
            {"call_id": call["call_id"], "name": call["name"], "synthesized_id": call["synthesized_id"]}
            for call in turn["calls"]
        ]
        entry["usage"] = turn["usage"]
        turns.append(entry)
    correlation: Mapping[str, Any] = row["correlation"] or {}
    return {
        "case": row["case"],
        "provider": row["provider"],
        "mode": row["mode"],
        "outcome": row["outcome"],
        "passed": row["passed"],
        **({"waived": row["waived"]["why"]} if row.get("waived") else {}),
        "turns": turns,
        "correlation": {key: correlation.get(key) for key in ("calls", "results", "matched", "problems")},
        "usage": row["usage"],
    }


# ---- Snapshot files of the pytest case items ---------------------------------------------------------------------

SNAPSHOT_FOLDER = "__snapshots__"
"""Beside the cases: ``<cases folder>/__snapshots__/<case id>/<provider>.json``, one mode per key."""


def snapshot_file(root: Path, case_id: str, provider: str) -> Path:
    """Where one case × provider's reviewed classification lives."""
    return root / SNAPSHOT_FOLDER / case_id / f"{provider}.json"


def request_file(root: Path, case_id: str, provider: str) -> Path:
    """Where one case × provider's reviewed requests live, beside its classification."""
    return root / SNAPSHOT_FOLDER / case_id / f"{provider}.requests.json"


def request_entry(requests: list[dict[str, Any]]) -> dict[str, Any]:
    """The requests of one row as a snapshot entry: whole, one key per turn (``turn 1``, ``turn 2``, ...)."""
    # Through JSON, as the file will hold it: a tuple or a non-string key would otherwise never equal the file.
    entry: dict[str, Any] = json.loads(json.dumps(raw_request_entry(requests), ensure_ascii=False))
    return entry


def raw_request_entry(requests: list[dict[str, Any]]) -> dict[str, Any]:
    """``request_entry`` before its trip through JSON: the same requests, as the adapter built them."""
    return {f"turn {index}": request for index, request in enumerate(requests, start=1)}


def entry_of(row: Row) -> dict[str, Any]:
    """One row's snapshot entry: its normalized classification without the mode (the key says it)."""
    return {key: value for key, value in normalized_row(row).items() if key != "mode"}


def read_snapshot(path: Path) -> dict[str, Any] | None:
    """The stored entries by mode, or None when there is no snapshot file."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as error:
        raise InputError([Problem(str(path), None, f"not a snapshot: {error}",
                                  "delete it and run pytest --snapshot-update")]) from None
    return stored if isinstance(stored, dict) else None


def expected_entry(stored: Mapping[str, Any], mode: Mode) -> Any:
    """The reviewed entry of ``mode``, ``"same as body"`` resolved; None when the mode has none."""
    entry = stored.get(mode)
    return stored.get("body") if entry == SAME_AS_BODY else entry


def folded(stored: Mapping[str, Any], mode: str, entry: Any) -> dict[str, Any]:
    """``stored`` with ``entry`` as ``mode``'s: a stream entry equal to the body entry is ``"same as body"``; replacing
    the body first spells out the entries that pointed at the old one, so the result is the same whichever mode is
    written first (pytest-xdist workers share a file)."""
    result = dict(stored)
    if mode == "body":
        result = {other: result.get("body") if value == SAME_AS_BODY else value for other, value in result.items()}
        result["body"] = entry
        return {other: SAME_AS_BODY if other != "body" and value == entry else value
                for other, value in result.items()}
    result[mode] = SAME_AS_BODY if entry == result.get("body") else entry
    return result


def write_entry(path: Path, mode: str, entry: dict[str, Any]) -> bool:
    """Store ``entry`` for ``mode`` (``folded``) under the file's lock; True when the file changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with snapshot_lock(path):
        stored = read_snapshot(path) or {}
        updated = folded(stored, mode, entry)
        text = json.dumps(dict(sorted(updated.items())), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        changed = json.dumps(updated, sort_keys=True) != json.dumps(stored, sort_keys=True)
        if changed:
            write_atomic(path, text)
    return changed


LOCKS = "conformance-locks"
"""The folder under the system's temporary directory holding the snapshot locks (nothing in the user's tree to commit
by accident, nothing loose in the temporary directory)."""


def snapshot_lock(path: Path) -> FileLock:
    """The lock of a snapshot file: one per case folder of snapshots (``__snapshots__/<case>/``), so that two processes
    (xdist workers) never write one file at once, with one lock file per case rather than per file. Lock files stay
    (removing one another process waits on would let a third take a fresh one at the same time) in one folder."""
    digest = hashlib.sha256(str(path.resolve().parent).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / LOCKS
    folder.mkdir(exist_ok=True)
    return FileLock(str(folder / f"{digest}.lock"))


def differences(old: Any, new: Any) -> list[str]:
    """Every leaf that differs, one line each, named as a reader says it (``turn 2 › kind: 'text' → 'empty'``), in
    the order of the tree (keys sorted). DeepDiff finds them; it is imported only when there is a difference."""
    if old == new:  # the common case, in C
        return []
    from deepdiff import DeepDiff  # noqa: PLC0415 - a third of the suite's import time, needed only here

    lines = []
    for report, levels in DeepDiff(old, new, view="tree", verbose_level=2).items():
        for level in levels:
            path = tuple(level.path(output_format="list"))
            if report.endswith("_added"):
                lines.append((path, f"{_where(path)}: (new) → {_shown(level.t2)}"))
            elif report.endswith("_removed"):
                lines.append((path, f"{_where(path)}: {_shown(level.t1)} → (gone)"))
            else:
                lines.append((path, f"{_where(path)}: {_shown(level.t1)} → {_shown(level.t2)}"))
    return [line for _, line in sorted(lines, key=lambda pair: tuple((isinstance(step, int), str(step).zfill(12)
                                                                      if isinstance(step, int) else str(step))
                                                                     for step in pair[0]))]


def _where(path: tuple[Any, ...]) -> str:
    """``("turns", 1, "kind")`` → ``turn 2 › kind``; the root → ``(whole entry)``."""
    steps: list[str] = []
    for index, step in enumerate(path):
        if isinstance(step, int):
            key = path[index - 1] if index else ""
            singular = {"turns": "turn", "calls": "call"}.get(str(key))
            shown = f"{singular} {step + 1}" if singular else f"{key}[{step}]"
            if steps:
                steps[-1] = shown
            else:
                steps.append(shown)
        else:
            steps.append(str(step))
    return " › ".join(steps) or "(whole entry)"


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 200 else text[:197] + "..."
