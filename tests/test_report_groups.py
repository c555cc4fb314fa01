"""The report built a case at a time (``build_report_in_groups``) is ``build_report``'s report in every rendering,
with one case's rows parsed at a time and the rows themselves kept on disk (docs/performance.md, "The report in
groups")."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from conformance.errors import InputError
from conformance.report import build
from conformance.report.brief import brief_of
from conformance.report.build import (
    build_report,
    build_report_in_groups,
    render_json,
    render_markdown,
    render_summary,
)
from conformance.report.html import render_html
from conformance.report.kept import KeptRows, row_text
from conformance.session import Run, keys_of

CASES = Path(__file__).resolve().parents[1] / "cases"
STACKS = ["openai-chat@openai-sdk", "gemini@litellm"]


@pytest.fixture(scope="module")
def kept() -> tuple[Run, list[str], dict[str, str]]:
    """The bundled cases through every adapter and two stacks (an SDK's and a gateway's, which hide things and
    report figures of their own), the rows as the run keeps them, with a waived row added (no bundled case has
    one) and the rows in a shuffled order, cases interleaved."""
    run = Run.configure(stacks=STACKS, in_process=True)
    cases = run.load([CASES])
    for case in cases:
        for item in run.plan(case):
            if item.stack is None or run.skip_reason(item.stack) is None:
                run.execute(item)
    texts = list(run.rows)
    failed = next(index for index, text in enumerate(texts) if not json.loads(text)["passed"])
    row = json.loads(texts[failed])
    row.update(waived={"why": ["the application offers no such tool"], "failures": row["failures"]}, failures=[])
    texts[failed] = json.dumps(row)
    random.Random(7).shuffle(texts)
    return run, texts, run.fixture_files(cases)


def _both(run: Run, texts: list[str], files: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    parsed = [json.loads(text) for text in texts]
    lanes = sorted({row["provider"] for row in parsed})
    whole = build_report(parsed, lanes, run.stacks, dict(files), None, {"case": ["normal"]})
    grouped = build_report_in_groups(texts, keys_of(texts), run.stacks, dict(files), None, {"case": ["normal"]})
    return whole, grouped


def test_every_rendering_of_the_report_built_in_groups_is_the_whole_reports(
        kept: tuple[Run, list[str], dict[str, str]]) -> None:
    run, texts, files = kept
    whole, grouped = _both(run, texts, files)
    # What makes the comparison worth something: findings of both kinds, marked cells, overrides, a waiver.
    assert any(finding["field"].startswith("cost") for finding in whole["findings"])
    assert any(not finding["field"].startswith("cost") for finding in whole["findings"])
    assert whole["differs"] and whole["summary"]["waived"] == 1
    assert any(row["override"] for row in whole["results"])
    assert isinstance(grouped["results"], KeptRows)
    assert render_json(grouped) == render_json(whole)
    assert render_markdown(grouped) == render_markdown(whole)
    assert render_html(grouped) == render_html(whole)
    assert render_summary(grouped) == render_summary(whole)
    assert {key: value for key, value in grouped.items() if key != "results"} == {
        key: value for key, value in whole.items() if key != "results"}


def test_the_report_in_groups_parses_one_case_at_a_time(kept: tuple[Run, list[str], dict[str, str]],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    run, texts, files = kept
    keys = keys_of(texts)
    per_case = max(sum(1 for key in keys if key[0] == case) for case in {key[0] for key in keys})
    parsed: list[int] = []
    loads = json.loads

    def counted(text: str, **options: Any) -> Any:
        value = loads(text, **options)
        if text.startswith("[{"):  # an array of rows (other texts parsed on the way: call arguments, usage)
            parsed.append(len(value))
        return value

    monkeypatch.setattr(build.json, "loads", counted)
    build_report_in_groups(texts, keys, run.stacks, dict(files))
    assert parsed and max(parsed) <= per_case < len(texts) // 10
    assert sum(parsed) == len(texts)  # each row parsed once to build it


def test_the_rows_kept_on_disk_read_as_a_sequence_of_their_rows() -> None:
    rows = [{"case": f"c{index}", "provider": "openai-chat", "mode": "body", "text": "naïve </script> \u2028",
             "passed": index % 2 == 0, "failures": [], "outcome": "text", "override": None, "usage": None,
             "expected": {"outcome": "text"}, "correlation": None, "turns": [{"kind": "text", "raw": "stop"}]}
            for index in range(5)]
    kept = KeptRows()
    for row in rows:
        kept.add(row)
    assert len(kept) == 5 and list(kept) == rows and kept == rows and kept[-1] == rows[4] and kept[1:3] == rows[1:3]
    assert kept[2] is not kept[2]  # parsed when asked for: a caller's change does not reach the report
    with pytest.raises(IndexError):
        kept[5]
    texts = kept.texts()
    assert next(texts) == row_text(rows[0])
    assert kept[4] == rows[4]  # a read in between does not move the walk
    assert list(texts) == [row_text(row) for row in rows[1:]]
    assert kept.briefs == [brief_of(row) for row in rows]


def test_a_key_repeated_across_groups_is_refused(kept: tuple[Run, list[str], dict[str, str]]) -> None:
    run, texts, files = kept
    with pytest.raises(InputError, match="two results for one case"):
        build_report_in_groups([*texts, texts[3]], keys_of([*texts, texts[3]]), run.stacks, dict(files))


def test_the_run_reports_through_the_groups_with_the_keys_it_kept(
        kept: tuple[Run, list[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The run keeps each row's key as it keeps the row, so its report parses no row to find the keys; rows another
    process made (an xdist worker's) have theirs read from the texts."""
    run, _, files = kept
    seen: list[list[tuple[str, str, str]]] = []
    original = build.build_report_in_groups

    def spy(texts: Any, keys: Any, *rest: Any) -> dict[str, Any]:
        seen.append(list(keys))
        return original(texts, keys, *rest)

    monkeypatch.setattr(build, "build_report_in_groups", spy)
    monkeypatch.setattr("conformance.session.keys_of", lambda texts: pytest.fail("keys read again"))
    own = run.report(files)
    assert seen[-1] is not None and seen[-1] == [(json.loads(text)["case"], json.loads(text)["provider"],
                                                  json.loads(text)["mode"]) for text in run.rows]
    monkeypatch.undo()
    other = Run.configure(stacks=STACKS, in_process=True)
    assert render_json(other.report(files, rows=run.rows)) == render_json(own)


