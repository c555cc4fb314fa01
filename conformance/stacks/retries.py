"""The retry lane (docs/retries.md): what a stack's client does, at its library's default retry policy, with the
answers a vendor sends before it answers: a 429 with ``Retry-After`` in seconds and as a date, an overload, an
exhausted quota, bad credentials, a connection dropped in the middle of a stream.

Each script is a sequence of answers served in order over loopback by a server of its own, the last one the
success recorded for the API (the bundled ``normal`` case's first turn); the error answers are the bundled cases'
recorded ones (``http_rate_limit``, ``http_overloaded``, ``http_quota``, ``http_auth``). The lane counts the
requests the client sent and records every wait it asked for: the libraries' own sleep functions are replaced for
the call by a recorder, so nothing really sleeps. What is right per script is the contract's (docs/contract.md,
"Retries").
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import importlib
import inspect
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.engine.cases import Case
from conformance.engine.fixtures import RecordedTurn
from conformance.kit.adapter import Adapter
from conformance.kit.task import UserMessage, task_for_turn
from conformance.replay.router import Replay, Reply, _body_bytes, _events
from conformance.replay.server import ReplayServer
from conformance.stacks.stack import Endpoint, Stack

SUCCESS_KINDS = frozenset({"text", "tool_calls", "refusal", "incomplete", "empty"})


@dataclass(frozen=True, slots=True)
class Script:
    """One sequence of answers and what is right for it."""

    id: str
    what: str
    case: str
    """The bundled case whose first recorded turn for the API is the first answer (the error)."""
    rule: str
    """``retry_after``: retrying is right if it waits what the vendor asked, and surfacing a ``retryable_error`` is
    right too; ``backoff``: the same with no delay asked, a retry waits some time; ``once``: exactly one request,
    a ``fatal_error``; ``no_resend``: the turn is not sent again after a part of its answer arrived."""
    mode: str = "body"
    as_date: bool = False
    """The recorded ``Retry-After`` seconds sent as an HTTP date instead (RFC 9110, 10.2.3, allows either); only
    for an API whose recorded answer carries the header."""


SCRIPTS: tuple[Script, ...] = (
    Script("rate_limit", "the recorded 429 with the delay it asks for, then the answer", "http_rate_limit",
           "retry_after"),
    Script("rate_limit.date", "the recorded 429 with its Retry-After as an HTTP date, then the answer",
           "http_rate_limit", "retry_after", as_date=True),
    Script("overloaded", "the recorded overload (529, 503 or 500), then the answer", "http_overloaded", "backoff"),
    Script("quota", "the recorded exhausted quota (429 or 400), then the answer", "http_quota", "once"),
    Script("auth", "the recorded bad credentials (401 or 403), then the answer", "http_auth", "once"),
    Script("reset.mid_stream", "the stream's first event, the connection dropped, then the whole stream",
           "normal", "no_resend", mode="stream"),
)
RULES = {
    "retry_after": "retried after at least the delay the vendor asked (its Retry-After header, or Gemini's "
                   "RetryInfo.retryDelay), or surfaced as retryable_error; with no delay asked, as backoff",
    "backoff": "retried after a wait (never at once), or surfaced as retryable_error",
    "once": "one request, surfaced as fatal_error: a retry cannot help",
    "no_resend": "the turn not sent again once a part of its answer arrived",
}


# --- Waits recorded, not slept ---------------------------------------------------------------------------------------

class _Proxy:
    """A module seen through one or more replaced attributes; everything else is the module's."""

    def __init__(self, real: Any, **replaced: Any) -> None:
        self._real, self._replaced = real, replaced

    def __getattr__(self, name: str) -> Any:
        return self._replaced[name] if name in self._replaced else getattr(self._real, name)


# Where each library waits between attempts: the module attribute its retry loop reads ``sleep`` from.
# openai, anthropic: ``_base_client.time.sleep`` and ``anyio.sleep``; botocore: ``endpoint.time.sleep``; tenacity's
# synchronous wait (google-genai with retry options, LiteLLM, LangChain's Gemini model): ``nap.time.sleep``;
# google-genai's own asynchronous retry of a connection error: ``_api_client.asyncio.sleep``.
WAIT_SITES: tuple[tuple[str, str, str], ...] = (
    ("openai._base_client", "time", "sync"), ("openai._base_client", "anyio", "async"),
    ("anthropic._base_client", "time", "sync"), ("anthropic._base_client", "anyio", "async"),
    ("botocore.endpoint", "time", "sync"), ("tenacity.nap", "time", "sync"),
    ("google.genai._api_client", "asyncio", "async"),
    ("time", "sleep", "function"),  # a team's own loop that calls time.sleep (one that imported the name keeps it)
)


