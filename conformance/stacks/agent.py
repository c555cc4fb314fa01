"""The team's own tool loop under test (docs/glue.md, "Your own loop").

A stack is called once per model call and the suite runs the loop; an application's agent runs its own loop, and
that loop is code too: the ids it sends back with each tool result, the order of its results, its turn budget. Here
the agent runs whole, against the replay server serving the case's recorded turns (body mode), calling the case's
world tools through the functions it is given. Then the suite reads every request the loop sent, checks correlation
on them against the calls the wire made, checks the turn budget, and verifies the answer the agent returned
against the receipts of the tools it ran, as it verifies any answer (docs/contract.md, "Verification").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import BUNDLED_CASES
from conformance.engine.cases import Case, load_cases
from conformance.engine.correlation import check_correlation
from conformance.engine.loop import parse_json_or_none, replay_turn, verify_answer
from conformance.engine.registry import builtin_adapters
from conformance.engine.request_check import prefix_failures
from conformance.engine.rows import Row, Turn
from conformance.engine.runner import run_case_with_requests
from conformance.engine.sanitize import report_safe
from conformance.kit.adapter import Adapter
from conformance.kit.types import Text, ToolCalls
from conformance.kit.waiver import Waiver, apply_waivers
from conformance.replay.server import session_base
from conformance.stacks.runner import shared_server
from conformance.stacks.stack import Stack

AGENT_LANE = "agent"


@dataclass(frozen=True)
class AgentSession:
    """What the agent under test is given: where its client points, the case's task, and the tools."""

    base_url: str
    """The session root (``http://127.0.0.1:<port>/s/<case>/<provider>@agent/body``): the openai SDK wants
    ``<base_url>/v1``; anthropic, google-genai and boto3 take it as it is (docs/stacks.md)."""
    task: Any
    """The case's ``conformance.kit.Task``: instructions, the user's input, the tools offered, the token cap."""
    tools: Mapping[str, Callable[..., Mapping[str, Any]]]
    """Each tool of the case by name: call it with the model's arguments, get the result to send back."""


@dataclass
class AgentResult:
    """What the suite found in the agent's run."""

    case: str
    provider: str
    answer: str
    outcome: str
    detail: str
    failures: list[str] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    receipts: list[dict[str, Any]] = field(default_factory=list)
    turns_served: int = 0
    """How many recorded turns the replay served the loop."""
    error: Exception | None = None
    """The agent's own exception, when it raised (its failure names it too)."""

    @property
    def passed(self) -> bool:
        """No failure."""
        return not self.failures


def run_agent(case: Case | str, provider: str, agent: Callable[[AgentSession], str],
              cases: Path | None = None, lane: str | None = None) -> AgentResult:
    """Run ``agent`` (the team's loop, returning its final answer text) against a replay of ``case`` (a case, or
    its id in ``cases``, default the bundled cases) for ``provider``'s fixtures, and check what its loop sent.
    ``lane``: the replay session's lane (default ``<provider>@agent``; an agent stack's rows use their own)."""
    if isinstance(case, str):
        found = {loaded.id: loaded for loaded in load_cases([cases or BUNDLED_CASES])}
        if case not in found:
            raise KeyError(f"no case {case!r} in {cases or BUNDLED_CASES}")
        case = found[case]
    reader = builtin_adapters()[provider]
    lane = lane or f"{provider}@{AGENT_LANE}"
    server = shared_server()
    with server.replay.lock:
        server.replay.cases[case.id] = case
    server.replay.reset(case.id, lane, "body")
    world = case.world.fork()
    receipts: list[dict[str, Any]] = []

    def tool(name: str) -> Callable[..., Mapping[str, Any]]:
        spec = world.tools[name]

        def run(**arguments: Any) -> Mapping[str, Any]:
            receipt = world.execute(spec, arguments, case.principal, approved=name in case.approvals)
            receipts.append({"tool": name, "arguments": arguments, "output": dict(receipt.output),
                             "denied": receipt.denied, "evidence": dict(receipt.evidence),
                             "evidence_records": [dict(facts) for facts in receipt.evidence_records]})
            return receipt.output

        return run

    session = AgentSession(base_url=session_base(server.base, case.id, lane, "body"), task=case.task,
                           tools={spec.name: tool(spec.name) for spec in case.task.tools if spec.name in world.tools})
    failures: list[str] = []
    raised: Exception | None = None
    try:
        answer = agent(session)
    except Exception as error:  # noqa: BLE001 - the agent's own exception is a finding of its run, named
        failures.append(f"the agent raised {type(error).__name__}: {str(error)[:300]}")
        answer, raised = "", error
    requests = server.replay.sent(case.id, lane, "body")
    replayed = server.replay.session(case.id, lane, "body")
    served = replayed.served if replayed is not None else []
    turns = case.providers[provider].turns
    wire = [replay_turn(reader, turns[number - 1], "body")[0] for number in served]
    failures += _loop_failures(case, reader, requests, replayed, wire, len(receipts))
    denied = [receipt for receipt in receipts if receipt["denied"]]
    if denied:
        outcome, detail = "permission_denied", f"{denied[0]['tool']}: {denied[0]['denied']}"
    else:
        text = answer or ""
        parsed = parse_json_or_none(text) if case.task.output_schema is not None else None
        outcome, detail = verify_answer(case, Text(raw="the agent's answer", text=text, parsed=parsed), receipts)
    expected = case.expectation_for(provider).outcome
    if outcome != expected:
        failures.append(f"outcome: expected {expected}, got {outcome}" + (f" — {detail}" if detail else ""))
    return AgentResult(case=case.id, provider=provider, answer=answer, outcome=outcome, detail=detail,
                       failures=failures, requests=requests, receipts=receipts, turns_served=len(served),
                       error=raised)


