"""Telemetry lanes (docs/telemetry.md, "The telemetry lane"): a team's spans, captured in memory while a stack's rows
replay, compared with what the suite read on the wire; a deliberately wrong span is caught by the attribute's name."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.kit.types import ModelResponse
from conformance.report.diff import compare
from conformance.report.findings import find_all
from conformance.report.telemetry import compare_turn, read_spans
from conformance.session import Run
from conformance.stacks import telemetry
from conformance.stacks.runner import run_stack_case
from conformance.stacks.sdk import instrumentations
from conformance.stacks.stack import builtin_stacks, select_stacks
from conformance.stacks.telemetry import Instrumentation, installed, restore, snapshot, with_telemetry
from tests.helpers import CASES

BY_ID = {case.id: case for case in load_cases([CASES])}
CHAT = builtin_adapters()["openai-chat"]
SDK = builtin_stacks()["openai-chat@openai-sdk"]
_TRACER: dict[str, Any] = {}


def _install(provider: Any) -> Any:
    _TRACER["tracer"] = provider.get_tracer("team.telemetry")
    return _TRACER.clear


def _team_stack(cache_in_input: bool) -> Any:
    """The openai SDK stack, with the team's own span around each call, written from what the call returned."""

    def call(task: Any, transcript: Any, endpoint: Any) -> ModelResponse:
        response: ModelResponse = SDK.call(task, transcript, endpoint)  # type: ignore[assignment]
        with _TRACER["tracer"].start_as_current_span("chat") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            if response.response_id:
                span.set_attribute("gen_ai.response.id", response.response_id)
            if response.model:
                span.set_attribute("gen_ai.response.model", response.model)
            reason = {"tool_calls": "tool_call", "text": "stop"}.get(response.kind)  # the convention's words
            if reason:
                span.set_attribute("gen_ai.response.finish_reasons", [reason])
            usage = response.usage
            if usage is not None and usage.input_tokens is not None:
                cached = usage.cached_input_tokens or 0
                span.set_attribute("gen_ai.usage.input_tokens",
                                   usage.input_tokens if cache_in_input else usage.input_tokens - cached)
                span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens or 0)
                if cached:
                    span.set_attribute("gen_ai.usage.cache_read.input_tokens", cached)
            calls = [{"type": "tool_call", "id": call.call_id, "name": call.name}
                     for call in getattr(response, "tool_calls", ())]
            if calls:
                span.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": calls}]))
        return response

    team = Instrumentation(id="team", providers=("openai-chat",), install=_install, requires=())
    return with_telemetry(dataclasses.replace(SDK, call=call), team)


def _findings(stack: Any, case: str, mode: str = "body") -> list[dict[str, Any]]:
    raw = run_stack_case_raw(case, mode)
    row, error, _ = run_stack_case(BY_ID[case], stack, CHAT, mode, in_process=True)  # type: ignore[arg-type]
    assert error is None and row["passed"], row["failures"]
    return [finding.to_dict() for finding in find_all([raw, row])]


def run_stack_case_raw(case: str, mode: str) -> Any:
    from conformance.engine.runner import run_case

    return run_case(BY_ID[case], "openai-chat", CHAT, mode)  # type: ignore[arg-type]


def test_a_span_that_leaves_the_cache_out_of_input_tokens_is_caught_by_name() -> None:
    found = _findings(_team_stack(cache_in_input=False), "cached_usage")
    assert [(f["turn"], f["field"], f["effect"], f["wire"], f["stack_value"]) for f in found] == [
        (2, "gen_ai.usage.input_tokens", "changed", 500, 116)]
    assert "the 384 cached prompt tokens are left out" in found[0]["meaning"]
    assert found[0]["stack"] == "openai-chat@openai-sdk+team"


def test_the_same_span_written_right_has_no_finding() -> None:
    for case in ("cached_usage", "parallel_tool_calls", "normal"):
        assert _findings(_team_stack(cache_in_input=True), case) == [], case


