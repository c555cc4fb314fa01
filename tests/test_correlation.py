"""Correlation checks catch an adapter that breaks the follow-up request in any of the ways users hit."""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.engine.cases import load_cases
from conformance.engine.correlation import check_correlation
from conformance.engine.loop import run_loop
from conformance.engine.registry import builtin_adapters
from conformance.kit.adapter import Adapter
from conformance.kit.types import ToolCall, ToolCalls
from tests.helpers import CASES

CASE = {case.id: case for case in load_cases([CASES])}


def correlate(adapter: Adapter, case_id: str = "normal", provider: str = "openai-responses") -> dict[str, Any]:
    case = CASE[case_id]
    run = run_loop(case, provider, adapter, case.providers[provider].turns)
    return check_correlation(adapter, run.requests, run.responses)


def test_built_in_adapters_correlate_every_call_in_every_case() -> None:
    for provider, adapter in builtin_adapters().items():
        for case in CASE.values():
            if provider in case.providers:
                result = correlate(adapter, case.id, provider)
                assert result["problems"] == [], (case.id, provider)
                assert result["matched"] == result["results"]


def _wrap(adapter: Adapter, change: Any) -> Adapter:
    def build_request(task: Any, transcript: Any) -> dict[str, Any]:
        return change(adapter.build_request(task, transcript))

    return dataclasses.replace(adapter, build_request=build_request)


def test_a_wrong_call_id_in_the_tool_result_is_caught() -> None:
    def change(request: dict[str, Any]) -> dict[str, Any]:
        for item in request["input"]:
            if item.get("type") == "function_call_output":
                item["call_id"] = "call_WRONG"
        return request

    problems = correlate(_wrap(builtin_adapters()["openai-responses"], change))["problems"]
    assert any("call_WRONG answers no call" in problem for problem in problems)
    assert any("got no result" in problem for problem in problems)


def test_a_dropped_reasoning_item_is_caught() -> None:
    def change(request: dict[str, Any]) -> dict[str, Any]:
        request["input"] = [item for item in request["input"] if item.get("type") != "reasoning"]
        return request

    problems = correlate(_wrap(builtin_adapters()["openai-responses"], change))["problems"]
    assert any("not re-sent verbatim" in problem for problem in problems)


def test_a_changed_static_prefix_is_caught() -> None:
    def change(request: dict[str, Any]) -> dict[str, Any]:
        request["instructions"] += f" (turn {len(request['input'])})"
        return request

    problems = correlate(_wrap(builtin_adapters()["openai-responses"], change))["problems"]
    assert any("static prefix changed (keys: instructions)" in problem for problem in problems)


def test_a_rewritten_history_is_caught_for_chat() -> None:
    def change(request: dict[str, Any]) -> dict[str, Any]:
        request["messages"][1] = {"role": "user", "content": f"rewritten {len(request['messages'])}"}
        return request

    problems = correlate(_wrap(builtin_adapters()["openai-chat"], change), provider="openai-chat")["problems"]
    assert any("rewritten, not extended" in problem for problem in problems)


def test_a_result_sent_twice_is_an_orphan() -> None:
    def change(request: dict[str, Any]) -> dict[str, Any]:
        tools = [message for message in request["messages"] if message.get("role") == "tool"]
        request["messages"].extend(dict(message) for message in tools)
        return request

    problems = correlate(_wrap(builtin_adapters()["openai-chat"], change), provider="openai-chat")["problems"]
    assert any("answers no call" in problem for problem in problems)


def _gemini_without_ids() -> Any:
    import copy

    from conformance.engine.cases import RecordedTurn

    case = CASE["normal"]
    turns = []
    for turn in case.providers["gemini"].turns:
        body = copy.deepcopy(turn.body)
        for part in body["candidates"][0]["content"].get("parts", []):
            part.get("functionCall", {}).pop("id", None)
        turns.append(RecordedTurn(status=turn.status, headers=turn.headers, body=body, source=turn.source))
    return case, tuple(turns)


def test_gemini_calls_without_ids_are_synthesized_and_correlated_by_name_and_order() -> None:
    adapter = builtin_adapters()["gemini"]
    case, turns = _gemini_without_ids()
    run = run_loop(case, "gemini", adapter, turns)
    assert run.outcome == "answer_ready"
    result = check_correlation(adapter, run.requests, run.responses)
    assert (result["problems"], result["matched"], result["synthesized_ids"]) == ([], 1, 1)
    function_response = run.requests[1]["contents"][-1]["parts"][0]["functionResponse"]
    assert "id" not in function_response and function_response["name"] == "get_order"


