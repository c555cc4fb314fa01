"""Record mode: a loopback forwarding proxy that captures real traffic as the suite's fixtures (docs/record.md).

A client (the suite's own stack, or any program) points at ``http://127.0.0.1:<port>/s/<case>/<provider>/<mode>``
exactly as it would at ``conformance serve``. Each request goes to the provider's upstream (``--upstream
PROVIDER=URL``) with the session prefix taken off; the response comes back to the client unchanged and is kept.
Afterwards ``write_fixtures`` stores the session in the bundled layout:

- ``turnN.json`` — a 2xx body, byte for byte; ``turnN.sse`` — an SSE stream, byte for byte; ``turnN.jsonl`` — a
  Bedrock event stream, decoded as boto3 yields it;
- ``turnN.error.json`` — an HTTP error turn: ``{"status", "headers", "body"}``;
- ``requests/turnN.<body|stream>.json`` — the request body that produced the turn (never its headers).

Record modes, as pytest-recording names them: ``none`` (replay only: nothing is forwarded, the suite's normal
state), ``once`` (forward only a session whose provider has no recorded turns yet), ``new_episodes`` (replay the
recorded turns, forward the requests beyond them), ``all`` (forward everything).

Redaction, on by default and refusing to leak (``redact_exchange``): no request header is stored; response headers
pass an allow-list; request ids in bodies become synthetic (``req_<case>_<n>``); e-mail addresses, phone numbers and
OpenAI organization/project ids in bodies are replaced; then every file is scanned (``conformance.replay.hygiene``) and
a finding that remains (an API key, a token) makes ``write_fixtures`` refuse, naming file and field, with nothing
written.

What differs per API comes from its adapter's ``Wire``: the response headers worth keeping, how a binary stream
is decoded for storage, and, for an API that signs its requests over the host, the re-signer the proxy applies to
each forwarded request with the recorder's own credentials.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import tempfile
import threading
import urllib.error
import urllib.request
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from conformance.engine.rows import Lane, Mode
from conformance.errors import InputError, Problem
from conformance.kit.adapter import Signer, Wire
from conformance.replay.hygiene import redact, scan_text
from conformance.replay.modes import MODES
from conformance.replay.router import SESSION, Replay, Reply
from conformance.replay.server import ReplayServer
from conformance.report.files import signals_deferred

# Response headers that change any client's behaviour (docs/record.md, "Redaction, on by default"): kept, with those
# the API's wire names (``Wire.kept_headers``). Every other header is dropped.
# `x-should-retry` and `retry-after-ms` are read by the openai and anthropic SDKs alike (their _base_client.py).
KEPT_HEADERS = frozenset({"content-type", "retry-after", "retry-after-ms", "x-should-retry"})
# Not forwarded: hop-by-hop headers, and what the proxy sets itself (the upstream host, an encoding it can store).
NOT_FORWARDED = frozenset({"host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
                           "te", "trailer", "content-length", "accept-encoding"})
# The largest reply a compressed answer may decode to (a recorded turn is a few KB).
MAX_DECODED_BYTES = 64 * 1024 * 1024
# Body fields that hold a request id: synthetic in what is stored.
REQUEST_ID_FIELDS = ("request_id", "requestId")
# Account identifiers vendors put in error messages: an AWS ARN's account id and principal (`arn:aws:iam::<12
# digits>:user/<name>`), a Google Cloud project number (`projects/<digits>`, Gemini's `consumer`), a UUID (Anthropic
# organization ids in error messages). Replaced wherever they appear.
ACCOUNT_IDS = (
    (re.compile(r"(arn:aws[\w-]*:[\w-]*:[\w-]*:)\d{12}(:(?:user|role|assumed-role|group)/)[\w+=,.@/-]+"),
     r"\g<1>000000000000\g<2><redacted>"),
    (re.compile(r"(arn:aws[\w-]*:[\w-]*:[\w-]*:)\d{12}(?=:)"), r"\g<1>000000000000"),
    (re.compile(r"\bprojects/\d{6,}"), "projects/<redacted>"),
)
# In an error body only (a success body's ids are the vendor's own and stay as they came).
UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


@dataclass(slots=True)
class Exchange:
    """One forwarded request and the upstream's answer, as received."""

    request: bytes
    status: int
    headers: dict[str, str]
    body: bytes
    failed: str | None = None
    """Why the upstream could not be reached: the proxy answered the client itself, and nothing is recorded."""


@dataclass(slots=True)
class RecordSession:
    """One case × provider × mode as recorded: the exchanges forwarded, and how many turns the replay answered."""

    exchanges: list[Exchange] = field(default_factory=list)
    replayed: int = 0
    last_request: bytes | None = None


