"""Runs a stack's rows: the case's turns replayed by a loopback server, the stack's real client calling it
(docs/stacks.md). One server per process, started on first use, serves every stack row."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import threading
from collections.abc import Awaitable, Sequence
from typing import Any

from conformance.engine.cases import Case
from conformance.engine.fixtures import RecordedTurn
from conformance.engine.loop import LoopRun, replay_turn, run_loop
from conformance.engine.registry import builtin_adapters
from conformance.engine.rows import Mode, Row, SpanReading
from conformance.kit.adapter import Adapter
from conformance.kit.task import TranscriptEntry, task_for_turn
from conformance.kit.types import ModelResponse
from conformance.replay.router import Replay, Session, session_fixtures
from conformance.replay.server import BackgroundServer, session_base
from conformance.report.telemetry import inference_spans, read_spans
from conformance.stacks.stack import Endpoint, Stack
from conformance.stacks.telemetry import KEPT, Capture, installed, span_record

# Long enough for any run; the server's thread is a daemon and ends with the process.
SERVER_SECONDS = 6 * 3600
_LOCK = threading.Lock()
_SERVER: BackgroundServer | None = None


_SERVER_PID = 0


def shared_server() -> BackgroundServer:
    """This process's replay server (127.0.0.1, any free port), started on first use. A forked child (a mutation
    tester's worker, a multiprocessing pool) starts its own: the parent's server thread does not survive a fork."""
    global _SERVER, _SERVER_PID
    with _LOCK:
        if _SERVER is None or os.getpid() != _SERVER_PID:
            _SERVER, _SERVER_PID = BackgroundServer([], max_seconds=SERVER_SECONDS).__enter__(), os.getpid()
        return _SERVER


_IN_PROCESS = Replay([])
"""The router the in-process transports answer from (no server, no socket)."""
IN_PROCESS_BASE = "http://127.0.0.1"


def run_stack_case(case: Case, stack: Stack, reader: Adapter, mode: Mode = "body",
                   in_process: bool = False) -> tuple[Row, Exception | None, list[dict[str, Any]]]:
    """One stack row (``<provider>@<stack>``): the report row, the stack's exception (or None), and the requests
    its client sent. ``in_process``: through the clients' own seams (``conformance.stacks.transports``) instead of the
    loopback server."""
    from conformance.engine.runner import run_lane  # noqa: PLC0415 - runner imports nothing of the stack lane

    if stack.telemetry is None or stack.telemetry is not KEPT.instrumentation:
        KEPT.release()  # a stack's own row, or another lane's, never runs under an instrumentation kept installed
    in_process = in_process and stack.in_process
    replay, base = (_IN_PROCESS, IN_PROCESS_BASE) if in_process else (shared_server().replay, shared_server().base)
    with replay.lock:
        replay.cases[case.id] = case
    replay.reset(case.id, stack.row_id, mode)
    endpoint = Endpoint(base_url=session_base(base, case.id, stack.row_id, mode), stream=mode == "stream",
                        replay=replay if in_process else None)

    captures: list[Capture] = []  # the telemetry lane's capture, while its instrumentation is installed
    readings: list[SpanReading] = []

    def respond(index: int, transcript: tuple[TranscriptEntry, ...]
                ) -> tuple[ModelResponse, dict[str, Any], dict[str, Any] | None]:
        if stack.telemetry is not None and not captures:
            try:  # installed on the row's first call, inside the lane: a failure is the row's error, named
                captures.append(KEPT.capture_for(stack.telemetry) if KEPT.depth else
                                installs.enter_context(installed(stack.telemetry)))
            except Exception as error:
                raise TelemetryInstallError(f"the instrumentation {stack.telemetry.id!r} did not install: "
                                            f"{type(error).__name__}: {error}") from error
        for capture in captures:
            capture.take()  # what ended before this call is not its account
        try:
            response: Any = stack.call(task_for_turn(case.task, transcript), transcript, endpoint)
            if inspect.isawaitable(response):  # an async stack: each call runs in an event loop of its own
                response = asyncio.run(_awaited(response))
        finally:
            for capture in captures:
                readings.append(_reading(index, capture.take(), stack.telemetry))
        sent = replay.sent(case.id, stack.row_id, mode)
        request = sent[index] if len(sent) > index and isinstance(sent[index], dict) else {}
        return response, request, _served_stream(replay.session(case.id, stack.row_id, mode), index, reader)

    with contextlib.ExitStack() as installs:
        row, error, requests = run_lane(case, stack.fixtures, reader, mode, respond, stack.row_id, stack.id,
                                        stack.differences.get((case.id, mode)), stack.waivers)
    if stack.telemetry is not None:
        row["telemetry"] = {"instrumentation": stack.telemetry.id, "dialect": stack.telemetry.dialect,
                            "turns": readings}
    session = replay.session(case.id, stack.row_id, mode)
    if session is not None and session.did_not_stream:
        row["failures"] = [f"your code did not stream: {session.did_not_stream[0]}", *row["failures"]]
        row["passed"] = False
    return row, error, requests


class TelemetryInstallError(RuntimeError):
    """A telemetry lane's instrumentation raised while it was being installed."""


def _reading(index: int, spans: list[Any], instrumentation: Any) -> SpanReading:
    """One call's account in a telemetry lane: how many inference spans of the instrumentation's scopes ended during
    it, read under the convention's names (``conformance.report.telemetry.read_spans``). Spans that cannot be read
    are reported as such, never in place of what the stack's call returned or raised."""
    try:
        own = [record for record in map(span_record, spans)
               if not instrumentation.scopes or str(record["scope"]).startswith(instrumentation.scopes)]
        inference = inference_spans(own, instrumentation.dialect)
        return {"turn": index + 1, "spans": len(inference),
                "attributes": read_spans(inference, instrumentation.dialect)}
    except Exception as error:  # noqa: BLE001 - an instrumentation's odd attribute is a finding, not a crash
        return {"turn": index + 1, "spans": len(spans),
                "attributes": {"unreadable": f"{type(error).__name__}: {error}"}}


def _served_stream(session: Session | None, index: int, reader: Adapter) -> dict[str, Any] | None:
    """The stream summary of what the replay sent back for request ``index`` when it went back as a stream (the
    events the client was given, read by the provider's adapter), None for a body."""
    if session is None or len(session.streamed) <= index or not session.streamed[index]:
        return None
    turns = session.case.providers[session_fixtures(session.provider)].turns
    return replay_turn(reader, turns[session.served[index] - 1], "stream")[1]


async def _awaited(response: Awaitable[ModelResponse]) -> ModelResponse:
    return await response


# --- Driving a case through a stack and the proxy ---------------------------------------------------------------


class _Unrecorded(Sequence[Any]):
    """The turns the loop reads while a real client records them: the next one is always there, its status and
    body still unknown (only its index is read before the client answers)."""

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: Any) -> Any:
        return RecordedTurn(status=200, headers={}, body=None, source="(recording)")


def drive_case(case: Any, provider: str, stack: Any, mode: Mode, base: str, reader: Adapter | None = None) -> None:
    """Run one case × mode through ``stack``'s real client against the recording proxy at ``base``: the bounded
    tool loop, the case's world answering the calls, until the case's outcome (or its turn budget)."""
    endpoint = Endpoint(base_url=session_base(base, case.id, provider, mode), stream=mode == "stream")

    def respond(index: int, transcript: Any) -> Any:
        return stack.call(task_for_turn(case.task, transcript), transcript, endpoint), {}, None

    run_loop(case, provider, reader or builtin_adapters()[provider], _Unrecorded(), mode, LoopRun(), respond)  # type: ignore[arg-type]