def test_gemini_result_with_the_wrong_name_for_a_synthesized_call_is_caught() -> None:
    def change(request: dict[str, Any]) -> dict[str, Any]:
        for content in request["contents"]:
            for part in content.get("parts", []):
                if "functionResponse" in part:
                    part["functionResponse"]["name"] = "get_invoice"
        return request

    adapter = _wrap(builtin_adapters()["gemini"], change)
    case, turns = _gemini_without_ids()
    run = run_loop(case, "gemini", adapter, turns)
    problems = check_correlation(adapter, run.requests, run.responses)["problems"]
    assert any("(no id, name get_invoice) answers no call" in problem for problem in problems)


# ---- What mutation testing found unpinned (docs/hardening.md) ----------------------------------------------------

def _calls(*calls: tuple[str, bool]) -> ToolCalls:
    return ToolCalls(raw="finish_reason=tool_calls", tool_calls=tuple(
        ToolCall(call_id=call_id, name="get_order", arguments="{}", parsed_arguments={}, synthesized_id=synthesized)
        for call_id, synthesized in calls))


def test_ids_unique_is_false_when_a_vendor_id_repeats_and_ignores_synthesized_ids() -> None:
    adapter = builtin_adapters()["openai-chat"]
    repeated = check_correlation(adapter, [], [_calls(("call_A", False)), _calls(("call_A", False))])
    distinct = check_correlation(adapter, [], [_calls(("call_A", False)), _calls(("call_B", False))])
    synthesized = check_correlation(adapter, [], [_calls(("get_order#0", True)), _calls(("get_order#0", True))])
    assert (repeated["ids_unique"], distinct["ids_unique"], synthesized["ids_unique"]) == (False, True, True)
    assert (repeated["calls"], synthesized["synthesized_ids"]) == (2, 2)


def test_every_orphan_result_of_a_turn_is_reported_not_only_the_first() -> None:
    def change(request: dict[str, Any]) -> dict[str, Any]:
        for number, message in enumerate(m for m in request["messages"] if m.get("role") == "tool"):
            message["tool_call_id"] = f"call_WRONG{number}"
        return request

    adapter = _wrap(builtin_adapters()["openai-chat"], change)
    problems = correlate(adapter, "parallel_tool_calls", "openai-chat")["problems"]
    assert [problem for problem in problems if "answers no call" in problem] == [
        "turn 2: tool result call_WRONG0 answers no call of turn 1",
        "turn 2: tool result call_WRONG1 answers no call of turn 1",
    ]


def test_a_rewritten_history_does_not_stop_the_checks_of_later_turns() -> None:
    def change(request: dict[str, Any]) -> dict[str, Any]:
        turn = sum(message.get("role") == "assistant" for message in request["messages"]) + 1
        if turn == 2:
            request["messages"][1] = {"role": "user", "content": "rewritten"}
        if turn == 3:
            request["instructions_marker"] = True  # a changed static prefix on a later turn
        return request

    problems = correlate(_wrap(builtin_adapters()["openai-chat"], change), "multi_turn_history",
                         "openai-chat")["problems"]
    assert any(problem.startswith("turn 2: the history of turn 1 was rewritten") for problem in problems)
    assert any(problem.startswith("turn 3:") for problem in problems), problems


def test_the_changed_prefix_is_named_key_by_key_or_as_key_order_or_not_a_mapping() -> None:
    from conformance.engine.correlation import _changed_keys

    assert _changed_keys({"a": 1, "b": [1, "é"]}, {"b": [1, "é"], "a": 2, "c": 0}) == "keys: a, c"
    assert _changed_keys({"a": 1}, {"b": 1}) == "keys: a, b"
    assert _changed_keys({"a": 1, "b": 2}, {"b": 2, "a": 1}) == "key order"
    assert _changed_keys({"a": 1}, ["a"]) == "not a mapping"
    assert _changed_keys(["a"], {"a": 1}) == "not a mapping"


def test_a_call_left_without_result_reads_exactly() -> None:
    def change(request: dict[str, Any]) -> dict[str, Any]:
        request["messages"] = [message for message in request["messages"] if message.get("role") != "tool"]
        return request

    case = CASE["normal"]
    adapter = _wrap(builtin_adapters()["openai-chat"], change)
    run = run_loop(case, "openai-chat", adapter, case.providers["openai-chat"].turns)
    (call,) = run.responses[0].calls
    problems = check_correlation(adapter, run.requests, run.responses)["problems"]
    assert f"turn 2: call {call.call_id} (get_order) of turn 1 got no result" in problems
