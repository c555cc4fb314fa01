"""The bounded tool loop: replays recorded turns through an adapter and decides the business outcome.

It returns an outcome for anything a vendor or a model can do; it raises only for the suite's own
misuse (a case that recorded fewer turns than the loop needs).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.engine.cases import Case
from conformance.engine.classify import classify_response
from conformance.engine.evidence import verify_text
from conformance.engine.fixtures import RecordedTurn
from conformance.engine.rows import Lane, Mode
from conformance.engine.schemas import compiled
from conformance.engine.world import LookupTool, Receipt
from conformance.errors import InputError, Problem
from conformance.kit.adapter import Adapter
from conformance.kit.jsontext import parse_json
from conformance.kit.sse import read_chunks
from conformance.kit.task import ModelTurn, ToolResult, ToolResults, TranscriptEntry, UserMessage, task_for_turn
from conformance.kit.types import InvalidToolCall, ModelResponse, Text, ToolCall, ToolCalls


@dataclass(slots=True)
class LoopRun:
    """Everything one loop did: requests sent, responses classified, tools run, and the outcome."""

    outcome: str = ""
    detail: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    transcripts: list[tuple[TranscriptEntry, ...]] = field(default_factory=list)
    """Per request, the transcript it was built from."""
    responses: list[ModelResponse] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    streams: list[dict[str, Any] | None] = field(default_factory=list)
    """Per turn, the stream summary (stream mode) or None."""
    receipts: list[dict[str, Any]] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    """Protected values that reached the model after a denial (must stay empty)."""
    world_writes: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 0
    """The turn in progress (1-based), and below what the loop was doing: where an adapter's exception hit."""
    phase: str = ""
    fixture: str = ""


def replay_turn(adapter: Adapter, recorded: RecordedTurn, mode: Mode) -> tuple[ModelResponse, dict[str, Any] | None]:
    """One recorded turn through the adapter: an HTTP error by status, else the stream or the body."""
    if mode == "stream" and recorded.status < 400 and recorded.stream is not None:
        if adapter.assemble_stream is None:
            raise InputError([Problem(recorded.stream_source, None, f"adapter '{adapter.id}' cannot read streams",
                                      "give the adapter an assemble_stream function, or run body mode only")])
        reads = recorded.stream_reads
        chunks = read_chunks(str(recorded.stream)) if reads is None else \
            [recorded.stream.read_bytes()] if reads == 0 else read_chunks(str(recorded.stream), reads)
        result = adapter.assemble_stream(chunks)
        return result.response, result.summary.to_dict()
    return classify_response(adapter, recorded.status, recorded.headers, recorded.body), None


Respond = Callable[[int, tuple[TranscriptEntry, ...]], tuple[ModelResponse, dict[str, Any], dict[str, Any] | None]]
"""A real client's turn (a stack, ``conformance.stacks.stack``): turn index and transcript → its kind, the request
the client sent, and the summary of the stream it was answered with (None: it was answered with a body)."""


def run_loop(case: Case, provider: str, adapter: Adapter, turns: tuple[RecordedTurn, ...],
             mode: Mode = "body", run: LoopRun | None = None, respond: Respond | None = None) -> LoopRun:
    """Replay ``turns`` through ``adapter`` as the bounded tool loop would run, and say what the business got.

    ``run`` (optional) is filled in as the loop goes, so a caller still has the turns done, the turn in progress
    and its fixture when the adapter raises. With ``respond``, a real client makes each call instead (against a
    replay of the same turns), and ``adapter`` only reads the requests it sent."""
    loop = _Loop(case, provider, adapter, turns, mode, run if run is not None else LoopRun())
    loop.respond = respond
    for index in range(case.max_turns):
        response = loop.replay(index)
        match response:
            case Text():
                done = loop.answer(response)
            case InvalidToolCall():
                done = loop.invalid_call(response)
            case ToolCalls():
                done = loop.run_calls(index, response)
            case _:
                loop.run.outcome, done = response.kind, True
        if done:
            break
    else:
        loop.run.outcome = "budget_exhausted"
        loop.run.detail = f"the turn budget of {case.max_turns} ran out with tool calls still coming"
    loop.run.world_writes = list(loop.world.writes)
    return loop.run


