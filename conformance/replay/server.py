"""``conformance serve``: the replay router behind a loopback HTTP server (docs/serve.md).

127.0.0.1 only, port 0 (any free port) by default, stopped by itself after ``max_seconds`` or ``max_requests``.
The stdlib ``ThreadingHTTPServer`` with Nagle's algorithm off: with it on, the body of each keep-alive response
waits for the client's delayed ACK (about 45 ms a request).
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from conformance.engine.cases import Case, base_provider
from conformance.engine.request_check import check_sent
from conformance.engine.rows import Mode
from conformance.kit.adapter import Adapter
from conformance.replay.router import Replay, Reply, refusal
from conformance.report.files import Terminated

MAX_BODY_BYTES = 64 * 1024 * 1024
# All request bodies being read or answered at once, across connections.
MAX_BYTES_IN_FLIGHT = 256 * 1024 * 1024
READ_PIECE = 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    server: ReplayServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    # A connection that sends nothing for this long is closed (socketserver's StreamRequestHandler.timeout).
    timeout = 30

    def do_POST(self) -> None:
        self._answer("POST")

    def do_GET(self) -> None:
        self._answer("GET")

    def _answer(self, method: str) -> None:
        parts = urlsplit(self.path)
        self.reserved = 0
        try:
            try:
                body = self._body()
            except _BadRequest as refused:
                self.close_connection = True  # what follows on this connection cannot be framed
                reply = refusal(refused.status, str(refused))
            else:
                reply = self.server.answer(method, parts.path, parts.query,
                                           {k.lower(): v for k, v in self.headers.items()}, body)
        finally:
            self.server.release(self.reserved)
        self._send(reply)

    def _reserve(self, size: int) -> None:
        self.server.reserve(size)
        self.reserved += size

    def _body(self) -> bytes:
        """The request body, framed by ``content-length`` or ``transfer-encoding: chunked`` and bounded in size
        (``MAX_BODY_BYTES`` each, ``MAX_BYTES_IN_FLIGHT`` for all requests being answered at once)."""
        length_header = self.headers.get("content-length")
        chunked = "chunked" in (self.headers.get("transfer-encoding") or "").lower()
        if chunked and length_header is not None:
            raise _BadRequest(400, "both content-length and transfer-encoding: chunked; send one")
        if chunked:
            return self._chunked()
        if length_header is None or not length_header.strip():
            return b""
        if not re.fullmatch(r"[0-9]{1,20}", length_header.strip()):  # ASCII digits only (`²` is a digit to isdigit)
            raise _BadRequest(400, f"content-length {length_header.strip()[:40]!r} is not a byte count")
        length = int(length_header)
        if length > MAX_BODY_BYTES:
            raise _BadRequest(413, f"a request body of {length:,} bytes is over the {MAX_BODY_BYTES:,}-byte limit")
        # Reserved as the bytes arrive, so a client that announces a large body and stalls holds only what it sent.
        body = bytearray()
        while len(body) < length:
            piece = self.rfile.read(min(READ_PIECE, length - len(body)))
            if not piece:
                break
            self._reserve(len(piece))
            body += piece
        return bytes(body)

    def _chunked(self) -> bytes:
        body = bytearray()
        while True:
            line = self.rfile.readline(1026).strip()
            size_text = line.split(b";", 1)[0].strip()
            if not re.fullmatch(rb"[0-9A-Fa-f]{1,16}", size_text):  # int() would take 0x10, +a and 1_0
                raise _BadRequest(400, "a chunk size that is not hexadecimal")
            size = int(size_text, 16)
            if size < 0 or len(body) + size > MAX_BODY_BYTES:
                raise _BadRequest(413, f"a chunked request body over the {MAX_BODY_BYTES:,}-byte limit")
            if size == 0:
                while self.rfile.readline(1026).strip():  # trailers, up to the blank line
                    pass
                break
            self._reserve(size)
            body += self.rfile.read(size)
            self.rfile.readline(3)  # the CRLF after the chunk
        return bytes(body)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.streamed:
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for chunk in reply.chunks:
                self.wfile.write(f"{len(chunk):x}\r\n".encode("ascii") + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            data = b"".join(reply.chunks)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        self.wfile.flush()
        self.server.count()  # after the reply is out: the last request of a bounded run is answered whole

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the signature http.server calls
        """Quiet: what each session was sent is in the replay's sessions, not on stderr."""


