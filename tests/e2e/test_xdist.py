"""pytest writes the same report.json with and without pytest-xdist: workers hand rows to the controller."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import modes_for
from tests.helpers import CASES

# End-to-end: it starts processes, builds wheels, runs gates or a browser (pytest -m "not e2e" skips it).
pytestmark = pytest.mark.e2e


def run_pytest(cases: Path, report: Path, *extra: str) -> str:
    # The inner session is no xdist worker, though this test may run in one (syrupy reads the variables).
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_XDIST")}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(cases), f"--conformance-cases={cases}",
         f"--conformance-report={report}", *extra],
        capture_output=True, text=True, cwd=cases.parent, check=False, env=env)
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-2000:]
    return completed.stdout


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    """The tests' cases, copied, with their snapshots written by a serial run (the copy keeps none)."""
    copy = tmp_path / "cases"
    shutil.copytree(CASES, copy)
    run_pytest(copy, tmp_path / "first", "--snapshot-update")
    return copy


def test_report_is_byte_identical_with_two_workers(tmp_path: Path, cases: Path) -> None:
    run_pytest(cases, tmp_path / "serial")
    checked = run_pytest(cases, tmp_path / "parallel", "-n", "2")
    assert " snapshots passed." in checked  # the workers checked every item's snapshots too
    serial = (tmp_path / "serial/report.json").read_bytes()
    assert serial == (tmp_path / "parallel/report.json").read_bytes()
    expected = sum(len(modes_for(case, provider, adapter)) for case in load_cases([CASES])
                   for provider, adapter in builtin_adapters().items() if provider in case.providers)
    assert json.loads(serial)["summary"]["rows"] == expected > 0


def test_report_from_pytest_equals_the_one_from_conformance_run(tmp_path: Path, cases: Path) -> None:
    run_pytest(cases, tmp_path / "pytest")
    subprocess.run([sys.executable, "-m", "conformance", "run", "--cases", str(cases), "--report-dir",
                    str(tmp_path / "cli")],
                   capture_output=True, cwd=cases.parent, check=False)
    assert (tmp_path / "pytest/report.json").read_bytes() == (tmp_path / "cli/report.json").read_bytes()
