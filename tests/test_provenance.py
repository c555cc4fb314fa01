"""Fixture provenance and age (docs/record.md, "Provenance and age"): the sidecar the loader checks, `validate
--max-age` and its setting, and the oldest recording per provider in the report."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

from conformance.engine.provenance import entry, host_class
from tests.helpers import CASES, cli, some_cases

OLD = dt.datetime(2020, 3, 1, 12, 0, tzinfo=dt.UTC)


def _cases(tmp_path: Path) -> Path:
    return some_cases(tmp_path / "cases", "normal")


def _sidecar(folder: Path, when: dt.datetime) -> None:
    turns = {path.name: entry("gpt-5.5", "https://api.example.invalid", "openai-chat@openai-sdk (openai 3.57.0)",
                              "0.1.0", when) for path in folder.glob("turn*")}
    (folder / "provenance.json").write_text(json.dumps({"turns": turns}))


def test_recordings_older_than_max_age_fail_validate_with_the_file_and_its_age(tmp_path: Path) -> None:
    root = _cases(tmp_path)
    _sidecar(root / "normal/openai-chat", OLD)
    recent = dt.datetime.now(dt.UTC) - dt.timedelta(days=3)
    _sidecar(root / "normal/anthropic-messages", recent)
    assert cli("validate", "--no-config", "--cases", str(root)).returncode == 0  # no limit: age is not checked
    result = cli("validate", "--no-config", "--cases", str(root), "--max-age", "30")
    assert result.returncode == 1
    days = (dt.datetime.now(dt.UTC) - OLD).days
    assert f"normal/openai-chat/turn1.json: recorded {days} days ago (2020-03-01T12:00:00Z), older than the " \
           "30-day limit. Fix: record it again" in result.stderr
    assert "anthropic-messages" not in result.stderr  # three days old
    assert "4 recording(s) older than 30 days or dated in the future" in result.stderr
    # The setting does the same from the repository's configuration.
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nconformance_cases = ["cases"]\n'
                                             "conformance_max_age_days = 30\n")
    assert cli("validate", cwd=tmp_path).returncode == 1


def test_a_malformed_sidecar_is_named_with_its_pointer(tmp_path: Path) -> None:
    root = _cases(tmp_path)
    folder = root / "normal/openai-chat"
    (folder / "provenance.json").write_text(json.dumps({"turns": {"turn9.json": {}, "turn1.json": {"model": "x"}}}))
    result = cli("validate", "--no-config", "--cases", str(root))
    assert result.returncode == 2
    assert "provenance.json: names turn9.json, which is not a turn file of this folder" in result.stderr
    assert "(at /turns/turn1.json)" in result.stderr and "recorded_at an ISO 8601 UTC time" in result.stderr
    # The model the response named is optional, and a string; no other key is.
    good = entry("gpt-5.5", "https://api.example.invalid", "openai-chat@openai-sdk", "0.1.0")
    for extra, code in (({"served_model": "gpt-5.5-2026-04-23"}, 0), ({"served_model": 7}, 2),
                        ({"account": "acme"}, 2)):
        turns = {path.name: {**good, **extra} for path in folder.glob("turn*")}
        (folder / "provenance.json").write_text(json.dumps({"turns": turns}))
        assert cli("validate", "--no-config", "--cases", str(root)).returncode == code, extra
    (folder / "provenance.json").write_text(json.dumps({"hand_written": True}))
    assert "a hand-written fixture set says why" in cli("validate", "--no-config", "--cases", str(root)).stderr
    (folder / "provenance.json").unlink()
    (root / "provenance.json").write_text(json.dumps({"turns": {}}))
    assert "a cases folder's provenance.json only says hand_written" in cli(
        "validate", "--no-config", "--cases", str(root)).stderr


def test_the_report_says_the_oldest_recording_per_provider(tmp_path: Path) -> None:
    root = _cases(tmp_path)
    _sidecar(root / "normal/openai-chat", OLD)
    (root / "normal/gemini/provenance.json").write_text(json.dumps({"hand_written": True, "why": "from the docs"}))
    result = cli("run", "--no-config", "--cases", str(root), "--report-dir", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    recordings = json.loads((tmp_path / "r/report.json").read_text())["measured"]["recordings"]
    assert recordings["openai-chat"]["oldest"] == "2020-03-01T12:00:00Z" and recordings["openai-chat"]["recorded"] == 4
    assert recordings["gemini"]["hand_written"] == 4 and recordings["anthropic-messages"]["unknown"] == 4
    markdown = (tmp_path / "r/report.md").read_text()
    assert "Oldest recording per provider: anthropic-messages 4 files of unknown age; bedrock-converse 4 files of " \
           "unknown age; gemini hand-written (4 files); openai-chat 2020-03-01 (" in markdown


def test_the_bundled_fixtures_say_they_are_hand_written_and_the_host_is_only_a_class() -> None:
    assert json.loads((CASES / "provenance.json").read_text())["hand_written"] is True
    assert [host_class(url) for url in ("http://127.0.0.1:8080/v1", "http://[::1]:1", "http://localhost",
                                        "https://api.openai.com", "https://10.0.0.7")] == [
        "loopback", "loopback", "loopback", "remote", "remote"]


def test_a_recording_from_the_future_an_unknown_age_and_a_negative_limit_are_said(tmp_path: Path) -> None:
    root = _cases(tmp_path)
    _sidecar(root / "normal/openai-chat", dt.datetime.now(dt.UTC) + dt.timedelta(days=40))
    result = cli("validate", "--no-config", "--cases", str(root), "--max-age", "30")
    assert result.returncode == 1
    assert "openai-chat/turn1.json: recorded in the future (" in result.stderr and "correct the clock" in result.stderr
    # Files no sidecar covers have no age: said, not failed.
    assert "warning: 16 recording(s) have no provenance, so no age:" in result.stderr
    negative = cli("validate", "--no-config", "--cases", str(root), "--max-age", "-5")
    assert negative.returncode == 2 and "is not a number of days" in negative.stderr


def test_a_sidecar_nested_too_deep_is_a_clear_error_and_a_nested_case_finds_its_cases_folders(tmp_path: Path) -> None:
    root = _cases(tmp_path)
    (root / "normal/openai-chat/provenance.json").write_text("[" * 100_000 + "]" * 100_000)
    result = cli("validate", "--no-config", "--cases", str(root))
    assert result.returncode == 2 and "provenance.json is not JSON" in result.stderr and "Traceback" not in \
        result.stderr
    (root / "normal/openai-chat/provenance.json").unlink()
    (root / "group").mkdir()
    shutil.move(str(root / "normal"), str(root / "group/normal"))
    (root / "provenance.json").write_text(json.dumps({"hand_written": True, "why": "written from the docs"}))
    run = cli("run", "--no-config", "--cases", str(root), "--report-dir", str(tmp_path / "r"))
    assert run.returncode == 0, run.stderr
    recordings = json.loads((tmp_path / "r/report.json").read_text())["measured"]["recordings"]
    assert {age["hand_written"] for age in recordings.values()} == {4}


def test_the_merge_of_malformed_recordings_leaves_them_out_rather_than_crash() -> None:
    from conformance.engine.provenance import merged_ages

    parts = [{"openai-chat": {"oldest": "2026-01-01T00:00:00Z", "days": 3, "recorded": 2, "hand_written": 0,
                              "unknown": 0}},
             {"openai-chat": {"oldest": "not a time", "recorded": "x", "hand_written": None}, "gemini": [1]},
             ["not", "a", "mapping"]]
    assert merged_ages(parts) == {"openai-chat": {"oldest": "2026-01-01T00:00:00Z", "days": 3, "recorded": 2,
                                                  "hand_written": 0, "unknown": 0}}
