"""Reasoning state carried to the next request (docs/contract.md, "Reasoning state"): each API's form of it, from
the bundled ``normal`` case and its variants (DeepSeek's ``reasoning_content``, OpenRouter's ``reasoning_details``,
Anthropic's ``redacted_thinking``), goes back in turn 2 as received, in body and stream mode; an adapter that drops
it fails its row by name, with the vendor's rule where the request alone shows the refusal."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.request_check import acceptance_problems
from conformance.engine.runner import run_case_with_requests
from conformance.providers.openai_chat.stream import assemble_stream
from tests.helpers import BUNDLED, changing_requests

ADAPTERS = builtin_adapters()
NORMAL = next(case for case in load_cases([BUNDLED]) if case.id == "normal")
MODES = ("body", "stream")


def _turn1(lane: str) -> dict[str, Any]:
    return json.loads((BUNDLED / "normal" / lane / "turn1.json").read_text())


def _run(lane: str, mode: str, change: Callable[[dict[str, Any]], None] | None = None
         ) -> tuple[Any, list[dict[str, Any]]]:
    adapter = changing_requests(ADAPTERS[lane.split("~")[0]], change)
    row, error, requests = run_case_with_requests(NORMAL, lane, adapter, mode)  # type: ignore[arg-type]
    assert error is None
    return row, requests


def _assistant(request: dict[str, Any]) -> dict[str, Any]:
    return next(message for message in request["messages"] if message["role"] == "assistant")


@pytest.mark.parametrize("mode", MODES)
def test_deepseek_reasoning_content_of_a_tool_turn_goes_back_as_received(mode: str) -> None:
    row, requests = _run("openai-chat~deepseek-v4", mode)
    assert row["passed"], row["failures"]
    recorded = _turn1("openai-chat~deepseek-v4")["choices"][0]["message"]
    assert _assistant(requests[1])["reasoning_content"] == recorded["reasoning_content"]
    # the final text turn is not re-sent: nothing after it; a text turn's reasoning never goes back
    assert "reasoning_content" not in json.dumps(requests[0])


@pytest.mark.parametrize("mode", MODES)
def test_openrouter_reasoning_details_go_back_with_the_upstream_signature(mode: str) -> None:
    row, requests = _run("openai-chat~openrouter", mode)
    assert row["passed"], row["failures"]
    recorded = _turn1("openai-chat~openrouter")["choices"][0]["message"]["reasoning_details"]
    sent = _assistant(requests[1])["reasoning_details"]
    assert [(d["type"], d["text"], d["signature"]) for d in sent] == \
        [(d["type"], d["text"], d["signature"]) for d in recorded]


@pytest.mark.parametrize("mode", MODES)
def test_a_redacted_thinking_block_goes_back_first_with_its_data(mode: str) -> None:
    row, requests = _run("anthropic-messages~redacted-thinking", mode)
    assert row["passed"], row["failures"]
    recorded = _turn1("anthropic-messages~redacted-thinking")["content"][0]
    assistant = _assistant(requests[1])
    assert assistant["content"][0] == recorded
    thinking_on = dict(requests[1], thinking={"type": "enabled", "budget_tokens": 1024})
    assert acceptance_problems(ADAPTERS["anthropic-messages"], thinking_on) == []


def _drop(*fields: str) -> Callable[[dict[str, Any]], None]:
    def change(request: dict[str, Any]) -> None:
        for message in request["messages"]:
            if message["role"] == "assistant":
                for field in fields:
                    message.pop(field, None)
    return change


def _drop_redacted(request: dict[str, Any]) -> None:
    for message in request["messages"]:
        if message["role"] == "assistant" and isinstance(message["content"], list):
            message["content"] = [b for b in message["content"] if b.get("type") != "redacted_thinking"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("lane", "change"), [
    ("openai-chat~deepseek-v4", _drop("reasoning_content")),
    ("openai-chat~openrouter", _drop("reasoning_details")),
    ("anthropic-messages~redacted-thinking", _drop_redacted),
])
def test_a_history_rebuilt_without_its_reasoning_fails_the_row_by_name(
        lane: str, change: Callable[[dict[str, Any]], None], mode: str) -> None:
    row, _ = _run(lane, mode, change)
    assert not row["passed"]
    assert any("model turn 1 was re-sent with 0 of its 1 reasoning signature(s)" in failure
               for failure in row["failures"]), row["failures"]


def _deepseek_request(change: Callable[[dict[str, Any]], None] | None = None, **top: Any) -> dict[str, Any]:
    _, requests = _run("openai-chat~deepseek-v4", "body", change)
    return {**requests[1], **top}


@pytest.mark.parametrize("top", [{"model": "deepseek-v4-flash"}, {"model": "deepseek-reasoner"},
                                 {"thinking": {"type": "enabled"}}])
def test_deepseek_thinking_mode_refuses_a_tool_turn_without_reasoning_content(top: dict[str, Any]) -> None:
    assert acceptance_problems(ADAPTERS["openai-chat"], _deepseek_request(**top)) == []
    problems = acceptance_problems(ADAPTERS["openai-chat"], _deepseek_request(_drop("reasoning_content"), **top))
    assert len(problems) == 1 and "(reasoning-content-sent-back, " in problems[0] \
        and "): /messages/2/reasoning_content: " in problems[0], problems


@pytest.mark.parametrize("top", [{}, {"model": "deepseek-v4-flash", "thinking": {"type": "disabled"}},
                                 {"model": "gpt-5.5"}])
def test_outside_deepseek_thinking_mode_the_missing_field_is_no_refusal(top: dict[str, Any]) -> None:
    assert acceptance_problems(ADAPTERS["openai-chat"], _deepseek_request(_drop("reasoning_content"), **top)) == []


def _responses_request() -> dict[str, Any]:
    _, requests = run_case_with_requests(NORMAL, "openai-responses", ADAPTERS["openai-responses"])[1:]
    assert any(item.get("type") == "reasoning" for item in requests[1]["input"])
    return copy.deepcopy(requests[1])


def _reasoning_index(request: dict[str, Any]) -> int:
    return next(index for index, item in enumerate(request["input"]) if item.get("type") == "reasoning")


def test_a_stateless_responses_reasoning_item_needs_its_encrypted_content_and_its_following_item() -> None:
    request = _responses_request()
    assert acceptance_problems(ADAPTERS["openai-responses"], request) == []
    index = _reasoning_index(request)
    stripped = copy.deepcopy(request)
    del stripped["input"][index]["encrypted_content"]
    problems = acceptance_problems(ADAPTERS["openai-responses"], stripped)
    assert [p for p in problems if "(reasoning-items-replayable, " in p and f"/input/{index}/encrypted_content" in p]
    assert acceptance_problems(ADAPTERS["openai-responses"], dict(stripped, store=True)) == []  # stored: looked up
    orphaned = copy.deepcopy(request)
    del orphaned["input"][index + 1]  # the function call the reasoning produced
    assert any("(reasoning-items-replayable, " in p and f"): /input/{index}: " in p
               for p in acceptance_problems(ADAPTERS["openai-responses"], orphaned))


def _chunks(*deltas: dict[str, Any]) -> list[bytes]:
    return [f"data: {json.dumps({'id': 'c1', 'choices': [{'index': 0, 'delta': delta}]})}\n\n".encode()
            for delta in deltas] + [b"data: [DONE]\n\n"]


def test_a_streamed_chat_turn_keeps_its_reasoning_joined_per_detail_index() -> None:
    result = assemble_stream(_chunks(
        {"role": "assistant", "reasoning_content": "Look it ", "reasoning_details": [
            {"type": "reasoning.text", "text": "Look it ", "index": 0}]},
        {"reasoning_content": "up.", "reasoning_details": [{"type": "reasoning.text", "text": "up.", "index": 0}]},
        {"reasoning_details": [{"type": "reasoning.text", "signature": "c2ln", "index": 0},
                               {"type": "reasoning.encrypted", "data": "ZW5j", "index": 1}]},
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                         "function": {"name": "get_order", "arguments": "{}"}}]},
    ))
    message = result.response.output_items[0]
    assert message["reasoning_content"] == "Look it up."
    assert message["reasoning_details"] == [
        {"type": "reasoning.text", "text": "Look it up.", "index": 0, "signature": "c2ln"},
        {"type": "reasoning.encrypted", "data": "ZW5j", "index": 1}]
    text_only = assemble_stream(_chunks({"role": "assistant", "reasoning_content": "hm", "content": "Hi."}))
    assert "reasoning_content" not in text_only.response.output_items[0]  # a text turn's reasoning is not re-sent


SDK_LANES = ("openai-chat@openai-sdk", "anthropic-messages@anthropic-sdk")


def _stack_findings() -> tuple[list[str], dict[str, set[str]]]:
    from conformance.engine.plan import plan_case
    from conformance.report.findings import compare_rows
    from conformance.stacks.runner import run_stack_case
    from conformance.stacks.stack import builtin_stacks

    stacks = [builtin_stacks()[row_id] for row_id in SDK_LANES]
    planned = [item for item in plan_case(NORMAL, ADAPTERS, stacks) if item.stack is not None]
    lost: dict[str, set[str]] = {}
    for item in planned:
        raw = run_case_with_requests(NORMAL, item.stack.fixtures, ADAPTERS[item.stack.provider], item.mode)[0]
        row, error, _ = run_stack_case(NORMAL, item.stack, ADAPTERS[item.stack.provider], item.mode)
        assert error is None and row["provider"] == item.lane, (item.lane, error)
        lost[item.lane] = lost.get(item.lane, set()) | {f.field for f in compare_rows(raw, row) if f.effect == "lost"}
    return [item.lane for item in planned], lost


def test_each_stack_runs_every_recorded_variant_of_its_provider_and_says_what_its_history_loses() -> None:
    lanes, lost = _stack_findings()
    assert sorted(set(lanes)) == [
        "anthropic-messages@anthropic-sdk", "anthropic-messages~redacted-thinking@anthropic-sdk",
        "openai-chat@openai-sdk", "openai-chat~deepseek-v4@openai-sdk", "openai-chat~openrouter@openai-sdk"]
    # The openai SDK's typed message has no reasoning fields: a history rebuilt from it loses what DeepSeek and
    # OpenRouter need back (docs/stacks.md); Anthropic's SDK keeps the redacted block's data.
    assert "request.signatures" in lost["openai-chat~deepseek-v4@openai-sdk"]
    assert "request.signatures" in lost["openai-chat~openrouter@openai-sdk"]
    assert "request.signatures" not in lost["anthropic-messages~redacted-thinking@anthropic-sdk"]
    assert "request.signatures" not in lost["openai-chat@openai-sdk"]
