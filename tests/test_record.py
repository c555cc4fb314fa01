"""Record mode (docs/record.md): the proxy records a case through a real client into the bundled layout, redacted,
refusing to leak; no internet here, so the upstream is the replay server or a fake one on loopback."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance import __version__
from conformance.engine.cases import load_cases
from conformance.engine.provenance import SIDECAR
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import run_case
from conformance.errors import InputError
from conformance.providers.bedrock_converse.signing import sigv4_signer
from conformance.replay.record import (
    Exchange,
    Recorder,
    RecordServer,
    Staged,
    redact_text,
    stage_session,
    write_fixtures,
)
from conformance.replay.server import BackgroundServer
from tests.helpers import CASES, cli

pytest.importorskip("openai", reason="the SDK stacks drive the recording (pip install 'llm-conformance[stacks]')")
PROVIDERS = tuple(builtin_adapters())
RECORDER_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "recorder-test-secret",
                        "AWS_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def replay_upstream() -> Iterator[BackgroundServer]:
    with BackgroundServer(load_cases([CASES]), max_seconds=600) as server:
        yield server


@pytest.fixture
def upstream(replay_upstream: BackgroundServer) -> BackgroundServer:
    """The bundled cases' replay server, playing the vendors' APIs, each session from its first turn (a replay
    server keeps a cursor per session; a vendor's API does not)."""
    with replay_upstream.replay.lock:
        replay_upstream.replay.sessions.clear()
    return replay_upstream


def _copy(tmp_path: Path, *case_ids: str) -> Path:
    root = tmp_path / "cases"
    root.mkdir()
    shutil.copy(CASES / "world.yaml", root / "world.yaml")
    for case_id in case_ids:
        shutil.copytree(CASES / case_id, root / case_id)
    return root


def _record(root: Path, case_id: str, provider: str, upstream: str, *extra: str) -> Any:
    return cli("record", "--cases", str(root), "--case", case_id, "--provider", provider,
               "--upstream", f"{provider}={upstream}", *extra, env=RECORDER_CREDENTIALS)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_recording_a_bundled_case_reproduces_its_fixtures_byte_for_byte(tmp_path: Path, upstream: BackgroundServer,
                                                                        provider: str) -> None:
    root = _copy(tmp_path, "normal")
    folder = root / "normal" / provider
    for old in folder.iterdir():
        old.write_bytes(b"{}")  # a stale recording: `all` must replace every byte of it ...
    stream = "jsonl" if provider == "bedrock-converse" else "sse"
    for name in ("turn3.json", f"turn3.{stream}"):  # ... and drop the turns it no longer has
        (folder / name).write_bytes(b"{}")
    result = _record(root, "normal", provider, f"{upstream.base}/s/{{case}}/{{provider}}/{{mode}}",
                     "--record-mode", "all")
    assert result.returncode == 0, result.stderr
    originals = sorted(path.name for path in (CASES / "normal" / provider).iterdir())
    assert sorted(path.name for path in folder.iterdir() if path.is_file() and path.name != SIDECAR) == originals
    assert len(originals) == 4  # two turns, body and stream (Bedrock's as .jsonl, decoded from the binary frames)
    for name in originals:
        assert (folder / name).read_bytes() == (CASES / "normal" / provider / name).read_bytes(), name
    # The request behind each turn is stored beside it: the body only, as the client sent it.
    for mode in ("body", "stream"):
        sent = json.loads((folder / "requests" / f"turn2.{mode}.json").read_text())
        assert isinstance(sent, dict) and json.dumps(sent).count("ORD-1001") >= 1, mode


def test_an_error_turn_is_recorded_as_its_own_file_and_replays_the_same(tmp_path: Path,
                                                                        upstream: BackgroundServer) -> None:
    root = _copy(tmp_path, "http_rate_limit")
    case_file = root / "http_rate_limit" / "case.yaml"
    spec = yaml.safe_load(case_file.read_text())
    del spec["providers"]["anthropic-messages"]  # not recorded yet: `once` records it
    case_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = _record(root, "http_rate_limit", "anthropic-messages",
                     f"{upstream.base}/s/{{case}}/{{provider}}/{{mode}}", "--mode", "body")
    assert result.returncode == 0, result.stderr
    assert "add `anthropic-messages: {}` under providers:" in result.stdout
    recorded = json.loads((root / "http_rate_limit" / "anthropic-messages" / "turn1.error.json").read_text())
    # Behaviour headers are kept (x-should-retry is the replay upstream's own); its request-id header is not.
    assert recorded["status"] == 429 and recorded["headers"] == {"retry-after": "14", "x-should-retry": "false"}
    # The vendor's request id in the body became a synthetic one.
    assert recorded["body"]["request_id"] == "req_http_rate_limit_1"
    spec["providers"]["anthropic-messages"] = {}
    case_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    validated = cli("validate", "--cases", str(root))  # the error file and requests/ are the provider's fixtures
    assert validated.returncode == 0, validated.stderr
    (case,) = load_cases([root])
    (bundled,) = [case for case in load_cases([CASES]) if case.id == "http_rate_limit"]
    adapter = builtin_adapters()["anthropic-messages"]
    again, original = run_case(case, "anthropic-messages", adapter), run_case(bundled, "anthropic-messages", adapter)
    assert again["passed"] and (again["outcome"], again["turns"][0]["kind"], again["turns"][0]["retry_after_s"]) == (
        original["outcome"], original["turns"][0]["kind"], original["turns"][0]["retry_after_s"])


@pytest.mark.parametrize("listed", [False, True], ids=["providers-empty", "provider-listed-without-turns"])
def test_a_new_case_starts_from_no_recording(tmp_path: Path, upstream: BackgroundServer, listed: bool) -> None:
    root = _copy(tmp_path, "normal")
    case_file = root / "normal" / "case.yaml"
    spec = yaml.safe_load(case_file.read_text())
    spec["providers"] = {"openai-chat": {}} if listed else {}
    case_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    for folder in (root / "normal").iterdir():
        if folder.is_dir():
            shutil.rmtree(folder)
    # Before the recording, the case cannot run, and the error says how to record it (not "record the turns there").
    before = cli("validate", "--cases", str(root))
    assert before.returncode == 2
    assert ("record them: conformance record --case normal --provider openai-chat --upstream openai-chat=URL"
            if listed else "record one: conformance record --case normal --provider ID") in before.stderr
    result = _record(root, "normal", "openai-chat", f"{upstream.base}/s/{{case}}/{{provider}}/{{mode}}")
    assert result.returncode == 0, result.stderr
    recorded = sorted(path.name for path in (root / "normal" / "openai-chat").iterdir()
                      if path.is_file() and path.name != SIDECAR)
    assert recorded == sorted(path.name for path in (CASES / "normal" / "openai-chat").iterdir() if path.is_file())
    assert ("add `openai-chat: {}` under providers:" in result.stdout) is not listed
    spec["providers"] = {"openai-chat": {}}
    case_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    (case,) = load_cases([root])
    assert run_case(case, "openai-chat", builtin_adapters()["openai-chat"])["passed"]


def test_record_in_an_init_repository_records_the_teams_adapter(tmp_path: Path, upstream: BackgroundServer) -> None:
    """`init` says to record fixtures under cases/<case>/app-openai-chat/: record reads the repository's
    configuration, so the team's adapter is a provider it records, against the vendor API its wire speaks."""
    assert cli("init", str(tmp_path)).returncode == 0
    folder = tmp_path / "cases/example/app-openai-chat"
    shutil.rmtree(folder)
    result = cli("record", "--case", "example", "--provider", "app-openai-chat", "--upstream",
                 f"openai-chat={upstream.base}/s/normal/openai-chat/{{mode}}", "--record-mode", "all", cwd=tmp_path,
                 env=RECORDER_CREDENTIALS)
    assert result.returncode == 0, result.stderr
    # Two turns, body and stream, their requests, and the provenance sidecar.
    assert "[app-openai-chat]: wrote 9 file(s)" in result.stdout
    recorded = sorted(path.name for path in folder.iterdir() if path.is_file() and path.name != SIDECAR)
    assert recorded == sorted(path.name for path in (CASES / "normal/openai-chat").iterdir() if path.is_file())
    for name in recorded:  # the vendor's answers to the same task, byte for byte
        assert (folder / name).read_bytes() == (CASES / "normal/openai-chat" / name).read_bytes(), name
    validated = cli("run", "--provider", "app-openai-chat", "--report-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_record_refuses_an_adapter_with_no_vendor_wire(tmp_path: Path) -> None:
    assert cli("init", str(tmp_path)).returncode == 0
    (tmp_path / "no_wire.py").write_text(  # a file of its own: init loaded conformance_adapter.py in this process
        "import dataclasses\nfrom conformance.providers.openai_chat import ADAPTER as CHAT\n"
        "ADAPTER = dataclasses.replace(CHAT, id='app-openai-chat', wire=None)\n")
    result = cli("record", "--no-config", "--cases", "cases", "--adapter", "no_wire.py:ADAPTER", "--case", "example",
                 "--provider", "app-openai-chat", "--upstream", "openai-chat=http://127.0.0.1:9", cwd=tmp_path)
    assert result.returncode == 2 and "adapter app-openai-chat names no vendor wire" in result.stderr
    assert "Traceback" not in result.stderr


def prime(base: str, case_id: str, provider: str, path: str) -> None:
    """Move a replay upstream's sessions past turn 1, as a vendor that already answered it (a replay server keeps a
    cursor per session; a vendor's API does not)."""
    import urllib.request

    for mode in ("body", "stream"):
        data = b'{"prime": true, "stream": true}' if mode == "stream" else b'{"prime": true}'
        request = urllib.request.Request(f"{base}/s/{case_id}/{provider}/{mode}{path}", data=data,
                                         headers={"content-type": "application/json"}, method="POST")
        urllib.request.urlopen(request, timeout=10).read()


def test_new_episodes_replays_the_recorded_turns_and_records_the_rest(tmp_path: Path) -> None:
    root = _copy(tmp_path, "normal")
    folder = root / "normal" / "openai-chat"
    for name in ("turn2.json", "turn2.sse"):
        (folder / name).unlink()
    with BackgroundServer(load_cases([CASES])) as upstream:
        prime(upstream.base, "normal", "openai-chat", "/v1/chat/completions")
        result = _record(root, "normal", "openai-chat", f"{upstream.base}/s/{{case}}/{{provider}}/{{mode}}",
                         "--record-mode", "new_episodes")
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in (folder / "requests").iterdir()) == ["turn2.body.json", "turn2.stream.json"]
    for name in ("turn2.json", "turn2.sse"):
        assert (folder / name).read_bytes() == (CASES / "normal" / "openai-chat" / name).read_bytes()


@pytest.mark.parametrize("mode", ["none", "once"])
def test_replay_modes_never_reach_past_loopback(tmp_path: Path, mode: str) -> None:
    # The test session refuses to resolve or connect beyond loopback (conftest.py): a forwarded request to the real
    # API would fail loudly here. `none` (and `once` for a provider already recorded) answer from the fixtures.
    root = _copy(tmp_path, "normal")
    before = {path: path.read_bytes() for path in (root / "normal").rglob("*") if path.is_file()}
    result = _record(root, "normal", "openai-chat", "https://api.openai.com", "--record-mode", mode)
    assert result.returncode == 0, result.stderr
    assert "nothing forwarded" in result.stdout
    assert {path: path.read_bytes() for path in (root / "normal").rglob("*") if path.is_file()} == before


class _Leaky(BaseHTTPRequestHandler):
    """A fake upstream that answers with every identifying header and a body full of personal data."""

    protocol_version = "HTTP/1.1"
    seen: list[dict[str, str]] = []
    status = 200
    extra_header: tuple[str, str] | None = None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        body = json.dumps({
            "id": "chatcmpl-leak1", "object": "chat.completion", "model": "gpt-test", "request_id": "req_vendor_9f3",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content":
                         "Mail jane.doe@example.org or call +44 20 7946 0958; org org-AbCdEfGhIjKlMnOpQrStUvWx, "
                         "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"}}],
        }).encode()
        self.send_response(self.status)
        for name, value in [("content-type", "application/json"), ("openai-organization", "org-acme-prod"),
                            ("openai-project", "proj_AbCdEfGhIjKlMnOpQrStUvWx"), ("x-request-id", "req_vendor_9f3"),
                            ("anthropic-organization-id", "0b7e-acme"), ("set-cookie", "__cf_bm=abc123; path=/"),
                            ("cf-ray", "8f00aa-LHR"), ("retry-after", "3"),
                            *([self.extra_header] if self.extra_header else [])]:
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@pytest.fixture
def leaky() -> Iterator[ThreadingHTTPServer]:
    _Leaky.seen, _Leaky.status, _Leaky.extra_header = [], 200, None
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Leaky)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _through_proxy(upstream: str, headers: dict[str, str]) -> list[Exchange]:
    recorder = Recorder({"openai-chat": upstream}, "all")
    proxy = RecordServer(recorder)
    thread = threading.Thread(target=proxy.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        import urllib.request

        request = urllib.request.Request(f"{proxy.base}/s/leak/openai-chat/body/v1/chat/completions?key=AIzaLeak",
                                         data=b'{"model": "gpt-test", "user": "jane.doe@example.org"}',
                                         headers=headers, method="POST")
        try:
            urllib.request.urlopen(request, timeout=10).read()
        except urllib.error.HTTPError as error:
            error.read()
    finally:
        proxy.shutdown()
        proxy.server_close()
    return recorder.recorded("leak", "openai-chat", "body")[1]


IDENTIFYING = ("jane.doe", "7946", "org-AbCdEf", "sk-ant-api03", "req_vendor_9f3", "org-acme-prod", "proj_AbCd",
               "0b7e-acme", "__cf_bm", "8f00aa", "sk-live-client-key", "AIzaLeak", "x-goog-api-key", "session=")


@pytest.mark.parametrize("status", [200, 429])
def test_nothing_identifying_lands_in_a_recorded_file(tmp_path: Path, leaky: ThreadingHTTPServer,
                                                      status: int) -> None:
    _Leaky.status = status
    client_headers = {"authorization": "Bearer sk-live-client-key", "x-goog-api-key": "AIzaLeak",
                      "openai-organization": "org-acme-prod", "cookie": "session=abc", "content-type":
                      "application/json"}
    exchanges = _through_proxy(f"http://127.0.0.1:{leaky.server_address[1]}", client_headers)
    # The client's credentials reached the upstream (the proxy forwards them) ...
    assert _Leaky.seen[0]["authorization"] == "Bearer sk-live-client-key"
    written = write_fixtures(tmp_path / "leak" / "openai-chat",
                             stage_session("leak", "body", exchanges, wire=builtin_adapters()["openai-chat"].wire))
    turn = "turn1.json" if status == 200 else "turn1.error.json"
    assert sorted(path.name for path in written) == ["turn1.body.json", turn]
    # ... and none of it, nor the upstream's identifying headers and body data, is in a file.
    for path in written:
        text = path.read_text()
        assert [value for value in IDENTIFYING if value in text] == [], path
    stored = json.loads((tmp_path / "leak" / "openai-chat" / turn).read_text())
    answer = stored if status == 200 else stored["body"]
    assert answer["request_id"] == "req_leak_1" and answer["choices"][0]["finish_reason"] == "stop"
    if status != 200:  # of the headers, only the ones that change a client's behaviour
        assert stored["headers"] == {"retry-after": "3"}


def test_a_secret_in_a_kept_header_is_redacted_like_a_body(tmp_path: Path, leaky: ThreadingHTTPServer) -> None:
    # An error turn keeps its behaviour headers; a key planted in one is replaced as in a body (a secret the
    # redaction cannot replace, split over stream events, is refused: tests/test_hardening_iii.py).
    _Leaky.status = 429
    _Leaky.extra_header = ("x-ratelimit-reset-tokens", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123")
    exchanges = _through_proxy(f"http://127.0.0.1:{leaky.server_address[1]}", {"content-type": "application/json"})
    folder = tmp_path / "leak" / "openai-chat"
    write_fixtures(folder, stage_session("leak", "body", exchanges, wire=builtin_adapters()["openai-chat"].wire))
    stored = json.loads((folder / "turn1.error.json").read_text())
    assert stored["headers"]["x-ratelimit-reset-tokens"] == "<redacted>"
    assert "AbCdEfGhIjKlMnOpQrStUvWxYz0123" not in (folder / "turn1.error.json").read_text()


def test_the_proxy_signs_bedrock_requests_again_for_the_upstream(tmp_path: Path) -> None:
    # The fake upstream checks the SigV4 signature with the recorder's known test credentials, as AWS would.
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    verdicts: list[bool] = []

    class Verifier(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            authorization = self.headers["authorization"]
            signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
            request = AWSRequest(method="POST", url=f"http://{self.headers['host']}{self.path}", data=body,
                                 headers={name: self.headers[name] for name in signed})
            request.context["timestamp"] = self.headers["x-amz-date"]
            auth = SigV4Auth(Credentials("AKIDEXAMPLE", "recorder-test-secret"), "bedrock", "us-east-1")
            expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
            verdicts.append(authorization.endswith(f"Signature={expected}")
                            and "Credential=AKIDEXAMPLE/" in authorization)
            answer = b'{"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}}, ' \
                     b'"stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}'
            self.send_response(200 if verdicts[-1] else 403)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Verifier)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        upstream = f"http://127.0.0.1:{server.server_address[1]}"
        for signers in ({}, {"bedrock-converse": sigv4_signer("AKIDEXAMPLE", "recorder-test-secret", "us-east-1")}):
            recorder = Recorder({"bedrock-converse": upstream}, "all", signers=signers)
            # What the client signed for the proxy (the loopback host, the client's own fake key).
            client = sigv4_signer("AKIDCLIENT", "client-secret", "us-east-1")
            path = "/s/sig/bedrock-converse/body/model/m/converse"
            headers = client("POST", f"http://127.0.0.1:1{path}", {"content-type": "application/json"}, b"{}")
            reply = recorder.handle("POST", path, "", {k.lower(): v for k, v in headers.items()}, b"{}")
            assert reply.status == (200 if signers else 403)
    finally:
        server.shutdown()
        server.server_close()
    assert verdicts == [False, True]


def test_a_malformed_error_turn_file_is_a_clear_input_error(tmp_path: Path) -> None:
    root = _copy(tmp_path, "normal")
    folder = root / "normal" / "openai-chat"
    for old in folder.iterdir():
        old.unlink()
    (folder / "turn1.error.json").write_text('{"status": 200, "body": {}}')
    result = cli("validate", "--cases", str(root))
    assert result.returncode != 0
    assert "turn1.error.json' is not an error turn: expected an object with status (400-599)" in result.stderr


def test_redact_replaces_phone_numbers_and_keeps_numbers_that_are_not() -> None:
    from conformance.replay.hygiene import redact

    assert redact("call +44 20 7946 0958, +49 30 1234567 or (212) 555-0100") == \
        "call <redacted>, <redacted> or <redacted>"
    kept = ('order 1234567890 at 2026-12-01T10:00:00+01:00, total +12.5, signature "CiQB+123456789012/xyz=", '
            "pi +3.14159265, at +48.8566 2.3522, +1 234 567.89, (100) 200-3000, ISBN 978-3-16-148410-0")
    assert redact(kept) == kept


def test_an_upstream_it_cannot_reach_writes_nothing_and_keeps_the_old_fixtures(tmp_path: Path) -> None:
    root = _copy(tmp_path, "normal")
    before = {path: path.read_bytes() for path in (root / "normal").rglob("*") if path.is_file()}
    result = _record(root, "normal", "openai-chat", "http://127.0.0.1:9/v?key=gw-token-123456", "--record-mode",
                     "all", "--mode", "body")
    assert result.returncode == 2
    assert "could not reach the upstream for openai-chat" in result.stderr and "nothing was written" in result.stderr
    assert "gw-token" not in result.stderr + result.stdout
    assert {path: path.read_bytes() for path in (root / "normal").rglob("*") if path.is_file()} == before


def test_a_failed_write_leaves_the_old_fixtures_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "case" / "openai-chat"
    folder.mkdir(parents=True)
    (folder / "turn1.json").write_text('{"old": 1}')
    staged = [Staged("turn1.json", b'{"new": 1}'), Staged("turn2.json", b'{"new": 2}')]
    calls = []
    original = Path.write_bytes

    def failing(path: Path, data: bytes) -> int:
        calls.append(path.name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return original(path, data)

    monkeypatch.setattr(Path, "write_bytes", failing)
    with pytest.raises(InputError, match="the old fixtures are unchanged"):
        write_fixtures(folder, staged, replace=("body", "stream"))
    monkeypatch.undo()
    assert sorted(path.name for path in folder.parent.iterdir()) == ["openai-chat"]  # no staging folder left
    assert [path.name for path in folder.iterdir()] == ["turn1.json"] and (folder / "turn1.json").read_text() == \
        '{"old": 1}'


def test_a_recording_that_is_not_a_consistent_set_of_turns_is_refused(tmp_path: Path) -> None:
    # The body run got an answer where the stream run got an error: the case loader could not read both.
    folder = tmp_path / "case" / "openai-chat"
    staged = [Staged("turn1.json", b'{"id": "x"}'),
              Staged("turn1.error.json", b'{"status": 529, "headers": {}, "body": {}}')]
    with pytest.raises(InputError, match="turn 1 has an error file and a body or stream"):
        write_fixtures(folder, staged)
    assert not folder.exists()


def test_the_vendor_path_is_forwarded_as_the_client_encoded_it() -> None:
    seen: list[str] = []

    class Echo(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append(self.path)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        recorder = Recorder({"bedrock-converse": f"http://127.0.0.1:{server.server_address[1]}"}, "all")
        arn = "arn%3Aaws%3Abedrock%3Aus-east-1%3A000000000000%3Ainference-profile%2Fus.anthropic.m"
        reply = recorder.handle("POST", f"/s/c/bedrock-converse/body/model/{arn}/converse", "", {}, b"{}")
    finally:
        server.shutdown()
        server.server_close()
    assert reply.status == 200 and seen == [f"/model/{arn}/converse"]


def test_account_ids_in_error_bodies_are_replaced() -> None:
    body = ('{"message": "User: arn:aws:iam::123456789012:user/jane.doe is not authorized to perform: '
            'bedrock:InvokeModel on arn:aws:bedrock:us-east-1:123456789012:foundation-model/m", '
            '"consumer": "projects/987654321098", "org": "3fa85f64-5717-4562-b3fc-2c963f66afa6"}')
    redacted = redact_text(body, "c", 1, error=True)
    assert [value for value in ("123456789012", "jane.doe", "987654321098", "3fa85f64") if value in redacted] == []
    assert "arn:aws:bedrock:us-east-1:000000000000:foundation-model/m" in redacted
    # In a success body a UUID is the vendor's own id and stays.
    assert "3fa85f64" in redact_text('{"id": "3fa85f64-5717-4562-b3fc-2c963f66afa6"}', "c", 1)


def test_a_bedrock_error_frame_decodes_to_its_member_line() -> None:
    from conformance.providers.bedrock_converse.eventstream import decode_jsonl, frame

    data = frame({":message-type": "event", ":event-type": "messageStart", ":content-type": "application/json"},
                 b'{"role":"assistant"}') + frame(
        {":message-type": "error", ":error-code": "internalServerException", ":error-message": "boom"}, b"")
    assert decode_jsonl(data) == (b'{"messageStart":{"role":"assistant"}}\n'
                                  b'{"internalServerException":{"message":"boom"}}\n')


def test_a_later_run_checks_the_adapter_still_sends_what_was_recorded(tmp_path: Path,
                                                                      upstream: BackgroundServer) -> None:
    root = _copy(tmp_path, "normal")
    assert _record(root, "normal", "anthropic-messages", f"{upstream.base}/s/{{case}}/{{provider}}/{{mode}}",
                   "--record-mode", "all").returncode == 0
    (case,) = load_cases([root])
    adapter = builtin_adapters()["anthropic-messages"]
    assert run_case(case, "anthropic-messages", adapter, "body")["passed"]  # the SDK sent what the adapter builds
    recorded = root / "normal" / "anthropic-messages" / "requests" / "turn2.body.json"
    request = json.loads(recorded.read_text())
    request["system"] = "You are a pirate."
    request["messages"][2]["content"][0]["tool_use_id"] = "toolu_other"
    recorded.write_text(json.dumps(request))
    row = run_case(case, "anthropic-messages", adapter, "body")
    assert "request: turn 2: differs from the request recorded in anthropic-messages/requests/turn2.body.json " \
           "(instructions, tool result ids)" in row["failures"]
    assert run_case(case, "anthropic-messages", adapter, "stream")["passed"]  # its own recording is unchanged


@pytest.mark.parametrize(("arguments", "message"), [
    (("--provider", "openai-chat", "--upstream", "openai-chat"), "'openai-chat' is not PROVIDER=URL"),
    (("--provider", "openai-chat"), "no upstream for openai-chat. Fix: pass --upstream openai-chat=URL"),
    (("--provider", "openai-chatt", "--upstream", "openai-chatt=http://127.0.0.1:9"), "unknown provider"),
    (("--provider", "openai-chat", "--upstream", "openai-chat=http://127.0.0.1:9", "--case", "nope"),
     "no case matches 'nope'"),
])
def test_bad_record_input_is_a_clear_error(tmp_path: Path, arguments: tuple[str, ...], message: str) -> None:
    root = _copy(tmp_path, "normal")
    cases = () if "--case" in arguments else ("--case", "normal")
    result = cli("record", "--cases", str(root), *cases, *arguments)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_recording_bedrock_without_the_recorders_credentials_is_refused(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(tmp_path, "normal")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    result = cli("record", "--cases", str(root), "--case", "normal", "--provider", "bedrock-converse",
                 "--upstream", "bedrock-converse=http://127.0.0.1:9", "--record-mode", "all")
    assert result.returncode == 2 and "the proxy signs each forwarded request again" in result.stderr


def test_a_model_variant_is_recorded_beside_the_provider_run_as_its_own_column_and_promoted(
        tmp_path: Path, upstream: BackgroundServer) -> None:
    root = _copy(tmp_path, "normal")
    result = _record(root, "normal", "openai-chat", f"{upstream.base}/s/{{case}}/{{provider}}/{{mode}}",
                     "--variant", "gpt-5.5-mini", "--model", "gpt-5.5-mini")
    assert result.returncode == 0, result.stderr
    variant = root / "normal" / "openai-chat~gpt-5.5-mini"
    assert sorted(path.name for path in variant.iterdir() if path.is_file()) == [
        "provenance.json", "turn1.json", "turn1.sse", "turn2.json", "turn2.sse"]
    # Where each turn came from: the model it was recorded against, a loopback upstream, the client, the suite.
    provenance = json.loads((variant / "provenance.json").read_text())["turns"]
    assert sorted(provenance) == ["turn1.json", "turn1.sse", "turn2.json", "turn2.sse"]
    entry = provenance["turn1.json"]
    assert (entry["model"], entry["host"], entry["suite"]) == ("gpt-5.5-mini", "loopback", __version__)
    assert entry["client"].startswith("openai-chat@openai-sdk (openai ") and entry["recorded_at"].endswith("Z")
    # And the model that answered, as the response names it, body and stream: the upstream's recorded snapshot.
    served = json.loads((CASES / "normal/openai-chat/turn1.json").read_text())["model"]
    assert served != "gpt-5.5-mini"
    assert provenance["turn1.json"]["served_model"] == provenance["turn1.sse"]["served_model"] == served
    assert json.loads((variant / "requests" / "turn1.body.json").read_text())["model"] == "gpt-5.5-mini"
    # Tell the two apart: the variant's first answer stops early.
    body = json.loads((variant / "turn1.json").read_text())
    body["choices"][0]["finish_reason"] = "length"
    (variant / "turn1.json").write_text(json.dumps(body))
    report = tmp_path / "report"
    run = cli("run", "--cases", str(root), "--provider", "openai-chat", "--mode", "body", "--report-dir", str(report))
    document = json.loads((report / "report.json").read_text())
    assert document["providers"] == ["openai-chat", "openai-chat~gpt-5.5-mini"]
    outcomes = {row["provider"]: row["turns"][0]["kind"] for row in document["results"]}
    assert outcomes == {"openai-chat": "tool_calls", "openai-chat~gpt-5.5-mini": "incomplete"}
    assert run.returncode == 1 and "openai-chat~gpt-5.5-mini" in run.stdout
    assert cli("validate", "--cases", str(root)).returncode == 1  # the variant's failing row, not an unused folder
    original = (root / "normal" / "openai-chat" / "turn1.json").read_bytes()
    promoted = cli("promote", "--cases", str(root), "--case", "normal", "--provider", "openai-chat",
                   "--variant", "gpt-5.5-mini")
    assert promoted.returncode == 0, promoted.stderr
    assert json.loads((root / "normal" / "openai-chat" / "turn1.json").read_text())["choices"][0][
        "finish_reason"] == "length"
    assert (root / "normal" / "openai-chat~before-gpt-5.5-mini" / "turn1.json").read_bytes() == original
    assert not variant.exists()
    again = cli("promote", "--cases", str(root), "--case", "normal", "--provider", "openai-chat",
                "--variant", "gpt-5.5-mini")
    assert again.returncode == 2 and "no such variant folder" in again.stderr


def test_promote_refuses_what_it_cannot_do_whole(tmp_path: Path) -> None:
    root = _copy(tmp_path, "normal", "context_window", "pause_turn")
    for case_id in ("normal", "context_window", "pause_turn"):
        shutil.copytree(CASES / "normal" / "openai-chat", root / case_id / "openai-chat~v")
    before = sorted(str(path.relative_to(root)) for path in root.rglob("*"))

    def promote(*case_ids: str) -> Any:
        return cli("promote", "--cases", str(root), *(value for case_id in case_ids for value in ("--case", case_id)),
                   "--provider", "openai-chat", "--variant", "v")

    # context_window lists openai-chat's turns inline; pause_turn does not list openai-chat: nothing moves at all.
    for case_id, message in (("context_window", "turns are not all in openai-chat/"),
                             ("pause_turn", "the case does not list openai-chat")):
        refused = promote("normal", case_id)
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
        assert sorted(str(path.relative_to(root)) for path in root.rglob("*")) == before
    assert promote("normal", "normal").returncode == 0  # a case named twice is promoted once
    assert (root / "normal" / "openai-chat~before-v").is_dir() and not (root / "normal" / "openai-chat~v").exists()
    too_long = cli("promote", "--cases", str(root), "--case", "normal", "--provider", "openai-chat",
                   "--variant", "m" * 60)
    assert too_long.returncode == 2 and "57 characters or less" in too_long.stderr


def test_a_variant_is_its_vendor_again_in_the_majority_and_the_usage_table(tmp_path: Path) -> None:
    root = _copy(tmp_path, "normal", "context_window")
    plain = tmp_path / "plain"
    assert cli("run", "--cases", str(root), "--mode", "body", "--report-dir", str(plain)).returncode in (0, 1)
    shutil.copytree(root / "context_window" / "anthropic-messages", root / "context_window" / "anthropic-messages~v")
    shutil.copytree(root / "normal" / "openai-chat", root / "normal" / "openai-chat~mini")
    varied = tmp_path / "varied"
    assert cli("run", "--cases", str(root), "--mode", "body", "--report-dir", str(varied)).returncode in (0, 1)
    first, second = (json.loads((folder / "report.json").read_text()) for folder in (plain, varied))
    assert first["differs"] and [mark for mark in second["differs"] if "~" not in mark[2]] == first["differs"]
    assert "not run for openai-chat~mini" not in (varied / "report.md").read_text()


@pytest.mark.parametrize(("provider", "own"), [
    ("openai-chat", {"x-ratelimit-remaining-requests"}), ("openai-responses", {"x-ratelimit-remaining-requests"}),
    ("anthropic-messages", {"anthropic-ratelimit-requests-remaining"}), ("bedrock-converse", {"x-amzn-errortype"}),
    ("gemini", set()),
])
def test_a_fixture_keeps_the_headers_every_client_reads_and_those_its_wire_names(provider: str, own: set[str]) -> None:
    from conformance.replay.record import redact_exchange

    headers = {"content-type": "application/json", "retry-after": "3", "retry-after-ms": "3000",
               "x-should-retry": "true", "x-ratelimit-remaining-requests": "9",
               "anthropic-ratelimit-requests-remaining": "9", "x-amzn-errortype": "ThrottlingException",
               "set-cookie": "session=synthetic", "openai-organization": "org-synthetic", "cf-ray": "0-SYN"}
    exchange = Exchange(b"{}", 429, headers, b'{"error": {"message": "slow down"}}')
    _, kept, _ = redact_exchange("case", 1, exchange, builtin_adapters()[provider].wire)
    assert set(kept) == {"content-type", "retry-after", "retry-after-ms", "x-should-retry"} | own


def test_a_binary_stream_is_stored_as_its_wire_decodes_it() -> None:
    from conformance.providers.bedrock_converse.eventstream import EVENTSTREAM, encode_jsonl

    events = '{"messageStart":{"role":"assistant"}}\n{"messageStop":{"stopReason":"end_turn"}}\n'
    body = b"".join(encode_jsonl(events))
    exchange = Exchange(b"{}", 200, {"content-type": EVENTSTREAM}, body)
    wire = builtin_adapters()["bedrock-converse"].wire
    staged = {file.name: file.data for file in stage_session("case", "stream", [exchange], wire=wire)}
    assert staged["turn1.jsonl"].decode("utf-8").splitlines() == events.splitlines()
    # Without the wire's decoder the bytes are not a stream the suite can store as text: nothing is stored.
    with pytest.raises(InputError, match=r"the answer \(application/vnd.amazon.eventstream\) is no stream this "
                                         r"API's wire reads; nothing was written"):
        stage_session("case", "stream", [exchange])


def test_a_body_answered_in_a_stream_session_is_never_stored_as_the_stream() -> None:
    body = (CASES / "normal/openai-chat/turn1.json").read_bytes()
    exchange = Exchange(b'{"model": "m"}', 200, {"content-type": "application/json"}, body)
    wire = builtin_adapters()["openai-chat"].wire
    with pytest.raises(InputError) as raised:
        stage_session("normal", "stream", [exchange], wire=wire)
    problem = raised.value.problems[0]
    assert "the client asked for a body, not a stream: the code under test did not stream; nothing was written" in \
        str(problem) and "--mode body" in str(problem)
    assert [file.name for file in stage_session("normal", "body", [exchange], wire=wire)] == [
        "turn1.json", "requests/turn1.body.json"]
