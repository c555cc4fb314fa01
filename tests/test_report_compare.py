"""The comparison report answers "who differs": majority marks, like-for-like usage, what was measured."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.report.build import build_report, render_markdown, render_summary
from conformance.stacks.stack import builtin_stacks
from tests.helpers import OWN, cli


def _row(case: str, provider: str, kinds: list[str], outcome: str, total: int | None = 100,
         mode: str = "body") -> dict[str, Any]:
    usage = {"input_tokens": None if total is None else total - 10, "cached_input_tokens": None,
             "cache_write_tokens": None, "output_tokens": None if total is None else 10, "reasoning_tokens": None,
             "total_tokens": total}
    return {"case": case, "provider": provider, "mode": mode, "stack": provider.split("@")[1] if "@" in provider
            else "raw", "outcome": outcome, "turns": [{"turn": i + 1, "kind": kind, "raw": "x", "calls": []}
                                                      for i, kind in enumerate(kinds)],
            "passed": True, "failures": [], "override": None, "error": None, "expected": {"outcome": outcome},
            "usage": usage, "correlation": None}


VENDORS = ["anthropic-messages", "gemini", "openai-chat", "openai-responses"]


def test_a_cell_that_parts_from_most_vendors_is_marked_and_a_stack_does_not_vote() -> None:
    rows = [_row("c", "anthropic-messages", ["incomplete"], "incomplete"),
            _row("c", "gemini", ["incomplete"], "incomplete"),
            _row("c", "openai-chat", ["fatal_error"], "fatal_error"),
            _row("c", "openai-responses", ["incomplete"], "incomplete"),
            # Two stack columns agreeing with openai-chat would make a 3-3 tie if stacks voted.
            _row("c", "openai-chat@a", ["fatal_error"], "fatal_error"),
            _row("c", "openai-chat@b", ["fatal_error"], "fatal_error"),
            _row("c", "gemini@a", ["text"], "unverified_answer")]
    report = build_report(rows, VENDORS + ["openai-chat@a", "openai-chat@b", "gemini@a"])
    assert report["differs"] == [["c", "body", "gemini@a"], ["c", "body", "openai-chat"],
                                 ["c", "body", "openai-chat@a"], ["c", "body", "openai-chat@b"]]
    matrix = render_markdown(report).split("## Matrix (body mode)", 1)[1].split("\n## ", 1)[0]
    line = next(line for line in matrix.splitlines() if line.startswith("| c |"))
    cells = dict(zip(report["providers"], line.split(" | ")[2:], strict=True))
    assert sorted(provider for provider, cell in cells.items() if "≠" in cell) == [
        "gemini@a", "openai-chat", "openai-chat@a", "openai-chat@b"]


def test_no_majority_marks_nothing() -> None:
    rows = [_row("c", provider, [kind], kind) for provider, kind in
            zip(VENDORS, ["text", "text", "refusal", "refusal"], strict=True)]
    assert build_report(rows, VENDORS)["differs"] == []


def test_usage_compares_only_cases_every_provider_ran_to_the_same_outcome() -> None:
    rows = [_row("same", provider, ["text"], "answer_ready", total=100 + index)
            for index, provider in enumerate(VENDORS)]
    # One vendor answers this case with an HTTP 400 and no usage: counting it would make the others look costly.
    rows += [_row("split", provider, ["text"], "answer_ready", total=5000) for provider in VENDORS[:3]]
    rows.append(_row("split", VENDORS[3], ["fatal_error"], "fatal_error", total=None))
    rows += [_row("partial", provider, ["text"], "answer_ready") for provider in VENDORS[:2]]
    section = render_markdown(build_report(rows, VENDORS)).split("## Normalized usage", 1)[1].split("\n## ", 1)[0]
    assert "the 1 case(s) every vendor ran to the same outcome" in section
    assert [line.split(" | ")[-1] for line in section.splitlines() if line.startswith("| ")
            and line.split(" | ")[0][2:] in VENDORS] == ["100 |", "101 |", "102 |", "103 |"]
    assert "Left out, 2 case(s)" in section and "partial (not run for openai-chat, openai-responses)" in section
    assert "split (answer\\_ready, fatal\\_error)" in section
    assert "| same | 100 | 101 | 102 | 103 |" in section


def test_the_report_records_what_it_measured_with() -> None:
    stack = builtin_stacks()["openai-chat@openai-sdk"]
    report = build_report([_row("c", "openai-chat", ["text"], "answer_ready")], ["openai-chat"], [stack])
    import openai

    assert {key: value for key, value in report["measured"].items() if key not in ("fixtures", "prices")} == {
        "suite": __version__, "python": platform.python_version(),
        "stacks": {"openai-chat@openai-sdk": {"openai": openai.__version__}}}
    assert report["measured"]["prices"]["file"] == "conformance/prices/prices.yaml"  # docs/cost.md
    assert f"Measured with conformance {__version__} on Python {platform.python_version()}; stacks: " in \
        render_markdown(report)
    assert builtin_stacks()["bedrock-converse@boto3"].versions().keys() == {"boto3", "botocore"}


def test_run_prints_a_summary_and_the_whole_report_only_when_asked(tmp_path: Path) -> None:
    quiet = cli("run", *OWN, "--provider", "openai-chat", "--provider", "gemini", "--case", "unknown_tool", "--case",
                "normal", "--report-dir", str(tmp_path / "a"))
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.startswith("8 of 8 case × provider × mode results passed (2 cases, 2 providers).\n")
    assert "## Matrix" not in quiet.stdout and "## Matrix" in (tmp_path / "a/report.md").read_text()
    verbose = cli("run", *OWN, "--provider", "openai-chat", "--case", "normal", "--verbose", "--report-dir",
                  str(tmp_path / "b"))
    assert "## Matrix (body mode)" in verbose.stdout


def test_the_summary_lists_failures_differing_cells_and_findings_each_cut_short() -> None:
    rows = [_row(f"c{index:02}", "openai-chat", ["text"], "answer_ready") for index in range(20)]
    for row in rows:
        row.update(passed=False, failures=[f"outcome: expected refusal, got answer_ready ({row['case']})"])
    report = {"summary": {"rows": 20, "passed": 0, "failed": 20, "cases": 20}, "providers": ["openai-chat"],
              "results": rows, "differs": [["c00", "body", "openai-chat"]],
              "findings": [{"stack": "openai-chat@gw", "accepted": None},
                           {"stack": "openai-chat@gw", "accepted": "ok"}]}
    lines = render_summary(report, limit=3).splitlines()
    assert lines == [
        "0 of 20 case × provider × mode results passed (20 cases, 1 providers).", "Failed (20):",
        "  c00 [openai-chat, body]: outcome: expected refusal, got answer_ready (c00)",
        "  c01 [openai-chat, body]: outcome: expected refusal, got answer_ready (c01)",
        "  c02 [openai-chat, body]: outcome: expected refusal, got answer_ready (c02)",
        "  … and 17 more (report.md)",
        "Differ from most vendors (1): c00 [openai-chat, body]",
        "What each stack hides (findings against the raw adapter; report.md lists them):",
        "  openai-chat@gw: 2 (1 not accepted)"]


def test_a_stack_column_does_not_decide_which_cases_compare() -> None:
    rows = [_row("same", provider, ["text"], "answer_ready") for provider in VENDORS]
    rows.append(_row("same", "gemini@gw", ["empty"], "empty", total=None))  # the gateway lost the answer
    section = render_markdown(build_report(rows, [*VENDORS, "gemini@gw"])).split("## Normalized usage", 1)[1]
    assert "the 1 case(s) every vendor ran to the same outcome" in section and "Left out" not in section
    assert "| same | 100 | 100 | null | 100 | 100 |" in section  # columns sorted: gemini@gw third