def test_a_tool_call_id_the_span_gets_wrong_is_a_finding() -> None:
    row = run_stack_case_raw("parallel_tool_calls", "body")
    turn = row["turns"][0]
    ids = [call["call_id"] for call in turn["calls"]]
    reading = {"spans": 1, "attributes": {"gen_ai.tool.call.id": [ids[0], "call_other"]}}
    fields = {finding[0]: finding for finding in compare_turn(turn, reading)}
    assert fields["gen_ai.tool.call.id"][1:4] == ("changed", ids, [ids[0], "call_other"])


@pytest.mark.parametrize(("spans", "field", "effect"), [(0, "span", "lost"), (2, "span", "changed")])
def test_no_span_or_two_spans_for_one_call_is_a_finding(spans: int, field: str, effect: str) -> None:
    turn = run_stack_case_raw("normal", "body")["turns"][0]
    reading = {"spans": spans, "attributes": {}}
    assert (field, effect) in [(finding[0], finding[1]) for finding in compare_turn(turn, reading)]


def test_absent_and_zero_counts_are_equal_and_the_vendors_own_stop_value_is_right() -> None:
    turn = {"turn": 1, "kind": "text", "raw": "finish_reason=STOP", "response_id": "r1", "model": "m",
            "usage": {"input_tokens": 10, "output_tokens": 2, "cached_input_tokens": 0, "reasoning_tokens": None},
            "calls": []}
    span = {"gen_ai.response.id": "r1", "gen_ai.response.model": "m", "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 2, "gen_ai.usage.reasoning.output_tokens": 0}
    for reason in ("stop", "STOP", "Stop"):
        assert compare_turn(turn, {"spans": 1, "attributes": {**span, "gen_ai.response.finish_reasons": [reason]}}) \
            == []
    wrong = compare_turn(turn, {"spans": 1, "attributes": {**span, "gen_ai.response.finish_reasons": ["length"]}})
    assert [(finding[0], finding[1]) for finding in wrong] == [("gen_ai.response.finish_reasons", "changed")]


def test_an_error_turn_needs_an_error_on_its_span_and_nothing_else() -> None:
    turn = {"turn": 1, "kind": "retryable_error", "http_status": 429, "raw": "http 429", "usage": None}
    assert compare_turn(turn, {"spans": 1, "attributes": {"error": True}}) == []
    assert [finding[:2] for finding in compare_turn(turn, {"spans": 1, "attributes": {"error": False}})] == [
        ("error.type", "lost")]


def test_a_count_under_a_name_the_convention_lacks_is_lost_and_says_where_it_is() -> None:
    span = {"name": "x", "scope": "s", "error": False,
            "attributes": {"gen_ai.operation.name": "chat", "gen_ai.usage.reasoning_tokens": 64}}
    reading = read_spans([span], "semconv")
    assert "gen_ai.usage.reasoning.output_tokens" not in reading
    turn = {"turn": 1, "kind": "text", "raw": "", "usage": {"reasoning_tokens": 64}, "calls": []}
    found = {finding[0]: finding for finding in compare_turn(turn, {"spans": 1, "attributes": reading})}
    lost = found["gen_ai.usage.reasoning.output_tokens"]
    assert lost[1] == "lost" and "64 under gen_ai.usage.reasoning_tokens" in lost[4]


def test_openinference_spans_are_read_through_its_names() -> None:
    span = {"name": "ChatCompletion", "scope": "openinference", "error": False, "attributes": {
        "openinference.span.kind": "LLM", "llm.token_count.prompt": 500, "llm.token_count.completion": 18,
        "llm.token_count.prompt_details.cache_read": 384, "llm.model_name": "gpt-x", "llm.finish_reason": "stop",
        "llm.output_messages.0.message.tool_calls.1.tool_call.id": "call_b",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_a"}}
    reading = read_spans([span], "openinference")
    assert reading["gen_ai.usage.input_tokens"] == 500
    assert reading["gen_ai.usage.cache_read.input_tokens"] == 384
    assert reading["gen_ai.response.model"] == "gpt-x"
    assert reading["gen_ai.response.finish_reasons"] == ["stop"]
    assert reading["gen_ai.tool.call.id"] == ["call_a", "call_b"]
    assert "gen_ai.response.id" not in reading


class _Owner:
    def method(self) -> str:
        return "original"


def test_what_an_instrumentation_leaves_wrapped_is_put_back_after_the_row(monkeypatch: pytest.MonkeyPatch) -> None:
    module = type(telemetry)("team_sdk_for_test")
    module._Owner = _Owner  # type: ignore[attr-defined]
    monkeypatch.setattr(_Owner, "__module__", "team_sdk_for_test")
    monkeypatch.setitem(__import__("sys").modules, "team_sdk_for_test", module)
    before = snapshot(("team_sdk_for_test",))
    _Owner.method = lambda self: "wrapped"  # type: ignore[method-assign]
    _Owner.added = "left behind"  # type: ignore[attr-defined]
    restore(before)
    assert _Owner().method() == "original"
    assert not hasattr(_Owner, "added")


def test_spans_go_to_memory_only_and_the_global_provider_is_untouched() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    before = trace.get_tracer_provider()
    team = Instrumentation(id="team", providers=("openai-chat",), install=_install, requires=())
    with installed(team) as capture:
        processors = capture.provider._active_span_processor._span_processors
        assert [type(processor.span_exporter) for processor in processors] == [InMemorySpanExporter]
    assert trace.get_tracer_provider() is before


def test_telemetry_lanes_are_selected_by_group_and_by_row_id() -> None:
    lanes = {stack.row_id for stack in select_stacks(["telemetry"])}
    assert "openai-chat@openai-sdk+openllmetry" in lanes and "gemini@google-genai+otel" in lanes
    assert all("+" in lane for lane in lanes)
    chosen = select_stacks(["bedrock-converse@boto3+openllmetry"])
    assert [stack.row_id for stack in chosen] == ["bedrock-converse@boto3+openllmetry"]
    assert chosen[0].telemetry is instrumentations.OPENLLMETRY_BEDROCK


def test_a_new_telemetry_finding_is_a_regression_in_the_diff() -> None:
    raw = run_stack_case_raw("cached_usage", "body")
    right, _, _ = run_stack_case(BY_ID["cached_usage"], _team_stack(True), CHAT, "body", in_process=True)
    wrong, _, _ = run_stack_case(BY_ID["cached_usage"], _team_stack(False), CHAT, "body", in_process=True)
    old = {"results": [raw, right], "findings": [f.to_dict() for f in find_all([raw, right])]}
    new = {"results": [raw, wrong], "findings": [f.to_dict() for f in find_all([raw, wrong])]}
    changes = _diff(old, new)
    assert any(change.label == "regression" and "gen_ai.usage.input_tokens" in " ".join(change.notes)
               for change in changes), [(change.label, change.notes) for change in changes]


def _diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Any]:
    def rows(report: Mapping[str, Any]) -> dict[tuple[str, str, str], Any]:
        return {(row["case"], row["provider"], row["mode"]): row for row in report["results"]}

    return compare(rows(old), rows(new), list(old["findings"]), list(new["findings"]))


def test_a_lane_whose_instrumentation_is_missing_skips_with_the_install_hint() -> None:
    absent = Instrumentation(id="absent", providers=("openai-chat",), install=_install,
                             requires=("opentelemetry.instrumentation.no_such_thing",))
    lane = with_telemetry(SDK, absent)
    reason = lane.skip_reason()
    assert reason is not None and "opentelemetry.instrumentation.no_such_thing" in reason
    assert "llm-conformance[telemetry]" in reason


def test_an_install_that_fails_leaves_no_variable_or_wrapper_and_is_the_rows_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    module = type(telemetry)("team_sdk_broken")
    module._Owner = _Owner  # type: ignore[attr-defined]
    monkeypatch.setattr(_Owner, "__module__", "team_sdk_broken")
    monkeypatch.setitem(__import__("sys").modules, "team_sdk_broken", module)
    monkeypatch.delenv("TEAM_SWITCH", raising=False)

    def install(provider: Any) -> Any:
        _Owner.method = lambda self: "half-wrapped"  # type: ignore[method-assign]
        raise ImportError("cannot import name 'instruments'")

    broken = Instrumentation(id="broken", providers=("openai-chat",), install=install, requires=(),
                             patches=("team_sdk_broken",), environment={"TEAM_SWITCH": "on"})
    row, error, _ = run_stack_case(BY_ID["normal"], with_telemetry(SDK, broken), CHAT, "body", in_process=True)
    assert not row["passed"]
    assert "the instrumentation 'broken' did not install: ImportError: cannot import name 'instruments'" in \
        row["failures"][0]
    assert "TEAM_SWITCH" not in __import__("os").environ
    assert _Owner().method() == "original"


def test_two_rows_in_a_row_each_see_one_span_per_call() -> None:
    lane = select_stacks(["openai-responses@openai-sdk+openllmetry"])[0]
    adapter = builtin_adapters()["openai-responses"]
    for _ in range(3):
        row, error, _ = run_stack_case(BY_ID["cached_usage"], lane, adapter, "body", in_process=True)
        assert error is None and [reading["spans"] for reading in row["telemetry"]["turns"]] == [1, 1]


@pytest.mark.parametrize("lane", ["openai-chat@openai-sdk+logfire", "openai-chat@openai-sdk+openllmetry",
                                  "openai-chat@openai-sdk+openinference", "openai-chat@openai-sdk+otel"])
def test_a_shipped_instrumentation_leaves_the_global_provider_alone(lane: str) -> None:
    from opentelemetry import trace

    before = trace.get_tracer_provider()
    row, error, _ = run_stack_case(BY_ID["normal"], select_stacks([lane])[0], CHAT, "body", in_process=True)
    assert error is None and row["telemetry"]["turns"][0]["spans"] == 1
    assert trace.get_tracer_provider() is before


@pytest.mark.parametrize("attributes", [
    {"gen_ai.operation.name": ["chat"]},
    {"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": 7},
    {"gen_ai.operation.name": "chat", "gen_ai.output.messages": '[{"parts": 5}]'},
    {"gen_ai.operation.name": "chat", "gen_ai.output.messages": "not json"},
    {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": "500"},
])
def test_odd_span_attributes_are_read_or_reported_never_raised(attributes: dict[str, Any]) -> None:
    from conformance.report.telemetry import inference_spans

    spans = inference_spans([{"name": "x", "scope": "s", "error": False, "attributes": attributes}], "semconv")
    reading = read_spans(spans, "semconv")
    turn = {"turn": 1, "kind": "text", "raw": "finish_reason=stop", "usage": {"input_tokens": 500}, "calls": []}
    compare_turn(turn, {"spans": len(spans), "attributes": reading})  # reads, whatever the attribute types


def test_a_count_written_as_text_is_a_type_finding() -> None:
    reading = read_spans([{"name": "x", "scope": "s", "error": False, "attributes": {
        "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": "500"}}], "semconv")
    turn = {"turn": 1, "kind": "text", "raw": "", "usage": {"input_tokens": 500}, "calls": []}
    fields = [finding[0] for finding in compare_turn(turn, {"spans": 1, "attributes": reading})]
    assert "gen_ai.usage.input_tokens:type" in fields and "gen_ai.usage.input_tokens" not in fields


# ---- A lane's instrumentation installed once for its rows (conformance run) -------------------------------------


class _Counted:
    """A team's instrumentation that counts its installs and removals and says whether it is installed now."""

    def __init__(self) -> None:
        self.installs = self.removals = 0
        self.now = False

    def install(self, provider: Any) -> Any:
        self.installs += 1
        self.now = True
        _install(provider)

        def remove() -> None:
            self.removals += 1
            self.now = False
            _TRACER.clear()
        return remove


def _run_with(*stacks: Any) -> Run:
    return Run(known={"openai-chat": CHAT}, adapters={"openai-chat": CHAT}, stacks=list(stacks), required=[])


def _body_items(run: Run, *case_ids: str) -> list[Any]:
    return [item for case_id in case_ids for item in run.plan(BY_ID[case_id])
            if item.mode == "body" and item.stack is not None]


def test_a_telemetry_lane_installs_its_instrumentation_once_for_its_rows_not_per_row() -> None:
    counted = _Counted()
    lane = dataclasses.replace(_team_stack(True), telemetry=dataclasses.replace(
        _team_stack(True).telemetry, install=counted.install))
    seen_by_sdk_rows: list[bool] = []

    def sdk_call(task: Any, transcript: Any, endpoint: Any) -> ModelResponse:
        seen_by_sdk_rows.append(counted.now)
        return SDK.call(task, transcript, endpoint)  # type: ignore[return-value]

    sdk = dataclasses.replace(SDK, call=sdk_call)
    run = _run_with(sdk, lane)
    cases = ("normal", "cached_usage", "parallel_tool_calls", "http_quota")
    items = _body_items(run, *cases)  # case by case: the SDK's row, then the lane's, four times over
    assert [item.lane for item in items[:2]] == [sdk.row_id, lane.row_id]
    run.execute_all(items)
    assert (counted.installs, counted.removals, counted.now) == (1, 1, False)
    assert seen_by_sdk_rows and not any(seen_by_sdk_rows)  # the SDK's own rows never ran instrumented
    rows = [json.loads(text) for text in run.rows]
    assert [(row["case"], row["provider"]) for row in rows] == [(item.case.id, item.lane) for item in items]
    lane_rows = [row for row in rows if row["provider"] == lane.row_id]
    assert len(lane_rows) == len(cases)
    assert all(turn["spans"] == 1 for row in lane_rows for turn in row["telemetry"]["turns"])

    counted.installs = counted.removals = 0  # one row at a time (a pytest item, run_stack_case alone): one each
    for case_id in cases[:2]:
        run_stack_case(BY_ID[case_id], lane, CHAT, "body", in_process=True)
    assert (counted.installs, counted.removals) == (2, 2)


def test_a_row_of_another_lane_removes_the_kept_instrumentation_first() -> None:
    counted = _Counted()
    lane = dataclasses.replace(_team_stack(True), telemetry=dataclasses.replace(
        _team_stack(True).telemetry, install=counted.install))
    with telemetry.keeping():
        run_stack_case(BY_ID["normal"], lane, CHAT, "body", in_process=True)
        run_stack_case(BY_ID["cached_usage"], lane, CHAT, "body", in_process=True)
        assert (counted.installs, counted.now) == (1, True)
        run_stack_case(BY_ID["normal"], SDK, CHAT, "body", in_process=True)
        assert (counted.removals, counted.now) == (1, False)
        with installed(lane.telemetry):  # an install of its own takes the kept one's place, never beside it
            assert counted.installs == 2
    assert (counted.installs, counted.removals, counted.now) == (2, 2, False)


def test_an_instrumentation_that_fails_to_install_is_each_kept_rows_named_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEAM_SWITCH", raising=False)
    attempts: list[int] = []

    def install(provider: Any) -> Any:
        attempts.append(1)
        raise ImportError("cannot import name 'instruments'")

    broken = Instrumentation(id="broken", providers=("openai-chat",), install=install, requires=(),
                             environment={"TEAM_SWITCH": "on"})
    lane = with_telemetry(SDK, broken)
    run = _run_with(lane)
    items = _body_items(run, "normal", "cached_usage", "http_quota")
    run.execute_all(items)
    rows = [json.loads(text) for text in run.rows]
    assert len(rows) == len(attempts) == 3  # each row tried, and each says why it could not
    for row in rows:
        assert not row["passed"]
        assert "the instrumentation 'broken' did not install: ImportError: cannot import name 'instruments'" in \
            row["failures"][0], row["failures"]
    assert "TEAM_SWITCH" not in __import__("os").environ
    assert telemetry.KEPT.instrumentation is None
