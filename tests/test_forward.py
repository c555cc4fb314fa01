"""Forward-compatibility mutants (docs/forward.md): the generator is deterministic and keeps each wire shape valid,
every reference adapter holds every mutant, a naive adapter shows guessed and crashed cells, the counts and the SDK
measurements in the docs are what the code gives, and the diff gates a lane that stops holding."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import forward
from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.kit.types import Text, ToolCalls
from conformance.report.build import SCHEMA_VERSION, render_markdown
from conformance.report.diff import forward_changes
from conformance.report.html import render_html
from conformance.session import Run
from tests.helpers import CASES, cli

ADAPTERS = builtin_adapters()
CASE_LIST = load_cases([CASES])
DOC = (Path(__file__).parent.parent / "docs/forward.md").read_text(encoding="utf-8")


def mutants(provider: str, cases: Any = CASE_LIST) -> list[forward.Mutant]:
    wire = ADAPTERS[provider].wire
    assert wire is not None
    return forward.mutants_for(cases, provider, wire.shape)


@pytest.mark.parametrize("provider", sorted(ADAPTERS))
def test_the_same_fixtures_give_the_same_mutants_byte_for_byte(provider: str, tmp_path: Path) -> None:
    shutil.copytree(CASES, tmp_path / "cases")
    again = mutants(provider, load_cases([tmp_path / "cases"]))
    first = mutants(provider)
    assert [mutant.id for mutant in again] == [mutant.id for mutant in first]
    assert forward.digest(again) == forward.digest(first)
    assert len({mutant.id for mutant in first}) == len(first)  # ids are unique within an API


@pytest.mark.parametrize("provider", sorted(ADAPTERS))
def test_every_mutant_is_the_recorded_turn_with_one_change_and_its_framing_intact(provider: str) -> None:
    by_case = {case.id: case for case in CASE_LIST}
    for mutant in mutants(provider):
        turn = by_case[mutant.case].providers[provider].turns[mutant.turn - 1]
        if mutant.family.mode == "body":
            original = turn.body
            changed_headers = mutant.headers is not None and dict(mutant.headers) != dict(turn.headers)
            assert json.loads(json.dumps(mutant.data)) == mutant.data, mutant.id
            assert (mutant.data != original) or changed_headers, mutant.id
            continue
        assert turn.stream is not None
        if mutant.family.name.startswith("frame."):
            continue  # the same events framed another way: tests/test_framing.py
        recorded = turn.stream.read_text(encoding="utf-8")
        jsonl = turn.stream.suffix == ".jsonl"
        if jsonl:  # one JSON object per line, and the binary event stream still encodes it
            assert all(isinstance(json.loads(line), dict) for line in mutant.data.splitlines()), mutant.id
            wire = ADAPTERS[provider].wire
            assert wire is not None and wire.encode_stream is not None
            assert list(wire.encode_stream(mutant.data.encode()))
        else:  # every block is an optional `event:` line and one JSON `data:` line, or kept as it was recorded
            for block in mutant.data.split("\n\n"):
                lines = [line for line in block.split("\n") if line]
                data = [line for line in lines if line.startswith("data: ")]
                if data and data[0] != "data: [DONE]":
                    json.loads(data[0][6:])
        # The events are the recorded ones plus, or with, the one change: as many, or more by the events added.
        events, recorded_events = forward._read_stream(mutant.data, jsonl), forward._read_stream(recorded, jsonl)
        shape = ADAPTERS[provider].wire.shape  # type: ignore[union-attr]
        assert shape is not None
        added = {"event.unseen": 1, "item.unseen_beside": len(shape.stream_item)}.get(mutant.family.name, 0)
        assert len(events) == len(recorded_events) + added, mutant.id
        numbers = [event.data["sequence_number"] for event in events
                   if isinstance(event.data, dict) and isinstance(event.data.get("sequence_number"), int)]
        assert numbers == sorted(set(numbers)), mutant.id  # numbered events stay numbered in order
        if added:
            new = [event for event in events if forward.UNSEEN in json.dumps(event.data)
                   or forward.UNSEEN_MEMBER in json.dumps(event.data)]
            assert new, mutant.id
            continue
        differing = [index for index, (a, b) in enumerate(zip(events, recorded_events, strict=True))
                     if (a.data, a.name) != (b.data, b.name)]
        if mutant.family.name == "field.missing":  # the field gone from each event that had it, nothing else
            where = mutant.id.split("@", 1)[1]  # `<event type>/<pointer>`, or the pointer for any event
            pointer = where[where.index("/"):]
            assert differing, mutant.id
            for index in differing:
                assert not forward._has(forward._event_body(events[index], shape), pointer), mutant.id
        else:
            assert len(differing) == 1, (mutant.id, differing)


@pytest.mark.parametrize("provider", sorted(ADAPTERS))
def test_an_unseen_item_streams_as_the_api_streams_an_item(provider: str) -> None:
    """The events an unseen item comes in have the types the recorded streams' items come in, numbered after the
    recorded items, with the stream's envelope; and a stream that repeats its whole output repeats the item too."""
    shape = ADAPTERS[provider].wire.shape  # type: ignore[union-attr]
    assert shape is not None and shape.stream_item
    case = next(case for case in CASE_LIST if case.id == "parallel_tool_calls")
    stream = case.providers[provider].turns[0].stream
    assert stream is not None
    jsonl = stream.suffix == ".jsonl"
    recorded = forward._read_stream(stream.read_text(encoding="utf-8"), jsonl)
    mutant = next(m for m in forward.mutants_for([case], provider, shape)
                  if m.family.name == "item.unseen_beside" and m.family.mode == "stream" and m.turn == 1)
    events = forward._read_stream(mutant.data, jsonl)
    new = [(index, event) for index, event in enumerate(events) if "item_future_1" in json.dumps(event.data)
           or forward.UNSEEN_MEMBER in json.dumps(event.data)]
    recorded_types = {forward._event_type(event, shape) for event in recorded}
    first = new[0][0]
    assert all(forward._event_type(event, shape) in recorded_types for _, event in new[:len(shape.stream_item)])
    stop = forward._last(events, shape, shape.stream_stop, str)
    assert stop is not None and first < stop[0]  # before the event that says why it stopped
    if shape.stream_index is not None:  # numbered after every recorded item
        largest = max(forward._largest(event.data, shape.stream_index) for event in recorded)
        assert forward._largest(events[first].data, shape.stream_index) == largest + 1
    for key in shape.stream_envelope:
        assert events[first].data.get(key) == events[first - 1].data.get(key), key
    if shape.stream_final_items:
        completed = [event for event in events if forward._event_type(event, shape) == "response.completed"]
        assert completed and completed[0].data["response"]["output"][-1]["type"] == forward.UNSEEN