def _md_row(**changes: Any) -> dict[str, Any]:
    """One body row of an OpenAI Chat lane with every field report.md reads set to a value of its own."""
    row: dict[str, Any] = {
        "case": "refunds", "provider": "openai-chat", "mode": "body", "stack": "raw", "outcome": "loop",
        "passed": True, "failures": [], "override": None, "error": None, "expected": {"outcome": "loop"},
        "usage": {"input_tokens": 90, "cached_input_tokens": 40, "cache_write_tokens": None, "output_tokens": 12,
                  "reasoning_tokens": None, "total_tokens": 102}, "cost": 0.0125, "correlation": {"problems": []},
        "turns": [{"turn": 1, "kind": "calls", "raw": "length", "calls": [],
                   "request": {"prefix_bytes": 731, "checked": True, "problems": []}},
                  {"turn": 2, "kind": "text", "raw": "stop", "calls": []}]}
    row.update(changes)
    return row


def test_report_md_shows_every_field_a_brief_keeps() -> None:
    """report.md reads rows through their briefs only: each field a brief keeps, changed on the row, changes what
    report.md says, where it says it."""
    def md(**changes: Any) -> str:
        return render_markdown(build_report([_md_row(**changes)], ["openai-chat"]))

    plain = md()
    assert "| openai-chat | 1 | 731 | yes | 0 in 0 rows | 0 |" in plain
    assert "| refunds | length → stop |" in plain
    assert "| refunds | loop | ✅ calls → text ⇒ **loop** |" in plain
    assert "| openai-chat | 90 | 40 | null | 12 | null | 102 |" in plain
    request = {"prefix_bytes": 731, "checked": False, "problems": ["request: tools.0 has no description"]}
    turns = [{**_md_row()["turns"][0], "request": request}, _md_row()["turns"][1]]
    moved = md(turns=turns, correlation={"problems": ["static prefix changed between turns 1 and 2"]},
               passed=False, failures=["request: tools.0 has no description"])
    assert "| openai-chat | 1 | 731 | no (1 rows) | 1 in 1 rows | 1 |" in moved
    assert "- **refunds** \\[openai-chat, body\\]: request: tools.0 has no description" in moved
    assert "❌ calls → text" in moved
    overridden = md(override={"why": "this vendor ends the loop on its own"}, expected={"outcome": "text"})
    assert "| refunds | text | ✅ calls → text ⇒ **loop** ⚑ |" in overridden
    assert "expects text — this vendor ends the loop on its own" in overridden
    waived = md(passed=False, waived={"why": ["no refunds here"], "failures": ["outcome: loop, expected text"]})
    assert "⏸ calls → text" in waived and "no refunds here — waives outcome: loop, expected text" in waived
    assert "| openai-chat | 90 | 40 | null | 12 | null | 102 |" not in md(usage=None)