@contextlib.contextmanager
def recorded_waits(waits: list[float]) -> Iterator[None]:
    """Every wait the libraries' retry loops ask for appended to ``waits`` instead of slept, for the block."""
    def sleep(seconds: float, *_: Any, **__: Any) -> None:
        waits.append(round(float(seconds), 6))  # jitter can be a few milliseconds: kept

    async def async_sleep(seconds: float, *_: Any, **__: Any) -> None:
        waits.append(round(float(seconds), 6))  # jitter can be a few milliseconds: kept

    patched: list[tuple[Any, str, Any]] = []
    try:
        for module_name, attribute, kind in WAIT_SITES:
            module = sys.modules.get(module_name)
            if module is None:
                try:
                    module = importlib.import_module(module_name)
                except ImportError:  # the library is not installed: nothing of it can wait
                    continue
            real = getattr(module, attribute, None)
            if real is None:
                continue
            patched.append((module, attribute, real))
            setattr(module, attribute, sleep if kind == "function" else
                    _Proxy(real, sleep=sleep if kind == "sync" else async_sleep))
        yield
    finally:
        for module, attribute, real in reversed(patched):
            setattr(module, attribute, real)


# --- The scripted server ---------------------------------------------------------------------------------------------

class _Reset(ConnectionResetError):
    """Raised by a reply's chunks after the part to send: the server drops the connection there."""


