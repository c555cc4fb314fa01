"""The tests' own task set (``tests/frozen_cases``, docs/decisions.md) is pinned by a syrupy snapshot of what each
of its fixtures reads as: most tests only need some cases to run, so without this a changed token count, call id
or stop reason in a frozen fixture would fail nothing. A deliberate change is reviewed with ``--snapshot-update``."""

from __future__ import annotations

from typing import Any

from syrupy.assertion import SnapshotAssertion

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import run_all
from tests.helpers import CASES

# What a turn's fixture decides; the rest of a turn record (its request reading aside) is derived from these.
TURN_FACTS = ("fixture", "http_status", "kind", "reason", "raw", "raw_type", "calls", "text", "usage", "raw_usage",
              "response_id", "model", "stream")


def _reading(row: dict[str, Any]) -> dict[str, Any]:
    turns = [{**{name: turn[name] for name in TURN_FACTS if name in turn},
              "request": (turn.get("request") or {}).get("sha256")} for turn in row["turns"]]
    return {"outcome": row["outcome"], "passed": row["passed"], "usage": row["usage"], "turns": turns}


def test_every_frozen_fixture_reads_as_reviewed(snapshot: SnapshotAssertion) -> None:
    rows = run_all(load_cases([CASES]), builtin_adapters())
    readings = {f"{row['case']} {row['provider']} {row['mode']}": _reading(row) for row in rows}
    assert len(readings) == len(rows)  # one reading per row: no two rows share a key
    assert all(row["passed"] for row in rows), [key for key, value in readings.items() if not value["passed"]]
    assert readings == snapshot
