"""Every deliberately broken cases folder gives its documented one-line message and exit 2, never a
traceback, and `run` writes no report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import cli

BROKEN = Path(__file__).parent / "broken_cases"
EXPECTED = json.loads((BROKEN / "expected.json").read_text())
FOLDERS = sorted(BROKEN / name for name in EXPECTED)


def test_every_broken_folder_has_an_expectation() -> None:
    assert sorted(path.name for path in BROKEN.iterdir() if path.is_dir()) == sorted(EXPECTED)
    assert len(EXPECTED) >= 18


@pytest.mark.parametrize("folder", FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_broken_folder_exits_2_with_its_message(folder: Path, tmp_path: Path) -> None:
    expected = EXPECTED[folder.name]
    for command in expected["commands"]:
        report_dir = tmp_path / command
        extra = ["--report-dir", str(report_dir)] if command == "run" else []
        completed = cli(command, "--cases", str(folder), *expected["args"], *extra, cwd=BROKEN)
        assert completed.returncode == 2, (command, completed.stdout[-500:], completed.stderr)
        assert "Traceback" not in completed.stderr
        for fragment in expected["message"]:
            assert fragment in completed.stderr, (command, fragment, completed.stderr)
        for line in completed.stderr.strip().splitlines():
            assert line.startswith("error: "), line
        assert not report_dir.exists(), "an input error must not write a report"
