"""The upgrade gate: keyed comparison of two reports, labels, Markdown, exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import run_all
from conformance.report.build import build_report
from conformance.report.diff import compare, render_markdown
from conformance.report.diff import fails as diff_fails
from tests.helpers import CASES, CliResult, cli

ADAPTERS = builtin_adapters()
BASE = build_report(run_all(load_cases([CASES]), ADAPTERS), list(ADAPTERS))


def rows(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(row["case"], row["provider"], row["mode"]): row for row in report["results"]}


def edited(change: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    new = copy.deepcopy(rows(BASE))
    change(new)
    return new


KEY = ("normal", "openai-chat", "body")


def test_identical_reports_have_no_changes() -> None:
    assert compare(rows(BASE), rows(BASE)) == []


def test_pass_to_fail_is_a_regression() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY].update(passed=False, failures=["outcome: expected answer_ready, got unverified_answer"])

    (result,) = compare(rows(BASE), edited(change))
    assert (result.key, result.label) == (KEY, "regression")


def test_a_kind_turned_unsupported_is_a_regression_and_back_an_improvement() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY]["turns"][1].update(kind="unsupported", raw="finish_reason=paused")

    (result,) = compare(rows(BASE), edited(change))
    assert result.label == "regression" and "turn 2 kind text → unsupported" in result.notes[0]
    (back,) = compare(edited(change), rows(BASE))
    assert back.label == "improvement"


def test_broken_correlation_is_a_regression() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY]["correlation"]["problems"] = ["turn 2: call call_X of turn 1 got no result"]

    (result,) = compare(rows(BASE), edited(change))
    assert result.label == "regression" and result.notes[0].startswith("correlation broken")


def test_a_usage_field_gone_null_is_a_regression() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY]["usage"]["cached_input_tokens"] = None

    (result,) = compare(rows(BASE), edited(change))
    assert result.label == "regression" and "usage.cached_input_tokens 384 → null" in result.notes


def test_a_usage_count_gained_is_an_improvement_the_reverse_of_the_regression() -> None:
    """docs/ci.md: a count gone null is a regression, and its reverse an improvement, for the row and its turns."""
    def lose(new: dict[Any, Any]) -> None:
        new[KEY]["usage"]["cached_input_tokens"] = None
        for turn in new[KEY]["turns"]:
            if turn.get("usage"):
                turn["usage"]["input_tokens"] = None

    lost = edited(lose)
    (back,) = compare(lost, rows(BASE))
    assert back.label == "improvement"
    assert "usage.cached_input_tokens null → 384" in back.notes
    assert any(note.startswith("turn 1 usage.input_tokens null → ") for note in back.notes), back.notes
    assert not any("None" in note for note in back.notes)


def test_a_changed_count_is_a_change_with_its_path() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY]["usage"]["output_tokens"] += 1

    (result,) = compare(rows(BASE), edited(change))
    assert result.label == "change"
    assert result.paths == ["root['usage']['output_tokens']"]


def test_a_removed_row_is_a_regression_and_a_new_row_is_added() -> None:
    def remove(new: dict[Any, Any]) -> None:
        del new[KEY]

    (removed,) = compare(rows(BASE), edited(remove))
    assert removed.label == "regression"
    (added,) = compare(edited(remove), rows(BASE))
    assert added.label == "added"


def test_a_moved_fixture_is_not_a_change() -> None:
    def change(new: dict[Any, Any]) -> None:
        for turn in new[KEY]["turns"]:
            turn["fixture"] = "elsewhere/" + turn["fixture"]

    assert compare(rows(BASE), edited(change)) == []


def test_markdown_lists_regressions_first() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY]["usage"]["output_tokens"] += 1
        new[("normal", "gemini", "body")].update(passed=False, failures=["x"])

    markdown = render_markdown(compare(rows(BASE), edited(change)), "old.json", "new.json")
    body = markdown.split("|---|---|---|---|---|\n")[1].splitlines()
    assert body[0].startswith("| ❌ regression | normal | gemini | body |")
    assert body[1].startswith("| ↔ change | normal | openai-chat | body |")
    assert "**1 regression(s)**, 1 change(s), 0 improvement(s)." in markdown


def run_diff(*arguments: str) -> CliResult:
    return cli("diff", *arguments)


def test_cli_exit_codes(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps(BASE))
    regressed = copy.deepcopy(BASE)
    regressed["results"][0]["passed"] = False
    new = tmp_path / "new.json"
    new.write_text(json.dumps(regressed))
    assert run_diff(str(old), str(old)).returncode == 0
    completed = run_diff(str(old), str(new), "--output", str(tmp_path / "diff.md"))
    assert completed.returncode == 1 and "❌ regression" in completed.stdout
    assert (tmp_path / "diff.md").read_text() == completed.stdout


def test_fail_on_change_and_the_json_format(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps(BASE))
    changed = copy.deepcopy(BASE)
    changed["results"][0]["usage"]["output_tokens"] += 1  # a change, no regression
    new = tmp_path / "new.json"
    new.write_text(json.dumps(changed))
    assert run_diff(str(old), str(new)).returncode == 0
    assert run_diff(str(old), str(new), "--fail-on", "change").returncode == 1
    assert run_diff(str(old), str(old), "--fail-on", "change").returncode == 0
    completed = run_diff(str(old), str(new), "--format", "json")
    document = json.loads(completed.stdout)
    (row,) = document["changes"]
    provider = changed["results"][0]["provider"]
    assert document["counts"] == {"regression": 0, "change": 1, "improvement": 0, "added": 0}
    assert document["by_provider"] == {provider: {"regression": 0, "change": 1, "improvement": 0, "added": 0}}
    assert (row["case"], row["provider"], row["label"]) == (changed["results"][0]["case"], provider, "change")
    assert row["fixtures"] == [turn["fixture"] for turn in changed["results"][0]["turns"]][:len(row["fixtures"])]
    assert row["fixtures"] and any("output_tokens" in note for note in row["notes"])


def test_an_accepted_regression_is_a_change_with_its_reason(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps(BASE))
    regressed = copy.deepcopy(BASE)
    first = regressed["results"][0]
    first["passed"] = False
    new = tmp_path / "new.json"
    new.write_text(json.dumps(regressed))
    accept = tmp_path / "accepted.yaml"
    accept.write_text(f"- {{case: '{first['case']}', provider: '{first['provider'][:6]}*', mode: {first['mode']}, "
                      "change: 'passed*', reason: the vendor now refuses this prompt}\n"
                      "- {case: gone_case, provider: '*', change: 'outcome*', reason: an old upgrade}\n")
    completed = run_diff(str(old), str(new), "--accept", str(accept))
    assert completed.returncode == 0, completed.stdout  # the row's one note, `passed → failed: …`, is named
    assert "↔ change" in completed.stdout and "accepted: the vendor now refuses this prompt" in completed.stdout
    assert "gone_case [*] (outcome*) matched nothing" in completed.stderr
    other_mode = "stream" if first["mode"] == "body" else "body"
    accept.write_text(f"- {{case: '{first['case']}', provider: '*', mode: {other_mode}, change: '*x*', reason: r}}\n")
    assert run_diff(str(old), str(new), "--accept", str(accept)).returncode == 1
    accept.write_text("- {case: x, provider: y, reason: r}\n")
    bad = run_diff(str(old), str(new), "--accept", str(accept))
    assert bad.returncode == 2 and "entry 1 is not {case, provider, mode?, change, reason}" in bad.stderr


@pytest.mark.parametrize("content", ["{", "[]", '{"results": [1]}', "\udcff"])
def test_cli_unreadable_input_exits_2_without_a_traceback(tmp_path: Path, content: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content.encode("utf-8", "surrogateescape"))
    completed = run_diff(str(bad), str(bad))
    assert completed.returncode == 2 and "Traceback" not in completed.stderr and "bad.json" in completed.stderr


def test_a_changed_refusal_source_is_a_change() -> None:
    key = ("refusal", "openai-chat", "body")

    def change(new: dict[Any, Any]) -> None:
        new[key]["turns"][0]["source"] = "filter"

    (result,) = compare(rows(BASE), edited(change))
    assert result.key == key and "root['turns'][0]['source']" in result.paths


# ---- What mutation testing found unpinned (docs/hardening.md) ----------------------------------------------------

def test_a_new_row_is_added_with_its_status_never_a_regression() -> None:
    def remove(new: dict[Any, Any]) -> None:
        del new[KEY]

    def fail(new: dict[Any, Any]) -> None:
        new[KEY].update(passed=False, failures=["outcome: expected answer_ready, got unverified_answer"])

    (added,) = compare(edited(remove), edited(fail))
    assert (added.label, added.notes) == ("added", [
        "new row, failing: outcome: expected answer_ready, got unverified_answer"])
    (passing,) = compare(edited(remove), rows(BASE))
    assert (passing.label, passing.notes) == ("added", ["new row, passing"])
    markdown = render_markdown([added, passing], "old", "new")
    assert "**0 regression(s)**, 0 change(s), 0 improvement(s), 2 added row(s)." in markdown
    assert "| provider | regressions | changes | improvements | added |" in markdown
    assert "| ➕ added |" in markdown
    assert not diff_fails([added], "regression") and diff_fails([added], "change")


def test_a_repaired_correlation_is_an_improvement() -> None:
    def break_it(new: dict[Any, Any]) -> None:
        new[KEY]["correlation"]["problems"] = ["turn 2: call call_X of turn 1 got no result"]

    (result,) = compare(edited(break_it), rows(BASE))
    assert (result.label, result.notes) == ("improvement", ["correlation repaired"])


def test_each_note_names_exactly_what_changed() -> None:
    old = rows(BASE)[KEY]
    usage = old["usage"]

    def change(new: dict[Any, Any]) -> None:
        row = new[KEY]
        row["outcome"] = "unverified_answer"
        row["turns"][0]["calls"][0]["call_id"] = "call_NEW"
        row["turns"][1]["raw"] = "finish_reason=stop_sequence"
        row["turns"].append(copy.deepcopy(row["turns"][1]))
        row["usage"]["output_tokens"] = usage["output_tokens"] + 5

    (result,) = compare(rows(BASE), edited(change))
    old_ids = [call["call_id"] for call in old["turns"][0]["calls"]]
    assert result.label == "change"
    assert result.notes == [
        f"outcome {old['outcome']} → unverified_answer",
        f"turn 1 call ids {old_ids} → ['call_NEW']",
        f"turn 2 raw {old['turns'][1]['raw']} → finish_reason=stop_sequence",
        f"turns {len(old['turns'])} → {len(old['turns']) + 1}",
        f"usage.output_tokens {usage['output_tokens']} → {usage['output_tokens'] + 5}",
    ]


def test_an_unchanged_field_gets_no_note() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY]["turns"][0]["usage"]["output_tokens"] += 1

    (result,) = compare(rows(BASE), edited(change))
    assert (result.label, result.notes) == ("change", [])
    assert result.paths == ["root['turns'][0]['usage']['output_tokens']"]


def test_markdown_orders_regressions_changes_then_improvements_whatever_the_keys() -> None:
    def before(new: dict[Any, Any]) -> None:
        del new[("cached_usage", "anthropic-messages", "body")]

    def after(new: dict[Any, Any]) -> None:
        new[("normal", "anthropic-messages", "body")]["usage"]["output_tokens"] += 1
        new[("truncation", "openai-chat", "body")].update(passed=False, failures=["x"])

    markdown = render_markdown(compare(edited(before), edited(after)), "old.json", "new.json")
    body = markdown.split("|---|---|---|---|---|\n")[1].splitlines()
    assert [line.split(" | ")[0] for line in body] == ["| ❌ regression", "| ↔ change", "| ➕ added"]


def test_the_gate_reads_a_report_written_by_this_version_only(tmp_path: Path) -> None:
    report = copy.deepcopy(BASE)
    report["schema_version"] = 0
    old = tmp_path / "old.json"
    old.write_text(json.dumps(report))
    completed = run_diff(str(old), str(old))
    assert completed.returncode == 2
    assert "schema_version is 0; this conformance reads" in completed.stderr


def test_a_row_the_gate_cannot_read_is_named_by_its_pointer(tmp_path: Path) -> None:
    report = copy.deepcopy(BASE)
    del report["results"][3]["passed"]
    report["results"][5]["failures"] = [1]
    report["results"].append(copy.deepcopy(report["results"][0]))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    completed = run_diff(str(path), str(path))
    assert completed.returncode == 2
    assert "results[3] has no valid 'passed'" in completed.stderr
    assert "results[5] has a failure that is not a string" in completed.stderr
    assert f"results[{len(report['results']) - 1}] repeats the row" in completed.stderr


# ---- Every message of the gate, exactly (what a reviewer reads in CI) -------------------------------------------

def _report_file(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "r.json"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(("content", "expected"), [
    (None, "{path}: cannot read: No such file or directory. Fix: check the path"),
    (b'{"results": [\xff]}', "{path}: not UTF-8. Fix: pass a report.json written by conformance"),
    (b'{\n  "results": [\n}', "{path}:3: not JSON: Expecting value. Fix: pass a report.json written by conformance"),
    (b'{"results": {}}', "{path}: no 'results' list: not a conformance report. Fix: pass the report.json that "
                         "`conformance run` wrote"),
    (b'{"results": [], "schema_version": 99}', "{path}: schema_version is 99; this conformance reads {version}. "
                                               "Fix: compare reports written by the same version"),
])
def test_an_unreadable_report_is_one_exact_line(tmp_path: Path, content: bytes | None, expected: str) -> None:
    from conformance.report.build import SCHEMA_VERSION

    path = tmp_path / "r.json" if content is None else _report_file(tmp_path, content)
    completed = run_diff(str(path), str(path))
    assert completed.returncode == 2
    assert completed.stderr == "error: " + expected.format(path=path, version=SCHEMA_VERSION) + "\n"


def test_unreadable_rows_are_named_by_index_pointer_and_fix(tmp_path: Path) -> None:
    report = copy.deepcopy(BASE)
    report["results"][1] = "x"
    report["results"].append(copy.deepcopy(report["results"][0]))
    path = _report_file(tmp_path, json.dumps(report).encode())
    last = len(report["results"]) - 1
    case, provider, mode = (report["results"][0][name] for name in ("case", "provider", "mode"))
    assert run_diff(str(path), str(path)).stderr == (
        f"error: {path}: results[1] is not an object (at /results/1). Fix: pass an unmodified report.json\n"
        f"error: {path}: results[{last}] repeats the row {case} × {provider} × {mode} (at /results/{last}). "
        "Fix: one row per case × provider × mode: were two case folders merged?\n")


@pytest.mark.parametrize(("change", "expected"), [
    (lambda row: row.update(turns=["x"]), "has a turn that is not an object with a 'calls' list"),
    (lambda row: row["turns"][0].update(calls={}), "has a turn that is not an object with a 'calls' list"),
    (lambda row: row["turns"][0].update(calls=[1]), "has a turn that is not an object with a 'calls' list"),
    (lambda row: row["turns"][0].pop("calls"), None),
    (lambda row: row.update(failures=[1]), "has a failure that is not a string"),
    (lambda row: row["correlation"].update(problems="x"), "has correlation problems that are not a list of strings"),
    (lambda row: row["correlation"].update(problems=[1]), "has correlation problems that are not a list of strings"),
    (lambda row: row["correlation"].pop("problems"), None),
    (lambda row: row.update(correlation=None), None),
    (lambda row: row.update(passed="yes"), "has no valid 'passed'"),
])
def test_row_shape_problems_say_what_is_wrong(change: Any, expected: str | None) -> None:
    from conformance.report.diff import row_shape_problem

    row = copy.deepcopy(rows(BASE)[KEY])
    change(row)
    assert row_shape_problem(row) == expected
    assert row_shape_problem([row]) == "is not an object"


def test_pass_fail_notes_and_turn_notes_read_exactly() -> None:
    def fail(new: dict[Any, Any]) -> None:
        new[KEY].update(passed=False, failures=["outcome: expected answer_ready, got empty", "leak: x"])
        new[KEY]["turns"][1].update(kind="unsupported", raw="finish_reason=paused")
        new[KEY]["turns"][0]["usage"]["input_tokens"] = None

    old_turn = rows(BASE)[KEY]["turns"]
    (failed,) = compare(rows(BASE), edited(fail))
    assert failed.notes[:3] == [
        "passed → failed: outcome: expected answer_ready, got empty; leak: x",
        f"turn 1 usage.input_tokens {old_turn[0]['usage']['input_tokens']} → null",
        "turn 2 kind text → unsupported (finish_reason=paused)",
    ]
    (repaired,) = compare(edited(fail), rows(BASE))
    assert repaired.label == "improvement"
    assert repaired.notes[:3] == ["failed → passed",
                                  f"turn 1 usage.input_tokens null → {old_turn[0]['usage']['input_tokens']}",
                                  f"turn 2 kind unsupported → text ({old_turn[1]['raw']})"]

    def retype(new: dict[Any, Any]) -> None:
        new[KEY]["turns"][1].update(kind="incomplete", raw="finish_reason=length")

    (changed,) = compare(rows(BASE), edited(retype))
    assert (changed.label, changed.notes[0]) == ("change", "turn 2 kind text → incomplete (finish_reason=length)")


def test_a_removed_row_says_so() -> None:
    def remove(new: dict[Any, Any]) -> None:
        del new[KEY]

    (removed,) = compare(rows(BASE), edited(remove))
    assert (removed.key, removed.notes) == (KEY, ["row removed: the case no longer runs for this provider"])


def test_the_markdown_of_a_diff_is_exactly_this() -> None:
    from conformance.report.diff import RowChange

    changes = [
        RowChange(("b", "gemini", "body"), "improvement", ["failed → passed"]),
        RowChange(("a", "openai-chat", "stream"), "change", [], [f"root['p{number}']" for number in range(6)]),
        RowChange(("a", "openai-chat", "body"), "regression", [f"note {number}" for number in range(8)], [],
                  ["cases/a/openai-chat/turn1.json"]),
    ]
    assert render_markdown(changes, "old|1.json", "new.json") == (
        "# Conformance diff: old\\|1.json → new.json\n"
        "\n"
        "**1 regression(s)**, 1 change(s), 1 improvement(s).\n"
        "\n"
        "| provider | regressions | changes | improvements |\n"
        "|---|---:|---:|---:|\n"
        "| gemini | 0 | 0 | 1 |\n"
        "| openai-chat | 1 | 1 | 0 |\n"
        "\n"
        "| | case | provider | mode | what changed |\n"
        "|---|---|---|---|---|\n"
        "| ❌ regression | a | openai-chat | body | note 0<br>note 1<br>note 2<br>note 3<br>note 4<br>note 5"
        "<br>fixtures: cases/a/openai-chat/turn1.json |\n"
        "| ↔ change | a | openai-chat | stream | 6 field(s): root\\['p0'\\], root\\['p1'\\], root\\['p2'\\], "
        "root\\['p3'\\] |\n"
        "| ✅ improvement | b | gemini | body | failed → passed |\n")
    assert render_markdown([], "old.json", "new.json") == (
        "# Conformance diff: old.json → new.json\n\n**0 regression(s)**, 0 change(s), 0 improvement(s).\n\n"
        "No classification, request, correlation, usage or outcome changed.\n")


def test_a_request_whose_bytes_changed_is_a_change_naming_the_turn() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY]["turns"][0]["request"].update(sha256="0" * 16, bytes=new[KEY]["turns"][0]["request"]["bytes"] + 17)

    (result,) = compare(rows(BASE), edited(change))
    before = rows(BASE)[KEY]["turns"][0]["request"]["bytes"]
    assert (result.label, result.notes) == ("change", [f"turn 1 request changed ({before} → {before + 17} bytes)"])


@pytest.mark.parametrize(("part", "edit", "note"), [
    ("tools", lambda turn: turn["request"]["sent"].update(tools=[]), "turn 2 request lost tools 1 → 0"),
    ("results", lambda turn: turn["request"]["conversation"][2].update(results=[]),
     "turn 2 request lost results 1 → 0"),
    ("signatures", lambda turn: turn["request"]["conversation"][1].update(signatures=0),
     "turn 2 request lost signatures 1 → 0"),
])
def test_a_request_that_lost_a_required_part_is_a_regression(part: str, edit: Any, note: str) -> None:
    key = ("normal", "anthropic-messages", "body")
    assert rows(BASE)[key]["turns"][1]["request"]["conversation"][1] == {"role": "model", "signatures": 1}

    def change(new: dict[Any, Any]) -> None:
        turn = new[key]["turns"][1]
        turn["request"]["sha256"] = "f" * 16
        edit(turn)

    (result,) = compare(rows(BASE), edited(change))
    assert (result.label, result.notes) == ("regression", [note]), part


def test_a_new_request_problem_is_a_regression() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY]["turns"][0]["request"].update(sha256="1" * 16, problems=["tool choice sent: auto; the case says none"])

    (result,) = compare(rows(BASE), edited(change))
    assert (result.label, result.notes) == (
        "regression", ["turn 1 request: tool choice sent: auto; the case says none"])


def test_a_request_no_longer_read_back_is_a_regression_even_with_the_same_bytes() -> None:
    def change(new: dict[Any, Any]) -> None:
        new[KEY]["turns"][0]["request"].update(checked=False, sent=None, conversation=None)

    (result,) = compare(rows(BASE), edited(change))
    assert (result.label, result.notes) == (
        "regression", ["turn 1 request no longer checked: the adapter stopped reading it back"])


def test_a_request_that_lost_two_parts_names_both_and_an_old_problem_is_not_new() -> None:
    key = ("parallel_tool_calls", "anthropic-messages", "body")
    before = rows(BASE)[key]["turns"][1]["request"]

    def change(new: dict[Any, Any]) -> None:
        request = new[key]["turns"][1]["request"]
        request.update(sha256="e" * 16)
        request["sent"]["tools"] = []
        request["conversation"][2]["results"] = request["conversation"][2]["results"][:1]

    (result,) = compare(rows(BASE), edited(change))
    assert result.notes == ["turn 2 request lost tools 1 → 0, results 2 → 1"]
    assert len(before["conversation"][2]["results"]) == 2

    def same_problem(report: dict[Any, Any], sha: str) -> None:
        report[KEY]["turns"][0]["request"].update(
            sha256=sha, problems=["output token cap sent: none; the case says 512"])

    old = edited(lambda report: same_problem(report, "a" * 16))
    new = edited(lambda report: same_problem(report, "b" * 16))
    (result,) = compare(old, new)
    assert result.label == "change" and result.notes[0].startswith("turn 1 request changed (")


def test_a_report_from_before_request_records_compares_without_a_note() -> None:
    def strip(report: dict[Any, Any]) -> None:
        for turn in report[KEY]["turns"]:
            turn.pop("request")

    old = edited(strip)
    (result,) = compare(old, rows(BASE))
    assert result.label == "change" and not any("request" in note for note in result.notes)


# ---- The allow-list of accepted changes, entry by entry ---------------------------------------------------------

ENTRY_SHAPE = "is not {case, provider, mode?, change, reason}"
ENTRY_FIX = ("give case and provider (shell patterns), mode body or stream or none, the change accepted (the diff's "
             "note, e.g. 'outcome refusal → text'; a shell pattern) and why it is accepted")
LIST_FIX = "write a list of {case, provider, mode, change, reason} entries"


def _accepted(tmp_path: Path, text: str) -> Any:
    from conformance.report.diff import load_accepted

    path = tmp_path / "accepted.yaml"
    path.write_text(text, encoding="utf-8")
    return load_accepted(path)


def _problems(tmp_path: Path, text: str) -> list[tuple[str, str, str, str | None]]:
    """(file name, message, fix, pointer) of each problem; line numbers are not known for an allow-list."""
    from conformance.errors import InputError

    with pytest.raises(InputError) as raised:
        _accepted(tmp_path, text)
    return [(problem.file.rsplit("/", 1)[-1], problem.message, problem.fix, problem.pointer or None)
            for problem in raised.value.problems]


def test_an_allow_list_is_read_whole_and_kept_as_strings(tmp_path: Path) -> None:
    entries = _accepted(tmp_path, "- case: http_*\n  provider: openai-chat@litellm\n  mode: body\n"
                                  "  change: 'outcome refusal → text'\n  reason: the gateway folds refusals\n"
                                  "- {case: normal, provider: '*', change: '*kind*', reason: r}\n")
    assert entries == [{"case": "http_*", "provider": "openai-chat@litellm", "mode": "body",
                        "change": "outcome refusal → text", "reason": "the gateway folds refusals"},
                       {"case": "normal", "provider": "*", "change": "*kind*", "reason": "r"}]
    assert _accepted(tmp_path, "[]") == []


@pytest.mark.parametrize(("text", "what", "fix", "pointer"), [
    ("{case: x}", "not a list of accepted changes", LIST_FIX, None),
    ("- [unclosed", None, LIST_FIX, None),
    ("- just a string", f"entry 1 {ENTRY_SHAPE}", ENTRY_FIX, "/0"),
    ("- {provider: p, change: c, reason: r}", f"entry 1 {ENTRY_SHAPE}", ENTRY_FIX, "/0"),
    ("- {case: x, change: c, reason: r}", f"entry 1 {ENTRY_SHAPE}", ENTRY_FIX, "/0"),
    ("- {case: x, provider: p, reason: r}", f"entry 1 {ENTRY_SHAPE}", ENTRY_FIX, "/0"),
    ("- {case: x, provider: p, change: c}", f"entry 1 {ENTRY_SHAPE}", ENTRY_FIX, "/0"),
    ("- {case: x, provider: p, change: c, reason: '  '}", f"entry 1 {ENTRY_SHAPE}", ENTRY_FIX, "/0"),
    ("- {case: x, provider: 3, change: c, reason: r}", f"entry 1 {ENTRY_SHAPE}", ENTRY_FIX, "/0"),
    ("- {case: x, provider: p, mode: sse, change: c, reason: r}", f"entry 1 {ENTRY_SHAPE}", ENTRY_FIX, "/0"),
    ("- {case: x, provider: p, change: c, reason: r, until: never}", f"entry 1 {ENTRY_SHAPE}", ENTRY_FIX, "/0"),
    ("- {case: x, provider: p, change: '*?*', reason: r}", "entry 1 accepts any change ('*?*')",
     "name the change accepted, as the diff's note says it", "/0/change"),
])
def test_each_bad_allow_list_is_named_with_its_entry_and_fix(tmp_path: Path, text: str, what: str | None, fix: str,
                                                             pointer: str | None) -> None:
    (where, said, told, at), = _problems(tmp_path, text)
    assert where == "accepted.yaml" and told == fix and at == pointer
    assert said == what if what is not None else said.startswith("not a YAML or JSON file (")


def test_every_bad_entry_is_named_not_only_the_first(tmp_path: Path) -> None:
    good = "- {case: x, provider: p, change: c, reason: r}\n"
    problems = _problems(tmp_path, good + "- 1\n" + good + "- {case: x, provider: p, change: '**', reason: r}\n")
    assert [(what, pointer) for _, what, _, pointer in problems] == [
        (f"entry 2 {ENTRY_SHAPE}", "/1"), ("entry 4 accepts any change ('**')", "/3/change")]


def test_a_request_change_is_named_by_the_fields_that_moved() -> None:
    from conformance.report.diff import _fields_moved

    old = {"max_tokens": "aa", "messages": "m1", "model": "x", "temperature": "t"}
    new = {"max_completion_tokens": "aa", "messages": "m2", "model": "x", "stream": "s"}
    assert _fields_moved(old, new) == ("max_tokens → max_completion_tokens, temperature gone, stream new, "
                                       "messages changed")
    assert _fields_moved(None, new) == "" and _fields_moved(old, old) == ""


def _bumped_chat() -> tuple[Any, Any]:
    """The Chat adapter, and the same adapter after an SDK bump that sends the token cap as ``max_tokens``."""
    import dataclasses

    chat = builtin_adapters()["openai-chat"]

    def renamed(task: Any, transcript: Any) -> dict[str, Any]:
        request = chat.build_request(task, transcript)
        request["max_tokens"] = request.pop("max_completion_tokens")
        return request

    return chat, dataclasses.replace(chat, build_request=renamed)


def test_an_sdk_bump_that_renames_one_request_field_is_named_in_the_diff(tmp_path: Path) -> None:
    from conformance.engine.runner import run_case

    chat, bumped = _bumped_chat()
    case = next(case for case in load_cases([CASES]) if case.id == "normal")
    before = run_case(case, "openai-chat", chat, "body")
    after = run_case(case, "openai-chat", bumped, "body")
    key = ("normal", "openai-chat", "body")
    (change,) = compare({key: before}, {key: after})
    assert "turn 1 request max_completion_tokens → max_tokens" in change.notes
    assert "turn 2 request max_completion_tokens → max_tokens" in change.notes


def test_the_diff_says_first_which_package_versions_moved(tmp_path: Path) -> None:
    rows = run_all(load_cases([CASES]), builtin_adapters())[:3]
    old = build_report(rows, ["openai-chat"])
    new = copy.deepcopy(old)
    old["measured"]["stacks"] = {"openai-chat@acme": {"openai": "3.56.0"}, "anthropic-messages@acme": {
        "anthropic": "2.14.0", "openai": "3.56.0"}}
    new["measured"]["stacks"] = {"openai-chat@acme": {"openai": "3.57.0"}, "anthropic-messages@acme": {
        "anthropic": "2.14.0", "openai": "3.57.0"}}
    for name, report in (("old.json", old), ("new.json", new)):
        (tmp_path / name).write_text(json.dumps(report))
    result = cli("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[2] == "**Versions:** openai 3.56.0 → 3.57.0" and lines[4].startswith("**0 regression(s)**")
    same = cli("diff", str(tmp_path / "old.json"), str(tmp_path / "old.json"))
    assert "Versions" not in same.stdout


def test_an_sdk_bump_that_moves_one_field_in_every_request_is_a_short_comment_naming_it(tmp_path: Path) -> None:
    from conformance.commands.gate import MARKER

    chat, bumped = _bumped_chat()
    cases = load_cases([CASES])
    before = run_all(cases, {"openai-chat": chat})
    after = run_all(cases, {"openai-chat": bumped})
    reports = []
    for name, rows, version in (("old.json", before, "3.56.0"), ("new.json", after, "3.57.0")):
        report = build_report(rows, ["openai-chat"])
        report["measured"]["stacks"] = {"openai-chat@acme": {"openai": version}}
        (tmp_path / name).write_text(json.dumps(report))
        reports.append(report)
    result = cli("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    comment = f"{MARKER}\n{result.stdout}"
    moved = sum(1 for row in after if any("max_tokens" in (turn["request"] or {}).get("fields", {})
                                          for turn in row["turns"]))
    assert moved > 40  # every row whose requests the adapter built
    assert len(comment.encode("utf-8")) < 3000, comment
    assert "**Versions:** openai 3.56.0 → 3.57.0" in comment
    assert "request max\\_completion\\_tokens → max\\_tokens" in comment or \
        "request max_completion_tokens → max_tokens" in comment
    assert "rows** alike" in comment


def test_a_case_added_with_its_stack_findings_is_reported_as_added_not_as_regressions() -> None:
    rows = run_all(load_cases([CASES]), builtin_adapters())
    wire = next(row for row in rows if (row["case"], row["provider"], row["mode"]) ==
                ("context_window", "anthropic-messages", "body"))
    stack = copy.deepcopy(wire)
    stack.update(provider="anthropic-messages@gw", stack="gw")
    stack["turns"][0].update(reason="max_tokens", raw="finish_reason=length")
    old = build_report([row for row in rows if row["case"] != "context_window"], ["anthropic-messages"])
    new = build_report(rows + [stack], ["anthropic-messages", "anthropic-messages@gw"])
    assert any(finding["stack"] == "anthropic-messages@gw" for finding in new["findings"])

    def keyed(report: dict[str, Any]) -> dict[Any, Any]:
        return {(row["case"], row["provider"], row["mode"]): row for row in report["results"]}

    changes = compare(keyed(old), keyed(new), old["findings"], new["findings"])
    added = [change for change in changes if change.key[1] == "anthropic-messages@gw"]
    assert [change.label for change in added] == ["added"]  # a new row (that passes)
    assert added[0].notes[0] == "new row, passing"
    assert any(note.startswith("finding: turn 1 reason") for note in added[0].notes)
    assert not any(note.startswith("new finding, not accepted") for change in changes for note in change.notes)


def test_a_comment_stays_short_however_many_different_rows_move() -> None:
    """Rows that change in as many different ways as there are rows cannot be grouped: the comment lists 25 lines,
    regressions first, and says how many rows it left out and where they all are."""
    def scatter(new: dict[Any, Any]) -> None:
        for index, row in enumerate(new.values()):
            row["usage"] = dict(row["usage"] or {}, output_tokens=10_000 + index)  # a different change each
        new[KEY].update(passed=False, failures=["outcome: expected answer_ready, got empty"])

    changes = compare(rows(BASE), edited(scatter))
    assert len(changes) > 60
    full = render_markdown(changes, "old", "new")
    short = render_markdown(changes, "old", "new", max_lines=25)
    table = short.split("|---|---|---|---|---|\n")[1].split("\n\n")[0].splitlines()
    assert len(table) == 25 and table[0].startswith("| ❌ regression")
    assert f"… and {len(changes) - 25} more changed row(s), not listed here" in short
    assert len(short.encode()) < 12_000 < len(full.encode())
    assert short.split("\n\n")[:3] == full.split("\n\n")[:3]  # the same counts and per-provider table
