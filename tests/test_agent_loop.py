"""The team's own tool loop under test against a replay (conformance.stacks.agent, docs/glue.md "Your own loop"):
a loop that sends the tool's name as the result id goes red, as the journey's agent.py should have."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.stacks.agent import AgentSession, run_agent
from tests.helpers import CASES, cli

openai = pytest.importorskip("openai")


def agent_loop(session: AgentSession, result_id: str = "call id", max_steps: int = 5, system: bool = True,
               cap: int | None = None) -> str:
    """A support agent's own loop on the openai SDK, as a team writes it."""
    client = openai.OpenAI(base_url=f"{session.base_url}/v1", api_key="sk-test", max_retries=0)
    task = session.task
    messages: list[dict[str, Any]] = [*([{"role": "system", "content": task.instructions}] if system else []),
                                      {"role": "user", "content": task.input}]
    tools = [{"type": "function", "function": {"name": spec.name, "description": spec.description,
                                               "parameters": dict(spec.parameters)}} for spec in task.tools]
    for _ in range(max_steps):
        completion = client.chat.completions.create(model=task.model, messages=messages, tools=tools,
                                                    max_completion_tokens=cap or task.max_output_tokens)
        message = completion.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            output = session.tools[call.function.name](**json.loads(call.function.arguments))
            messages.append({"role": "tool", "content": json.dumps(output),
                             "tool_call_id": call.id if result_id == "call id" else call.function.name})
    return ""


def test_a_correct_loop_passes_with_its_answer_verified_against_the_receipts() -> None:
    result = run_agent("normal", "openai-chat", agent_loop, cases=CASES)
    assert result.passed, result.failures
    assert result.outcome == "answer_ready" and [receipt["tool"] for receipt in result.receipts] == ["get_order"]
    assert len(result.requests) == 2 and result.requests[1]["messages"][-1]["role"] == "tool"


def test_a_loop_that_sends_the_tools_name_as_the_result_id_fails_correlation() -> None:
    result = run_agent("normal", "openai-chat", lambda session: agent_loop(session, result_id="tool name"),
                       cases=CASES)
    assert not result.passed
    assert "correlation: turn 2: tool result get_order answers no call of turn 1" in result.failures


def test_a_loop_past_the_recording_or_its_budget_is_named() -> None:
    def asks_again(session: AgentSession) -> str:
        agent_loop(session)
        return agent_loop(session)  # a second conversation: past the recorded turns, past the budget

    result = run_agent("normal", "openai-chat", asks_again, cases=CASES)
    assert result.failures[0].startswith("the agent raised BadRequestError: Error code: 400")
    assert "replay: case normal [openai-chat]: request 3 asks for turn 3, but 2 turn(s) are recorded" in \
        result.failures
    assert "budget: the loop sent 3 requests; the case allows 4 turns" not in result.failures  # 3 of 4: within
    assert not any(failure.startswith("correlation: not checked") for failure in result.failures)


def test_an_answer_the_receipts_do_not_support_is_not_ready() -> None:
    result = run_agent("normal", "openai-chat", lambda session: (agent_loop(session), "It was cancelled.")[1],
                       cases=CASES)
    assert result.outcome == "unverified_answer" and not result.passed


def test_what_every_request_of_the_loop_must_carry_is_checked_on_the_wire() -> None:
    result = run_agent("normal", "openai-chat", lambda session: agent_loop(session, system=False, cap=64),
                       cases=CASES)
    assert "request: turns 1, 2: no instructions in the vendor's system slot" in result.failures
    assert "request: turns 1, 2: output token cap sent: 64; the case says 512" in result.failures