def test_report_md_and_the_summary_of_a_report_in_groups_parse_no_row(
        kept: tuple[Run, list[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """report.md walks the rows several times: from the briefs kept, never the rows read back and parsed."""
    run, texts, files = kept
    grouped = build_report_in_groups(texts, keys_of(texts), run.stacks, dict(files))
    markdown, summary = render_markdown(grouped), render_summary(grouped)
    monkeypatch.setattr(KeptRows, "__getitem__", lambda self, index: pytest.fail("a row parsed"))
    assert render_markdown(grouped) == markdown and render_summary(grouped) == summary


def test_report_json_lines_are_each_rows_sorted_spelling(kept: tuple[Run, list[str], dict[str, str]]) -> None:
    """Each results line of report.json is its row with sorted keys, no spaces and text as it is (an independent
    spelling of it, not the suite's own)."""
    run, texts, files = kept
    text = render_json(build_report_in_groups(texts, keys_of(texts), run.stacks, dict(files)))
    lines = [line.strip().rstrip(",") for line in text.splitlines() if line.startswith("    {")]
    assert len(lines) == len(texts)
    for line in lines:
        row = json.loads(line)
        assert line == json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert any(not line.isascii() for line in lines)  # the bundled fixtures' text ("→", "€") written as it is


def test_kept_rows_equal_what_holds_the_same_rows_and_nothing_else() -> None:
    rows = [{"case": "a", "n": 1}, {"case": "b", "n": 2}]
    first, second, other = KeptRows(), KeptRows(), KeptRows()
    for row in rows:
        first.add({**row, **_brief_fields()})
        second.add({**row, **_brief_fields()})
        other.add({**row, **_brief_fields(), "n": 3})
    assert first == second and first != other
    assert first != iter(list(first)) and first != "ab" and first != 2 and first == list(first)


def _brief_fields() -> dict[str, Any]:
    return {"provider": "gemini", "mode": "body", "passed": True, "failures": [], "outcome": "text", "override": None,
            "expected": {"outcome": "text"}, "turns": []}


def test_the_groups_are_the_cases_and_the_report_says_what_each_piece_says(
        kept: tuple[Run, list[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each array parsed is one whole case; the summary counts, the selection, the fixture digest, the shard record
    and the findings a stack's team accepts (for every case, and for one case) come out as the rows say."""
    import dataclasses

    run, texts, files = kept
    keys = keys_of(texts)
    parsed_rows = [json.loads(text) for text in texts]
    costs = [json.loads(text) for text in texts]
    whole = build_report(costs, sorted({row["provider"] for row in costs}), run.stacks, dict(files))
    cost = next(finding for finding in whole["findings"] if finding["field"].startswith("cost"))
    other = next(finding for finding in whole["findings"] if finding["field"].startswith("cost")
                 and finding["stack"] == cost["stack"] and finding["case"] != cost["case"])
    stacks = [dataclasses.replace(stack, accepted={f"{cost['field']}@{cost['case']}": "priced by the gateway",
                                                   "model": "the alias we ask for"})
              if stack.row_id == cost["stack"] else stack for stack in run.stacks]
    sizes: list[int] = []
    loads = json.loads

    def counted(text: str, **options: Any) -> Any:
        value = loads(text, **options)
        if text.startswith("[{"):
            sizes.append(len(value))
        return value

    monkeypatch.setattr(build.json, "loads", counted)
    shard = {"index": 1, "of": 2, "plan": "p"}
    report = build_report_in_groups(texts, keys, stacks, dict(files), shard, {"mode": ["body"]})
    monkeypatch.undo()
    assert sorted(sizes) == sorted(sum(1 for key in keys if key[0] == case) for case in {key[0] for key in keys})
    passed = sum(1 for row in parsed_rows if row["passed"])
    assert report["summary"] == {"rows": len(texts), "passed": passed, "failed": len(texts) - passed - 1,
                                 "cases": len({row["case"] for row in parsed_rows}), "waived": 1}
    assert report["measured"]["selection"] == {"mode": ["body"]} and report["measured"]["fixtures"]
    assert report["shard"] == {**shard, "fixture_files": dict(sorted(files.items()))}
    by_key = {build.finding_key(finding): finding for finding in report["findings"]}
    assert by_key[build.finding_key(cost)]["accepted"] == "priced by the gateway"
    assert by_key[build.finding_key(other)]["accepted"] is None  # accepted for one case only
    models = [finding for finding in report["findings"] if finding["stack"] == cost["stack"]
              and finding["field"] == "model"]
    assert models and all(finding["accepted"] == "the alias we ask for" for finding in models)
    assert "shard" not in build_report_in_groups(texts, keys, run.stacks, None)
    assert "fixtures" not in build_report_in_groups(texts, keys, run.stacks, None)["measured"]


def test_a_repeated_key_names_the_row_and_the_fix(kept: tuple[Run, list[str], dict[str, str]]) -> None:
    run, texts, files = kept
    again = [*texts, texts[3]]
    with pytest.raises(InputError) as raised:
        build_report_in_groups(again, keys_of(again), run.stacks, dict(files))
    row = json.loads(texts[3])
    assert [(problem.file, problem.message, problem.fix) for problem in raised.value.problems] == [
        (f"{row['case']} × {row['provider']} × {row['mode']}", "two results for one case × provider × mode",
         "give every case a unique id across the case folders")]


def test_a_case_of_one_row_is_a_group_of_its_own(kept: tuple[Run, list[str], dict[str, str]],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    run, texts, files = kept
    lone = min(json.loads(text)["case"] for text in texts)  # first in the report's order: a case follows it
    few = [text for text in texts if json.loads(text)["case"] != lone]
    few.append(next(text for text in texts if json.loads(text)["case"] == lone))
    keys = keys_of(few)
    sizes: list[int] = []
    loads = json.loads
    monkeypatch.setattr(build.json, "loads", lambda text, **options: (
        sizes.append(len(value)) if text.startswith("[{") and isinstance(value := loads(text, **options), list)
        else None, loads(text, **options))[1])
    build_report_in_groups(few, keys, run.stacks, dict(files))
    monkeypatch.undo()
    assert sorted(sizes) == sorted(sum(1 for key in keys if key[0] == case) for case in {key[0] for key in keys})
    assert 1 in sizes


def test_a_cost_finding_accepted_for_every_case_is_accepted_in_each(
        kept: tuple[Run, list[str], dict[str, str]]) -> None:
    import dataclasses

    run, texts, files = kept
    whole = build_report([json.loads(text) for text in texts], [], run.stacks, dict(files))
    cost = next(finding for finding in whole["findings"] if finding["field"].startswith("cost"))
    stacks = [dataclasses.replace(stack, accepted={cost["field"]: "the gateway prices it so"})
              if stack.row_id == cost["stack"] else stack for stack in run.stacks]
    report = build_report_in_groups(texts, keys_of(texts), stacks, dict(files))
    same = [finding for finding in report["findings"] if (finding["stack"], finding["field"]) == (
        cost["stack"], cost["field"])]
    assert same and all(finding["accepted"] == "the gateway prices it so" for finding in same)


def test_a_row_text_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        row_text({"cost": float("nan")})


def test_a_brief_of_a_row_with_the_optional_parts_left_out() -> None:
    """A raw value that is not text (a vendor's null), no correlation (an error row) and a waiver that names no
    failure give a brief as their absence reads: not moved, nothing waived."""
    row = _md_row(turns=[{"turn": 1, "kind": "fatal_error", "raw": None}], correlation=None, passed=False,
                  waived={"why": ["no refunds here"]})
    brief = brief_of(row)
    assert brief.turns[0].raw is None and not brief.prefix_moved and brief.waived == (("no refunds here",), ())
    assert not brief_of(_md_row(waived={"failures": ["f"]})).waived[0]  # type: ignore[index]


def test_kept_rows_give_each_rows_page_text_as_it_was_written_and_make_any_other_from_the_row(
        kept: tuple[Run, list[str], dict[str, str]]) -> None:
    rows = [json.loads(text) for text in kept[1][:2]]
    pages = KeptRows(page=lambda row: f"page of {row['case']} {row['provider']} {len(row['turns'])}")
    for row in rows:
        pages.add(row)
    assert list(pages.pages(pages._page)) == [  # type: ignore[arg-type]
        f"page of {row['case']} {row['provider']} {len(row['turns'])}" for row in rows]
    assert list(pages.pages(lambda row: row["case"].upper())) == [row["case"].upper() for row in rows]
    plain = KeptRows()
    plain.add(rows[0])
    assert list(plain.pages(row_text)) == [row_text(rows[0])]
