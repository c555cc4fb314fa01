"""The bounded loop: every outcome in CONTRACT.md is reachable, and each one for the right reason."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from conformance.engine.cases import Case, Expectation, ProviderFixtures, RecordedTurn
from conformance.engine.cases import load_cases as _load_cases
from conformance.engine.loop import parse_json_or_none, run_loop
from conformance.engine.world import Principal, Receipt, World
from conformance.kit.task import ToolResults
from conformance.providers.openai_responses import ADAPTER
from tests.helpers import CASES

WORLD = _load_cases([CASES])[0].world
GET_ORDER = WORLD.tools["get_order"].spec()
REFUND = WORLD.tools["refund_order"].spec()


def body(*items: dict[str, Any], status: str = "completed", **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "model": "m", "output": list(items),
            "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}, **extra}


def call(call_id: str, name: str = "get_order", **arguments: Any) -> dict[str, Any]:
    return {"type": "function_call", "id": "fc_" + call_id, "call_id": call_id, "name": name,
            "arguments": json.dumps(arguments), "status": "completed"}


def text(value: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": value, "annotations": []}]}


def make_case(*bodies: Any, tools: tuple[Any, ...] = (GET_ORDER,), max_turns: int = 4, max_tool_calls: int = 4,
              output_schema: dict[str, Any] | None = None, approvals: frozenset[str] = frozenset(),
              answer_contains: tuple[str, ...] = (), status: int = 200) -> Case:
    from conformance.kit.task import Task

    turns = tuple(RecordedTurn(status=status if index == 0 and status != 200 else 200, headers={}, body=item,
                               source="inline") for index, item in enumerate(bodies))
    return Case(
        id="t", scenario="t", title="t", proves="", path="t.yaml",
        task=Task(instructions="i", input="q", tools=tools, output_schema=output_schema),
        principal=Principal(tenant="shop-a", user="u-100"),
        max_turns=max_turns, max_tool_calls=max_tool_calls, approvals=approvals,
        expect=Expectation(outcome="answer_ready"), answer_contains=answer_contains,
        providers={"openai-responses": ProviderFixtures(turns=turns)}, world=WORLD,
    )


def outcome(case: Case) -> str:
    return run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns).outcome


def test_answer_ready_when_the_answer_states_the_receipt() -> None:
    case = make_case(body(call("c1", order_id="ORD-1001")), body(text("ORD-1001 is shipped.")))
    assert outcome(case) == "answer_ready"


def test_unverified_answer_when_the_answer_contradicts_the_receipt() -> None:
    case = make_case(body(call("c1", order_id="ORD-1001")), body(text("ORD-1001 was delivered yesterday.")))
    assert outcome(case) == "unverified_answer"


def test_unverified_answer_when_nothing_supports_a_toolless_answer() -> None:
    assert outcome(make_case(body(text("Sure, it is on its way.")))) == "unverified_answer"


def test_toolless_answer_verified_by_expected_strings() -> None:
    case = make_case(body(text("Returns are accepted within 30 days.")), answer_contains=("30 days",))
    assert outcome(case) == "answer_ready"


SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}, "status": {"type": "string"}},
          "required": ["order_id", "status"], "additionalProperties": False}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"order_id": "ORD-1001", "status": "shipped"}', "answer_ready"),
        ('{"order_id": "ORD-1001"}', "schema_invalid"),
        ('{"order_id": "ORD-1001", "status": ', "schema_invalid"),
        ('{"order_id": "ORD-1001", "status": "delivered"}', "unverified_answer"),
    ],
)
def test_structured_answers_are_checked_for_structure_and_then_truth(answer: str, expected: str) -> None:
    case = make_case(body(call("c1", order_id="ORD-1001")), body(text(answer)), output_schema=SCHEMA)
    assert outcome(case) == expected


def test_permission_denied_for_another_tenants_record_returns_no_protected_field() -> None:
    case = make_case(body(call("c1", order_id="ORD-2001")), body(text("It is processing.")))
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.outcome == "permission_denied"
    denied = run.receipts[0]["output"]
    assert denied["error"] == "permission_denied"
    assert not set(denied) & {"status", "total", "currency", "delivery_address", "order_id"}
    assert run.leaks == []


def test_principal_never_comes_from_model_arguments() -> None:
    from conformance.engine.world import World

    permissive = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
    world = World.from_document({
        "tools": {"get_order": {"description": "d", "access": "read", "parameters": permissive,
                                "collection": "orders", "key": "order_id", "returns": ["status"]}},
        "data": WORLD.data,
    })
    case = make_case(body(call("c1", order_id="ORD-2001", tenant="shop-b", user="u-900")),
                     tools=(world.tools["get_order"].spec(),))
    object.__setattr__(case, "world", world)
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.outcome == "permission_denied"
    assert "processing" not in json.dumps(run.receipts)


def test_unknown_tool_is_never_executed() -> None:
    case = make_case(body(call("c1", "delete_customer_account", customer="u-100")))
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.outcome == "unknown_tool"
    assert run.receipts == []


def test_invalid_arguments_fail_the_tool_schema() -> None:
    case = make_case(body(call("c1", order_id="1001")))
    assert outcome(case) == "invalid_arguments"


def test_arguments_that_are_not_an_object_are_an_invalid_tool_call() -> None:
    broken = call("c1")
    broken["arguments"] = '{"order_id": '
    assert outcome(make_case(body(broken))) == "invalid_tool_call"


def test_duplicate_call_id_across_turns() -> None:
    case = make_case(body(call("c1", order_id="ORD-1001")), body(call("c1", order_id="ORD-1002")))
    assert outcome(case) == "duplicate_call_id"


def test_budget_exhausted_by_turns() -> None:
    case = make_case(*(body(call(f"c{n}", order_id="ORD-1001")) for n in range(3)), max_turns=3, max_tool_calls=9)
    assert outcome(case) == "budget_exhausted"


def test_budget_exhausted_by_tool_calls() -> None:
    case = make_case(body(call("c1", order_id="ORD-1001"), call("c2", order_id="ORD-1002")), max_tool_calls=1)
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.outcome == "budget_exhausted"
    assert run.receipts == []


def test_write_tool_without_approval_never_runs_and_the_world_is_unchanged() -> None:
    case = make_case(body(call("c1", "refund_order", order_id="ORD-1001", reason="late")), tools=(GET_ORDER, REFUND))
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert (run.outcome, run.detail) == ("permission_denied", "refund_order: approval_required")
    assert run.world_writes == []
    assert WORLD.data["orders"]["ORD-1001"]["status"] == "shipped"


def test_write_tool_with_approval_runs_on_a_private_copy_of_the_world() -> None:
    case = make_case(body(call("c1", "refund_order", order_id="ORD-1001", reason="late")),
                     body(text("ORD-1001 is refunded.")), tools=(GET_ORDER, REFUND),
                     approvals=frozenset({"refund_order"}))
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.outcome == "answer_ready"
    assert run.world_writes == [{"tool": "refund_order", "key": "ORD-1001", "set": {"status": "refunded"}}]
    assert WORLD.data["orders"]["ORD-1001"]["status"] == "shipped"


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (body(status="incomplete", incomplete_details={"reason": "max_output_tokens"}), "incomplete"),
        (body({"type": "message", "id": "m", "role": "assistant", "status": "completed",
               "content": [{"type": "refusal", "refusal": "no"}]}), "refusal"),
        (body(status="failed", error={"code": "server_error", "message": "x"}), "retryable_error"),
        (body(status="cancelled"), "fatal_error"),
        (body({"type": "hologram_call"}), "unsupported"),
        (body(), "empty"),
    ],
)
def test_terminal_kinds_end_the_loop_as_themselves(response: dict[str, Any], expected: str) -> None:
    assert outcome(make_case(response)) == expected


def test_http_error_turn_is_classified_by_status() -> None:
    case = make_case({"error": {"code": "insufficient_quota", "message": "quota"}}, status=429)
    assert outcome(case) == "fatal_error"


def test_a_case_that_recorded_too_few_turns_is_an_input_error_naming_the_turn() -> None:
    from conformance.errors import InputError

    case = make_case(body(call("c1", order_id="ORD-1001")))
    with pytest.raises(InputError) as error:
        outcome(case)
    message = str(error.value)
    assert "no recorded turn 2" in message
    assert "turn 1 ended with tool_calls" in message


# ---- What mutation testing found unpinned (docs/hardening.md) ----------------------------------------------------

@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # A structured answer states a fact only as an exact scalar: free-text matching would accept both.
        ('{"order_id": "ORD-1001", "status": "shipped soon"}', "unverified_answer"),
        ('{"order_id": "ORD-1001 and ORD-1002", "status": "shipped"}', "unverified_answer"),
        ('{"order_id": "ord-1001", "status": "SHIPPED"}', "answer_ready"),  # scalars compare case-insensitively
    ],
)
def test_a_structured_answer_states_a_fact_only_as_an_exact_scalar(answer: str, expected: str) -> None:
    case = make_case(body(call("c1", order_id="ORD-1001")), body(text(answer)), output_schema=SCHEMA)
    assert outcome(case) == expected


@pytest.mark.parametrize(("max_tool_calls", "expected"), [(3, "answer_ready"), (2, "budget_exhausted")])
def test_the_tool_call_budget_counts_every_call_across_turns(max_tool_calls: int, expected: str) -> None:
    case = make_case(body(call("c1", order_id="ORD-1001"), call("c2", order_id="ORD-1002")),
                     body(call("c3", order_id="ORD-1003")),
                     body(text("ORD-1001 is shipped, ORD-1002 is delivered and ORD-1003 is processing.")),
                     max_tool_calls=max_tool_calls)
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.outcome == expected
    if expected == "budget_exhausted":
        assert run.detail == "turn 2 asked for 1 call(s) with 2 of 2 already used"
        assert [receipt["call_id"] for receipt in run.receipts] == ["c1", "c2"]


def test_a_turn_that_uses_the_budget_exactly_runs_its_calls() -> None:
    case = make_case(body(call("c1", order_id="ORD-1001"), call("c2", order_id="ORD-1002")),
                     body(text("ORD-1001 is shipped and ORD-1002 is delivered.")), max_tool_calls=2)
    assert outcome(case) == "answer_ready"


def test_receipt_records_name_the_turn_call_and_tool() -> None:
    case = make_case(body(call("c1", order_id="ORD-1001")),
                     body(call("c2", order_id="ORD-9999")), body(text("ORD-1001 is shipped.")))
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.receipts == [
        {"turn": 1, "call_id": "c1", "tool": "get_order",
         "output": {"order_id": "ORD-1001", "status": "shipped", "total": "42.00", "currency": "EUR"},
         "is_error": False, "denied": None, "evidence": {"order_id": "ORD-1001", "status": "shipped"}},
        {"turn": 2, "call_id": "c2", "tool": "get_order",
         "output": {"error": "not_found", "message": "no such record: ORD-9999"},
         "is_error": True, "denied": None, "evidence": {}},
    ]


def test_a_failed_tool_run_goes_back_to_the_model_flagged_as_an_error() -> None:
    seen: list[Any] = []

    def build_request(task: Any, transcript: Any) -> Any:
        seen.append(list(transcript))
        return ADAPTER.build_request(task, transcript)

    spy = dataclasses.replace(ADAPTER, build_request=build_request)
    case = make_case(body(call("c1", order_id="ORD-9999")), body(text("There is no such order.")),
                     answer_contains=("no such order",))
    run_loop(case, "openai-responses", spy, case.providers["openai-responses"].turns)
    results = [entry for entry in seen[1] if isinstance(entry, ToolResults)]
    assert [(result.call.call_id, result.is_error) for result in results[0].results] == [("c1", True)]


class _LeakyWorld(World):
    """A world whose denial echoes the record it refused: the loop must notice the leak."""

    def fork(self) -> World:
        return self

    def execute(self, tool: Any, arguments: Any, principal: Any, approved: bool) -> Receipt:
        record = self.data["orders"][arguments["order_id"]]
        return Receipt(output={"error": "permission_denied", "message": f"order is {record['status']}, "
                               f"ships to {record['delivery_address']}"}, is_error=True, denied="permission_denied")


def test_a_denial_that_echoes_a_protected_field_is_recorded_as_a_leak() -> None:
    leaky = _LeakyWorld(tools=WORLD.tools, data=WORLD.fork().data)
    case = make_case(body(call("c1", order_id="ORD-2001")))
    object.__setattr__(case, "world", leaky)
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.outcome == "permission_denied"
    assert sorted(run.leaks) == ["7 Harbour Road", "processing"]


@pytest.mark.parametrize(("answer", "detail"), [
    ('{"order_id": ', "the answer is not valid JSON"),
    ('{"order_id": "ORD-1001", "status": "delivered"}', "the answer does not state status=shipped"),
])
def test_the_detail_of_a_rejected_structured_answer_reads_exactly(answer: str, detail: str) -> None:
    case = make_case(body(call("c1", order_id="ORD-1001")), body(text(answer)), output_schema=SCHEMA)
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert (run.outcome, run.detail) == ("unverified_answer" if "state" in detail else "schema_invalid", detail)


def test_an_answer_with_nothing_to_check_says_so_and_a_verified_one_has_no_detail() -> None:
    case = make_case(body(text("Sure, it is on its way.")))
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.detail == "nothing to verify the answer against (no receipts, no expected answer)"
    ready = make_case(body(call("c1", order_id="ORD-1001")), body(text("ORD-1001 is shipped.")))
    assert run_loop(ready, "openai-responses", ADAPTER, ready.providers["openai-responses"].turns).detail == ""


def test_every_follow_up_is_asked_in_order_after_its_answer() -> None:
    from conformance.kit.task import Task

    seen: list[Any] = []

    def build_request(task: Any, transcript: Any) -> Any:
        seen.append([entry.text for entry in transcript if type(entry).__name__ == "UserMessage"])
        return ADAPTER.build_request(task, transcript)

    case = make_case(body(text("Returns take 30 days.")), body(text("Refunds take 30 days too.")),
                     body(text("Exchanges: 30 days as well.")), answer_contains=("30 days",))
    object.__setattr__(case, "task", Task(instructions="i", input="q", tools=(GET_ORDER,),
                                          follow_ups=("And refunds?", "And exchanges?")))
    spy = dataclasses.replace(ADAPTER, build_request=build_request)
    run = run_loop(case, "openai-responses", spy, case.providers["openai-responses"].turns)
    assert run.outcome == "answer_ready"
    assert seen == [["q"], ["q", "And refunds?"], ["q", "And refunds?", "And exchanges?"]]


def test_a_missing_turn_names_the_turn_to_record_and_why() -> None:
    from conformance.errors import InputError

    case = make_case(body(call("c1", order_id="ORD-1001")))
    with pytest.raises(InputError) as error:
        outcome(case)
    (problem,) = error.value.problems
    assert (problem.file, problem.line) == ("t.yaml", None)
    assert problem.message == ("provider 'openai-responses': no recorded turn 2; recorded turns: 1..1; turn 1 ended "
                               "with tool_calls (status=completed), so the loop asked for turn 2")
    assert problem.fix == "record turn 2 for openai-responses, or lower budget.max_turns"


def test_an_undeclared_call_inside_an_invalid_tool_call_is_unknown_tool() -> None:
    broken = call("c1", "delete_everything")
    broken["arguments"] = '{"x": '
    run_case = make_case(body(broken))
    run = run_loop(run_case, "openai-responses", ADAPTER, run_case.providers["openai-responses"].turns)
    assert run.outcome == "unknown_tool"


# ---- Where the loop says what happened (pinned against surviving mutants) -----------------------------------------

BUNDLED = {case.id: case for case in _load_cases([CASES])}


def test_an_http_error_turn_is_the_error_even_in_stream_mode_when_a_stream_was_recorded_too() -> None:
    from conformance.engine.loop import replay_turn

    streamed = BUNDLED["normal"].providers["openai-responses"].turns[0]
    assert streamed.stream is not None
    for status in (400, 401):
        error = dataclasses.replace(streamed, status=status, body={"error": {"message": "bad", "type": "x"}})
        response, summary = replay_turn(ADAPTER, error, "stream")
        assert (response.kind, summary) == ("fatal_error", None), status


def test_stream_mode_without_an_assembler_names_the_fixture_and_the_fix() -> None:
    from conformance.engine.loop import replay_turn
    from conformance.errors import InputError

    streamed = BUNDLED["normal"].providers["openai-responses"].turns[0]
    with pytest.raises(InputError) as raised:
        replay_turn(dataclasses.replace(ADAPTER, assemble_stream=None), streamed, "stream")
    (problem,) = raised.value.problems
    assert (problem.file, problem.line, problem.message, problem.fix) == (
        streamed.stream_source, None, "adapter 'openai-responses' cannot read streams",
        "give the adapter an assemble_stream function, or run body mode only")


def test_the_turn_budget_detail_names_the_budget() -> None:
    case = BUNDLED["loop_exhaustion"]
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert (run.outcome, run.detail) == ("budget_exhausted",
                                         "the turn budget of 3 ran out with tool calls still coming")


def test_an_adapter_that_raises_while_building_turn_2_is_caught_at_turn_2() -> None:
    from conformance.engine.loop import LoopRun

    def build_request(task: Any, transcript: Any) -> dict[str, Any]:
        if len(transcript) > 1:
            raise RuntimeError("no second request")
        return ADAPTER.build_request(task, transcript)

    case, run = BUNDLED["normal"], LoopRun()
    with pytest.raises(RuntimeError):
        run_loop(case, "openai-responses", dataclasses.replace(ADAPTER, build_request=build_request),
                 case.providers["openai-responses"].turns, "body", run)
    assert (run.turn, run.phase, run.fixture) == (2, "building the request", "")


def test_no_recorded_turn_at_all_says_the_loop_needs_one() -> None:
    from conformance.errors import InputError

    case = BUNDLED["normal"]
    with pytest.raises(InputError) as raised:
        run_loop(case, "openai-responses", ADAPTER, ())
    (problem,) = raised.value.problems
    assert problem.message == ("provider 'openai-responses': no recorded turn 1; recorded turns: 1..0; the loop "
                               "needs at least one turn")
    assert problem.fix == "record turn 1 for openai-responses, or lower budget.max_turns"


def test_each_turn_names_the_fixture_it_was_read_from_stream_or_body() -> None:
    case = BUNDLED["normal"]
    turns = case.providers["openai-responses"].turns
    streamed = run_loop(case, "openai-responses", ADAPTER, turns, "stream")
    assert streamed.sources == [turn.stream_source for turn in turns] and all(
        source.endswith(".sse") for source in streamed.sources)
    assert run_loop(case, "openai-responses", ADAPTER, turns, "body").sources == [turn.source for turn in turns]
    error = BUNDLED["http_rate_limit"]
    assert run_loop(error, "openai-responses", ADAPTER, error.providers["openai-responses"].turns,
                    "stream").sources == [error.providers["openai-responses"].turns[0].source]


def test_an_adapter_that_raises_reading_a_stream_is_caught_with_the_stream_fixture() -> None:
    from conformance.engine.loop import LoopRun

    def assemble(chunks: Any) -> Any:
        raise ValueError("cannot read this stream")

    case, run = BUNDLED["normal"], LoopRun()
    with pytest.raises(ValueError):
        run_loop(case, "openai-responses", dataclasses.replace(ADAPTER, assemble_stream=assemble),
                 case.providers["openai-responses"].turns, "stream", run)
    assert (run.turn, run.phase, run.fixture) == (1, "reading the response",
                                                  case.providers["openai-responses"].turns[0].stream_source)


def test_the_first_schema_error_is_the_one_nearest_the_root() -> None:
    from conformance.engine.loop import _check_call
    from conformance.kit.types import ToolCall

    case = BUNDLED["normal"]
    tools = {spec.name: case.world.tools[spec.name] for spec in case.task.tools}
    call = ToolCall(call_id="c1", name="get_order", arguments="{}", parsed_arguments={"order_id": 5, "extra": 1})
    assert _check_call(call, set(), tools) == (
        "invalid_arguments", "get_order: Additional properties are not allowed ('extra' was unexpected)")


def test_a_structured_answer_is_read_as_json_or_as_nothing() -> None:
    assert parse_json_or_none('{"order_id": "ORD-1", "status": "shipped"}') == {"order_id": "ORD-1",
                                                                                 "status": "shipped"}
    assert parse_json_or_none("ORD-1 has shipped") is None
    assert parse_json_or_none("[" * 300 + "]" * 300) is None  # nested too deep is not JSON either


def test_a_schema_is_compiled_once_per_schema_object(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from conformance.engine import loop

    compiled: list[str] = []
    real = loop.compiled
    monkeypatch.setattr(loop, "compiled", lambda text: compiled.append(text) or real(text))
    monkeypatch.setattr(loop, "_VALIDATORS", {})
    orders = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
    counts = {"properties": {"n": {"type": "integer"}}, "type": "object"}
    first = loop._validator(orders)
    assert loop._validator(counts) is not first
    assert loop._validator(orders) is first
    assert loop._validator(counts).is_valid({"n": 1}) and not loop._validator(counts).is_valid({"n": "1"})
    assert compiled == [json.dumps(orders, sort_keys=True), json.dumps(counts, sort_keys=True)]
    loop._validator(dict(orders))  # an equal schema, another object: compiled for that object
    assert len(compiled) == 3


def test_every_problem_of_an_answer_is_said_in_one_detail() -> None:
    case = make_case(body(text("Returns are fine.")), answer_contains=("30 days", "receipt"))
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert (run.outcome, run.detail) == ("unverified_answer",
                                         "the answer does not state '30 days'; does not state 'receipt'")


def test_a_stack_that_raises_is_caught_calling_the_stack() -> None:
    from conformance.engine.loop import LoopRun

    case = make_case(body(text("ORD-1001 is shipped.")))
    run = LoopRun()

    def respond(index: int, transcript: Any) -> Any:
        raise ConnectionError("the client could not reach the replay")

    with pytest.raises(ConnectionError):
        run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns, "body", run, respond)
    assert (run.turn, run.phase, run.fixture, run.requests) == (1, "calling the stack", "inline", [])


@pytest.mark.parametrize("status", [400, 429])
def test_an_http_error_recorded_with_a_stream_is_read_from_its_error_file(tmp_path: Any, status: int) -> None:
    stream = tmp_path / "turn1.sse"
    stream.write_text('event: response.created\ndata: {"type": "response.created"}\n\n')
    error = {"error": {"message": "bad request", "type": "invalid_request_error", "code": None, "param": None}}
    turn = RecordedTurn(status=status, headers={}, body=error, source="turn1.error.json", stream=stream,
                        stream_source="turn1.sse")
    case = dataclasses.replace(make_case(body(text("x"))),
                               providers={"openai-responses": ProviderFixtures(turns=(turn,))})
    run = run_loop(case, "openai-responses", ADAPTER, (turn,), "stream")
    assert (run.sources, run.streams, run.statuses) == (["turn1.error.json"], [None], [status])
    assert run.outcome in ("fatal_error", "retryable_error")
