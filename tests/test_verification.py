"""The verification record and `conformance verify`: "is this combination verified and green?" from report files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import CASES, cli

pytest.importorskip("openai", reason="the openai SDK stack records its version (pip install 'llm-conformance[stacks]')")


def _run(tmp_path: Path, name: str, cases: Path, *extra: str) -> Path:
    folder = tmp_path / "artifacts" / name
    result = cli("run", "--cases", str(cases), "--provider", "openai-chat",
                 "--stack", "openai-chat@openai-sdk", "--report-dir", str(folder), *extra)
    assert result.returncode in (0, 1), result.stderr
    return folder / "report.json"


def _cases(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    shutil.copy(CASES / "world.yaml", root)
    shutil.copytree(CASES / "normal", root / "normal")
    return root


def test_a_report_records_its_fixture_set_by_content(tmp_path: Path) -> None:
    import openai

    cases = _cases(tmp_path, "cases")
    first = json.loads(_run(tmp_path, "a", cases).read_text())
    again = json.loads(_run(tmp_path, "b", cases).read_text())
    assert first["measured"]["fixtures"] == again["measured"]["fixtures"]
    assert first["measured"]["fixtures"]["files"] == 4
    # The same recordings in another folder hash the same: paths count from the cases folder's name down.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copytree(cases, elsewhere / "cases")
    moved = json.loads(_run(tmp_path, "m", elsewhere / "cases").read_text())
    assert moved["measured"]["fixtures"] == first["measured"]["fixtures"]
    assert first["measured"]["stacks"]["openai-chat@openai-sdk"] == {"openai": openai.__version__}
    fixture = cases / "normal" / "openai-chat" / "turn2.json"
    fixture.write_text(fixture.read_text().replace("shipped", "shipped "))
    changed = json.loads(_run(tmp_path, "c", cases).read_text())
    assert changed["measured"]["fixtures"]["sha256"] != first["measured"]["fixtures"]["sha256"]


def test_verify_answers_yes_or_no_with_the_reason(tmp_path: Path) -> None:
    import openai

    major = int(openai.__version__.split(".")[0])
    cases = _cases(tmp_path, "cases")
    _run(tmp_path, "green", cases)
    yes = cli("verify", str(tmp_path / "artifacts"), "--require", f"openai>={major}", "--require", "python>=3.11")
    assert yes.returncode == 0 and yes.stdout.rstrip().endswith("verified: yes"), yes.stdout
    assert f"openai {openai.__version__}" in yes.stdout and "all rows passed" in yes.stdout
    no = cli("verify", str(tmp_path / "artifacts"), "--require", f"openai>={major + 1}")
    assert no.returncode == 1 and f"openai {openai.__version__} does not satisfy >={major + 1}" in no.stdout
    missing = cli("verify", str(tmp_path / "artifacts"), "--require", "litellm")
    assert missing.returncode == 1 and "litellm is not in it" in missing.stdout
    # A red report verifies nothing, unless failures are allowed; another green report in the folder still does.
    (cases / "normal" / "openai-chat" / "turn2.json").write_text('{"choices": []}')
    _run(tmp_path, "red", cases)
    red = cli("verify", str(tmp_path / "artifacts" / "red"), "--require", f"openai>={major}")
    assert red.returncode == 1 and "rows failed" in red.stdout
    assert cli("verify", str(tmp_path / "artifacts" / "red"), "--allow-failures").returncode == 0
    assert cli("verify", str(tmp_path / "artifacts"), "--require", f"openai>={major}").returncode == 0
    bad = cli("verify", str(tmp_path / "artifacts"), "--require", "openai>>3")
    assert bad.returncode == 2 and "is not a requirement" in bad.stderr
    empty = cli("verify", str(tmp_path / "cases"))
    assert empty.returncode == 2 and "no report.json here" in empty.stderr