@dataclass(frozen=True, slots=True)
class KeySwap:
    """The user's key for one provider's upstream: ``header`` carrying ``placeholder`` (the fake key a reference
    stack sends) gets ``value`` instead; a client's own key is forwarded as it is. Without a value (the variable is
    not set and the upstream is not on loopback) a placeholder request is refused with ``missing``."""

    header: str
    placeholder: str
    value: str | None
    missing: str = ""


class Recorder:
    """Forwards session requests to each provider's upstream and keeps what came back; thread-safe."""

    def __init__(self, upstreams: Mapping[str, str], mode: str = "once", replay: Replay | None = None,
                 signers: Mapping[str, Signer] | None = None, timeout: float = 120.0,
                 credentials: Mapping[str, KeySwap] | None = None) -> None:
        """``upstreams``: provider → base URL the vendor path is appended to; ``replay``: the recorded turns the
        ``once``/``new_episodes``/``none`` modes answer from; ``signers``: provider → re-signer (``Wire.resign``);
        ``credentials``: provider → the user's key in place of the reference stacks' placeholder (``KeySwap``)."""
        if mode not in MODES:
            raise InputError([Problem("--record-mode", None, f"unknown record mode {mode!r}",
                                      f"use one of {', '.join(MODES)}")])
        self.upstreams = dict(upstreams)
        self.mode, self.replay, self.signers, self.timeout = mode, replay or Replay([]), dict(signers or {}), timeout
        self.credentials = dict(credentials or {})
        self.sessions: dict[tuple[str, str, str], RecordSession] = {}
        self.lock = threading.Lock()

    def handle(self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Replay or forward one request, by the record mode and what the session has recorded."""
        # Routed on the session segments; the vendor path is forwarded as the client sent it (still percent-encoded:
        # a Bedrock model ARN's `%2F` is not a path separator, and SigV4 signs the encoded path).
        match = SESSION.fullmatch(path)
        if match is None:
            return self.replay.handle(method, path, query, body)  # the replay's own error names what is expected
        provider = Lane.parse(unquote(match["provider"])).fixtures
        key = (unquote(match["case"]), unquote(match["provider"]), match["mode"])
        with self.lock:
            session = self.sessions.setdefault(key, RecordSession())
            recorded = self._recorded(key[0], provider)
            repeat = body == session.last_request
            if self._replays(session, recorded, repeat):
                if not repeat:
                    session.replayed += 1
                session.last_request = body
                return self.replay.handle(method, path, query, body)
        upstream = self.upstreams.get(provider)
        if upstream is None:
            return _problem(502, f"no upstream for {provider}: pass --upstream {provider}=URL")
        exchange = self._forward(provider, upstream, method, match["rest"], query, headers, body)
        with self.lock:
            if repeat and session.exchanges:  # a client's retry of the same request replaces the turn it retried
                session.exchanges[-1] = exchange
            else:
                session.exchanges.append(exchange)
            session.last_request = body
        reply_headers = {name: value for name, value in exchange.headers.items() if name not in NOT_FORWARDED}
        return Reply(exchange.status, reply_headers, [exchange.body])

    def _replays(self, session: RecordSession, recorded: int, repeat: bool) -> bool:
        """Whether this request is answered from the recorded turns rather than forwarded."""
        if self.mode == "none" or (self.mode == "once" and recorded > 0):
            return True
        if self.mode == "new_episodes" and not session.exchanges:
            return session.replayed < recorded or (repeat and session.replayed > 0)
        return False

    def _recorded(self, case_id: str, provider: str) -> int:
        case = self.replay.cases.get(case_id)
        fixtures = case.providers.get(provider) if case is not None else None
        return len(fixtures.turns) if fixtures is not None else 0

    def _forward(self, provider: str, upstream: str, method: str, rest: str, query: str,
                 headers: Mapping[str, str], body: bytes) -> Exchange:
        url = upstream.rstrip("/") + rest + (f"?{query}" if query else "")
        sent = {name: value for name, value in headers.items() if name.lower() not in NOT_FORWARDED}
        sent["accept-encoding"] = "identity"  # the bytes stored are the bytes the vendor sent
        swap = self.credentials.get(provider)
        if swap is not None:
            sent_value = next((value for name, value in sent.items() if name.lower() == swap.header), None)
            if sent_value == swap.placeholder:  # a reference stack's fake key: the user's goes in its place
                if swap.value is None:
                    return _unreadable(body, swap.missing)
                sent = {name: value for name, value in sent.items() if name.lower() != swap.header}
                sent[swap.header] = swap.value
        signer = self.signers.get(provider)
        if signer is not None:
            sent = signer(method, url, sent, body)
        request = urllib.request.Request(url, data=body if method == "POST" else None, headers=sent,  # noqa: S310
                                         method=method)  # the configured upstream URL
        try:
            # No redirects: a 3xx is the upstream's answer, never followed to another host with the key.
            with _OPENER.open(request, timeout=self.timeout) as response:
                return _decoded(provider, Exchange(body, response.status, _lower(response.headers), response.read()))
        except urllib.error.HTTPError as error:
            return _decoded(provider, Exchange(body, error.code, _lower(error.headers), error.read()))
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            # Not the vendor's answer (unreachable, or a reply that is not HTTP: a bad status line, a torn body, a
            # header too long): the client gets the proxy's own error, and the session cannot be written. The URL
            # is not repeated (its query may hold a key).
            reason = str(getattr(error, "reason", None) or type(error).__name__)[:200]
            return _unreadable(body, f"the recording proxy could not reach the upstream for {provider}: "
                                               f"{reason}")

    def recorded(self, case_id: str, provider: str, mode: Mode) -> tuple[int, list[Exchange]]:
        """How many recorded turns a session replayed, and the exchanges it forwarded after them, in order."""
        with self.lock:
            session = self.sessions.get((case_id, provider, mode))
            return (session.replayed, list(session.exchanges)) if session is not None else (0, [])


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect comes back as the upstream's own answer (an HTTPError), never followed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def _unreadable(request: bytes, message: str) -> Exchange:
    """The proxy's own answer when the upstream's cannot be recorded; nothing of the session is written."""
    return Exchange(request, 502, {"content-type": "application/json", "x-should-retry": "false"}, json.dumps(
        {"error": {"type": "conformance_record", "message": message}}).encode(), failed=message)


def _decoded(provider: str, exchange: Exchange) -> Exchange:
    """The exchange with a compressed body decoded (an upstream may compress although asked for ``identity``):
    gzip and deflate are decoded and the header dropped; any other encoding, or gzip bytes sent without the
    header, is refused, so no file holds bytes the secret scan cannot read."""
    encoding = exchange.headers.pop("content-encoding", "identity").strip().lower()
    try:
        if encoding in ("gzip", "x-gzip", "deflate"):
            # Bounded: a few compressed MB may expand to gigabytes.
            decoder = zlib.decompressobj(wbits=47 if encoding != "deflate" else 15)
            decoded = decoder.decompress(exchange.body, MAX_DECODED_BYTES + 1)
            if len(decoded) > MAX_DECODED_BYTES or decoder.unconsumed_tail:
                return _unreadable(exchange.request, f"the upstream for {provider} sent a {encoding} body "
                                                               f"that decodes to over {MAX_DECODED_BYTES:,} bytes")
            if not decoder.eof:
                return _unreadable(exchange.request, f"the upstream for {provider} sent a {encoding} body "
                                                               "that ends before its end")
            exchange.body = decoded
        elif encoding not in ("identity", ""):
            return _unreadable(exchange.request, f"the upstream for {provider} answered with content-"
                                                           f"encoding {encoding!r}, which the proxy cannot read")
    except (OSError, zlib.error, EOFError):
        return _unreadable(exchange.request, f"the upstream for {provider} sent a {encoding} body that "
                                                       "does not decode")
    if exchange.body[:2] == b"\x1f\x8b":
        return _unreadable(exchange.request, f"the upstream for {provider} sent gzip bytes without saying "
                                                       "so (no content-encoding)")
    return exchange


def _lower(headers: Any) -> dict[str, str]:
    return {str(name).lower(): str(value) for name, value in headers.items()}


def _problem(status: int, message: str) -> Reply:
    payload = {"error": {"type": "conformance_record", "message": message}}
    return Reply(status, {"content-type": "application/json", "x-should-retry": "false"},
                 [json.dumps(payload).encode("utf-8")])


class RecordServer(ReplayServer):
    """The recording proxy behind a loopback server (127.0.0.1, any free port)."""

    def __init__(self, recorder: Recorder, port: int = 0, max_requests: int | None = None) -> None:
        super().__init__(recorder.replay, port, max_requests)
        self.recorder = recorder

    def answer(self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Replay or forward, by the recorder's mode."""
        return self.recorder.handle(method, path, query, headers, body)


# --- Writing the fixtures --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Staged:
    """One file to write: its path relative to the provider folder, and its bytes."""

    name: str
    data: bytes


def stage_session(case_id: str, mode: Mode, exchanges: Sequence[Exchange], first_turn: int = 1,
                  wire: Wire | None = None) -> list[Staged]:
    """The files one recorded session becomes, redacted (``redact_exchange``); turn numbers from ``first_turn``;
    ``wire``: the provider's (its kept headers, its stream decoder)."""
    wire = wire or Wire(paths=())
    failed = [exchange.failed for exchange in exchanges if exchange.failed]
    if failed:
        raise InputError([Problem(f"case {case_id} ({mode})", None, failed[0] + "; nothing was written",
                                  "check --upstream and the network, then record again")])
    staged: list[Staged] = []
    for offset, exchange in enumerate(exchanges):
        number = first_turn + offset
        status, headers, body = redact_exchange(case_id, number, exchange, wire)
        content_type = headers.get("content-type", "")
        if not 200 <= status < 300:  # an error, or a redirect (never followed): not a body of the vendor's answer
            parsed: Any
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = body.decode("utf-8", "replace")
            error = {"status": status, "headers": {k: v for k, v in headers.items() if k != "content-type"},
                     "body": parsed}
            staged.append(Staged(f"turn{number}.error.json",
                                 (json.dumps(error, indent=2, ensure_ascii=False) + "\n").encode("utf-8")))
        elif _binary_stream(wire, content_type):
            assert wire.decode_stream is not None
            try:
                events = wire.decode_stream(body).decode("utf-8")
            except ValueError as error:
                raise InputError([Problem(f"case {case_id} ({mode}), turn {number}", None,
                                          f"the {wire.stream_content_type} stream could not be decoded: {error}",
                                          "record again; nothing was written")]) from None
            staged.append(Staged(f"turn{number}.jsonl", redact_text(events, case_id, number).encode("utf-8")))
        elif content_type.startswith("text/event-stream"):
            staged.append(Staged(f"turn{number}.sse", body))
        elif mode == "stream":
            # A body stored for a stream session would replay a stream row for code that never streams.
            media = content_type.split(";")[0].strip()
            body_asked = media in ("", "application/json") or media.endswith("+json")
            raise InputError([Problem(
                f"case {case_id} (stream), turn {number}", None,
                ("the client asked for a body, not a stream: the code under test did not stream"
                 if body_asked else f"the answer ({media}) is no stream this API's wire reads")
                + "; nothing was written",
                "make the client stream when its endpoint asks for it (Endpoint.stream), or record with --mode body "
                "only" if body_asked else "record with the provider's own adapter, whose wire decodes its streams")])
        else:
            staged.append(Staged(f"turn{number}.json", body))
        staged.append(Staged(f"requests/turn{number}.{mode}.json", redact_text(
            exchange.request.decode("utf-8", "replace"), case_id, number).encode("utf-8")))
    return staged


def _binary_stream(wire: Wire, content_type: str) -> bool:
    """Whether a reply is the API's binary stream, stored decoded (``Wire.decode_stream``)."""
    return wire.decode_stream is not None and content_type.startswith(wire.stream_content_type.split(";")[0])


def kept(name: str, wire: Wire) -> bool:
    """Whether a response header is stored: a header every client acts on, or one the API's wire keeps."""
    names = KEPT_HEADERS | wire.kept_headers
    return name in names or any(name.startswith(prefix) for prefix in names if prefix.endswith("-"))


def redact_exchange(case_id: str, number: int, exchange: Exchange,
                    wire: Wire | None = None) -> tuple[int, dict[str, str], bytes]:
    """What is stored of one exchange: the allowed response headers (``kept``), and the body with its identifying
    data replaced. Bytes are kept as they came whenever there is nothing to replace."""
    wire = wire or Wire(paths=())
    # A kept header's value is redacted as a body is (an error type may carry an ARN and its account id).
    headers = {name: redact_text(value, case_id, number) for name, value in exchange.headers.items()
               if kept(name, wire)}
    if _binary_stream(wire, headers.get("content-type", "")):
        return exchange.status, headers, exchange.body  # binary: redacted once decoded (``stage_session``)
    text = exchange.body.decode("utf-8", "replace")
    redacted = redact_text(text, case_id, number, error=exchange.status >= 400)
    return exchange.status, headers, exchange.body if redacted == text else redacted.encode("utf-8")


def redact_text(text: str, case_id: str, number: int, error: bool = False) -> str:
    """A body with its request ids made synthetic (``req_<case>_<n>``), account ids in ARNs and Google project
    numbers replaced (UUIDs too in an ``error`` body), and everything ``conformance redact`` replaces replaced by
    ``<redacted>``: keys and tokens, e-mail addresses, phone numbers, OpenAI organization and project ids
    (``conformance.replay.hygiene``)."""
    for name in REQUEST_ID_FIELDS:
        text = re.sub(rf'("{name}"\s*:\s*")[^"]*(")', rf"\g<1>req_{case_id}_{number}\g<2>", text)
    for pattern, replacement in ACCOUNT_IDS:
        text = pattern.sub(replacement, text)
    if error:
        text = UUID.sub("<redacted-uuid>", text)
    return redact(text)


# The files of one mode's turns, and of both (an error turn answers either): what ``--record-mode all`` replaces.
MODE_FILES = {"body": ("turn*.json", "requests/turn*.body.json"),
              "stream": ("turn*.sse", "turn*.jsonl", "requests/turn*.stream.json")}


def write_fixtures(folder: Path, staged: Sequence[Staged], replace: Sequence[str] = ()) -> list[Path]:
    """Write the staged files into ``folder`` (``<cases>/<case>/<provider>``), all or nothing.

    Every file is scanned first: a secret the redaction did not remove makes this raise, naming file and line. The
    new folder is then put together beside the old one (a copy of it, without the recorded turns of the modes in
    ``replace``: ``--record-mode all`` replaces only what it recorded, the other mode's files stay), checked as the
    case loader reads a provider folder (turns numbered from 1, an error turn alone, bodies and streams for every
    turn or none), and swapped in by renaming, with Ctrl-C and SIGTERM held between the two renames; on any failure
    the old folder is left as it was. A provider folder that is a link is refused: its files would be copied from
    wherever it points."""
    if folder.is_symlink():
        raise InputError([Problem(str(folder), None, "is a symbolic link; a recording is written into a real folder "
                                  "of the cases folder only", "replace the link with the folder itself, or record "
                                  "into another case")])
    _refuse_secrets(folder, staged)
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.recording.", dir=folder.parent))
    try:
        new = work / "staging" / folder.name
        if folder.is_dir():
            shutil.copytree(folder, new, symlinks=True)
            patterns = [pattern for mode in replace for pattern in MODE_FILES[mode]]
            if replace:
                patterns.append("turn*.error.json")  # an error turn is one of every mode's turns
            for old in {path for pattern in patterns for path in new.glob(pattern)}:
                old.unlink()
        else:
            new.mkdir(parents=True)
        for item in staged:
            (new / item.name).parent.mkdir(parents=True, exist_ok=True)
            (new / item.name).write_bytes(item.data)
        _check_layout(new, folder)
        with signals_deferred():  # between the two renames the folder is absent: no interruption there
            if folder.is_dir():
                folder.rename(work / "previous")
            try:
                new.rename(folder)
            except OSError:
                if (work / "previous").is_dir():
                    (work / "previous").rename(folder)
                raise
    except OSError as error:
        raise InputError([Problem(str(folder), None, f"cannot write the recording: {error}",
                                  "check the folder's permissions and free space; the old fixtures are unchanged")]) \
            from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [folder / item.name for item in staged]


def _refuse_secrets(folder: Path, staged: Sequence[Staged]) -> None:
    """Every staged file scanned; a secret the redaction did not remove is named by file and line."""
    problems = []
    for item in staged:
        for finding in scan_text(folder / item.name, item.data.decode("utf-8", "replace")):
            problems.append(Problem(str(folder / item.name), finding.line, f"holds what looks like a {finding.kind}",
                                    "the recording kept a secret the redaction cannot remove: look at the "
                                    "upstream's answer, remove the value, and record again"))
    if problems:
        raise InputError(problems)


def _check_layout(new: Path, folder: Path) -> None:
    """The staged provider folder as the case loader will read it; its problems name the real folder."""
    from conformance.engine.fixtures import conventional_turns  # noqa: PLC0415

    problems: list[Problem] = []

    def problem(pointer: str, message: str, fix: str) -> None:
        problems.append(Problem(str(folder), None, f"the recording does not make a consistent set of turns: "
                                                   f"{message}", f"{fix}; nothing was written"))

    conventional_turns(new.parent / "case.yaml", new.name, "", problem)
    if problems:
        raise InputError(problems)


def upstream_for(template: str, case_id: str, provider: str, mode: str) -> str:
    """An upstream base URL; ``{case}``, ``{provider}`` and ``{mode}`` in it are filled in (a replay server as the
    upstream takes the session path, ``http://127.0.0.1:P/s/{case}/{provider}/{mode}``)."""
    return template.replace("{case}", case_id).replace("{provider}", provider).replace("{mode}", mode)
