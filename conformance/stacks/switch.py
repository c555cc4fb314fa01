"""A conversation moved to another vendor mid-way through a stack (docs/contract.md, "Switching vendors";
docs/gateways.md, "Switching vendors through a gateway").

Turn 1 goes through the stack's route to the first API and is answered with that API's recorded tool calls; turn 2,
the same conversation with the calls' results, goes through the same stack's route to the second API, with the
stack's own message of turn 1 in its history (a gateway stack keeps it, ``conformance.stacks.gateways.common.Memory``,
as a team's history does). The request the second API receives is then judged offline: refused by the second
vendor's acceptance rules (``Wire.acceptance``), a call of turn 1 missing, or the first vendor's reasoning carried
on (its signatures, encrypted content or reasoning text, which are that vendor's alone).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.engine.cases import Case
from conformance.engine.classify import classify_response
from conformance.engine.request_check import acceptance_problems
from conformance.kit.adapter import Adapter
from conformance.kit.task import ModelTurn, ToolResult, ToolResults, TranscriptEntry, UserMessage, task_for_turn
from conformance.kit.types import ModelResponse
from conformance.kit.values import strings_in
from conformance.replay.server import session_base
from conformance.stacks.stack import Endpoint, Stack

RESULT = {"order_id": "ORD-1001", "status": "shipped"}
"""What the tool answers in turn 2 (the bundled world's order; the result's content is not what is judged)."""
SHORTEST = 8
"""Values shorter than this are not searched for: a short string would be found by chance."""


@dataclass(frozen=True)
class Switched:
    """One switch: turn 1 on ``source``, turn 2 on ``target``, through ``stack`` (its id, ``litellm``)."""

    stack: str
    case: str
    source: str
    target: str
    refused: tuple[str, ...]
    """The second vendor's acceptance problems with the request (its rule names)."""
    lost: tuple[str, ...]
    """The calls of turn 1 (by name) the request does not carry."""
    carried: tuple[str, ...]
    """What of the first vendor's reasoning the request carries: ``signature``, ``encrypted content``,
    ``reasoning text``."""
    error: str | None = None
    """The stack raised on turn 1 or turn 2 (its exception, named), or turn 1 held no call."""

    @property
    def clean(self) -> bool:
        """Nothing refused, lost or carried, and no error."""
        return not (self.refused or self.lost or self.carried or self.error)

    def outcome(self) -> str:
        """One line for the docs' table: ``clean``, or what went wrong, each part named."""
        if self.error:
            return f"error: {self.error}"
        parts = [f"refused ({', '.join(self.refused)})"] if self.refused else []
        parts += [f"calls lost ({', '.join(self.lost)})"] if self.lost else []
        parts += [f"carries the first vendor's {', '.join(self.carried)}"] if self.carried else []
        return "; ".join(parts) or "clean"


def reasoning_values(api: str, items: Sequence[Any], adapters: Mapping[str, Adapter]) -> dict[str, str]:
    """Each piece of reasoning in an answer of ``api`` (its ``output_items``), with what it is, as the API's adapter
    reads it (``Wire.reasoning``); values shorter than ``SHORTEST`` are left out."""
    wire = adapters[api].wire
    found = wire.reasoning(items) if wire is not None and wire.reasoning is not None else {}
    return {value: what for value, what in found.items() if len(value) >= SHORTEST}


def _answer(stack: Stack, case: Case, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
    """One call of ``stack``; an async stack's awaited in an event loop of its own, as the stack lane runs it."""
    response = stack.call(task_for_turn(case.task, transcript), transcript, endpoint)
    if inspect.isawaitable(response):
        return asyncio.run(_awaited(response))
    return response


async def _awaited(response: Awaitable[ModelResponse]) -> ModelResponse:
    return await response


def switch(case: Case, source: Stack, target: Stack, adapters: Mapping[str, Adapter], replay: Any,
           base: str) -> Switched:
    """Turn 1 of ``case`` through ``source`` (a stack's route to one API), turn 2 through ``target`` (the same
    stack's route to another), both answered by ``replay`` at ``base`` (``conformance.stacks.runner.shared_server``);
    the request of turn 2 judged against the second API's rules."""
    record = dict(stack=source.id, case=case.id, source=source.provider, target=target.provider)

    def endpoint(stack: Stack) -> Endpoint:
        with replay.lock:
            replay.cases[case.id] = case
        replay.reset(case.id, stack.row_id, "body")
        return Endpoint(base_url=session_base(base, case.id, stack.row_id, "body"), stream=False)

    opening = (UserMessage(text=case.task.input),)
    try:
        first = _answer(source, case, opening, endpoint(source))
    except Exception as error:  # noqa: BLE001 - a stack that raises is this switch's finding, named
        return Switched(**record, refused=(), lost=(), carried=(), error=f"turn 1 raised {type(error).__name__}")
    if not first.calls:
        return Switched(**record, refused=(), lost=(), carried=(), error=f"turn 1 was {first.kind}, not calls")
    transcript = (*opening, ModelTurn(response=first, api=source.provider),
                  ToolResults(results=tuple(ToolResult(call=call, output=RESULT) for call in first.calls)))
    try:
        _answer(target, case, transcript, endpoint(target))
    except Exception as error:  # noqa: BLE001
        return Switched(**record, refused=(), lost=(), carried=(), error=f"turn 2 raised {type(error).__name__}")
    sent = replay.sent(case.id, target.row_id, "body")
    request = sent[0] if sent and isinstance(sent[0], dict) else None
    if request is None:
        return Switched(**record, refused=(), lost=(), carried=(), error="turn 2 sent no JSON request")
    strings = list(strings_in(request))  # the values as sent, not their JSON spelling (a newline is escaped there)
    recorded = case.providers[source.provider].turns[0]
    answer = classify_response(adapters[source.provider], recorded.status, recorded.headers, recorded.body)
    carried = sorted({what for value, what in reasoning_values(source.provider, answer.output_items, adapters).items()
                      if any(value in string for string in strings)})
    rules = sorted({problem.split("(", 1)[1].split(",", 1)[0] for problem in
                    acceptance_problems(adapters[target.provider], request) if "(" in problem})
    # Each call of turn 1 needs its result in the request's history (the second adapter's reading of it); which
    # call each result answers, by id or by name, is the second vendor's acceptance rules' to judge (a layer may
    # rewrite an id it made up, as LiteLLM's Gemini ids, and put the vendor's back).
    answered = len(adapters[target.provider].read_request(request).results)
    lost = [call.name for call in first.calls[answered:]]
    return Switched(**record, refused=tuple(rules), lost=tuple(dict.fromkeys(lost)), carried=tuple(carried))



def switches(cases: Iterable[Case], stacks: Mapping[str, Stack], adapters: Mapping[str, Adapter]) -> list[Switched]:
    """Every switch between two routes of one stack (``stacks`` by row id, ``<api>@<stack>``) over ``cases``, each
    case's turn 1 answered with calls on every API it records."""
    from conformance.stacks.runner import shared_server  # noqa: PLC0415 - the server starts only when asked

    server = shared_server()
    done = []
    by_stack: dict[str, dict[str, Stack]] = {}
    for stack in stacks.values():
        by_stack.setdefault(stack.id, {})[stack.provider] = stack
    for case in cases:
        for _, routes in sorted(by_stack.items()):
            for source in sorted(routes):
                for target in sorted(routes):
                    if source != target and source in case.providers and target in case.providers:
                        done.append(switch(case, routes[source], routes[target], adapters, server.replay,
                                           server.base))
    return done
