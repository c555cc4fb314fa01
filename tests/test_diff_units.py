"""The upgrade gate's smaller parts, each with exact inputs and outputs: the JSON rendering, the versions line, the
findings' facts and text, the forward matrix, the allow-list and how it is applied (docs/ci.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.errors import InputError
from conformance.report.build import SCHEMA_VERSION
from conformance.report.diff import (
    RowChange,
    _finding_shape,
    _request_parts,
    accepted_warnings,
    apply_accepted,
    compare,
    fails,
    forward_changes,
    load_accepted,
    load_document,
    read_report,
    render_json,
    render_markdown,
    retry_changes,
    tally_by_provider,
    versions_moved,
)


def _report(folder: Path, name: str, **sections: Any) -> Path:
    path = folder / name
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "results": [], **sections}), encoding="utf-8")
    return path


def test_the_json_rendering_is_exactly_this() -> None:
    changes = [RowChange(("b_case", "openai-chat", "stream"), "change", ["usage changed"], ["root['usage']"],
                         ["cases/b/turn1.json"]),
               RowChange(("a_case", "gemini", "body"), "regression", ["kind text → refusal"], [], [])]
    assert render_json(changes, "old.json", "new.json") == """{
  "old": "old.json",
  "new": "new.json",
  "counts": {
    "regression": 1,
    "change": 1,
    "improvement": 0,
    "added": 0
  },
  "by_provider": {
    "gemini": {
      "regression": 1,
      "change": 0,
      "improvement": 0,
      "added": 0
    },
    "openai-chat": {
      "regression": 0,
      "change": 1,
      "improvement": 0,
      "added": 0
    }
  },
  "changes": [
    {
      "case": "a_case",
      "provider": "gemini",
      "mode": "body",
      "label": "regression",
      "notes": [
        "kind text → refusal"
      ],
      "fixtures": [],
      "paths": []
    },
    {
      "case": "b_case",
      "provider": "openai-chat",
      "mode": "stream",
      "label": "change",
      "notes": [
        "usage changed"
      ],
      "fixtures": [
        "cases/b/turn1.json"
      ],
      "paths": [
        "root['usage']"
      ]
    }
  ]
}
"""


def test_the_versions_that_moved_are_named_one_line_each(tmp_path: Path) -> None:
    old = _report(tmp_path, "old.json", measured={
        "suite": "0.1.0", "python": "3.11.7",
        "stacks": {"openai-chat@openai-sdk": {"openai": "2.1.0", "httpx": "0.28.1", "odd": 3},
                   "anthropic-messages@anthropic-sdk": {"anthropic": None, "httpx": "0.28.1"}}})
    new = _report(tmp_path, "new.json", measured={
        "suite": "0.2.0", "python": "3.12.1",
        "stacks": {"openai-chat@openai-sdk": {"openai": "2.2.0", "httpx": "0.28.1", "odd": 4, "jiter": "0.9.0"},
                   "anthropic-messages@anthropic-sdk": {"anthropic": "0.60.0"}}})
    assert versions_moved(old, new) == ["anthropic (none) → 0.60.0", "jiter (none) → 0.9.0",
                                        "openai 2.1.0 → 2.2.0", "python 3.11.7 → 3.12.1", "suite 0.1.0 → 0.2.0"]
    assert versions_moved(new, old) == ["anthropic 0.60.0 → (none)", "jiter 0.9.0 → (none)",
                                        "openai 2.2.0 → 2.1.0", "python 3.12.1 → 3.11.7", "suite 0.2.0 → 0.1.0"]


def test_versions_without_stacks_or_without_a_measured_section(tmp_path: Path) -> None:
    old = _report(tmp_path, "old.json", measured={"suite": "0.1.0", "python": "3.11.7", "stacks": ["openai"]})
    new = _report(tmp_path, "new.json", measured={"suite": "0.1.0", "python": "3.11.8", "stacks": None})
    assert versions_moved(old, new) == ["python 3.11.7 → 3.11.8"]
    assert versions_moved(old, _report(tmp_path, "bare.json")) == []


def _finding(**values: Any) -> dict[str, Any]:
    return {"stack": "openai-chat@openai-sdk", "case": "normal", "mode": "body", "turn": 1,
            "field": "usage.input_tokens", "effect": "changed", "wire": {"a": 1, "b": 2}, "stack_value": [1],
            "meaning": "the count moved", **values}


def test_a_finding_whose_values_are_the_same_json_is_not_a_change() -> None:
    reordered = _finding(wire={"b": 2, "a": 1}, stack_value=[1])
    assert compare({}, {}, [_finding()], [reordered]) == []
    both = _finding(wire={"x": {"b": 1, "a": 2}}, stack_value={"b": 1, "a": 2})
    assert compare({}, {}, [both], [_finding(wire={"x": {"a": 2, "b": 1}}, stack_value={"a": 2, "b": 1})]) == []


@pytest.mark.parametrize("values", [{"wire": {"a": 1, "b": 3}}, {"stack_value": [2]}, {"effect": "lost"}])
def test_a_finding_with_other_values_under_its_key_is_a_regression(values: dict[str, Any]) -> None:
    [change] = compare({}, {}, [_finding()], [_finding(**values)])
    assert change.label == "regression"
    assert change.notes[0].startswith("finding changed: was turn 1 usage.input_tokens changed")


def test_a_finding_without_a_turn_reads_without_one() -> None:
    [change] = compare({}, {}, [], [_finding(turn=None, wire=5, stack_value=None)])
    assert change.notes == ["new finding, not accepted: usage.input_tokens changed: 5 → null (the count moved)"]
    [change] = compare({}, {}, [], [_finding(turn=0, wire=5, stack_value=None)])
    assert change.notes == ["new finding, not accepted: usage.input_tokens changed: 5 → null (the count moved)"]


@pytest.mark.parametrize("values, shaped", [
    ({}, True), ({"effect": "invented"}, True), ({"effect": "lost"}, True), ({"effect": "gone"}, False),
    ({"mode": 1}, False), ({"case": None}, False), ({"stack": 2}, False), ({"field": None}, False),
    ({"turn": "1"}, False), ({"turn": None}, True),
])
def test_a_finding_has_string_keys_an_integer_turn_and_a_known_effect(values: dict[str, Any], shaped: bool) -> None:
    assert _finding_shape(_finding(**values)) is shaped


def test_request_parts_counts_tools_results_and_signatures_whatever_the_record_holds() -> None:
    old = {"sent": None, "conversation": [{"results": [1, 2], "signatures": 1}, "odd"]}
    new = {"sent": {"tools": ["a", "b"]}, "conversation": [{"results": [1]}, {"signatures": 2}]}
    assert _request_parts(old, new) == [("tools", 0, 2), ("results", 2, 1), ("signatures", 1, 2)]


def _forward(folder: Path, name: str, lanes: Any) -> Path:
    return _report(folder, name, forward={"lanes": lanes})


def test_the_forward_matrix_of_two_reports_exactly(tmp_path: Path) -> None:
    old = _forward(tmp_path, "old.json", {
        "a-broken": "not a lane",
        "b-lane": {"field.renamed": {"held": 2, "unsupported": 1}, "item.unseen": {"unsupported": 2},
                   "kind.new": {"held": 1, "lost": 1}, "mended": {"held": 1, "lost": 1}, "same": {"held": 1}},
        "c-gone": {"field.renamed": {"held": 1}},
        "d-fewer": {"item.unseen": {"lost": 3}, "kind.new": {"held": 2, "lost": 2}},
    })
    new = _forward(tmp_path, "new.json", {
        "a-broken": {"field.renamed": {"held": 0}},
        "b-lane": {"field.renamed": {"held": 1, "unsupported": 1, "lost": 1},
                   "item.unseen": {"unsupported": 1, "held": 1}, "kind.new": {"lost": 2}, "mended": {"held": 2},
                   "same": {"held": 1}},
        "d-fewer": {"item.unseen": {"lost": 2}, "kind.new": {"held": 1, "lost": 1}},
    })
    assert forward_changes(old, new) == [
        RowChange(("all families", "c-gone", "mutants"), "regression",
                  ["mutants: the lane is no longer run on the mutants"], []),
        RowChange(("field.renamed", "b-lane", "mutants"), "regression",
                  ["mutants field.renamed: held 2/3 → 1/3 (1 unsupported, 1 lost)"], []),
        RowChange(("item.unseen", "b-lane", "mutants"), "improvement",
                  ["mutants item.unseen: held 0/2 → 1/2 (1 unsupported)"], []),
        RowChange(("kind.new", "b-lane", "mutants"), "regression", ["mutants kind.new: held 1/2 → 0/2 (2 lost)"], []),
        RowChange(("mended", "b-lane", "mutants"), "improvement", ["mutants mended: held 1/2 → 2/2"], []),
        RowChange(("item.unseen", "d-fewer", "mutants"), "regression",
                  ["mutants item.unseen: 3 checked → 2 (held 0 → 0)"], []),
        RowChange(("kind.new", "d-fewer", "mutants"), "regression", ["mutants kind.new: 4 checked → 2 (held 2 → 1)"],
                  []),
    ]


def test_a_forward_section_that_is_not_a_matrix_compares_as_none(tmp_path: Path) -> None:
    good = _forward(tmp_path, "good.json", {"lane": {"family": {"held": 1}}})
    assert forward_changes(_forward(tmp_path, "list.json", ["lane"]), good) == []
    assert forward_changes(good, _forward(tmp_path, "list2.json", ["lane"])) == []
    assert forward_changes(good, _report(tmp_path, "none.json")) == []


def test_the_gate_on_change_fails_on_a_regression_too() -> None:
    regression = [RowChange(("a", "p", "body"), "regression")]
    assert fails(regression, "change") is True
    assert fails(regression, "regression") is True
    assert fails([RowChange(("a", "p", "body"), "added")], "change") is True
    assert fails([RowChange(("a", "p", "body"), "added")], "regression") is False
    assert fails([RowChange(("a", "p", "body"), "improvement")], "change") is False


def test_an_allow_list_over_the_size_limit_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "accepted.yaml"
    entry = "- {case: a, provider: b, change: c, reason: d}\n"
    path.write_text(entry + "#" * (1024 * 1024 - len(entry) - 1) + "\n", encoding="utf-8")
    assert len(load_accepted(path)) == 1  # exactly the limit
    path.write_text(entry + "#" * (1024 * 1024 - len(entry)) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_accepted(path)
    [problem] = raised.value.problems
    assert problem.file == str(path) and "over the 1048576-byte limit" in problem.message


def test_entries_after_a_wildcard_entry_are_checked_too(tmp_path: Path) -> None:
    path = tmp_path / "accepted.yaml"
    path.write_text("- {case: a, provider: b, change: '*', reason: r}\n- {case: a, provider: b, reason: r}\n",
                    encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_accepted(path)
    assert [problem.pointer for problem in raised.value.problems] == ["/0/change", "/1"]


def _entry(change: str, reason: str = "why", case: str = "normal", provider: str = "openai-chat",
           mode: str | None = None) -> dict[str, str]:
    entry = {"case": case, "provider": provider, "change": change, "reason": reason}
    if mode is not None:
        entry["mode"] = mode
    return entry


def test_warnings_name_stale_entries_and_entries_for_everything() -> None:
    everything = _entry("kind * → text", case="*", provider="*")
    assert accepted_warnings([_entry("x"), everything, _entry("y", case="*")], [_entry("usage gone")]) == [
        "accepted entry normal [openai-chat] (usage gone) matched nothing: the change it accepted is gone; remove it",
        "accepted entry for every case and provider (kind * → text): it accepts that change anywhere",
    ]


def test_an_entry_accepts_only_its_case_provider_and_mode() -> None:
    changes = [RowChange(("normal", "gemini", "body"), "regression", ["kind text → refusal"]),
               RowChange(("other", "openai-chat", "body"), "regression", ["kind text → refusal"]),
               RowChange(("normal", "openai-chat", "body"), "regression", ["kind text → refusal"])]
    entries = [_entry("kind text → refusal", mode="stream"), _entry("kind text → refusal", reason="body only",
                                                                    mode="body")]
    stale = apply_accepted(changes, entries)
    assert [change.label for change in changes] == ["regression", "regression", "change"]
    assert changes[2].notes == ["accepted: body only", "kind text → refusal"]
    assert stale == [entries[0]]


def test_every_row_is_judged_whatever_the_rows_before_it() -> None:
    changes = [RowChange(("unlisted", "gemini", "body"), "regression", ["kind text → refusal"]),
               RowChange(("normal", "openai-chat", "stream"), "improvement", ["usage repaired"]),
               RowChange(("normal", "openai-chat", "body"), "regression", []),
               RowChange(("normal", "openai-chat", "body"), "regression", ["outcome x", "usage y", "kind z"]),
               RowChange(("normal", "openai-chat", "body"), "regression", ["outcome x", "kind z"])]
    entries = [_entry("outcome x", reason="first"), _entry("kind z", reason="second"), _entry("usage repaired")]
    assert apply_accepted(changes, entries) == []
    assert [change.label for change in changes] == ["regression", "improvement", "regression", "regression",
                                                    "change"]
    assert changes[3].notes[0] == "not accepted: usage y (the accepted entries name other changes)"
    assert changes[4].notes == ["accepted: first", "accepted: second", "outcome x", "kind z"]


def test_several_open_notes_are_listed_together() -> None:
    change = RowChange(("normal", "openai-chat", "body"), "regression", ["kind a", "outcome b", "usage c"])
    apply_accepted([change], [_entry("kind a")])
    assert change.notes[0] == "not accepted: outcome b; usage c (the accepted entries name other changes)"
    assert change.label == "regression"


def test_findings_under_one_field_with_and_without_a_turn_are_both_listed() -> None:
    [change] = compare({}, {}, [], [_finding(turn=None, wire=1), _finding(turn=2, wire=1)])
    assert change.notes == [  # each regression note goes first: the last one read is listed first
        "new finding, not accepted: usage.input_tokens changed: 1 → [1] (the count moved)",
        "new finding, not accepted: turn 2 usage.input_tokens changed: 1 → [1] (the count moved)",
    ]


def _row(case: str, passed: bool = True, **values: Any) -> dict[str, Any]:
    return {"case": case, "provider": "openai-chat@openai-sdk", "mode": "body", "passed": passed,
            "outcome": "answer_ready", "turns": [], "failures": [] if passed else ["x"], "usage": None,
            "correlation": None, **values}


def test_the_findings_of_a_new_row_are_part_of_what_was_added() -> None:
    key = ("normal", "openai-chat@openai-sdk", "body")
    [change] = compare({}, {key: _row("normal")}, [], [_finding(accepted="the SDK rounds it"), _finding(field="model")])
    assert change.label == "added"
    assert change.notes[1:] == [
        "finding: turn 1 model changed: {'a': 1, 'b': 2} → [1] (the count moved)",
        "finding: turn 1 usage.input_tokens changed: {'a': 1, 'b': 2} → [1] (the count moved) "
        "(accepted: the SDK rounds it)",
    ]


def test_a_row_that_changed_puts_a_new_finding_first_and_a_gone_one_last() -> None:
    key = ("normal", "openai-chat@openai-sdk", "body")
    [change] = compare({key: _row("normal", outcome="answer_ready")}, {key: _row("normal", outcome="text")},
                       [_finding(field="model")], [_finding()])
    assert change.label == "regression"
    assert change.notes[0] == "new finding, not accepted: turn 1 usage.input_tokens changed: {'a': 1, 'b': 2} → [1] " \
                              "(the count moved)"
    assert change.notes[-1] == "finding gone: turn 1 model changed: {'a': 1, 'b': 2} → [1] (the count moved)"
    assert len(change.notes) == 3


def test_a_report_whose_findings_are_not_findings_is_named_exactly(tmp_path: Path) -> None:
    path = _report(tmp_path, "report.json", findings=[{"stack": 1}])
    with pytest.raises(InputError) as raised:
        load_document(path)
    [problem] = raised.value.problems
    assert (problem.file, problem.line, problem.message, problem.fix, problem.pointer) == (
        str(path), None, "'findings' is not a list of findings", "pass an unmodified report.json", "/findings")


def test_rows_alike_but_for_the_turn_are_one_markdown_line_from_three_on() -> None:
    changes = [RowChange((case, "gemini", mode), "regression", [f"turn {turn} request tools 2 → 1"])
               for case, mode, turn in (("a", "body", 1), ("b", "stream", 2), ("c", "body", 3))]
    lines = render_markdown(changes, "old.json", "new.json").splitlines()
    assert lines[-1] == "| ❌ regression | a, b, c | gemini | body, stream | request tools 2 → 1<br>**3 rows** alike |"
    two = render_markdown(changes[:2], "old.json", "new.json").splitlines()
    assert two[-2:] == ["| ❌ regression | a | gemini | body | turn 1 request tools 2 → 1 |",
                        "| ❌ regression | b | gemini | stream | turn 2 request tools 2 → 1 |"]


def test_the_markdown_names_the_versions_and_counts_added_rows() -> None:
    changes = [RowChange(("a", "gemini", "body"), "added", ["new row: passed"]),
               RowChange(("b", "gemini", "body"), "added", ["new row: failed"]),
               RowChange(("c", "gemini", "body"), "regression", ["kind text → refusal"])]
    lines = render_markdown(changes, "old.json", "new.json", ["openai 1 → 2", "httpx 3 → 4"]).splitlines()
    assert lines[2:6] == ["**Versions:** openai 1 → 2; httpx 3 → 4", "",
                          "**1 regression(s)**, 0 change(s), 0 improvement(s), 2 added row(s).", ""]
    assert lines[6:9] == ["| provider | regressions | changes | improvements | added |", "|---|---:|---:|---:|---:|",
                          "| gemini | 1 | 0 | 0 | 2 |"]


def test_the_tally_counts_each_row() -> None:
    changes = [RowChange((case, "gemini", "body"), "change") for case in "abc"]
    assert tally_by_provider(changes) == {"gemini": {"regression": 0, "change": 3, "improvement": 0, "added": 0}}


def _waived(row: dict[str, Any], why: list[str], failures: list[str]) -> dict[str, Any]:
    return {**row, "passed": False, "failures": [], "waived": {"why": why, "failures": failures}}


def _one(before: dict[str, Any], after: dict[str, Any]) -> RowChange:
    key = (before["case"], before["provider"], before["mode"])
    [change] = compare({key: before}, {key: after})
    return change


def test_a_pass_that_a_waiver_now_covers_is_a_regression_naming_both() -> None:
    change = _one(_row("normal"), _waived(_row("normal"), ["known SDK bug", "until 2.1"], ["usage lost", "id lost"]))
    assert change.label == "regression"
    assert change.notes == ["passed → waived: usage lost; id lost (waived: known SDK bug; until 2.1)"]


def test_a_failure_a_waiver_now_covers_is_a_change() -> None:
    change = _one(_row("normal", passed=False), _waived(_row("normal"), ["known SDK bug", "until 2.1"], ["x"]))
    assert (change.label, change.notes) == ("change", ["failed → waived: known SDK bug; until 2.1"])


def test_a_waiver_whose_reason_changed_says_both_reasons() -> None:
    change = _one(_waived(_row("normal"), ["a", "b"], ["x"]), _waived(_row("normal"), ["c", "d"], ["x"]))
    assert (change.label, change.notes) == ("change", ["waiver a; b → c; d"])
    dropped = _one({**_row("normal", passed=False), "waived": {"why": ["a"], "failures": ["y"]}},
                   _row("normal", passed=False))
    assert (dropped.label, dropped.notes) == ("change", ["waiver a → none"])


def test_a_failure_that_fails_otherwise_is_a_change_not_a_regression() -> None:
    change = _one(_row("normal", passed=False, failures=["one"]), _row("normal", passed=False, failures=["two"]))
    assert (change.label, change.notes) == ("change", [])
    assert change.paths == ["root['failures'][0]"]


def test_many_rows_alike_list_eight_cases_then_count_the_rest() -> None:
    notes = ["request tools 2 → 1", *(f"note {number}" for number in range(7))]
    many = [RowChange((f"case{number:02d}", "a|b", "body" if number % 2 else "stream"), "regression", notes)
            for number in range(10)]
    later = [RowChange(("z2", "gemini", "body"), "change", ["usage.x 1 → 2"], [], [f"f{n}.json" for n in range(5)]),
             RowChange(("z1", "gemini", "body"), "change", ["usage.x 1 → 3"])]
    lines = render_markdown([*later, *many], "old.json", "new.json").splitlines()
    listed = ", ".join(f"case{number:02d}" for number in range(8))
    shown = "<br>".join(notes[:6])
    assert lines[-3:] == [
        f"| ❌ regression | {listed}, … (2 more) | a\\|b | body, stream | {shown}<br>**10 rows** alike |",
        "| ↔ change | z1 | gemini | body | usage.x 1 → 3 |",
        "| ↔ change | z2 | gemini | body | usage.x 1 → 2<br>fixtures: f0.json, f1.json, f2.json, f3.json |",
    ]


def test_a_short_comment_says_how_many_rows_it_leaves_out() -> None:
    changes = [RowChange((f"case{number}", "gemini", "body"), "change", [f"usage.x 1 → {number}"])
               for number in range(4)]
    lines = render_markdown(changes, "old.json", "new.json", max_lines=1).splitlines()
    assert lines[-3:] == ["| ↔ change | case0 | gemini | body | usage.x 1 → 0 |", "",
                          "… and 3 more changed row(s), not listed here: the job summary and `diff.json` in the "
                          "reports artifact list every one."]


def _turned(row: dict[str, Any], *fixtures: Any) -> dict[str, Any]:
    return {**row, "turns": [{"kind": "text", "raw": "stop", "calls": [], "fixture": name} for name in fixtures]}


def test_added_and_removed_rows_say_their_status_and_name_their_fixtures() -> None:
    passing = _turned(_row("a"), "cases/a/turn1.json", "", "cases/a/turn1.json", "cases/a/turn2.json")
    failing = _turned(_row("b", passed=False, failures=["one", "two"]), "cases/b/turn1.json")
    waived = _waived(_row("c"), ["known bug", "until 2.1"], ["x"])
    new = {(row["case"], row["provider"], row["mode"]): row for row in (passing, failing, waived)}
    assert compare({}, new) == [
        RowChange(("a", "openai-chat@openai-sdk", "body"), "added", ["new row, passing"], [],
                  ["cases/a/turn1.json", "cases/a/turn2.json"]),
        RowChange(("b", "openai-chat@openai-sdk", "body"), "added", ["new row, failing: one; two"], [],
                  ["cases/b/turn1.json"]),
        RowChange(("c", "openai-chat@openai-sdk", "body"), "added", ["new row, waived: known bug; until 2.1"], [], []),
    ]
    assert compare({("b", "openai-chat@openai-sdk", "body"): failing}, {}) == [
        RowChange(("b", "openai-chat@openai-sdk", "body"), "regression",
                  ["row removed: the case no longer runs for this provider"], [], ["cases/b/turn1.json"])]


def test_a_changed_row_names_the_new_fixtures_else_the_old_ones() -> None:
    old = _turned(_row("a", outcome="x"), "old/turn1.json")
    assert _one(old, _turned(_row("a"), "new/turn1.json")).fixtures == ["new/turn1.json"]
    assert _one(old, _turned(_row("a"), "")).fixtures == ["old/turn1.json"]


def test_usage_gone_whole_is_a_regression_per_count() -> None:
    change = _one(_row("a", usage={"input_tokens": 5, "output_tokens": None}), _row("a", usage=None))
    assert (change.label, change.notes) == ("regression", ["usage.input_tokens 5 → null"])


def test_a_report_nested_too_deep_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"schema_version": 1, "results": [], "x": ' + "[" * 200 + "]" * 200 + "}", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        read_report(path)
    [problem] = raised.value.problems
    assert (problem.line, problem.message) == (None, "not JSON: JSON nested deeper than 128 levels")


def test_eight_rows_alike_are_listed_whole() -> None:
    changes = [RowChange((f"case{number}", "gemini", "body"), "change", ["request tools 2 → 1"]) for number in range(8)]
    listed = ", ".join(f"case{number}" for number in range(8))
    assert render_markdown(changes, "old.json", "new.json").splitlines()[-1] == (
        f"| ↔ change | {listed} | gemini | body | request tools 2 → 1<br>**8 rows** alike |")


def test_a_waiver_kept_as_it_was_gets_no_note() -> None:
    before = {**_waived(_row("a"), ["known bug"], ["x"]), "outcome": "text"}
    change = _one(before, {**before, "outcome": "refusal"})
    assert (change.label, change.notes) == ("change", ["outcome text → refusal"])


@pytest.mark.parametrize("before, waived, note", [
    (_row("a"), {"failures": ["usage lost"]}, "passed → waived: usage lost (waived: )"),
    (_row("a"), {"why": ["known bug"]}, "passed → waived:  (waived: known bug)"),
    (_row("a", passed=False), {"failures": ["x"]}, "failed → waived: "),
    ({**_row("a", passed=False, failures=[]), "waived": {"failures": ["x"]}}, {"why": ["known bug"]},
     "waiver  → known bug"),
])
def test_a_waiver_written_without_its_reasons_or_failures_reads_as_empty(before: dict[str, Any],
                                                                        waived: dict[str, Any], note: str) -> None:
    after = {**_row("a", passed=False, failures=[]), "waived": waived}
    assert _one(before, after).notes == [note]


def _cell(verdict: str, sent: int, kind: str = "fatal_error", why: str = "one request") -> dict[str, Any]:
    return {"sent": sent, "waits": [], "asked": None, "kind": kind, "verdict": verdict, "why": why}


def _retries(folder: Path, name: str, lanes: Any) -> Path:
    return _report(folder, name, retries={"rules": {}, "lanes": lanes})


def test_the_retry_lane_diff_is_exactly_this(tmp_path: Path) -> None:
    old = _retries(tmp_path, "old.json", {
        "a@sdk": {"quota": _cell("right", 1), "rate_limit": _cell("wrong", 1, "retryable_error", "not retried"),
                  "overloaded": _cell("right", 2, "text", "retried once"), "reset": _cell("right", 1, "text"),
                  "gone": _cell("right", 1), "kind": _cell("wrong", 2, "text")},
        "b@sdk": {"quota": _cell("right", 1)},
        "0@sdk": "not a lane"})
    new = _retries(tmp_path, "new.json", {
        "a@sdk": {"quota": _cell("wrong", 2, why="the quota error retried"),
                  "rate_limit": _cell("right", 2, "text", "retried after the delay"),
                  "overloaded": _cell("right", 3, "text", "retried twice"), "reset": _cell("right", 1, "text"),
                  "kind": _cell("wrong", 2, "retryable_error"), "added": _cell("wrong", 1)},
        "0@sdk": {"quota": _cell("right", 1)}})
    assert [(change.key, change.label, change.notes, change.paths) for change in retry_changes(old, new)] == [
        (("retries: all scripts", "b@sdk", "retries"), "regression", ["retries: the lane is no longer run"], []),
        (("retries gone", "a@sdk", "retries"), "regression", ["retries gone: no longer checked"], []),
        (("retries kind", "a@sdk", "retries"), "change",
         ["retries kind: wrong, 2 sent → wrong, 2 sent (one request)"], []),
        (("retries overloaded", "a@sdk", "retries"), "change",
         ["retries overloaded: right, 2 sent → right, 3 sent (retried twice)"], []),
        (("retries quota", "a@sdk", "retries"), "regression",
         ["retries quota: right, 1 sent → wrong, 2 sent (the quota error retried)"], []),
        (("retries rate_limit", "a@sdk", "retries"), "improvement",
         ["retries rate_limit: wrong, 1 sent → right, 2 sent (retried after the delay)"], []),
    ]


@pytest.mark.parametrize("section", [None, "not a section", {"lanes": "not lanes"}, {"rules": {}}])
def test_no_retry_lane_in_either_report_is_no_change(tmp_path: Path, section: Any) -> None:
    lanes = _retries(tmp_path, "lanes.json", {"a@sdk": {"quota": _cell("right", 1)}})
    other = _report(tmp_path, "other.json", **({} if section is None else {"retries": section}))
    assert retry_changes(lanes, other) == [] and retry_changes(other, lanes) == []


def test_a_retry_cell_judged_the_same_with_the_same_count_is_no_change(tmp_path: Path) -> None:
    cell = _cell("right", 2, "text", "retried once")
    old = _retries(tmp_path, "old.json", {"a@sdk": {"overloaded": cell}})
    new = _retries(tmp_path, "new.json", {"a@sdk": {"overloaded": {**cell, "why": "said otherwise", "waits": [1.0]}}})
    assert retry_changes(old, new) == []
