"""Hardening III (docs/hardening.md): the report folder, findings and the gate under hostile input. Each test
reproduces one attack from its description and fails without its fix."""

from __future__ import annotations

import os
from pathlib import Path

from conformance.reportfiles import write_reports
from tests.helpers import OWN, cli

# ---- 7. A symlinked reports/.sets never deletes anything outside the report folder --------------------------


def _repository(tmp_path: Path) -> tuple[Path, Path]:
    """A repository-like folder with precious content beside its report folder."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('keep me')\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    reports = root / "reports"
    reports.mkdir()
    return root, reports


def test_a_sets_link_to_the_parent_is_refused_and_nothing_is_removed(tmp_path: Path) -> None:
    root, reports = _repository(tmp_path)
    os.symlink("..", reports / ".sets")
    result = cli("run", *OWN, "--case", "normal", "--report-dir", str(reports))
    assert result.returncode == 2
    assert ".sets" in result.stderr and "symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert (root / "src" / "app.py").read_text() == "print('keep me')\n"
    assert (root / ".git" / "HEAD").exists()
    assert not (reports / "report.json").exists()


def test_a_current_link_pointing_outside_is_refused(tmp_path: Path) -> None:
    root, reports = _repository(tmp_path)
    os.symlink("../src", reports / ".current")
    result = cli("run", *OWN, "--case", "normal", "--report-dir", str(reports))
    assert result.returncode == 2 and ".current" in result.stderr
    assert sorted(path.name for path in (root / "src").iterdir()) == ["app.py"]


def test_a_link_inside_sets_is_unlinked_never_followed(tmp_path: Path) -> None:
    root, reports = _repository(tmp_path)
    (reports / ".sets").mkdir()
    os.symlink(str(root / "src"), reports / ".sets" / "set-planted")
    write_reports({"report.json": "{}\n"}, reports)
    assert (root / "src" / "app.py").exists()
    assert not (reports / ".sets" / "set-planted").exists()
    assert (reports / "report.json").read_text() == "{}\n"


def test_two_runs_in_a_row_keep_one_set_and_the_links_work(tmp_path: Path) -> None:
    _, reports = _repository(tmp_path)
    write_reports({"report.json": "{\"n\": 1}\n"}, reports)
    write_reports({"report.json": "{\"n\": 2}\n"}, reports)
    assert (reports / "report.json").read_text() == "{\"n\": 2}\n"
    assert len(list((reports / ".sets").iterdir())) == 1


# ---- 9. Findings are compared by what they say, not by key only ----------------------------------------------

def _finding(effect: str, wire: object, value: object, accepted: str | None) -> dict[str, object]:
    return {"stack": "openai-chat@litellm", "case": "normal", "mode": "body", "turn": 1,
            "field": "usage.output_tokens", "effect": effect, "wire": wire, "stack_value": value,
            "meaning": "the output count", "accepted": accepted}


def test_an_accepted_finding_whose_value_changes_is_a_regression() -> None:
    from conformance.diff import compare

    old = [_finding("lost", 26, None, "LiteLLM drops the count on this path")]
    new = [_finding("changed", 26, 2600, "LiteLLM drops the count on this path")]
    (change,) = compare({}, {}, old, new)
    assert change.label == "regression"
    assert change.notes == ["finding changed: was turn 1 usage.output_tokens lost: 26 → null (the output count); "
                            "now turn 1 usage.output_tokens changed: 26 → 2600 (the output count)"]


def test_the_same_finding_twice_is_no_change_and_one_value_off_is() -> None:
    from conformance.diff import compare

    same = [_finding("changed", 26, 27, None)]
    assert compare({}, {}, same, [dict(same[0])]) == []
    (change,) = compare({}, {}, same, [_finding("changed", 26, 28, None)])
    assert change.label == "regression"


def test_diff_exits_1_on_a_finding_that_changed(tmp_path: Path) -> None:
    import json

    result = cli("run", *OWN, "--case", "normal", "--report-dir", str(tmp_path / "a"))
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "a" / "report.json").read_text())
    for folder, finding in (("old", _finding("lost", 26, None, "dropped")), ("new", _finding("changed", 26, 2600,
                                                                                              "dropped"))):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "report.json").write_text(json.dumps({**document, "findings": [finding]}))
    diff = cli("diff", str(tmp_path / "old" / "report.json"), str(tmp_path / "new" / "report.json"))
    assert diff.returncode == 1, diff.stdout + diff.stderr
    assert "finding changed" in diff.stdout
