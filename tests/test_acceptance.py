"""What the vendor would refuse before it answers (docs/contract.md, "What the vendor refuses"): each API's rules
(``Wire.acceptance``) hold every request a lane sends. The reference adapters' requests break none; a request
changed as the quoted rejections were (results out of order, a call answered by no result, a schema strict mode
refuses) fails its row with the rule and the JSON pointer."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.plan import Planned
from conformance.engine.registry import builtin_adapters
from conformance.engine.request_check import acceptance_problems
from conformance.session import Run
from tests.helpers import CASES

ADAPTERS = builtin_adapters()
CASE_LIST = {case.id: case for case in load_cases([CASES])}


def _row(provider: str, case: str, change: Callable[[dict[str, Any]], None] | None = None) -> Any:
    adapter = original = ADAPTERS[provider]
    if change is not None:
        def build(task: Any, transcript: Any) -> dict[str, Any]:
            request = copy.deepcopy(original.build_request(task, transcript))
            change(request)
            return request
        adapter = dataclasses.replace(adapter, build_request=build)
    run = Run.configure()
    run.adapters = {provider: adapter}
    row, _, _ = run.execute(Planned(CASE_LIST[case], provider, "body"))
    return row


def _refusals(row: Any) -> list[str]:
    return [failure for failure in row["failures"] if "the vendor would refuse it" in failure]


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic-messages"])
@pytest.mark.parametrize("case", ["parallel_tool_calls", "multi_turn_history", "structured_output_valid"])
def test_the_reference_adapters_requests_break_no_rule(provider: str, case: str) -> None:
    assert ADAPTERS[provider].wire.acceptance  # type: ignore[union-attr]
    assert _refusals(_row(provider, case)) == []


def _results_after_text(request: dict[str, Any]) -> None:
    """Anthropic: the tool results moved behind a text block (anthropics/claude-code#21906's class)."""
    for message in request["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list) and any(
                block.get("type") == "tool_result" for block in message["content"]):
            message["content"].insert(0, {"type": "text", "text": "Here are the results."})


def _results_reversed(request: dict[str, Any]) -> None:
    """Chat: the second call's result sent before the assistant turn that made the calls."""
    messages = request["messages"]
    tools = [index for index, message in enumerate(messages) if message["role"] == "tool"]
    if tools:
        moved = messages.pop(tools[-1])
        messages.insert(tools[0] - 1, moved)


def _strict_with_optional(request: dict[str, Any]) -> None:
    """Responses: a strict function whose schema lets a property be left out."""
    for tool in request.get("tools") or []:
        if tool.get("type") == "function":
            tool["strict"] = True
            tool["parameters"] = {**tool["parameters"], "required": []}


@pytest.mark.parametrize(("provider", "change", "rule", "pointer"), [
    ("anthropic-messages", _results_after_text, "tool-results-first", "/messages/2/content"),
    ("openai-chat", _results_reversed, "tool-message-after-tool-calls", "/messages/2/tool_call_id"),
    ("openai-responses", _strict_with_optional, "strict-schema", "/tools/0/parameters/required"),
])
def test_a_request_the_vendor_refuses_fails_its_row_with_the_rule_and_the_pointer(
        provider: str, change: Callable[[dict[str, Any]], None], rule: str, pointer: str) -> None:
    row = _row(provider, "parallel_tool_calls", change)
    refusals = _refusals(row)
    assert refusals and not row["passed"], row["failures"]
    assert any(f"({rule}, " in failure and f"): {pointer}: " in failure for failure in refusals), refusals


def test_a_call_left_unanswered_and_a_schema_without_additional_properties_false_are_named() -> None:
    chat = ADAPTERS["openai-chat"]
    request = {"messages": [{"role": "user", "content": "x"},
                            {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function"},
                                                                 {"id": "call_2", "type": "function"}]},
                            {"role": "tool", "tool_call_id": "call_1", "content": "{}"},
                            {"role": "user", "content": "and?"}],
               "tools": [{"type": "function", "function": {"name": "f", "strict": True, "parameters": {
                   "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}]}
    problems = acceptance_problems(chat, request)
    assert any("/messages/3: the calls ['call_2']" in problem for problem in problems), problems
    assert any("/tools/0/function/parameters: strict mode needs additionalProperties: false" in problem
               for problem in problems), problems
    anthropic = ADAPTERS["anthropic-messages"]
    last = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]}]}
    assert any("a tool_use turn is last" in problem for problem in acceptance_problems(anthropic, last))
