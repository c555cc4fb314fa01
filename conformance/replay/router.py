"""The replay router: recorded turns served to real clients over the five vendor HTTP APIs (docs/serve.md).

A session is one case × provider × mode, named in the base URL's path (``/s/<case>/<provider>/<mode>``), with its own
turn cursor. Each request gets the session's next turn: the recorded status, headers and body, or its stream (SSE
byte for byte, one chunk per event; Bedrock ``.jsonl`` re-encoded as binary event stream frames). A byte-identical
repeat of the previous request replays the same turn, so a client's retries cannot shift the script; error turns also
say ``x-should-retry: false``. Every request body is kept, so the engine can check what the real client sent.

Which paths an API answers, where its clients read the request id and how its streams are framed are the adapter's
facts (``Adapter.wire``); this module names no vendor.

Pure: no sockets here. ``conformance.replay.server`` puts it behind a loopback HTTP server; an in-process transport can
call ``Replay.handle`` directly.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from conformance.engine.cases import Case, base_provider
from conformance.engine.fixtures import RecordedTurn
from conformance.engine.rows import Lane, Mode
from conformance.kit.adapter import Adapter, Wire
from conformance.kit.jsontext import parse_json

SESSION = re.compile(r"/s/(?P<case>[^/]+)/(?P<provider>[^/]+)/(?P<mode>body|stream)(?P<rest>/.*)")
# The status of the replay's own "nothing recorded for this request" errors: a 400, which none of the official SDKs
# (OpenAI, Anthropic, google-genai, botocore) nor the Vercel AI SDK retries (they retry 408, 409, 429 and 5xx), so a
# client's retries cannot pile up unanswered requests (docs/serve.md).
NOT_RECORDED = 400
# What a replay keeps of what clients sent, for the request checks: its sessions, and the request bodies' bytes (a
# body past the budget is kept as a note of its size, and its checks say so).
MAX_SESSIONS = 10_000
MAX_KEPT_BYTES = 256 * 1024 * 1024


@dataclass(slots=True)
class Reply:
    """One HTTP response: status, headers, and the body as chunks (a stream is flushed chunk by chunk)."""

    status: int
    headers: dict[str, str]
    chunks: Sequence[bytes] | Iterator[bytes]
    streamed: bool = False


@dataclass(slots=True)
class Session:
    """One case × provider × mode as a client plays it: the turn cursor and everything the client sent."""

    case: Case
    provider: str
    mode: Mode
    cursor: int = 0
    kept: list[bytes | str] = field(default_factory=list)
    """Each request body the client sent, as bytes (a note in their place past the replay's budget), repeats left
    out; parsed only when read (``requests``), so what is kept is bounded by the bytes received."""
    served: list[int] = field(default_factory=list)
    """The 1-based turn served for each request kept."""
    unmatched: list[str] = field(default_factory=list)
    """Requests no turn answered, each with the reason."""
    streamed: list[bool] = field(default_factory=list)
    """For each request kept, whether its answer went back as a stream."""
    did_not_stream: list[str] = field(default_factory=list)
    """The requests of a stream session that asked for a body, each with the reason (also in ``unmatched``)."""
    last_body: bytes | None = None
    """The SHA-256 of the previous request body (a repeat replays its turn); the digest, not the bytes."""
    lane: str = ""
    """The session's provider segment (``openai-chat@litellm``), when it differs from the fixtures it plays."""

    @property
    def requests(self) -> list[Any]:
        """Each request body kept, parsed JSON, or its text when it is not JSON (or the note of one not kept)."""
        return [_parsed(body) if isinstance(body, bytes) else body for body in self.kept]


class Replay:
    """Sessions over loaded cases; thread-safe (one lock per replay: turns are served in request order)."""

    def __init__(self, cases: Sequence[Case], adapters: Mapping[str, Adapter] | None = None) -> None:
        """``adapters``: whose wires the server speaks besides the built-in ones (an adapter's wire replaces the
        built-in wire of its id)."""
        from conformance.engine.registry import builtin_adapters  # noqa: PLC0415 - registry imports every provider

        # The built-in wires, with each given adapter's own wire over its id's: an adapter without a wire (a
        # team's adapter reusing a built-in id) leaves the built-in paths in place.
        self.wires = {provider: adapter.wire for provider, adapter in builtin_adapters().items()
                      if adapter.wire is not None}
        self.wires.update({provider: adapter.wire for provider, adapter in (adapters or {}).items()
                           if adapter.wire is not None})
        self.cases = {case.id: case for case in cases}
        self.sessions: dict[tuple[str, str, str], Session] = {}
        self.lock = threading.Lock()
        self.kept_bytes = 0
        self.stopped_by: str | None = None
        """The signal that stopped the server (``SIGTERM``, ``SIGINT``), or None when a bound did."""

    def handle(self, method: str, path: str, query: str, body: bytes) -> Reply:
        """The reply to one request, by its path (``/s/<case>/<provider>/<mode>/<vendor path>``) and body."""
        match = SESSION.fullmatch(unquote(path))
        if method != "POST" or match is None:
            return _problem(None, 404, f"no session in {method} {path}: expected POST /s/<case>/<provider>/"
                                       "<body|stream>/<vendor path> (conformance serve prints the base URLs)")
        case = self.cases.get(match["case"])
        # A stack's session is `<provider>@<stack>`: the provider's fixtures, its own cursor.
        fixtures = session_fixtures(match["provider"])
        route = self._route(fixtures, match["rest"])
        if case is None or fixtures not in case.providers:
            what = "case" if case is None else f"provider of case {match['case']}"
            return _problem(route[0] if route else None, 404,
                            f"no {what} {match['case'] if case is None else fixtures!r} here; "
                            f"cases: {', '.join(sorted(self.cases)) or 'none'}")
        if route is None:
            return _problem(None, 404, f"case {case.id}: {match['rest']} is none of the vendor paths this server "
                                       "speaks")
        wire, stream = route
        with self.lock:
            key = (case.id, match["provider"], match["mode"])
            if key not in self.sessions and len(self.sessions) >= MAX_SESSIONS:
                return _problem(wire, NOT_RECORDED,
                                f"{MAX_SESSIONS} sessions are open; this server answers no more (restart it)")
            mode: Mode = "stream" if match["mode"] == "stream" else "body"  # the pattern allows these two only
            session = self.sessions.setdefault(key, Session(case, fixtures, mode, lane=match["provider"]))
            return _serve(session, wire, stream, query, body, self)

    def _route(self, provider: str, rest: str) -> tuple[Wire, bool | None] | None:
        """The wire that answers ``rest`` — the session's own provider's first, then any other (a team's adapter for
        an OpenAI-compatible server speaks the Chat paths) — and whether the path alone says it streams."""
        own = self.wires.get(base_provider(provider))  # a model variant speaks its provider's wire
        for wire in ([own] if own is not None else []) + list(self.wires.values()):
            for pattern, stream in wire.paths:
                if pattern.fullmatch(rest):
                    return wire, stream
        return None

    def reset(self, case_id: str, provider: str, mode: Mode) -> None:
        """Forget a session, so the next request starts at turn 1 (a row run again); its kept bytes are freed."""
        with self.lock:
            session = self.sessions.pop((case_id, provider, mode), None)
            if session is not None:
                self.kept_bytes -= sum(len(body) for body in session.kept if isinstance(body, bytes))

    def session(self, case_id: str, provider: str, mode: Mode) -> Session | None:
        """A session as its client left it (None when no request reached it)."""
        with self.lock:
            return self.sessions.get((case_id, provider, mode))

    def sent(self, case_id: str, provider: str, mode: Mode) -> list[Any]:
        """The request bodies a session's client sent, in order (repeats left out)."""
        with self.lock:
            session = self.sessions.get((case_id, provider, mode))
            return session.requests if session is not None else []


def session_fixtures(provider: str) -> str:
    """The fixture set a session's provider segment plays: ``openai-chat`` for ``openai-chat@litellm`` (a stack's
    session), ``openai-chat~next`` for a variant's."""
    return Lane.parse(provider).fixtures


def _kept(replay: Replay, body: bytes) -> bytes | str:
    """The request as a session keeps it, within ``MAX_KEPT_BYTES`` for the whole replay."""
    if replay.kept_bytes + len(body) > MAX_KEPT_BYTES:
        return f"(not kept: {len(body):,} bytes past the {MAX_KEPT_BYTES:,}-byte budget of kept requests)"
    replay.kept_bytes += len(body)
    return body


def _serve(session: Session, wire: Wire, stream: bool | None, query: str, body: bytes, replay: Replay) -> Reply:
    turns = session.case.providers[session.provider].turns
    digest = hashlib.sha256(body).digest()
    repeat = digest == session.last_body and session.cursor > 0
    index = session.cursor - 1 if repeat else session.cursor
    if index >= len(turns):
        reason = (f"case {session.case.id} [{session.provider}]: request {len(session.kept) + 1} asks for turn "
                  f"{index + 1}, but {len(turns)} turn(s) are recorded")
        session.unmatched.append(reason)
        return _problem(wire, NOT_RECORDED, reason)
    if not repeat:
        session.cursor += 1
        session.kept.append(_kept(replay, body))
        session.served.append(index + 1)
        session.last_body = digest
    turn = turns[index]
    wants_stream = stream if stream is not None else _asks_stream(body)
    if session.mode == "stream" and not wants_stream and turn.status < 400:
        # A stream row passes only when the client streamed: a body served here would pass the row for code that
        # never streams (docs/serve.md, "Modes").
        reason = (f"case {session.case.id} [{session.lane or session.provider}], stream session: request "
                  f"{len(session.kept)} asked for a body, not a stream: the code under test did not stream (a stream "
                  "row passes only when it streams; run it in body mode if it never does)")
        if not repeat:
            session.did_not_stream.append(reason)
            session.unmatched.append(reason)
            session.streamed.append(False)
        return _problem(wire, NOT_RECORDED, reason)
    reply = _reply(turn, wire, wants_stream, session, index)
    if not repeat:
        session.streamed.append(reply.streamed)
    reply.headers.setdefault(wire.request_id_header, f"req_{session.case.id}_{session.mode}_{index + 1}")
    return reply


def _reply(turn: RecordedTurn, wire: Wire, wants_stream: bool, session: Session, index: int) -> Reply:
    headers = {name.lower(): value for name, value in turn.headers.items()}
    if turn.status >= 400:
        headers.setdefault("content-type", "application/json" if not isinstance(turn.body, str) else "text/plain")
        headers["x-should-retry"] = "false"
        return Reply(turn.status, headers, [_body_bytes(turn)])
    if not wants_stream:
        if not turn.has_body:
            return _problem(wire, NOT_RECORDED, f"case {session.case.id} [{session.provider}]: turn {index + 1} was "
                                                "recorded as a stream only; the client asked for a body")
        headers.setdefault("content-type", "application/json")
        return Reply(turn.status, headers, [_body_bytes(turn)])
    if turn.stream is None:
        return _problem(wire, NOT_RECORDED, f"case {session.case.id} [{session.provider}]: turn {index + 1} has no "
                                            "recorded stream; the client asked for one")
    text = turn.stream.read_bytes()
    headers["content-type"] = wire.stream_content_type
    frames = list(wire.encode_stream(text) if wire.encode_stream is not None else _events(text))
    if turn.stream_reads is not None:  # a framing mutant: the same bytes in other pieces (docs/forward.md)
        whole = b"".join(frames)
        size = turn.stream_reads or len(whole) or 1
        frames = [whole[start:start + size] for start in range(0, len(whole), size)]
    return Reply(turn.status, headers, frames, streamed=True)


def _events(text: bytes) -> list[bytes]:
    """SSE bytes cut after each blank line, so each event is flushed on its own; the bytes are unchanged."""
    pieces = re.split(rb"(?<=\n\n)|(?<=\r\n\r\n)", text)
    return [piece for piece in pieces if piece]


def _body_bytes(turn: RecordedTurn) -> bytes:
    if turn.body_path is not None:
        return turn.body_path.read_bytes()
    if isinstance(turn.body, str):
        return turn.body.encode("utf-8")
    return json.dumps(turn.body, ensure_ascii=False).encode("utf-8") if turn.body is not None else b""


def _asks_stream(body: bytes) -> bool:
    try:
        request = parse_json(body)
    except ValueError:  # not JSON, or nested past the bound
        return False
    return isinstance(request, dict) and request.get("stream") is True


def _parsed(body: bytes) -> Any:
    """The body as kept for the request checks: parsed JSON, else its text (a body nested past the bound too)."""
    try:
        return parse_json(body)
    except ValueError:
        return body.decode("utf-8", "replace")


def _problem(wire: Wire | None, status: int, message: str) -> Reply:
    """An error the client will raise, naming what went wrong, in the error shape of the API it speaks (its wire's
    ``error_reply``; the OpenAI shape otherwise); ``x-should-retry: false`` so the clients that read it do not retry."""
    headers = {"content-type": "application/json", "x-should-retry": "false"}
    if wire is not None and wire.error_reply is not None:
        extra, payload = wire.error_reply(status, message)
        headers.update(extra)
    else:
        payload = {"error": {"type": "conformance_replay", "message": message}}
    return Reply(status, headers, [json.dumps(payload, ensure_ascii=False).encode("utf-8")])


def refusal(status: int, message: str) -> Reply:
    """A request refused before it was read whole (bad framing, too large): the server's own error, and the
    connection closed, since what follows on it cannot be framed."""
    reply = _problem(None, status, message)
    reply.headers["connection"] = "close"
    return reply