class _BadRequest(Exception):
    """A request the server refuses before reading it whole: its status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ReplayServer(ThreadingHTTPServer):
    """A loopback server over a ``Replay``; ``stop_after`` bounds it in time and in requests."""

    daemon_threads = True

    def __init__(self, replay: Replay, port: int = 0, max_requests: int | None = None) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.replay, self.max_requests, self.requests = replay, max_requests, 0
        self._count_lock = threading.Lock()
        self.in_flight = 0

    def reserve(self, size: int) -> None:
        """Count ``size`` more request bytes in memory; refuse (503) past ``MAX_BYTES_IN_FLIGHT`` for all requests."""
        with self._count_lock:
            if self.in_flight + size > MAX_BYTES_IN_FLIGHT:
                raise _BadRequest(503, f"{MAX_BYTES_IN_FLIGHT:,} bytes of request bodies are already being read; "
                                       "send fewer large requests at once")
            self.in_flight += size

    def release(self, size: int) -> None:
        """A request answered: its bytes are no longer in flight."""
        with self._count_lock:
            self.in_flight = max(0, self.in_flight - size)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def answer(self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """The reply to one request: the replay's (a recording proxy answers otherwise,
        ``conformance.replay.record``)."""
        return self.replay.handle(method, path, query, body)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a reset, a broken pipe: clients close pooled connections as they please) is no
        error of the server's: nothing is printed. Anything else is one line on stderr, never a traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            return
        print(f"conformance serve: a request from {client_address[0]} failed: {type(error).__name__}: {error}",
              file=sys.stderr)

    def count(self) -> None:
        """One more request answered; at ``max_requests`` the server shuts down (from another thread)."""
        with self._count_lock:
            self.requests += 1
            if self.max_requests is not None and self.requests >= self.max_requests:
                threading.Thread(target=self.shutdown, daemon=True).start()


def session_base(base: str, case_id: str, provider: str, mode: Mode) -> str:
    """The base of one session's URLs: ``<server>/s/<case>/<provider>/<mode>``."""
    return f"{base}/s/{case_id}/{provider}/{mode}"


def client_environment(base: str, case_id: str = "<case>", provider: str = "<provider>",
                       mode: Mode = "body") -> dict[str, str]:
    """The environment that points every official client at one session, with fake keys and retries off: each
    built-in API's ``Wire.client_environment``."""
    from conformance.engine.registry import builtin_adapters  # noqa: PLC0415 - the adapters load only when asked

    root = session_base(base, case_id, provider, mode)
    environment: dict[str, str] = {}
    for adapter in builtin_adapters().values():
        if adapter.wire is not None and adapter.wire.client_environment is not None:
            environment.update(adapter.wire.client_environment(root))
    return environment


def run_server(cases: Sequence[Case], port: int = 0, max_seconds: float = 600.0,
               max_requests: int | None = None, ready: Any = None,
               adapters: Mapping[str, Adapter] | None = None) -> Replay:
    """Serve until ``max_seconds`` pass or ``max_requests`` are answered; ``ready(server)`` is called once it listens.
    ``adapters``: whose wires to speak (default: the built-ins). Returns the replay, whose sessions hold what each
    client sent."""
    replay = Replay(cases, adapters)
    server = ReplayServer(replay, port, max_requests)
    timer = threading.Timer(max_seconds, server.shutdown)
    timer.daemon = True
    timer.start()
    try:
        if ready is not None:
            ready(server)
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt as signal:
        # Ctrl-C or SIGTERM (conformance.report.files.Terminated) ends the server as a bound does: the sessions so far
        # are kept, so the caller still says what each client did and writes serve.json.
        replay.stopped_by = "SIGTERM" if isinstance(signal, Terminated) else "SIGINT"
    finally:
        timer.cancel()
        server.server_close()
    return replay


class BackgroundServer:
    """A replay server on a daemon thread, for tests and in-process runs: ``with BackgroundServer(cases) as s``."""

    def __init__(self, cases: Sequence[Case], max_seconds: float = 300.0) -> None:
        self.replay = Replay(cases)
        self.server = ReplayServer(self.replay)
        self.max_seconds = max_seconds
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.started = 0.0

    def __enter__(self) -> BackgroundServer:
        self.started = time.monotonic()
        self.thread.start()
        self.timer = threading.Timer(self.max_seconds, self.server.shutdown)
        self.timer.daemon = True
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return self.server.base


def session_records(replay: Replay, adapters: dict[str, Any]) -> list[dict[str, Any]]:
    """What each session's client sent and how it fared: turns served, requests no turn answered, and the prefix
    expectations of each request (docs/contract.md, "Requests") when the provider is one an adapter reads."""
    records = []
    for (case_id, provider, mode), session in sorted(replay.sessions.items()):
        # `session.provider` is the fixture set the session plays (a stack's `<provider>@<stack>` session plays its
        # provider's); a model variant's requests are read by its provider's adapter.
        adapter = adapters.get(base_provider(session.provider))
        task = session.case.task
        records.append({
            "case": case_id, "provider": provider, "mode": mode,
            "turns_recorded": len(session.case.providers[session.provider].turns),
            "turns_served": session.served,
            "unmatched": session.unmatched,
            "requests": [{"turn": turn, "problems": check_sent(adapter, task, request) if adapter else None}
                         for turn, request in zip(session.served, session.requests, strict=True)],
        })
    return records