def test_every_reference_adapter_holds_every_mutant_and_the_counts_are_the_documented_ones() -> None:
    section = Run.configure().forward(CASE_LIST)
    not_held = [(entry["lane"], entry["mutant"], entry["verdict"], entry["read"]) for entry in section["not_held"]]
    assert not_held == []
    assert sum(section["mutants"].values()) == 4566 and "hold all 4,566 mutants" in DOC
    table = re.search(r"\| family \| openai-responses .*?\n\| \*\*all\*\*.*?\n", DOC, re.S)
    assert table is not None
    header, _, *lines = table[0].strip().splitlines()
    apis = [cell.strip() for cell in header.strip("|").split("|")[1:]]
    for line in lines[:-1]:
        family, *cells = [cell.strip() for cell in line.strip("|").split("|")]
        for api, cell in zip(apis, cells, strict=True):
            got = sum(section["lanes"][api].get(family, {}).values())
            assert got == int(cell), (family, api, got, cell)
    totals = [cell.strip("* ") for cell in lines[-1].strip("|").split("|")[1:]]
    assert [str(section["mutants"][api]) for api in apis] == totals


def test_a_naive_adapter_guesses_and_crashes_in_named_cells() -> None:
    """Exact enum comparisons, `else: text`, and an item read by the key its known types have."""
    anthropic = ADAPTERS["anthropic-messages"]

    def naive(body: Any) -> Any:
        if body["stop_reason"] == "tool_use":
            return anthropic.classify_body(body)
        text = "".join(block["text"] for block in body["content"])  # KeyError on a block that has no text
        return Text(raw=f"stop_reason={body['stop_reason']}", text=text)

    team = dataclasses.replace(anthropic, id="naive-anthropic", classify_body=naive)
    run = Run.configure()
    run.adapters = {"anthropic-messages": team}
    section = run.forward([case for case in CASE_LIST if case.id in ("normal", "truncation", "refusal")])
    cells = section["lanes"]["anthropic-messages"]
    assert cells["stop.unseen (body)"]["guessed"] == 3  # normal's answer, the truncation, the refusal: read as text
    assert cells["item.unseen_alone (body)"]["crashed"] >= 2
    crashed = [entry for entry in section["not_held"] if entry["verdict"] == "crashed"]
    assert crashed and crashed[0]["read"].startswith("KeyError: ")
    assert any("in naive" in frame for frame in crashed[0]["traceback"])  # the team's own frame, named
    assert cells["field.extra (body)"]["held"] == sum(cells["field.extra (body)"].values())
    markdown = render_markdown({**_report(), "forward": section})
    assert "## Survives the next release" in markdown
    # normal's turn 1 (tool_use → future_release) reaches the text reading and raises: 1 crashed.
    assert re.search(r"\| stop\.unseen \(body\) \| .*? \| ❌ 0/4 \(3 guessed, 1 crashed\) \|", markdown)


