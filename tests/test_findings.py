"""Findings: what a stack hides, found by comparing its rows with the raw adapter's (docs/stacks.md, "Findings")."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import run_case
from conformance.kit.task import Task, TranscriptEntry
from conformance.kit.types import ModelResponse
from conformance.report.build import build_report, render_markdown
from conformance.report.diff import compare
from conformance.report.findings import compare_rows, find_all
from conformance.stacks.runner import run_stack_case
from conformance.stacks.stack import Endpoint, Stack, builtin_stacks
from tests.helpers import CASES, cli

CASE = {case.id: case for case in load_cases([CASES])}
CHAT = builtin_adapters()["openai-chat"]


def _turn(**fields: Any) -> dict[str, Any]:
    turn = {"turn": 1, "kind": "incomplete", "reason": "context_window",
            "raw": "stop_reason=model_context_window_exceeded", "calls": [], "text": "partial",
            "response_id": "msg_01", "model": "claude-test",
            "usage": {"input_tokens": 10, "cached_input_tokens": 0, "cache_write_tokens": None, "output_tokens": 5,
                      "reasoning_tokens": None, "total_tokens": 15}}
    turn.update(fields)
    return turn


def _row(provider: str, turns: list[dict[str, Any]], outcome: str = "incomplete", **fields: Any) -> dict[str, Any]:
    row = {"case": "context_window", "provider": provider, "mode": "body", "outcome": outcome, "turns": turns,
           "stack": provider.split("@")[1] if "@" in provider else "raw", "override": None, "error": None}
    row.update(fields)
    return row


def _found(wire: dict[str, Any], stack: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(finding.turn, finding.field, finding.effect, finding.wire, finding.stack_value)
            for finding in compare_rows(wire, stack)]


def test_a_stack_that_says_what_the_wire_said_has_no_finding() -> None:
    wire = _row("anthropic-messages", [_turn()])
    assert _found(wire, _row("anthropic-messages@gw", [_turn(raw="provider_specific_fields.stop_reason="
                                                                "model_context_window_exceeded")])) == []


def test_each_field_a_gateway_loses_invents_or_changes_is_a_finding() -> None:
    wire = _row("anthropic-messages", [_turn()])
    usage = {**_turn()["usage"], "input_tokens": 12, "output_tokens": None, "reasoning_tokens": 3}
    stack = _row("anthropic-messages@gw", [_turn(reason="max_tokens", raw="finish_reason=length", response_id=None,
                                                  model="claude-test", usage=usage)])
    assert _found(wire, stack) == [
        (1, "reason", "changed", "context_window", "max_tokens"),
        (1, "raw", "lost", "stop_reason=model_context_window_exceeded", "finish_reason=length"),
        (1, "usage.input_tokens", "changed", 10, 12),
        (1, "usage.output_tokens", "lost", 5, None),
        (1, "usage.reasoning_tokens", "invented", None, 3),
        (1, "response_id", "lost", "msg_01", None),
    ]
    meanings = [finding.meaning for finding in compare_rows(wire, stack)]
    assert "reasoning_tokens reads 3, a count the vendor never sent" in meanings
    assert "context_window reads as max_tokens" in meanings


def test_a_changed_kind_is_one_finding_and_the_row_outcome_another() -> None:
    wire = _row("gemini", [_turn(kind="unsupported", reason=None, raw="parts[0]=hologram")], outcome="unsupported")
    stack = _row("gemini@gw", [_turn(kind="text", reason=None, raw="finishReason=STOP", usage=None)],
                 outcome="unverified_answer")
    assert _found(wire, stack) == [(None, "outcome", "changed", "unsupported", "unverified_answer"),
                                   (1, "kind", "changed", "unsupported", "text")]


def test_call_ids_names_and_arguments_are_compared_except_a_made_up_id() -> None:
    call = {"call_id": "fc_1", "name": "get_order", "arguments": {"order_id": "A"}, "synthesized_id": False}
    wire = _row("gemini", [_turn(kind="tool_calls", reason=None, raw="finishReason=STOP", calls=[call])])
    rewritten = {**call, "call_id": "fc_1__thought__c2ln"}
    stack = _row("gemini@gw", [_turn(kind="tool_calls", reason=None, raw="finishReason=STOP", calls=[rewritten])])
    assert _found(wire, stack) == [(1, "calls[1].id", "changed", "fc_1", "fc_1__thought__c2ln")]
    made_up = [{**call, "call_id": "call_0", "synthesized_id": True}]
    wire["turns"][0]["calls"] = made_up
    stack["turns"][0]["calls"] = [{**made_up[0], "call_id": "call_x", "arguments": {"order_id": "B"}}]
    assert _found(wire, stack) == [(1, "calls[1].arguments", "changed", {"order_id": "A"}, {"order_id": "B"})]


def test_each_call_of_a_turn_is_its_own_finding() -> None:
    calls = [{"call_id": f"fc_{n}", "name": "get_order", "arguments": "{}", "synthesized_id": False} for n in (1, 2)]
    wire = _row("gemini", [_turn(kind="tool_calls", reason=None, raw="finishReason=STOP", calls=calls)])
    renamed = [{**call, "call_id": call["call_id"] + "__x"} for call in calls]
    stack = _row("gemini@gw", [_turn(kind="tool_calls", reason=None, raw="finishReason=STOP", calls=renamed)])
    assert [finding[1] for finding in _found(wire, stack)] == ["calls[1].id", "calls[2].id"]


def test_an_override_the_stack_row_inherited_from_its_vendor_accepts_nothing() -> None:
    vendor = {"why": "this vendor answers with an HTTP 400"}
    wire = _row("openai-chat", [_turn()], override=vendor)
    stack = _row("openai-chat@gw", [_turn(kind="text", reason=None)], outcome="answer_ready", override=vendor)
    assert {finding.field: finding.accepted for finding in find_all([wire, stack])} == {"outcome": None,
                                                                                       "kind": None}


def test_a_request_that_drops_the_reasoning_signature_is_a_finding() -> None:
    def request(signatures: int) -> dict[str, Any]:
        return {"checked": True, "conversation": [{"role": "user"}, {"role": "model", "signatures": signatures},
                                                  {"role": "results", "results": [{"call_id": "toolu_1"}]}]}
    wire = _row("anthropic-messages", [_turn(request=request(1))])
    stack = _row("anthropic-messages@gw", [_turn(request=request(0))])
    assert _found(wire, stack) == [(1, "request.signatures", "lost", 1, 0)]


def test_accepted_findings_carry_the_teams_reason_by_field_or_by_field_and_case() -> None:
    wire = _row("anthropic-messages", [_turn()])
    stack = _row("anthropic-messages@gw", [_turn(response_id=None, model=None)])
    accepted = {"anthropic-messages@gw": {"response_id": "the gateway makes its own ids",
                                          "model@other_case": "not this case"}}
    found = {finding.field: finding.accepted for finding in find_all([wire, stack], accepted)}
    assert found == {"response_id": "the gateway makes its own ids", "model": None}
    # A row run under a declared difference accepts its outcome and kinds with that difference's reason, no more.
    stack = _row("anthropic-messages@gw", [_turn(kind="text", model=None)], outcome="answer_ready",
                 override={"why": "the SDK drops it"})
    found = {finding.field: finding.accepted for finding in find_all([wire, stack])}
    assert found == {"outcome": "the SDK drops it", "kind": "the SDK drops it"}


def _lazy_stack(drop: str) -> Stack:
    reference = builtin_stacks()["openai-chat@openai-sdk"]

    def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
        response = reference.call(task, transcript, endpoint)
        assert isinstance(response, ModelResponse)
        return dataclasses.replace(response, **{drop: None})

    return Stack(id="lazy", provider="openai-chat", call=call, requires=("openai",))


def test_a_lazier_mapping_is_found_on_every_turn_it_touches() -> None:
    case = CASE["normal"]
    raw = run_case(case, "openai-chat", CHAT, "body")
    row, error, _ = run_stack_case(case, _lazy_stack("response_id"), CHAT, "body", in_process=True)
    assert error is None and row["passed"]  # the case still passes: only the comparison sees the loss
    assert _found(raw, row) == [(1, "response_id", "lost", "chatcmpl-n01", None),
                                (2, "response_id", "lost", "chatcmpl-n02", None)]
    row, _, _ = run_stack_case(case, _lazy_stack("usage"), CHAT, "body", in_process=True)
    assert {(finding.turn, finding.field, finding.effect) for finding in compare_rows(raw, row)} >= {
        (1, "usage.input_tokens", "lost"), (2, "usage.output_tokens", "lost")}


def test_the_report_lists_findings_and_the_markdown_groups_them_per_stack() -> None:
    wire = _row("anthropic-messages", [_turn()], passed=True, failures=[], expected={"outcome": "incomplete"})
    stack = _row("anthropic-messages@gw", [_turn(reason="max_tokens", raw="finish_reason=length")], passed=True,
                 failures=[], expected={"outcome": "incomplete"})
    gateway = Stack(id="gw", provider="anthropic-messages", call=lambda *_: None,  # type: ignore[arg-type,return-value]
                    accepted={"raw": "we log the raw reason elsewhere"})
    report = build_report([wire, stack], ["anthropic-messages", "anthropic-messages@gw"], [gateway])
    assert [(finding["field"], finding["accepted"]) for finding in report["findings"]] == [
        ("raw", "we log the raw reason elsewhere"), ("reason", None)]
    markdown = render_markdown(report)
    section = markdown.split("## What each stack hides", 1)[1]
    assert "### anthropic-messages⁠@⁠gw" in section
    assert "| reason | changed | context\\_window → max\\_tokens | context\\_window reads as max\\_tokens |" in section
    assert "| yes: we log the raw reason elsewhere |" in section


def _report_with(findings: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [_row("anthropic-messages@gw", [_turn()], passed=True, failures=[], expected={"outcome": "incomplete"})]
    return {"rows": {("context_window", "anthropic-messages@gw", "body"): rows[0]}, "findings": findings}


def test_the_gate_calls_a_new_finding_a_regression_unless_the_stack_accepts_it(tmp_path: Path) -> None:
    finding = {"stack": "anthropic-messages@gw", "case": "context_window", "mode": "body", "turn": 1,
               "field": "reason", "effect": "changed", "wire": "context_window", "stack_value": "max_tokens",
               "meaning": "context_window reads as max_tokens", "accepted": None}
    base, head = _report_with([]), _report_with([finding])
    [change] = compare(base["rows"], head["rows"], base["findings"], head["findings"])
    assert change.label == "regression" and change.notes[0].startswith("new finding, not accepted: turn 1 reason")
    accepted = {**finding, "accepted": "we read stop_reason ourselves"}
    [change] = compare(base["rows"], head["rows"], [], [accepted])
    assert change.label == "change" and "accepted (we read stop_reason ourselves)" in change.notes[0]
    [change] = compare(head["rows"], base["rows"], [finding], [])
    assert change.label == "improvement" and change.notes[0].startswith("finding gone")
    assert compare(base["rows"], head["rows"], None, [finding]) == []  # a report from before findings: not compared

    # Through the command: the exit status gates the upgrade.
    row = head["rows"][("context_window", "anthropic-messages@gw", "body")]
    for name, findings in (("base", []), ("head", [finding])):
        (tmp_path / f"{name}.json").write_text(json.dumps(
            {"schema_version": 1, "providers": ["anthropic-messages@gw"], "summary": {}, "results": [row],
             "findings": findings}))
    result = cli("diff", str(tmp_path / "base.json"), str(tmp_path / "head.json"))
    assert result.returncode == 1 and "new finding, not accepted" in result.stdout
    broken = copy.deepcopy(finding)
    broken["turn"] = "one"
    (tmp_path / "head.json").write_text(json.dumps({"schema_version": 1, "results": [row], "findings": [broken]}))
    result = cli("diff", str(tmp_path / "base.json"), str(tmp_path / "head.json"))
    assert result.returncode == 2 and "'findings' is not a list of findings" in result.stderr
    (tmp_path / "head.json").write_text(json.dumps({"schema_version": 1, "results": [row],
                                                    "findings": [{**finding, "effect": "vanished"}]}))
    assert cli("diff", str(tmp_path / "base.json"), str(tmp_path / "head.json")).returncode == 2


def test_the_status_and_retry_delay_of_an_error_are_compared() -> None:
    error = {"kind": "retryable_error", "reason": "overloaded", "raw": "http=529/overloaded_error", "calls": [],
             "http_status": 529, "retry_after_s": 3.0, "usage": None}
    wire = _row("anthropic-messages", [_turn(**error)], outcome="retryable_error")
    stack = _row("anthropic-messages@gw", [_turn(**{**error, "raw": "http=500/overloaded_error",
                                                   "http_status": 500, "retry_after_s": None})],
                 outcome="retryable_error")
    assert [(field, effect, was, now) for _, field, effect, was, now in _found(wire, stack)] == [
        ("raw", "lost", "http=529/overloaded_error", "http=500/overloaded_error"),
        ("http_status", "changed", 529, 500), ("retry_after_s", "lost", 3.0, None)]


def test_the_request_is_compared_even_when_the_kind_differs() -> None:
    request = {"checked": True, "conversation": [{"role": "model", "signatures": 1}]}
    wire = _row("anthropic-messages", [_turn(request=request)])
    stack = _row("anthropic-messages@gw", [_turn(kind="text", request={**request, "conversation": []})],
                 outcome="answer_ready")
    assert [finding[1] for finding in _found(wire, stack)] == ["outcome", "request.signatures", "kind"]


def test_a_gateways_memory_finds_its_message_for_the_loops_parsed_copy() -> None:
    from conformance.kit.types import Text
    from conformance.stacks.gateways.common import Memory
    from conformance.stacks.stack import Endpoint

    memory, endpoint = Memory(), Endpoint(base_url="http://127.0.0.1:1/s/c/p/body", stream=False)
    answer = memory.keep(endpoint, Text(raw="stop", text='{"status": "shipped"}'), {"role": "assistant"})
    other = memory.keep(endpoint, Text(raw="stop", text='{"status": "lost"}'), {"role": "other"})
    # The loop fills in the parsed answer (dataclasses.replace): the copy is not the object the stack returned.
    parsed = dataclasses.replace(answer, parsed={"status": "shipped"})
    assert memory.message(endpoint, parsed) == {"role": "assistant"}
    assert memory.message(endpoint, other) == {"role": "other"}
    assert memory.message(endpoint, Text(raw="stop", text="never kept")) is None
    assert memory.message(Endpoint(base_url="http://127.0.0.1:1/s/c/p/stream", stream=True), parsed) is None
