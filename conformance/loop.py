"""The bounded tool loop: replays recorded turns through an adapter and decides the business outcome.

It returns an outcome for anything a vendor or a model can do; it raises only for the suite's own
misuse (a case that recorded fewer turns than the loop needs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.adapter import Adapter, ModelTurn, ToolResult, ToolResults, TranscriptEntry, UserMessage
from conformance.cases import Case
from conformance.classify import classify_response
from conformance.errors import InputError, Problem
from conformance.fixtures import RecordedTurn
from conformance.jsontext import parse_json
from conformance.schemas import compiled
from conformance.sse import read_chunks
from conformance.types import InvalidToolCall, ModelResponse, Text, ToolCall
from conformance.verify import verify_text
from conformance.world import Receipt


@dataclass(slots=True)
class LoopRun:
    """Everything one loop did: requests sent, responses classified, tools run, and the outcome."""

    outcome: str = ""
    detail: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    responses: list[ModelResponse] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    streams: list[dict[str, Any] | None] = field(default_factory=list)
    """Per turn, the stream summary (stream mode) or None."""
    receipts: list[dict[str, Any]] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    """Protected values that reached the model after a denial (must stay empty)."""
    world_writes: list[dict[str, Any]] = field(default_factory=list)


def replay_turn(adapter: Adapter, recorded: RecordedTurn, mode: str) -> tuple[ModelResponse, dict[str, Any] | None]:
    """One recorded turn through the adapter: an HTTP error by status, else the stream or the body."""
    if mode == "stream" and recorded.status < 400 and recorded.stream is not None:
        if adapter.assemble_stream is None:
            raise InputError([Problem(recorded.stream_source, None, f"adapter '{adapter.id}' cannot read streams",
                                      "give the adapter an assemble_stream function, or run body mode only")])
        result = adapter.assemble_stream(read_chunks(str(recorded.stream)))
        return result.response, result.summary.to_dict()
    return classify_response(adapter, recorded.status, recorded.headers, recorded.body), None


def run_loop(case: Case, provider: str, adapter: Adapter, turns: tuple[RecordedTurn, ...],
             mode: str = "body") -> LoopRun:
    run = LoopRun()
    world = case.world.fork()
    transcript: list[TranscriptEntry] = [UserMessage(text=case.task.input)]
    seen_ids: set[str] = set()
    calls_used = 0
    answered = 0  # follow-up user messages already sent
    exchange_receipts = 0  # receipts before this exchange do not verify its answer
    tools = {spec.name: world.tools[spec.name] for spec in case.task.tools}
    for index in range(case.max_turns):
        run.requests.append(adapter.build_request(case.task, transcript))
        if index >= len(turns):
            raise InputError([_missing_turn(case, provider, index, run)])
        recorded = turns[index]
        response, stream = replay_turn(adapter, recorded, mode)
        if isinstance(response, Text) and case.task.output_schema is not None:
            response = replace(response, parsed=_parse_json(response.text))
        run.responses.append(response)
        run.sources.append(recorded.stream_source if stream is not None else recorded.source)
        run.statuses.append(recorded.status)
        run.streams.append(stream)

        if response.kind == "text":
            assert isinstance(response, Text)
            run.outcome, run.detail = _verify(case, response, run.receipts[exchange_receipts:])
            if run.outcome != "answer_ready" or answered == len(case.task.follow_ups):
                break
            # The answer stands; the user speaks again and the whole history goes back with it.
            transcript.append(ModelTurn(response=response))
            transcript.append(UserMessage(text=case.task.follow_ups[answered]))
            answered += 1
            exchange_receipts = len(run.receipts)
            run.outcome = ""
            continue
        if response.kind == "invalid_tool_call":
            assert isinstance(response, InvalidToolCall)
            undeclared = [call.name for call in response.calls if call.name and call.name not in tools]
            if response.undeclared_tool or undeclared:
                run.outcome, run.detail = "unknown_tool", response.detail
            else:
                run.outcome, run.detail = "invalid_tool_call", response.detail
            break
        if response.kind != "tool_calls":
            run.outcome = response.kind
            break

        transcript.append(ModelTurn(response=response))
        if calls_used + len(response.calls) > case.max_tool_calls:
            run.outcome = "budget_exhausted"
            run.detail = (f"turn {index + 1} asked for {len(response.calls)} call(s) with {calls_used} of "
                          f"{case.max_tool_calls} already used")
            break
        results: list[ToolResult] = []
        stop = False
        for call in response.calls:
            verdict = _check_call(call, seen_ids, tools)
            if verdict:
                run.outcome, run.detail = verdict
                stop = True
                break
            seen_ids.add(call.call_id)
            calls_used += 1
            tool = tools[call.name]
            arguments = call.parsed_arguments or {}
            receipt = world.execute(tool, arguments, case.principal, approved=call.name in case.approvals)
            run.receipts.append(_receipt_record(index, call, receipt))
            if receipt.denied:
                record_key = arguments.get(tool.key)
                protected = world.protected_values(tool.collection, record_key) if isinstance(record_key, str) else []
                sent = json.dumps(receipt.output, ensure_ascii=False)
                run.leaks.extend(value for value in protected if value in sent)
                run.outcome = "permission_denied"
                run.detail = f"{call.name}: {receipt.denied}"
                stop = True
                break
            results.append(ToolResult(call=call, output=receipt.output, is_error=receipt.is_error))
        if stop:
            break
        transcript.append(ToolResults(results=tuple(results)))
    else:
        run.outcome = "budget_exhausted"
        run.detail = f"the turn budget of {case.max_turns} ran out with tool calls still coming"
    run.world_writes = list(world.writes)
    return run


def _check_call(call: ToolCall, seen_ids: set[str], tools: dict[str, Any]) -> tuple[str, str] | None:
    if not call.synthesized_id and call.call_id in seen_ids:
        return "duplicate_call_id", f"call id {call.call_id} was already used in this loop"
    tool = tools.get(call.name)
    if tool is None:
        return "unknown_tool", f"the model asked for '{call.name}', which was not offered"
    errors = sorted(_validator(tool.parameters).iter_errors(call.parsed_arguments or {}),
                    key=lambda error: list(error.absolute_path))
    if errors:
        return "invalid_arguments", f"{call.name}: {errors[0].message}"
    return None


def _verify(case: Case, answer: Text, receipts: list[dict[str, Any]]) -> tuple[str, str]:
    """``answer_ready`` only when the answer states what the receipts say (structure is not truth)."""
    structured = case.task.output_schema is not None
    if structured:
        if answer.parsed is None:
            return "schema_invalid", "the answer is not valid JSON"
        errors = list(_validator(case.task.output_schema).iter_errors(answer.parsed))
        if errors:
            return "schema_invalid", errors[0].message
    evidence = [receipt["evidence"] for receipt in receipts if receipt["evidence"]]
    tools = [spec.name for spec in case.task.tools]
    problems = verify_text(answer.text, answer.parsed, structured, evidence, case.answer_contains, case.world, tools)
    if problems:
        return "unverified_answer", "the answer " + "; ".join(problems)
    if not evidence and not case.answer_contains and not structured:
        return "unverified_answer", "nothing to verify the answer against (no receipts, no expected answer)"
    return "answer_ready", ""


def _parse_json(text: str) -> Any:
    try:
        return parse_json(text)
    except ValueError:
        return None


_VALIDATORS: dict[int, tuple[Any, Any]] = {}


def _validator(schema: Any) -> Any:
    """The compiled validator of a schema object, built once per object (tool schemas live as long as the world)."""
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = _VALIDATORS[id(schema)] = (schema, compiled(json.dumps(schema, sort_keys=True)))
    return cached[1]


def _receipt_record(turn: int, call: ToolCall, receipt: Receipt) -> dict[str, Any]:
    return {
        "turn": turn + 1,
        "call_id": call.call_id,
        "tool": call.name,
        "output": dict(receipt.output),
        "is_error": receipt.is_error,
        "denied": receipt.denied,
        "evidence": dict(receipt.evidence),
    }


def _missing_turn(case: Case, provider: str, index: int, run: LoopRun) -> Problem:
    last = run.responses[-1] if run.responses else None
    why = (f"turn {index} ended with {last.kind} ({last.raw}), so the loop asked for turn {index + 1}"
           if last else "the loop needs at least one turn")
    return Problem(case.path, None,
                   f"provider '{provider}': no recorded turn {index + 1}; recorded turns: 1..{index}; {why}",
                   f"record turn {index + 1} for {provider}, or lower budget.max_turns")