class ScriptServer(ReplayServer):
    """A loopback server that answers every request with the script's next answer (the last one again past its
    end), and keeps what each request was."""

    def __init__(self, answers: Sequence[Callable[[], Reply]]) -> None:
        super().__init__(Replay([]), max_requests=32)
        self.answers = answers
        self.received: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()

    def answer(self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """The script's next answer; the request kept."""
        with self._lock:
            self.received.append((path, body))
            index = min(len(self.received), len(self.answers)) - 1
        return self.answers[index]()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet on the scripted drop; anything else as the replay server says it."""
        if isinstance(sys.exc_info()[1], _Reset):
            return  # the scripted drop
        super().handle_error(request, client_address)


def _frames(turn: RecordedTurn, adapter: Adapter) -> list[bytes]:
    assert turn.stream is not None and adapter.wire is not None
    data = turn.stream.read_bytes()
    return list(adapter.wire.encode_stream(data) if adapter.wire.encode_stream is not None else _events(data))


def asked_delay(turn: RecordedTurn, adapter: Adapter) -> float | None:
    """The delay a recorded error answer asks for, in seconds, as the API's own adapter reads it (its
    ``Retry-After`` header, or a body field such as Gemini's ``RetryInfo.retryDelay``: providers/<api>/errors.py)."""
    from conformance.engine.classify import classify_response  # noqa: PLC0415

    delay = getattr(classify_response(adapter, turn.status, turn.headers, turn.body), "retry_after_s", None)
    return float(delay) if isinstance(delay, int | float) else None


def _error_answer(turn: RecordedTurn, as_date: bool) -> Callable[[], Reply]:
    def reply() -> Reply:
        headers = {name.lower(): value for name, value in turn.headers.items()}
        headers.setdefault("content-type", "application/json")
        if as_date and "retry-after" in headers:  # at answer time, a second ahead: the date drops the fraction
            headers["retry-after"] = email.utils.formatdate(time.time() + float(headers["retry-after"]) + 1,
                                                            usegmt=True)
        return Reply(turn.status, headers, [_body_bytes(turn)])
    return reply


def _success_answer(turn: RecordedTurn, adapter: Adapter, mode: str, cut: bool = False) -> Callable[[], Reply]:
    assert adapter.wire is not None
    wire = adapter.wire

    def reply() -> Reply:
        if mode == "body":
            return Reply(200, {"content-type": "application/json"}, [_body_bytes(turn)])
        frames = _frames(turn, adapter)

        def chunks() -> Iterator[bytes]:
            yield frames[0]
            if cut:
                raise _Reset("the scripted connection drop")
            yield from frames[1:]
        return Reply(200, {"content-type": wire.stream_content_type}, chunks(), streamed=True)
    return reply


# --- One lane, one script ----------------------------------------------------------------------------------------

def probe(stack: Stack, adapter: Adapter, script: Script, cases: Mapping[str, Case]) -> dict[str, Any] | None:
    """What ``stack`` does with ``script``: requests sent, waits asked for, the kind it surfaced, and the verdict.
    None when the bundled cases have no recording of the script's answers for the stack's API."""
    first = cases[script.case].providers.get(stack.provider)
    success = cases["normal"].providers.get(stack.provider)
    if first is None or success is None or (script.mode == "stream" and not stack.streams):
        return None
    ok, error = success.turns[0], first.turns[0]
    asked = asked_delay(error, adapter) if script.rule == "retry_after" else None
    if script.as_date and "retry-after" not in {name.lower() for name in error.headers}:
        return None  # the API sends no Retry-After header: there is no date to send either
    if script.mode == "stream":
        if ok.stream is None:
            return None
        answers = [_success_answer(ok, adapter, "stream", cut=True), _success_answer(ok, adapter, "stream")]
    else:
        answers = [_error_answer(error, script.as_date), _success_answer(ok, adapter, "body")]
    server = ScriptServer(answers)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    timer = threading.Timer(120, server.shutdown)  # bounded: a client that never stops asking
    timer.daemon = True
    timer.start()
    waits: list[float] = []
    started = time.monotonic()
    try:
        endpoint = Endpoint(base_url=f"{server.base}/s/{script.case}/{stack.row_id}/{script.mode}",
                            stream=script.mode == "stream", retries=True)
        with recorded_waits(waits):
            try:
                task = cases["normal"].task
                transcript = (UserMessage(text=task.input),)  # the loop's first turn (conformance.engine.loop)
                response: Any = stack.call(task_for_turn(task, transcript), transcript, endpoint)
                if inspect.isawaitable(response):
                    response = asyncio.run(_awaited(response))
                kind, raw = response.kind, getattr(response, "raw", None)
            except Exception as error:  # noqa: BLE001 - the stack let its client's exception through: named
                kind, raw = "crashed", f"{type(error).__name__}: {str(error)[:120]}"
    finally:
        timer.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    bodies = [body for _, body in server.received]
    result: dict[str, Any] = {
        "sent": len(bodies), "waits": waits, "asked": asked, "kind": kind, "raw": raw,
        "same_body": len(set(bodies)) <= 1,
        "seconds": round(time.monotonic() - started, 3)}
    result["verdict"], result["why"] = judge(script, result)
    return result


async def _awaited(response: Any) -> Any:
    return await response


def judge(script: Script, result: Mapping[str, Any]) -> tuple[str, str]:
    """``right`` or ``wrong`` by the script's rule (``RULES``), and why, in words."""
    sent, waits, kind = result["sent"], list(result["waits"]), result["kind"]
    if script.rule == "no_resend":
        if sent > 1:
            return "wrong", f"the turn was sent {sent} times: again after a part of its answer arrived"
        return "right", f"sent once, surfaced as {kind}"
    if script.rule == "once":
        if sent > 1:
            return "wrong", f"the {script.id} error retried: {sent} requests, {sum(waits):.1f} s waited"
        if kind != "fatal_error":
            return "wrong", f"one request, surfaced as {kind}, not fatal_error"
        return "right", "one request, fatal_error"
    if sent == 1:
        if kind == "retryable_error":
            return "right", "not retried: surfaced as retryable_error for the caller to retry"
        return "wrong", f"not retried, surfaced as {kind}, not retryable_error"
    if kind not in SUCCESS_KINDS:
        return "wrong", f"{sent} requests, surfaced as {kind} though the retry was answered"
    asked = result.get("asked")
    if asked is not None and (not waits or min(waits[:sent - 1] or [0.0]) < asked - 1e-3):
        return "wrong", f"retried after {_said(waits)}, sooner than the {asked:g} s the vendor asked"
    if asked is None and (not waits or min(waits[:sent - 1] or [0.0]) <= 0):
        return "wrong", f"retried at once ({_said(waits)})"
    return "right", f"{sent} requests after {_said(waits)}, answered {kind}"


def _said(waits: Sequence[float]) -> str:
    return ", ".join(f"{wait:.2f} s" for wait in waits) if waits else "no wait"


def run_lanes(stacks: Sequence[Stack], adapters: Mapping[str, Adapter], cases: Sequence[Case]) -> dict[str, Any]:
    """The report's ``retries`` section: per lane, per script, what its client did (``probe``)."""
    by_id = {case.id: case for case in cases}
    missing = [script.case for script in SCRIPTS if script.case not in by_id] + (
        [] if "normal" in by_id else ["normal"])
    lanes: dict[str, dict[str, Any]] = {}
    for stack in stacks:
        adapter = adapters.get(stack.provider)
        if adapter is None or adapter.wire is None or stack.loop is not None or stack.telemetry is not None:
            continue
        cells = {script.id: cell for script in SCRIPTS if script.case in by_id and "normal" in by_id
                 and (cell := probe(stack, adapter, script, by_id)) is not None}
        if cells:
            lanes[stack.row_id] = cells
    return {"rules": {script.id: f"{script.what}: {RULES[script.rule]}" for script in SCRIPTS},
            "lanes": dict(sorted(lanes.items())), "missing_cases": sorted(set(missing))}
