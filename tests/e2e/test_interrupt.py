"""Ctrl-C during a run leaves the previous reports intact and exits non-zero."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CASES
from tests.slow_adapter import wait_until_started

# End-to-end: it starts processes, builds wheels, runs gates or a browser (pytest -m "not e2e" skips it).
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parent.parent.parent


def test_an_interrupted_run_keeps_the_previous_reports(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    previous = {name: f"previous {name}\n" for name in ("report.json", "report.md", "report.html")}
    for name, text in previous.items():
        (reports / name).write_text(text)
    process = subprocess.Popen(
        [sys.executable, "-m", "conformance", "run", "--cases", str(CASES), "--report-dir", str(reports),
         "--adapter", "tests.slow_adapter:ADAPTER", "--provider", "openai-chat"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "SLOW_ADAPTER_STARTED": str(tmp_path / "started")},
        # A shell starts background jobs with Ctrl-C ignored, and Python keeps an inherited "ignore": give the
        # run the default disposition, as a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_until_started(tmp_path / "started")
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert "interrupted: no report was written" in stderr and "Traceback" not in stderr
    assert {path.name: path.read_text() for path in reports.iterdir()} == previous