def test_a_loop_that_answers_without_sending_the_results_back_is_named() -> None:
    def answers_at_once(session: AgentSession) -> str:
        client = openai.OpenAI(base_url=f"{session.base_url}/v1", api_key="sk-test", max_retries=0)
        task = session.task
        tools = [{"type": "function", "function": {"name": spec.name, "description": spec.description,
                                                   "parameters": dict(spec.parameters)}} for spec in task.tools]
        completion = client.chat.completions.create(
            model=task.model, tools=tools, max_completion_tokens=task.max_output_tokens,
            messages=[{"role": "system", "content": task.instructions}, {"role": "user", "content": task.input}])
        (call,) = completion.choices[0].message.tool_calls or []
        order = session.tools[call.function.name](**json.loads(call.function.arguments))
        return f"Order {order['order_id']} has shipped. The total was {order['total']} {order['currency']}."

    result = run_agent("normal", "openai-chat", answers_at_once, cases=CASES)
    assert result.outcome == "answer_ready"  # the answer is right: the loop is what is wrong
    assert result.failures == [
        "loop: turn 1 asked for get_order, and the loop returned without sending the results back"]


def test_a_loop_over_the_tool_call_budget_is_named() -> None:
    def calls_each_tool_five_times(session: AgentSession) -> str:
        tools = dict(session.tools)
        session.tools["get_order"] = lambda **arguments: [tools["get_order"](**arguments) for _ in range(5)][-1]
        return agent_loop(session)

    result = run_agent("normal", "openai-chat", calls_each_tool_five_times, cases=CASES)
    assert "budget: the loop ran 5 tool calls; the case allows 4" in result.failures


def test_a_loop_over_the_turn_budget_is_named() -> None:
    def retries_forever(session: AgentSession) -> str:
        for _ in range(4):  # one conversation (2 requests), then 3 refused requests: 5 in all
            try:
                agent_loop(session)
            except openai.BadRequestError:  # past the recording: the replay refuses, the loop asks again
                continue
        return ""

    result = run_agent("normal", "openai-chat", retries_forever, cases=CASES)
    assert "budget: the loop sent 5 requests; the case allows 4 turns" in result.failures


AGENT_STACK = '''
import sys
sys.path.insert(0, {tests!r})
from conformance.stacks.agent import agent_stack
from tests.test_agent_loop import agent_loop

STACK = agent_stack("acme-loop", "openai-chat", lambda session: agent_loop(session, result_id={result_id!r}),
                    cases=("normal", "parallel_tool_calls"))
'''


def _run_agent_stack(tmp_path: Path, result_id: str) -> dict[str, Any]:
    module = tmp_path / f"agent_{result_id.replace(' ', '_')}.py"
    module.write_text(AGENT_STACK.format(tests=str(Path(__file__).parent.parent), result_id=result_id))
    out = tmp_path / result_id.replace(" ", "_")
    result = cli("run", "--no-config", "--cases", str(CASES), "--provider", "openai-chat", "--stack",
                 f"{module}:STACK", "--report-dir", str(out))
    assert result.returncode in (0, 1), result.stderr
    return json.loads((out / "report.json").read_text())


def test_the_teams_loop_is_a_lane_of_the_report_and_the_gate_sees_it_break(tmp_path: Path) -> None:
    good = _run_agent_stack(tmp_path, "call id")
    lanes = {(row["case"], row["mode"]): row for row in good["results"] if row["provider"] == "openai-chat@acme-loop"}
    assert sorted(lanes) == [("normal", "body"), ("parallel_tool_calls", "body")]  # its cases, body only
    assert all(row["passed"] and row["outcome"] == "answer_ready" for row in lanes.values()), lanes
    assert [receipt["tool"] for receipt in lanes[("normal", "body")]["receipts"]] == ["get_order"]
    bad = _run_agent_stack(tmp_path, "tool name")
    (row,) = [row for row in bad["results"] if (row["provider"], row["case"]) == ("openai-chat@acme-loop", "normal")]
    assert not row["passed"]
    assert "correlation: turn 2: tool result get_order answers no call of turn 1" in row["failures"]
    diff = cli("diff", str(tmp_path / "call_id/report.json"), str(tmp_path / "tool_name/report.json"))
    assert diff.returncode == 1
    (line,) = [line for line in diff.stdout.splitlines()
               if line.startswith("| ❌ regression | normal | openai-chat⁠@⁠acme-loop | body |")]
    assert "passed → failed" in line
    # The loop's request answers a call id with a tool name: the vendor would refuse it, a finding of the loop.
    assert "new finding, not accepted: turn 2 request.tool-message-after-tool-calls" in line