def _report() -> dict[str, Any]:
    return {"summary": {"rows": 0, "passed": 0, "failed": 0, "cases": 0}, "providers": [], "results": [],
            "differs": [], "findings": []}


def test_a_report_without_mutants_has_no_section_and_its_page_is_unchanged() -> None:
    plain = _report()
    assert "Survives the next release" not in render_markdown(plain)
    page = render_html(plain)
    assert '"forward"' not in page.split('id="report-data">')[1].split("</script>")[0]
    section = Run.configure().forward([case for case in CASE_LIST if case.id == "normal"])
    with_forward = render_html({**plain, "forward": section})
    data = with_forward.split('id="report-data">')[1].split("</script>")[0]
    assert '"forward": {"families": ["stop.unseen (body)"' in data and "not_held" not in data


def test_the_diff_gates_a_lane_that_stops_holding(tmp_path: Path) -> None:
    chat = ADAPTERS["openai-chat"]

    def folds_unknown_stops(body: Any) -> Any:  # LiteLLM's "Unmapped finish_reason …, defaulting to 'stop'"
        read = chat.classify_body(body)
        if isinstance(read, ToolCalls):
            return read
        return Text(raw=read.raw, text=getattr(read, "text", None) or "", usage=read.usage)

    cases = [case for case in CASE_LIST if case.id in ("normal", "refusal")]
    good = Run.configure(providers=["openai-chat"]).forward(cases)
    run = Run.configure(providers=["openai-chat"])
    run.adapters = {"openai-chat": dataclasses.replace(chat, classify_body=folds_unknown_stops)}
    bad = run.forward(cases)
    paths = []
    for name, section in (("old", good), ("new", bad)):
        path = tmp_path / f"{name}.json"
        report = json.loads(json.dumps({"schema_version": SCHEMA_VERSION, **_report(), "forward": section}))
        path.write_text(json.dumps(report))
        paths.append(path)
    (change,) = [change for change in forward_changes(*paths) if change.key[0] == "stop.unseen (body)"]
    assert change.label == "regression" and change.key[1:] == ("openai-chat", "mutants")
    assert re.fullmatch(r"mutants stop\.unseen \(body\): held (\d+)/\1 → \d+/\1 \(\d+ guessed\)", change.notes[0])
    (back,) = [change for change in forward_changes(*reversed(paths)) if change.key[0] == "stop.unseen (body)"]
    assert back.label == "improvement"
    without = tmp_path / "plain.json"
    without.write_text(json.dumps({"schema_version": SCHEMA_VERSION, **_report()}))
    assert forward_changes(without, paths[1]) == []


