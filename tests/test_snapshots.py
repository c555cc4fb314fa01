"""One syrupy snapshot per case × provider of the normalized classification, each mode in it; a stream that
classifies exactly like its body twin is written ``"same as body"`` (tests/test_stream_parity.py proves the
parity), so a stream shows up in full only where it differs.

A changed stop reason, call id or usage count shows up here as a readable diff; review it, then accept
it with ``pytest --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from conformance.cases import load_cases
from conformance.registry import builtin_adapters
from conformance.runner import modes_for, run_case
from conformance.snapshot import folded_rows
from tests.helpers import CASES

ADAPTERS = builtin_adapters()
CASE = {case.id: case for case in load_cases([CASES])}
ITEMS = [
    pytest.param(case_id, provider, id=f"{case_id}-{provider}")
    for case_id, case in sorted(CASE.items())
    for provider in sorted(case.providers)
    if provider in ADAPTERS
]


@pytest.fixture
def json_snapshot(snapshot: Any) -> Any:
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize(("case_id", "provider"), ITEMS)
def test_classification_matches_the_reviewed_snapshot(case_id: str, provider: str, json_snapshot: Any) -> None:
    case, adapter = CASE[case_id], ADAPTERS[provider]
    rows = {mode: run_case(case, provider, adapter, mode) for mode in modes_for(case, provider, adapter)}
    assert folded_rows(rows) == json_snapshot


def test_no_stale_snapshot_files_are_left_behind() -> None:
    """A snapshot whose case × provider × mode no longer runs is stale: remove it with --snapshot-update."""
    folder = Path(__file__).parent / "__snapshots__" / "test_snapshots"
    stored = {path.name for path in folder.glob("*.json")}
    expected = {f"test_classification_matches_the_reviewed_snapshot[{item.id}].json" for item in ITEMS}
    assert stored - expected == set(), "stale snapshots; run pytest --snapshot-update to remove them"