class _Loop:
    """One loop's state; each step returns True when the loop ends there."""

    def __init__(self, case: Case, provider: str, adapter: Adapter, turns: tuple[RecordedTurn, ...], mode: Mode,
                 run: LoopRun) -> None:
        self.case, self.provider, self.adapter, self.turns, self.mode = case, provider, adapter, turns, mode
        self.api = Lane.parse(provider).provider  # the API the turns are answered on (a variant's too)
        self.run = run
        self.world = case.world.fork()
        self.transcript: list[TranscriptEntry] = [UserMessage(text=case.task.input)]
        self.seen_ids: set[str] = set()
        self.calls_used = 0
        self.answered = 0  # follow-up user messages already sent
        self.exchange_receipts = 0  # receipts before this exchange do not verify its answer
        self.tools = {spec.name: self.world.tools[spec.name] for spec in case.task.tools}
        self.respond: Respond | None = None

    def replay(self, index: int) -> ModelResponse:
        """Build turn ``index``'s request, then read the recorded response to it (or let a real client do both)."""
        run = self.run
        run.turn, run.phase, run.fixture = index + 1, "building the request", ""
        run.transcripts.append(tuple(self.transcript))
        if self.respond is None:
            task = task_for_turn(self.case.task, self.transcript)
            run.requests.append(self.adapter.build_request(task, self.transcript))
        if index >= len(self.turns):
            raise InputError([_missing_turn(self.case, self.provider, index, run)])
        recorded = self.turns[index]
        streamed = self.mode == "stream" and recorded.status < 400 and recorded.stream is not None
        run.fixture = recorded.stream_source if streamed else recorded.source
        stream: dict[str, Any] | None = None
        if self.respond is not None:
            run.phase = "calling the stack"
            response, request, stream = self.respond(index, tuple(self.transcript))
            run.requests.append(request)
        else:
            run.phase = "reading the response"
            response, stream = replay_turn(self.adapter, recorded, self.mode)
        if isinstance(response, Text) and self.case.task.output_schema is not None:
            response = replace(response, parsed=_parse_json(response.text))
        run.responses.append(response)
        run.sources.append(run.fixture)
        run.statuses.append(recorded.status)
        run.streams.append(stream)
        return response

    def answer(self, response: Text) -> bool:
        run, follow_ups = self.run, self.case.task.follow_ups
        run.outcome, run.detail = _verify(self.case, response, run.receipts[self.exchange_receipts:])
        if run.outcome != "answer_ready" or self.answered == len(follow_ups):
            return True
        # The answer stands; the user speaks again and the whole history goes back with it.
        self.transcript.append(ModelTurn(response=response, api=self.api))
        self.transcript.append(UserMessage(text=follow_ups[self.answered]))
        self.answered += 1
        self.exchange_receipts = len(run.receipts)
        return False  # the outcome so far stands until the next exchange settles it

    def invalid_call(self, response: InvalidToolCall) -> bool:
        undeclared = [call.name for call in response.calls if call.name and call.name not in self.tools]
        unknown = response.undeclared_tool or undeclared
        self.run.outcome, self.run.detail = ("unknown_tool" if unknown else "invalid_tool_call"), response.detail
        return True

    def run_calls(self, index: int, response: ToolCalls) -> bool:
        """Execute the calls of turn ``index`` against the world, stopping at the first denial."""
        run = self.run
        run.phase = "running the tool calls"
        self.transcript.append(ModelTurn(response=response, api=self.api))
        if self.calls_used + len(response.calls) > self.case.max_tool_calls:
            run.outcome = "budget_exhausted"
            run.detail = (f"turn {index + 1} asked for {len(response.calls)} call(s) with {self.calls_used} of "
                          f"{self.case.max_tool_calls} already used")
            return True
        results: list[ToolResult] = []
        for call in response.calls:
            verdict = _check_call(call, self.seen_ids, self.tools)
            if verdict:
                run.outcome, run.detail = verdict
                return True
            self.seen_ids.add(call.call_id)
            self.calls_used += 1
            result = self._execute(index, call)
            if result is None:
                return True
            results.append(result)
        self.transcript.append(ToolResults(results=tuple(results)))
        return False

    def _execute(self, index: int, call: ToolCall) -> ToolResult | None:
        """The call's result for the model, or None when the world denied it (the loop ends there)."""
        run, tool = self.run, self.tools[call.name]
        arguments = call.parsed_arguments or {}
        receipt = self.world.execute(tool, arguments, self.case.principal, approved=call.name in self.case.approvals)
        run.receipts.append(_receipt_record(index, call, receipt))
        if not receipt.denied:
            return ToolResult(call=call, output=receipt.output, is_error=receipt.is_error)
        record_key = arguments.get(tool.key) if isinstance(tool, LookupTool) else None
        protected = self.world.protected_values(tool.collection, record_key) \
            if isinstance(tool, LookupTool) and isinstance(record_key, str) else []
        sent = json.dumps(receipt.output, ensure_ascii=False)
        run.leaks.extend(value for value in protected if value in sent)
        run.outcome, run.detail = "permission_denied", f"{call.name}: {receipt.denied}"
        return None


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
    evidence = [facts for receipt in receipts
                for facts in [receipt["evidence"], *receipt.get("evidence_records", [])] if facts]
    tools = [spec.name for spec in case.task.tools]
    problems = verify_text(answer.text, answer.parsed, structured, evidence, case.answer_contains, case.world, tools)
    if problems:
        return "unverified_answer", "the answer " + "; ".join(problems)
    if not evidence and not case.answer_contains and not structured:
        return "unverified_answer", "nothing to verify the answer against (no receipts, no expected answer)"
    return "answer_ready", ""


def verify_answer(case: Case, answer: Text, receipts: list[dict[str, Any]]) -> tuple[str, str]:
    """The outcome of a final answer and why: ``answer_ready`` only when it states what the receipts say (the rule
    the loop applies, for an answer a team's own loop returned: ``conformance.stacks.agent``)."""
    return _verify(case, answer, receipts)


def parse_json_or_none(text: str) -> Any:
    """The JSON value of a structured answer, or None when it is not JSON."""
    return _parse_json(text)


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
    record = {
        "turn": turn + 1,
        "call_id": call.call_id,
        "tool": call.name,
        "output": dict(receipt.output),
        "is_error": receipt.is_error,
        "denied": receipt.denied,
        "evidence": dict(receipt.evidence),
    }
    if receipt.evidence_records:  # a search: the facts of each record found
        record["evidence_records"] = [dict(facts) for facts in receipt.evidence_records]
    return record


def _missing_turn(case: Case, provider: str, index: int, run: LoopRun) -> Problem:
    last = run.responses[-1] if run.responses else None
    why = (f"turn {index} ended with {last.kind} ({last.raw}), so the loop asked for turn {index + 1}"
           if last else "the loop needs at least one turn")
    return Problem(case.path, None,
                   f"provider '{provider}': no recorded turn {index + 1}; recorded turns: 1..{index}; {why}",
                   f"record turn {index + 1} for {provider}, or lower budget.max_turns")