def test_run_mutants_writes_the_section_and_the_diff_of_two_runs_exits_1_on_a_lost_cell(tmp_path: Path) -> None:
    first = cli("run", "--no-config", "--cases", str(CASES), "--provider", "openai-chat", "--case", "normal",
                "--mutants", "--report-dir", str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr
    report = json.loads((tmp_path / "a/report.json").read_text())
    assert set(report["forward"]["lanes"]) == {"openai-chat"} and report["forward"]["not_held"] == []
    assert "## Survives the next release" in (tmp_path / "a/report.md").read_text()
    broken = copy.deepcopy(report)
    broken["forward"]["lanes"]["openai-chat"]["stop.unseen (body)"] = {"held": 0, "unnamed": 0, "guessed": 2,
                                                                        "changed": 0, "crashed": 0}
    (tmp_path / "b.json").write_text(json.dumps(broken))
    diff = cli("diff", str(tmp_path / "a/report.json"), str(tmp_path / "b.json"))
    assert diff.returncode == 1 and "mutants stop.unseen (body): held 2/2 → 0/2 (2 guessed)" in diff.stdout


def test_what_the_sdk_stacks_do_with_the_next_release_is_what_the_docs_say() -> None:
    """docs/forward.md, "What the lanes do today", over three cases (the whole set is `conformance run --mutants
    --stack sdks`)."""
    for module in ("openai", "anthropic", "google.genai", "boto3"):
        pytest.importorskip(module)
    run = Run.configure(stacks=["sdks"])
    stacks = {stack.row_id for stack in run.stacks}
    section = run.forward([case for case in CASE_LIST if case.id in ("normal", "cached_usage", "refusal")], stacks)
    lanes = section["lanes"]

    def not_held(lane: str) -> dict[str, dict[str, int]]:
        return {family: {verdict: count for verdict, count in cell.items() if verdict != "held" and count}
                for family, cell in lanes[lane].items() if cell["held"] != sum(cell.values())}

    for lane in ("openai-chat@openai-sdk", "openai-responses@openai-sdk"):
        assert not_held(lane) == {}, lane
    # Streamed, the counter a release adds to message_delta's usage does not reach the row's raw usage.
    assert set(not_held("anthropic-messages@anthropic-sdk")) == {"usage.new_counter (stream)"}
    genai = not_held("gemini@google-genai")
    assert set(genai) == {"item.unseen_alone (body)", "item.unseen_beside (body)", "item.unseen_beside (stream)",
                          "usage.new_counter (body)", "usage.new_counter (stream)", "frame.keepalive (stream)"}
    # An SSE comment line reaches google-genai's JSON parse: every stream with keep-alives raises.
    keepalives = sum(lanes["gemini@google-genai"]["frame.keepalive (stream)"].values())
    assert keepalives >= 4 and genai["frame.keepalive (stream)"] == {"crashed": keepalives}
    assert {entry["read"].split(":")[0] for entry in section["not_held"] if entry["lane"] == "gemini@google-genai"
            and entry["family"] == "frame.keepalive (stream)"} == {"UnknownApiResponseError"}
    assert set(genai["item.unseen_alone (body)"]) == set(genai["item.unseen_beside (body)"]) == set(
        genai["item.unseen_beside (stream)"]) == {"guessed"}
    assert set(genai["usage.new_counter (body)"]) == {"changed"}  # the SDK drops a counter it does not know
    assert {entry["read"] for entry in section["not_held"] if entry["lane"] == "gemini@google-genai"
            and entry["family"] == "usage.new_counter (body)"} == {
        "the new counter future_release_tokens is not kept in raw_usage"}
    reads = {entry["read"].split(" ")[0] for entry in section["not_held"] if entry["lane"] == "gemini@google-genai"
             and entry["family"].startswith("item.")}
    assert reads <= {"empty", "tool_calls", "text", "refusal"} and "empty" in reads
    boto = not_held("bedrock-converse@boto3")
    assert set(boto) == {"item.unseen_alone (body)", "item.unseen_beside (body)", "item.unseen_beside (stream)",
                         "usage.new_counter (body)", "usage.new_counter (stream)"}
    assert set(boto["item.unseen_alone (body)"]) == set(boto["item.unseen_beside (body)"]) == set(
        boto["item.unseen_beside (stream)"]) == {"unnamed"}
    assert set(boto["usage.new_counter (body)"]) == {"changed"}  # botocore parses the members its model names
    assert all("SDK_UNKNOWN_MEMBER" in entry["read"] for entry in section["not_held"]
               if entry["lane"] == "bedrock-converse@boto3" and entry["family"].startswith("item."))


def test_the_pytest_option_adds_the_matrix_of_what_ran(pytester: pytest.Pytester) -> None:
    root = pytester.path / "cases"
    root.mkdir()
    shutil.copy(CASES / "world.yaml", root)
    shutil.copytree(CASES / "normal", root / "normal")
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\nconformance_cases = ["cases"]\n')
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--snapshot-update",
                                          "--conformance-mutants", "-k", "openai-chat or gemini")
    result.assert_outcomes(passed=4)
    section = json.loads((pytester.path / "reports/report.json").read_text())["forward"]
    assert sorted(section["lanes"]) == ["gemini", "openai-chat"]  # the lanes that ran, nothing else
    assert section["not_held"] == [] and sum(sum(cell.values()) for cell in section["lanes"]["gemini"].values()) > 0
    assert "## Survives the next release" in (pytester.path / "reports/report.md").read_text()


