"""Switching vendors mid-conversation (docs/contract.md, "Switching vendors"): a tool-call turn answered on one API
continues on another. The next request must be one the second vendor accepts, carry every call with its result,
and carry none of the first vendor's reasoning (signatures, encrypted content are that vendor's alone)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.classify import classify_response
from conformance.engine.registry import builtin_adapters
from conformance.engine.request_check import acceptance_problems
from conformance.kit.task import ModelTurn, ToolResult, ToolResults, UserMessage, task_for_turn
from tests.helpers import CASES

ADAPTERS = builtin_adapters()
CASE_LIST = {case.id: case for case in load_cases([CASES])}
PAIRS = [(source, target) for source in sorted(ADAPTERS) for target in sorted(ADAPTERS) if source != target]
REASONING_KEYS = ("signature", "thoughtSignature", "encrypted_content", "redactedContent")


def _reasoning(value: Any) -> set[str]:
    """Every opaque reasoning value in a recorded answer's output items (long strings under the reasoning keys)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in REASONING_KEYS and isinstance(inner, str) and len(inner) >= 8:
                found.add(inner)
            found |= _reasoning(inner)
        if value.get("type") == "redacted_thinking" and isinstance(value.get("data"), str):
            found.add(value["data"])
    elif isinstance(value, list | tuple):
        for inner in value:
            found |= _reasoning(inner)
    return found


def _switched(case_id: str, source: str, target: str, api: str | None) -> tuple[dict[str, Any], Any]:
    """``target``'s request for turn 2 after ``source`` answered turn 1 with calls (``api``: the turn's tag)."""
    case = CASE_LIST[case_id]
    recorded = case.providers[source].turns[0]
    response = classify_response(ADAPTERS[source], recorded.status, recorded.headers, recorded.body)
    assert response.calls, (case_id, source)
    transcript = (UserMessage(text=case.task.input), ModelTurn(response=response, api=api),
                  ToolResults(results=tuple(ToolResult(call=call, output={"order_id": "ORD-1001", "status": "shipped"})
                                            for call in response.calls)))
    return ADAPTERS[target].build_request(task_for_turn(case.task, transcript), transcript), response


@pytest.mark.parametrize("case_id", ["normal", "parallel_tool_calls"])
@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_a_turn_answered_on_another_api_continues_as_the_next_vendor_accepts(case_id: str, source: str,
                                                                             target: str) -> None:
    request, response = _switched(case_id, source, target, source)
    assert acceptance_problems(ADAPTERS[target], request) == []
    text = json.dumps(request)
    for call in response.calls:  # the call and its result, each with the call's id
        assert text.count(json.dumps(call.call_id)) >= 2, (call.call_id, text)
        assert json.dumps(call.name) in text
    leaked = [value[:24] for value in _reasoning(response.output_items) if value in text]
    assert leaked == []  # another vendor's reasoning never travels on


@pytest.mark.parametrize("source", ["anthropic-messages", "gemini", "openai-responses"])
def test_the_first_vendors_reasoning_is_there_to_drop(source: str) -> None:
    """The recordings carry reasoning the switch must drop: a switch that kept it would fail the test above."""
    recorded = CASE_LIST["normal"].providers[source].turns[0]
    response = classify_response(ADAPTERS[source], recorded.status, recorded.headers, recorded.body)
    assert _reasoning(response.output_items)
    same, _ = _switched("normal", source, source, source)  # back to its own API: kept, verbatim
    assert all(value in json.dumps(same) for value in _reasoning(response.output_items))


@pytest.mark.parametrize(("source", "target", "rule"), [
    ("anthropic-messages", "openai-chat", "tool-message-after-tool-calls"),
    ("openai-chat", "anthropic-messages", "tool-results-first"),
    ("gemini", "bedrock-converse", "tool-results-answer-tool-uses"),
])
def test_a_history_replayed_verbatim_on_another_api_is_refused_by_name(source: str, target: str, rule: str) -> None:
    """What a loop that replays another vendor's items verbatim sends (no tag: taken for the target's own)."""
    request, _ = _switched("normal", source, target, None)
    assert any(f"({rule}, " in problem for problem in acceptance_problems(ADAPTERS[target], request))
