"""Record mode under attack (docs/hardening.md, "Hardening III"): the user's key reaches the upstream and never disk,
an error turn the case does not expect never replaces recorded files, only the recorded mode is replaced, compressed
replies are decoded or refused, redirects are not followed, a linked provider folder is refused, a malformed
upstream reply is one line, and the folder swap is never interrupted half-way. The upstream is a fake on loopback.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conformance.replay.record import Staged, write_fixtures
from conformance.report.files import Terminated, handle_sigterm_as_interrupt
from tests.helpers import CASES, cli, some_cases

pytest.importorskip("openai", reason="the SDK stacks drive the recording (pip install 'llm-conformance[stacks]')")

USER_KEY = "sk-proj-UserKeyForTheRealVendor0123456789abcdefXYZ"
TURNS = [(CASES / "normal/openai-chat" / f"turn{n}.json").read_bytes() for n in (1, 2)]


class _Vendor(BaseHTTPRequestHandler):
    """A fake OpenAI Chat upstream: checks the key as the vendor does, then answers by ``behave``."""

    protocol_version = "HTTP/1.1"
    seen: list[str] = []
    behave: Callable[[_Vendor, int], None]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append(self.headers.get("authorization", ""))
        if self.headers.get("authorization") != f"Bearer {USER_KEY}":
            self._send(401, b'{"error": {"message": "Incorrect API key provided: sk-repl***", "type": '
                            b'"invalid_request_error", "code": "invalid_api_key"}}')
            return
        type(self).behave(self, len(type(self).seen) - 1)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"content-type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def _answers(vendor: _Vendor, index: int) -> None:
    vendor._send(200, TURNS[index % 2])


@pytest.fixture
def vendor() -> Iterator[type[_Vendor]]:
    _Vendor.seen, _Vendor.behave = [], _answers
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Vendor)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    _Vendor.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield _Vendor
    server.shutdown()
    server.server_close()


def _cases(tmp_path: Path) -> Path:
    return some_cases(tmp_path / "cases", "normal")


def _files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _record(root: Path, url: str, *extra: str, key: str | None = USER_KEY) -> Any:
    env = {"OPENAI_API_KEY": key} if key else {}
    return cli("record", "--cases", str(root), "--case", "normal", "--provider", "openai-chat",
               "--upstream", f"openai-chat={url}", "--record-mode", "all", "--mode", "body", *extra, env=env)


# ---- 1. The user's key reaches the upstream, never disk; an unexpected error turn never replaces files -------------

def test_the_users_key_replaces_the_stacks_placeholder_and_is_never_written(tmp_path: Path,
                                                                             vendor: type[_Vendor]) -> None:
    root = _cases(tmp_path)
    result = _record(root, vendor.url)  # type: ignore[attr-defined]
    assert result.returncode == 0, result.stderr
    assert vendor.seen == [f"Bearer {USER_KEY}"] * 2  # not the reference stack's sk-replay
    for name, data in _files(root).items():
        assert USER_KEY.encode() not in data and b"UserKeyForTheRealVendor" not in data, name


def test_a_401_never_replaces_the_recorded_files(tmp_path: Path, vendor: type[_Vendor]) -> None:
    root = _cases(tmp_path)
    before = _files(root / "normal")
    result = _record(root, vendor.url, key="sk-proj-AWrongKeyForThisVendor0123456789abcdef")  # type: ignore[attr-defined]
    assert result.returncode == 2
    assert "turn 1: the upstream answered HTTP 401" in result.stderr and "the recorded files are kept" in result.stderr
    assert "Traceback" not in result.stderr
    assert _files(root / "normal") == before


def test_a_5xx_mid_way_never_replaces_the_recorded_files(tmp_path: Path, vendor: type[_Vendor]) -> None:
    def second_fails(handler: _Vendor, index: int) -> None:
        if index == 0:
            handler._send(200, TURNS[0])
        else:
            handler._send(503, b'{"error": {"message": "upstream overloaded", "type": "server_error"}}')

    vendor.behave = second_fails
    root = _cases(tmp_path)
    before = _files(root / "normal")
    result = _record(root, vendor.url)  # type: ignore[attr-defined]
    assert result.returncode == 2 and "turn 2: the upstream answered HTTP 503" in result.stderr
    assert _files(root / "normal") == before


def test_a_real_vendor_without_the_key_in_the_environment_is_refused(tmp_path: Path) -> None:
    root = _cases(tmp_path)
    before = _files(root / "normal")
    result = _record(root, "https://api.openai.com", key=None)
    assert result.returncode == 2 and "set OPENAI_API_KEY" in result.stderr
    assert _files(root / "normal") == before


# ---- 5. --record-mode all replaces only the mode it recorded ----------------------------------------------------

def test_recording_the_body_mode_again_keeps_the_stream_recordings(tmp_path: Path, vendor: type[_Vendor]) -> None:
    root = _cases(tmp_path)
    streams = {name: data for name, data in _files(root / "normal/openai-chat").items() if name.endswith(".sse")}
    assert streams
    assert _record(root, vendor.url).returncode == 0  # type: ignore[attr-defined]
    after = _files(root / "normal/openai-chat")
    assert {name: data for name, data in after.items() if name.endswith(".sse")} == streams
    assert cli("validate", "--cases", str(root)).returncode == 0


# ---- 10. Compressed replies are decoded, or refused --------------------------------------------------------------

def test_a_gzipped_reply_is_stored_decoded(tmp_path: Path, vendor: type[_Vendor]) -> None:
    vendor.behave = lambda handler, index: handler._send(200, gzip.compress(TURNS[index % 2]),
                                                         {"content-encoding": "gzip"})
    root = _cases(tmp_path)
    assert _record(root, vendor.url).returncode == 0  # type: ignore[attr-defined]
    assert (root / "normal/openai-chat/turn1.json").read_bytes() == TURNS[0]


@pytest.mark.parametrize("encoding", ["br", None])
def test_bytes_the_scan_cannot_read_are_refused(tmp_path: Path, vendor: type[_Vendor], encoding: str | None) -> None:
    secret = b'{"note": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 jane.doe@example.org"}'
    headers = {"content-encoding": encoding} if encoding else {}
    vendor.behave = lambda handler, index: handler._send(200, gzip.compress(secret), headers)
    root = _cases(tmp_path)
    before = _files(root / "normal")
    result = _record(root, vendor.url)  # type: ignore[attr-defined]
    assert result.returncode == 2 and "nothing was written" in result.stderr
    assert _files(root / "normal") == before


# ---- 20. A provider folder that is a link is refused --------------------------------------------------------------

def test_a_linked_provider_folder_is_refused_and_nothing_is_copied(tmp_path: Path, vendor: type[_Vendor]) -> None:
    root = _cases(tmp_path)
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "credentials").write_text("[default]\naws_secret_access_key = not-for-the-repository\n")
    # A provider the case does not list yet (the loader reads no folder for it) whose folder is a link elsewhere.
    case = root / "normal/case.yaml"
    case.write_text(case.read_text().replace("  openai-chat: {}\n", ""))
    shutil.rmtree(root / "normal/openai-chat")
    os.symlink(outside, root / "normal/openai-chat")
    result = _record(root, vendor.url)  # type: ignore[attr-defined]
    assert result.returncode == 2 and "symbolic link" in result.stderr
    assert (root / "normal/openai-chat").is_symlink()
    assert sorted(path.name for path in outside.iterdir()) == ["credentials"]
    copies = [path for path in root.rglob("*") if path.name == "credentials" and not path.is_symlink()
              and outside not in path.resolve().parents]
    assert copies == []


# ---- 24. A malformed upstream reply is one line, not a traceback ----------------------------------------------------

def test_a_reply_that_is_not_http_is_one_line(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def garbage() -> None:
        for _ in range(2):
            connection, _ = listener.accept()
            connection.recv(65536)
            connection.sendall(b"NOT-HTTP garbage\r\n\r\n")
            connection.close()

    threading.Thread(target=garbage, daemon=True).start()
    root = _cases(tmp_path)
    result = _record(root, f"http://127.0.0.1:{listener.getsockname()[1]}")
    listener.close()
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "could not reach the upstream" in result.stderr


# ---- 25. Redirects are not followed ---------------------------------------------------------------------------------

class _Elsewhere(_Vendor):
    """Another host a redirect points at: it records what reaches it."""

    seen: list[str] = []


def test_a_redirect_is_not_followed_with_the_key(tmp_path: Path, vendor: type[_Vendor]) -> None:
    _Elsewhere.seen, _Elsewhere.behave = [], _answers
    other = ThreadingHTTPServer(("127.0.0.1", 0), _Elsewhere)
    threading.Thread(target=other.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    target = f"http://127.0.0.1:{other.server_address[1]}/v1/chat/completions"
    vendor.behave = lambda handler, index: handler._send(307, b"", {"location": target})
    root = _cases(tmp_path)
    before = _files(root / "normal")
    try:
        result = _record(root, vendor.url)  # type: ignore[attr-defined]
    finally:
        other.shutdown()
        other.server_close()
    assert vendor.seen == [f"Bearer {USER_KEY}"]  # one request, to the configured upstream only
    # The proxy followed nothing; a client that follows the 307 itself goes there with its own placeholder.
    assert all(USER_KEY not in seen for seen in _Elsewhere.seen)
    assert result.returncode == 2 and "HTTP 307" in result.stderr
    assert _files(root / "normal") == before


# ---- 23. The folder swap holds signals between its two renames ----------------------------------------------------

def test_sigterm_during_the_swap_leaves_the_new_folder_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _cases(tmp_path)
    folder = root / "normal/openai-chat"
    staged = [Staged(f"turn{n}.json", TURNS[n - 1]) for n in (1, 2)] + [
        Staged(f"turn{n}.sse", (folder / f"turn{n}.sse").read_bytes()) for n in (1, 2)]
    previous = signal.getsignal(signal.SIGTERM)
    handle_sigterm_as_interrupt()
    original = Path.rename
    calls = []

    def rename(self: Path, target: Any) -> Any:
        calls.append(self)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # arrives between the old folder leaving and the new one arriving
        return original(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    try:
        with pytest.raises(Terminated):
            write_fixtures(folder, staged, replace=("body", "stream"))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert folder.is_dir() and (folder / "turn1.json").read_bytes() == TURNS[0]
    assert json.loads((folder / "turn2.json").read_bytes()) == json.loads(TURNS[1])


# ---- The whole story: one recording session against a hostile upstream --------------------------------------------

STREAMED_KEY = "sk-ant-api03-StreamedInPiecesAbCdEfGhIjKlMnOp0123"
NESTED_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYNESTEDSECRET"


class _HostileVendor(_Vendor):
    """Body turn 1: gzipped, a secret in JSON inside the call's arguments string (the redaction cannot reach it in
    place; the scan of the decoded values refuses it); body turn 2: the answer. Stream turn 1: a key streamed in pieces
    of one to three characters; stream turn 2: a redirect to another host (which the client, not the proxy, follows).
    A 500 half-way is test_a_5xx_mid_way_never_replaces_the_recorded_files."""

    turns: dict[bool, int] = {}

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        type(self).seen.append(self.headers.get("authorization", ""))
        if self.headers.get("authorization") != f"Bearer {USER_KEY}":
            self._send(401, b'{"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}')
            return
        stream = request.get("stream") is True
        turn = type(self).turns[stream] = type(self).turns.get(stream, 0) + 1
        if not stream and turn == 1:
            body = json.loads(TURNS[0])
            body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = json.dumps(
                {"order_id": "ORD-1001", "note": json.dumps({"aws_secret_access_key": NESTED_SECRET})})
            self._send(200, gzip.compress(json.dumps(body).encode()), {"content-encoding": "gzip"})
        elif not stream:
            self._send(200, TURNS[1])
        elif turn == 1:
            pieces, rest = [], f"Your key is {STREAMED_KEY}."
            while rest:
                size = 1 + len(pieces) % 3
                pieces.append(rest[:size])
                rest = rest[size:]
            chunk = {"id": "chatcmpl-h1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
            finish = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            events = [{**chunk, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                      for piece in pieces] + [finish]
            text = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
            self._send(200, text.encode(), {"content-type": "text/event-stream"})
        else:
            self._send(302, b"", {"location": "http://127.0.0.1:9/elsewhere"})


@pytest.mark.parametrize("mode", [("body",), ("stream",), ("body", "stream")])
def test_a_hostile_upstream_leaves_nothing_secret_on_disk_and_loses_nothing(tmp_path: Path,
                                                                           mode: tuple[str, ...]) -> None:
    _HostileVendor.seen, _HostileVendor.turns = [], {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HostileVendor)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    vendor = _HostileVendor
    vendor.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    root = _cases(tmp_path)
    before = _files(root)
    result = cli("record", "--cases", str(root), "--case", "normal", "--provider", "openai-chat",
                 "--upstream", f"openai-chat={vendor.url}", "--record-mode", "all",  # type: ignore[attr-defined]
                 *(value for one in mode for value in ("--mode", one)), env={"OPENAI_API_KEY": USER_KEY})
    server.shutdown()
    server.server_close()
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "once decoded or joined" in result.stderr  # refused by the scan, not before it
    assert vendor.seen and all(seen == f"Bearer {USER_KEY}" for seen in vendor.seen)  # the credential reached it
    after = _files(root)
    assert after == before  # nothing recorded was lost or changed
    leftovers = [path for path in root.parent.rglob("*") if ".recording." in path.name]
    assert leftovers == []
    for name, data in after.items():
        for secret in (USER_KEY, STREAMED_KEY, NESTED_SECRET, "StreamedInPieces"):
            assert secret.encode() not in data, (name, secret)
    assert cli("validate", "--cases", str(root)).returncode == 0


# ---- Review follow-ups: the error turn must be the kind the case expects; a client's own key is its own -------------

def test_a_401_where_the_case_expects_a_rate_limit_is_refused(tmp_path: Path, vendor: type[_Vendor]) -> None:
    vendor.behave = lambda handler, index: handler._send(
        401, b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", '
             b'"code": "invalid_api_key"}}')
    root = _cases(tmp_path)
    shutil.copytree(CASES / "http_rate_limit", root / "http_rate_limit")
    before = _files(root / "http_rate_limit")
    result = cli("record", "--cases", str(root), "--case", "http_rate_limit", "--provider", "openai-chat",
                 "--upstream", f"openai-chat={vendor.url}", "--record-mode", "all",  # type: ignore[attr-defined]
                 "--mode", "body", env={"OPENAI_API_KEY": USER_KEY})
    assert result.returncode == 2 and "read as fatal_error/auth" in result.stderr, result.stderr
    assert "expects retryable_error/rate_limit" in result.stderr
    assert _files(root / "http_rate_limit") == before


def test_a_429_where_the_case_expects_it_is_recorded(tmp_path: Path, vendor: type[_Vendor]) -> None:
    vendor.behave = lambda handler, index: handler._send(
        429, b'{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}',
        {"retry-after": "2"})
    root = _cases(tmp_path)
    shutil.copytree(CASES / "http_rate_limit", root / "http_rate_limit")
    result = cli("record", "--cases", str(root), "--case", "http_rate_limit", "--provider", "openai-chat",
                 "--upstream", f"openai-chat={vendor.url}", "--record-mode", "all",  # type: ignore[attr-defined]
                 "--mode", "body", env={"OPENAI_API_KEY": USER_KEY})
    assert result.returncode == 0, result.stderr
    assert json.loads((root / "http_rate_limit/openai-chat/turn1.error.json").read_text())["status"] == 429


def test_a_clients_own_key_is_forwarded_and_only_the_placeholder_is_swapped() -> None:
    from conformance.replay.record import KeySwap, Recorder

    seen: list[str] = []

    class Echo(_Vendor):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append(self.headers.get("authorization", ""))
            self._send(200, TURNS[0])

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    swap = KeySwap("authorization", "Bearer sk-replay", f"Bearer {USER_KEY}")
    recorder = Recorder({"openai-chat": f"http://127.0.0.1:{server.server_address[1]}"}, "all",
                        credentials={"openai-chat": swap})
    path = "/s/normal/openai-chat/body/v1/chat/completions"
    try:
        recorder.handle("POST", path, "", {"authorization": "Bearer gsk_TheClientsOwnKeyForAnotherHost"}, b"{}")
        recorder.handle("POST", path, "", {"authorization": "Bearer sk-replay"}, b'{"n": 2}')
        recorder.handle("POST", path, "", {}, b'{"n": 3}')  # no key sent: none is added
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["Bearer gsk_TheClientsOwnKeyForAnotherHost", f"Bearer {USER_KEY}", ""]
