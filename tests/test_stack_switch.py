"""The vendor-switch judge of a stack's routes (conformance.stacks.switch): what it names when the request of turn 2
carries the first vendor's reasoning, loses a call, or is one the second vendor refuses; and that a request built as
the contract says (the adapters' own builders) is clean. The gateways' real switches:
tests/e2e/test_gateway_switch.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.classify import classify_response
from conformance.engine.registry import builtin_adapters
from conformance.kit.task import ModelTurn, Task, TranscriptEntry, task_for_turn
from conformance.stacks.stack import Endpoint, Stack
from conformance.stacks.switch import reasoning_values, switch, switches
from tests.helpers import CASES

ADAPTERS = builtin_adapters()
CASE = {case.id: case for case in load_cases([CASES])}


class Sent:
    """The face of the replay that ``switch`` uses: a lock, the cases, and the requests each session received."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cases: dict[str, Any] = {}
        self.requests: dict[tuple[str, str], list[Any]] = {}

    def reset(self, case_id: str, provider: str, mode: str) -> None:
        self.requests[(case_id, provider)] = []

    def sent(self, case_id: str, provider: str, mode: str) -> list[Any]:
        return self.requests.get((case_id, provider), [])


def _routes(replay: Sent, case_id: str, source: str, target: str,
            change: Callable[[dict[str, Any], Sequence[TranscriptEntry]], dict[str, Any]] = lambda request, _: request,
            ) -> tuple[Stack, Stack]:
    """A stack's two routes: ``source`` answers with its recorded turn 1; ``target`` sends what the target adapter's
    own builder makes of the conversation, passed through ``change`` (a stack's own mistake)."""
    recorded = CASE[case_id].providers[source].turns[0]

    def first(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> Any:
        return classify_response(ADAPTERS[source], recorded.status, recorded.headers, recorded.body)

    def second(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> Any:
        request = change(ADAPTERS[target].build_request(task, transcript), transcript)
        replay.requests[(case_id, f"{target}@fake")].append(json.loads(json.dumps(request)))
        return first(task, transcript, endpoint)

    return Stack(id="fake", provider=source, call=first), Stack(id="fake", provider=target, call=second)


def _switched(case_id: str, source: str, target: str, change: Any = None) -> Any:
    replay = Sent()
    routes = _routes(replay, case_id, source, target, *([change] if change else []))
    return switch(CASE[case_id], *routes, ADAPTERS, replay, "http://127.0.0.1:9")


@pytest.mark.parametrize("source", ["anthropic-messages", "gemini", "openai-responses"])
@pytest.mark.parametrize("target", ["openai-chat", "bedrock-converse"])
def test_the_contracts_own_switch_is_clean(source: str, target: str) -> None:
    switched = _switched("normal", source, target)
    assert switched.clean and switched.outcome() == "clean", switched


def test_the_first_vendors_signature_carried_on_is_named() -> None:
    signature = next(value for value, what in _pieces()
                     .items() if what == "signature")

    def carry(request: dict[str, Any], _: Any) -> dict[str, Any]:
        request["messages"][-2]["thinking_blocks"] = [{"type": "thinking", "signature": signature}]
        return request

    switched = _switched("normal", "anthropic-messages", "openai-chat", carry)
    assert switched.carried == ("signature",)
    assert switched.outcome() == "carries the first vendor's signature"


def test_the_first_vendors_reasoning_text_carried_on_is_named() -> None:
    def think(request: dict[str, Any], _: Any) -> dict[str, Any]:
        thinking = next(value for value, what in _pieces()
                        .items() if what == "reasoning text")
        request["messages"][-2]["content"] = f"<think>{thinking}</think>"
        return request

    assert _switched("normal", "anthropic-messages", "openai-chat", think).carried == ("reasoning text",)


def test_a_call_lost_on_the_way_is_named_and_refused() -> None:
    def drop(request: dict[str, Any], _: Any) -> dict[str, Any]:
        assistant = request["messages"][-3]
        assistant["tool_calls"] = assistant["tool_calls"][:1]
        return request

    switched = _switched("parallel_tool_calls", "anthropic-messages", "openai-chat", drop)
    assert switched.lost == () and switched.refused  # both calls have one name: the result of the lost one remains
    assert "refused (" in switched.outcome()


def test_calls_and_results_left_out_are_lost_calls_by_name() -> None:
    """A layer that drops the model turn and its results: the tools still name the call, the history does not."""
    def forget(request: dict[str, Any], _: Any) -> dict[str, Any]:
        request["messages"] = [message for message in request["messages"] if message["role"] in ("system", "user")]
        return request

    switched = _switched("parallel_tool_calls", "anthropic-messages", "openai-chat", forget)
    assert switched.lost == ("get_order",) and "calls lost (get_order)" in switched.outcome()


def test_reasoning_text_that_json_escapes_is_still_found() -> None:
    """Thinking text with a newline and a quote: sent as a value, it is found, whatever its JSON spelling."""
    import dataclasses

    case = CASE["normal"]
    turn = case.providers["anthropic-messages"].turns[0]
    body = json.loads(json.dumps(turn.body))
    thinking = next(block for block in body["content"] if block["type"] == "thinking")
    thinking["thinking"] = 'First line.\n\nThe "order" is ORD-1001.'
    changed = dataclasses.replace(case, providers={**case.providers, "anthropic-messages": dataclasses.replace(
        case.providers["anthropic-messages"], turns=(dataclasses.replace(turn, body=body),
                                                     *case.providers["anthropic-messages"].turns[1:]))})
    replay = Sent()
    source, target = _routes(replay, "normal", "anthropic-messages", "openai-chat",
                             lambda request, _: {**request, "messages": [*request["messages"][:-2], {
                                 **request["messages"][-2], "content": f"<think>{thinking['thinking']}</think>"},
                                 request["messages"][-1]]})
    answer = classify_response(ADAPTERS["anthropic-messages"], turn.status, turn.headers, body)
    source = Stack(id="fake", provider="anthropic-messages", call=lambda *_: answer)
    switched = switch(changed, source, target, ADAPTERS, replay, "http://127.0.0.1:9")
    assert "reasoning text" in switched.carried


def test_another_vendors_turn_sent_verbatim_is_refused_by_the_rule_named() -> None:
    def verbatim(request: dict[str, Any], transcript: Sequence[TranscriptEntry]) -> dict[str, Any]:
        untagged = [entry if not isinstance(entry, ModelTurn) else ModelTurn(response=entry.response, api=None)
                    for entry in transcript]  # taken for Bedrock's own turn: Gemini's parts go back as they came
        return ADAPTERS["bedrock-converse"].build_request(task_for_turn(CASE["normal"].task, untagged), untagged)

    switched = _switched("normal", "gemini", "bedrock-converse", verbatim)
    assert switched.refused == ("tool-results-answer-tool-uses",)
    assert switched.outcome() == "refused (tool-results-answer-tool-uses); carries the first vendor's signature"


def test_a_stack_that_raises_is_named_not_judged() -> None:
    replay = Sent()
    source, target = _routes(replay, "normal", "openai-chat", "gemini")

    def broken(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> Any:
        raise KeyError("thought_signature")

    switched = switch(CASE["normal"], source, Stack(id="fake", provider="gemini", call=broken), ADAPTERS, replay,
                      "http://127.0.0.1:9")
    assert switched.error == "turn 2 raised KeyError" and not switched.clean


def test_every_pair_of_routes_is_switched_once_per_case(monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.stacks.runner as runner

    replay = Sent()
    monkeypatch.setattr(runner, "shared_server", lambda: type("Server", (), {"replay": replay, "base": "x"})())
    stacks = {}
    for api in ("openai-chat", "anthropic-messages", "gemini"):
        first, _ = _routes(replay, "normal", api, api)
        stacks[f"{api}@fake"] = first
    done = switches([CASE["normal"]], stacks, ADAPTERS)
    assert sorted((item.source, item.target) for item in done) == sorted(
        (a, b) for a in ("openai-chat", "anthropic-messages", "gemini") for b in ("openai-chat", "anthropic-messages",
                                                                                 "gemini") if a != b)


def _answer(case_id: str, api: str) -> Any:
    recorded = CASE[case_id].providers[api].turns[0]
    return classify_response(ADAPTERS[api], recorded.status, recorded.headers, recorded.body)



def _pieces() -> dict[str, str]:
    """The reasoning of the `normal` case's Anthropic answer, as the Messages adapter reads it."""
    return reasoning_values("anthropic-messages", _answer("normal", "anthropic-messages").output_items, ADAPTERS)


@pytest.mark.parametrize(("api", "kinds"), [("anthropic-messages", {"reasoning text", "signature"}),
                                            ("gemini", {"signature"}), ("openai-responses", {"encrypted content"})])
def test_each_api_reads_the_reasoning_its_recorded_answers_carry(api: str, kinds: set[str]) -> None:
    """Each adapter names its own reasoning (Wire.reasoning): the switch judge knows no vendor's shape."""
    assert set(reasoning_values(api, _answer("normal", api).output_items, ADAPTERS).values()) == kinds
    assert reasoning_values("openai-chat", _answer("normal", "openai-chat").output_items, ADAPTERS) == {}