def test_a_stream_line_that_is_not_json_is_kept_as_it_was_not_a_traceback() -> None:
    text = '{"messageStart":{"role":"assistant"}}\nnot json at all\n{"messageStop":{"stopReason":"end_turn"}}\n'
    events = forward._read_stream(text, jsonl=True)
    assert [event.raw for event in events] == [None, "not json at all", None]
    assert forward._write_stream(events, jsonl=True) == text


def test_the_merge_of_shards_keeps_the_matrix_of_the_whole_run(tmp_path: Path) -> None:
    base = ("run", "--no-config", "--cases", str(CASES), "--provider", "openai-chat", "--provider", "gemini",
            "--mutants")
    assert cli(*base, "--report-dir", str(tmp_path / "whole")).returncode == 0
    for index in (1, 2):
        assert cli(*base, "--shard", f"{index}/2", "--report-dir", str(tmp_path / f"s{index}")).returncode == 0
    merged = cli("merge", str(tmp_path / "s1/report.json"), str(tmp_path / "s2/report.json"), "--report-dir",
                 str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr
    whole = json.loads((tmp_path / "whole/report.json").read_text())["forward"]
    joined = json.loads((tmp_path / "merged/report.json").read_text())["forward"]
    assert joined["lanes"] == whole["lanes"] and joined["mutants"] == whole["mutants"]
    assert joined["not_held"] == whole["not_held"] and joined["rules"] == whole["rules"]


def test_the_diff_names_coverage_lost_as_a_regression(tmp_path: Path) -> None:
    cell = {"held": 4, "unnamed": 0, "guessed": 0, "changed": 0, "crashed": 0}
    old = {"lanes": {"openai-chat": {"stop.unseen (body)": cell, "field.extra (body)": cell},
                     "gemini": {"stop.unseen (body)": cell}}}
    new = {"lanes": {"openai-chat": {"stop.unseen (body)": dict(cell, held=2)}}}
    paths = []
    for name, section in (("old", old), ("new", new)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"schema_version": SCHEMA_VERSION, **_report(), "forward": section}))
        paths.append(path)
    changes = {change.key: change for change in forward_changes(*paths)}
    assert changes[("all families", "gemini", "mutants")].label == "regression"
    assert changes[("field.extra (body)", "openai-chat", "mutants")].notes == [
        "mutants field.extra (body): 4 checked → 0 (held 4 → 0)"]
    assert changes[("stop.unseen (body)", "openai-chat", "mutants")].label == "regression"


def test_an_adapter_whose_wire_has_no_shape_is_said_to_have_no_mutants(tmp_path: Path) -> None:
    (tmp_path / "shapeless.py").write_text(
        "import dataclasses\nfrom conformance.providers.openai_chat import ADAPTER as CHAT\n"
        "ADAPTER = dataclasses.replace(CHAT, wire=dataclasses.replace(CHAT.wire, shape=None))\n")
    result = cli("run", "--no-config", "--cases", str(CASES), "--adapter", f"{tmp_path / 'shapeless.py'}:ADAPTER",
                 "--provider", "openai-chat", "--case", "normal", "--mutants", "--report-dir", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    assert "no mutants for openai-chat: its adapter's wire has no Shape" in result.stderr
    section = json.loads((tmp_path / "r/report.json").read_text())["forward"]
    assert section["no_shape"] == ["openai-chat"] and section["lanes"] == {}
    assert "No mutants for openai-chat: their adapter's wire has no Shape" in (tmp_path / "r/report.md").read_text()