def _loop_failures(case: Case, reader: Any, requests: list[Any], replayed: Any, wire: list[Any],
                   tools_run: int) -> list[str]:
    """What the requests the loop sent say of it: refused requests, correlation against the wire, a loop that
    returned with calls unanswered, the budgets, and what every request must carry."""
    failures: list[str] = []
    if replayed is not None and replayed.unmatched:
        failures += [f"replay: {reason}" for reason in dict.fromkeys(replayed.unmatched)]
    readable = [request for request in requests if isinstance(request, dict)]
    if len(readable) == len(wire):
        correlation = check_correlation(reader, readable, wire, None, wire)
        # The assistant messages an agent re-sends are its own (an SDK's dump of the message, which the vendor
        # accepts): its ids, slots and order are checked, not that they are the vendor's bytes.
        failures += [f"correlation: {problem}" for problem in correlation["problems"]
                     if "were not re-sent verbatim" not in problem]
    elif not (replayed is not None and replayed.unmatched):
        failures.append(f"correlation: not checked: the loop sent {len(readable)} readable request(s), the replay "
                        f"answered {len(wire)}")
    if wire and isinstance(wire[-1], ToolCalls) and len(requests) < case.max_turns and not failures:
        # The model asked for tools and the loop answered without sending their results back: whatever it said,
        # the model never saw what the tools returned.
        failures.append(f"loop: turn {len(wire)} asked for {', '.join(call.name for call in wire[-1].calls)}, and "
                        "the loop returned without sending the results back")
    if tools_run > case.max_tool_calls:
        failures.append(f"budget: the loop ran {tools_run} tool calls; the case allows {case.max_tool_calls}")
    # What every request must carry (instructions, tools, tool choice, output schema, token cap), read by the
    # provider's adapter as for any row (docs/contract.md, "Requests").
    failures += prefix_failures(reader, case.task, readable)
    asked = len(requests) + (len(replayed.unmatched) if replayed is not None else 0)  # answered or refused
    if asked > case.max_turns:
        failures.append(f"budget: the loop sent {asked} requests; the case allows {case.max_turns} turns")
    return failures


def agent_stack(stack_id: str, provider: str, loop: Callable[[AgentSession], str], *, cases: tuple[str, ...] = ("*",),
                requires: tuple[str, ...] = (), waivers: tuple[Waiver, ...] = (), description: str = "") -> Stack:
    """The team's own loop as a stack: listed under ``conformance_stacks``, it is an item of the cases it names
    (``cases``, shell patterns; body mode: the loop sends what it sends), reported as the row
    ``<provider>@<stack_id>`` beside the other lanes, seen by the gate, waived like any stack's rows."""

    def call(task: Any, transcript: Any, endpoint: Any) -> Any:
        raise TypeError(f"stack {provider}@{stack_id} runs its own loop (Stack.loop): it has no call per turn")

    return Stack(id=stack_id, provider=provider, call=call, loop=loop, cases=cases, requires=requires, waivers=waivers,
                 streams=False, in_process=False, description=description or "the team's own agent loop")


def agent_row(case: Case, stack: Stack, reader: Adapter) -> tuple[Row, Exception | None, list[dict[str, Any]]]:
    """An agent stack's row for ``case``: the loop's run (``run_agent``) and what it was served. Its turns are the
    recorded turns the replay served it, as the provider's adapter reads them; its outcome, failures and receipts
    are the loop's own."""
    assert stack.loop is not None
    wire_row, _, _ = run_case_with_requests(case, stack.provider, reader, "body")
    result = run_agent(case, stack.provider, stack.loop, lane=stack.row_id)
    failures, waived = apply_waivers(stack.waivers, case.id, "body", result.failures, result.error)
    row = Row(case=case.id, scenario=case.scenario, title=case.title, provider=stack.row_id, stack=stack.id,
              mode="body", expected=wire_row["expected"], override=None, outcome=result.outcome,
              detail=result.detail, passed=not result.failures, failures=failures,
              # The suite's own request records are not the loop's: the loop's requests are checked above.
              turns=[Turn(**{key: value for key, value in turn.items() if key != "request"})  # type: ignore[typeddict-item]
                     for turn in wire_row["turns"][:result.turns_served]],
              correlation=None, usage=wire_row["usage"], receipts=result.receipts, leaks=[], world_writes=[],
              error=None)
    if waived is not None:
        row["waived"] = waived
    return report_safe(row), None, [request for request in result.requests if isinstance(request, dict)]


__all__ = ["AgentResult", "AgentSession", "agent_row", "agent_stack", "run_agent"]
