"""docs/glue.md's examples, run as written: a team's own modules on the openai and anthropic SDKs and the documented
glue, through every bundled case with Chat Completions or Anthropic Messages fixtures (docs/glue.md)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.rows import status_of
from conformance.engine.runner import run_case
from conformance.errors import InputError
from conformance.stacks.runner import run_stack_case
from tests.helpers import CASES

DOC = Path(__file__).parent.parent / "docs" / "glue.md"
CHAT = builtin_adapters()["openai-chat"]
MESSAGES = builtin_adapters()["anthropic-messages"]
GLUE = {"openai-chat": "conformance_stack", "anthropic-messages": "conformance_stack_anthropic"}
STREAM_ONLY = {"openai-chat": ("mid_stream_error", "stream_interrupted"),
               "anthropic-messages": ("invalid_arguments_not_json", "mid_stream_error", "stream_interrupted")}


def blocks() -> dict[str, str]:
    """The doc's Python blocks by the file name on their first line."""
    found = re.findall(r"```python\n# (\S+\.py)\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return {name: body for name, body in found}


def code_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


@pytest.fixture
def stacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The doc's application modules and glue written into a repository, each provider's STACK imported."""
    files = {name: body for name, body in blocks().items() if name != "conformance_agent.py"}  # its own test
    assert set(files) == {"support_agent/openai_llm.py", "support_agent/anthropic_llm.py", *(
        f"{module}.py" for module in GLUE.values())}
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    (tmp_path / "support_agent/__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in (*GLUE.values(), "support_agent", "support_agent.openai_llm", "support_agent.anthropic_llm"):
        sys.modules.pop(module, None)
    return {provider: importlib.import_module(module).STACK for provider, module in GLUE.items()}


@pytest.fixture
def stack(stacks: dict[str, Any]) -> Any:
    return stacks["openai-chat"]


@pytest.mark.parametrize("module", GLUE.values())
def test_the_documented_glue_is_at_most_25_lines_and_says_so(module: str) -> None:
    glue = blocks()[f"{module}.py"]
    assert code_lines(glue) <= 25
    assert f"`{module}.py` ({code_lines(glue)} lines of code)" in DOC.read_text(encoding="utf-8")


def test_the_documented_example_runs_the_bundled_cases_and_its_mapping_is_what_is_checked(stack: Any) -> None:
    outcomes = {}
    for case in load_cases([CASES]):
        if "openai-chat" not in case.providers:
            continue
        raw = run_case(case, "openai-chat", CHAT, "body")
        try:
            row, _, _ = run_stack_case(case, stack, CHAT, "body")
        except InputError:  # the loop asked for a turn the case never recorded: the example read it wrongly
            outcomes[case.id] = ("read past the recording", raw["outcome"], False)
            continue
        outcomes[case.id] = (row["outcome"], raw["outcome"], row["passed"])
    # The example's own reading agrees with the reference adapter on the everyday cases...
    for case_id in ("normal", "truncation", "refusal", "empty_response", "parallel_tool_calls", "cached_usage",
                    "multi_turn_history", "duplicate_call_id"):
        assert outcomes[case_id][0] == outcomes[case_id][1] and outcomes[case_id][2], (case_id, outcomes[case_id])
    passed = sum(1 for _, _, ok in outcomes.values() if ok)
    assert passed >= 15 and f"this example passes {passed} of {len(outcomes)}." in DOC.read_text().replace("\n", " ")
    # ...and no stream rows are planned for code that never streams.
    assert stack.streams is False


def test_a_tool_result_sent_under_the_tools_name_fails_correlation(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import support_agent.openai_llm as app

    original = app.build_request

    def by_name(system: str, history: list[Any], *rest: Any) -> Any:
        names = {call["id"]: call["function"]["name"] for message in history
                 for call in (message.get("tool_calls") or [])}
        history = [{**message, "tool_call_id": names.get(message["tool_call_id"], message["tool_call_id"])}
                   if message.get("role") == "tool" else message for message in history]
        return original(system, history, *rest)

    monkeypatch.setattr(app, "build_request", by_name)
    case = next(case for case in load_cases([CASES]) if case.id == "normal")
    row, _, _ = run_stack_case(case, stack, CHAT, "body")
    assert row["passed"] is False
    assert any("answers no call of turn 1" in failure for failure in row["failures"]), row["failures"]


def test_the_documented_waivers_leave_only_the_examples_real_bug_red(stack: Any) -> None:
    waived = _waived(stack)
    assert waived.streams is False and len(waived.waivers) == 3
    statuses: dict[str, str] = {}
    for case in load_cases([CASES]):
        if "openai-chat" not in case.providers or case.id in STREAM_ONLY["openai-chat"]:
            continue  # recorded as streams only: no body to serve a client that never streams
        row, _, _ = run_stack_case(case, waived, CHAT, "body")
        statuses[case.id] = status_of(row)
    assert sorted(case for case, status in statuses.items() if status == "failed") == ["content_filter"]
    assert sorted(case for case, status in statuses.items() if status == "waived") == [
        "context_window", "forced_tool_choice", "http_auth", "http_context_too_long", "http_overloaded",
        "http_quota", "http_rate_limit", "structured_output_contradiction", "structured_output_schema_invalid",
        "structured_output_valid"]


def _waived(stack: Any) -> Any:
    """The stack with the doc's waivers block applied, as the doc writes it."""
    import dataclasses

    waivers_block = re.search(r"```python\n(from conformance.kit import Waiver\n.*?)```", DOC.read_text(), re.S)
    assert waivers_block is not None
    scope: dict[str, Any] = {"Stack": lambda **fields: fields, "call": stack.call}
    exec(waivers_block[1], scope, scope)
    assert scope["STACK"]["streams"] is False and scope["STACK"]["waivers"] is scope["WAIVERS"]
    return dataclasses.replace(stack, waivers=scope["WAIVERS"])


def test_the_anthropic_example_runs_the_bundled_cases_and_its_gaps_are_what_stays_red(stacks: dict[str, Any]) -> None:
    stack = stacks["anthropic-messages"]
    waived = _waived(stack)
    outcomes: dict[str, tuple[Any, ...]] = {}
    for case in load_cases([CASES]):
        if "anthropic-messages" not in case.providers or case.id in STREAM_ONLY["anthropic-messages"]:
            continue
        raw = run_case(case, "anthropic-messages", MESSAGES, "body")
        row, _, _ = run_stack_case(case, stack, MESSAGES, "body")
        again, _, _ = run_stack_case(case, waived, MESSAGES, "body")
        outcomes[case.id] = (row["outcome"], raw["outcome"], row["passed"], status_of(again), row["failures"])
    for case_id in ("normal", "truncation", "refusal", "empty_response", "parallel_tool_calls", "cached_usage",
                    "multi_turn_history", "duplicate_call_id", "content_filter"):
        assert outcomes[case_id][0] == outcomes[case_id][1] and outcomes[case_id][2], (case_id, outcomes[case_id])
    passed = sum(1 for outcome in outcomes.values() if outcome[2])
    total = len(outcomes) + len(STREAM_ONLY["anthropic-messages"])
    assert f"this example passes {passed} of {total}." in DOC.read_text().replace("\n", " ")
    red = sorted(case_id for case_id, outcome in outcomes.items() if outcome[3] == "failed")
    assert red == ["context_window", "pause_turn", "unsupported_item"]
    assert "had stop_reason=pause_turn" in outcomes["pause_turn"][4][0]
    assert {outcome[3] for case_id, outcome in outcomes.items() if case_id.startswith("http_")} == {"waived"}


def test_anthropic_max_tokens_read_as_an_answer_is_a_named_red_row(stacks: dict[str, Any],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import support_agent.anthropic_llm as app

    monkeypatch.setitem(app.STOPS, "max_tokens", "final")
    case = next(case for case in load_cases([CASES]) if case.id == "truncation")
    row, _, _ = run_stack_case(case, stacks["anthropic-messages"], MESSAGES, "body")
    assert row["passed"] is False
    assert row["failures"][0].startswith("outcome: expected incomplete, got unverified_answer")
    assert row["failures"][0].endswith("turn 1, read as text, had stop_reason=max_tokens")


def test_the_documented_agent_stack_is_a_body_only_lane_of_the_cases_it_names() -> None:
    scope: dict[str, Any] = {"my_agent": lambda session: ""}
    exec(blocks()["conformance_agent.py"], scope, scope)
    stack = scope["STACK"]
    assert (stack.row_id, stack.streams, stack.loop) == ("openai-chat@acme-loop", False, scope["my_agent"])
    from conformance.engine.plan import plan_case

    planned = {case.id: [item.name for item in plan_case(case, {"openai-chat": CHAT}, [stack])
                         if item.stack is stack] for case in load_cases([CASES])}
    assert {case for case, names in planned.items() if names} == set(stack.cases)
    assert planned["normal"] == ["normal[openai-chat@acme-loop-body]"]
