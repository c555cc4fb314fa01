"""``conformance serve``: the recorded turns replayed to the official clients over loopback, Bedrock's binary event
stream included; the router's sessions, repeats and errors; the command (docs/serve.md)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import boto3
import botocore.config
import botocore.exceptions
import openai
import pytest
from botocore.eventstream import EventStreamBuffer
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from conformance.engine.cases import Case, load_cases
from conformance.engine.loop import replay_turn
from conformance.engine.registry import builtin_adapters
from conformance.engine.request_check import check_sent
from conformance.engine.runner import modes_for
from conformance.kit.adapter import Wire
from conformance.kit.task import UserMessage
from conformance.providers.bedrock_converse.eventstream import encode_jsonl
from conformance.replay.router import Replay
from conformance.replay.server import BackgroundServer, session_base
from conformance.stacks.transports import genai_tls, shared_tls
from tests.helpers import CASES

os.environ["AWS_EC2_METADATA_DISABLED"] = "true"  # before any boto3 client exists
ADAPTERS = builtin_adapters()
ALL_CASES = load_cases([CASES])
BY_ID = {case.id: case for case in ALL_CASES}


# ---- Bedrock's event stream ------------------------------------------------------------------------------------

def test_the_first_frame_of_a_converse_stream_is_byte_exact() -> None:
    frames = list(encode_jsonl((CASES / "normal/bedrock-converse/turn1.jsonl").read_text()))
    # 118 bytes; prelude: total length 0x76, headers length 0x52, then the prelude's CRC32.
    assert len(frames) == 11 and len(frames[0]) == 118
    assert frames[0][:12].hex() == "00000076" "00000052" "96d5fade"


def test_every_bundled_bedrock_stream_decodes_with_botocore_frame_for_frame() -> None:
    streams = sorted(CASES.glob("*/bedrock-converse/*.jsonl"))
    assert len(streams) > 15
    for path in streams:
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        buffer = EventStreamBuffer()
        for frame in encode_jsonl(path.read_text()):
            buffer.add_data(frame)
        messages = list(buffer)  # botocore checks both CRCs of every frame
        assert len(messages) == len(lines), path
        for message, line in zip(messages, lines, strict=True):
            ((member, payload),) = line.items()
            kind = "exception" if member.endswith("Exception") else "event"
            assert message.headers[":message-type"] == kind
            assert message.headers[":exception-type" if kind == "exception" else ":event-type"] == member
            assert json.loads(message.payload) == payload


def test_a_torn_frame_fails_botocores_crc_check() -> None:
    frame = bytearray(next(encode_jsonl('{"messageStart":{"role":"assistant"}}')))
    frame[-6] ^= 0x01
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(frame))
    with pytest.raises(Exception, match="(?i)checksum|crc"):
        list(buffer)


# ---- Every bundled turn 1, through every official client ---------------------------------------------------------

def _bedrock(base: str) -> Any:
    return boto3.client("bedrock-runtime", endpoint_url=base, region_name="us-east-1", aws_access_key_id="replay",
                        aws_secret_access_key="replay",
                        config=botocore.config.Config(retries={"total_max_attempts": 1}))


def _call(provider: str, base: str, request: dict[str, Any], stream: bool) -> None:
    """The vendor's own client, pointed at ``base``, sends ``request``; a stream is read to its end. Each client gets
    the one shared TLS context, as the stacks' clients do (``shared_tls``: nothing here speaks TLS)."""
    if provider in ("openai-responses", "openai-chat"):
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-replay", max_retries=0,
                               http_client=openai.DefaultHttpxClient(verify=shared_tls()))
        create = client.responses.create if provider == "openai-responses" else client.chat.completions.create
        result = create(**request, stream=True) if stream else create(**request)
    elif provider == "anthropic-messages":
        messages = anthropic.Anthropic(base_url=base, api_key="sk-ant-replay", max_retries=0,
                                       http_client=anthropic.DefaultHttpxClient(verify=shared_tls())).messages
        result = messages.create(**request, stream=stream) if stream else messages.create(**request)
    elif provider == "gemini":
        tls = genai_tls()
        client = genai.Client(api_key="replay", http_options=genai_types.HttpOptions(
            base_url=base, api_version="v1beta", client_args=tls["client_args"],
            async_client_args=tls["async_client_args"]))
        config = genai_types.GenerateContentConfig.model_validate({
            **request.get("generationConfig", {}), "systemInstruction": request.get("systemInstruction"),
            "tools": request.get("tools"), "toolConfig": request.get("toolConfig"),
            # On by default: a CONTINUATION finish makes the SDK send a follow-up request by itself (see below).
            "automaticContinuation": False})
        method = client.models.generate_content_stream if stream else client.models.generate_content
        result = method(model="model-under-test", contents=request["contents"], config=config)
    else:
        client = _bedrock(base)
        result = (client.converse_stream if stream else client.converse)(modelId="model-under-test", **request)
        result = result["stream"] if stream else result
    if stream:
        for _ in result:
            pass


ERRORS: tuple[type[BaseException], ...] = (openai.APIError, anthropic.APIError, genai_errors.APIError,
                                           botocore.exceptions.ClientError, botocore.exceptions.EventStreamError)


def _items() -> list[tuple[Case, str, str]]:
    return [(case, provider, mode) for case in ALL_CASES for provider, adapter in ADAPTERS.items()
            if provider in case.providers for mode in modes_for(case, provider, adapter)]


@pytest.mark.parametrize("provider", sorted(ADAPTERS))
def test_every_bundled_first_turn_reaches_the_official_client_and_its_request_is_kept(provider: str) -> None:
    """The client parses every first turn (success), or raises its own error class for an HTTP error or an error in
    the stream exactly where the suite's adapter reads an error kind; the server keeps what the client sent."""
    items = [(case, mode) for case, name, mode in _items() if name == provider]
    assert len(items) > 30
    with BackgroundServer(ALL_CASES) as server:
        for case, mode in items:
            base = session_base(server.base, case.id, provider, mode)
            request = ADAPTERS[provider].build_request(case.task, [UserMessage(text=case.task.input)])
            turn = case.providers[provider].turns[0]
            kind = replay_turn(ADAPTERS[provider], turn, mode)[0].kind
            try:
                _call(provider, base, request, stream=mode == "stream")
                raised = None
            except ERRORS as error:
                raised = error
            failed = turn.status >= 400 or kind in ("retryable_error", "fatal_error")
            assert (raised is not None) == failed or (raised is None and mode == "stream"), (
                case.id, mode, kind, raised)
            session = server.replay.sessions[(case.id, provider, mode)]
            assert session.served == [1] and session.unmatched == []
            sent = session.requests[0]
            # What the real client sent passes the request checks (google-genai spells one key in snake_case).
            assert check_sent(ADAPTERS[provider], case.task, sent) == [], (case.id, mode)
            if provider in ("openai-responses", "openai-chat", "anthropic-messages", "bedrock-converse"):
                sent = {key: value for key, value in sent.items() if key not in ("stream", "modelId")}
                assert sent == request, (case.id, mode)
            else:
                assert sent["contents"] == request["contents"], (case.id, mode)


def test_google_genai_follows_a_continuation_by_itself_unless_told_not_to() -> None:
    """google-genai 3.x sends a second request carrying the ``continuationToken`` of a CONTINUATION finish
    (``GenerateContentConfig.automatic_continuation``, on by default): a replay with one recorded turn answers it
    with an error naming the case, and a stack must turn it off to see the turn the vendor sent."""
    case = BY_ID["continuation"]
    request = ADAPTERS["gemini"].build_request(case.task, [UserMessage(text=case.task.input)])
    with BackgroundServer(ALL_CASES) as server:
        client = genai.Client(api_key="replay", http_options=genai_types.HttpOptions(
            base_url=session_base(server.base, case.id, "gemini", "body"), api_version="v1beta"))
        with pytest.raises(genai_errors.ClientError) as raised:
            client.models.generate_content(model="model-under-test", contents=request["contents"])
    assert raised.value.code == 400
    assert raised.value.message == "case continuation [gemini]: request 2 asks for turn 2, but 1 turn(s) are recorded"


def test_a_mid_stream_exception_frame_surfaces_as_botocores_error_with_its_member_name() -> None:
    case = BY_ID["mid_stream_error"]
    request = ADAPTERS["bedrock-converse"].build_request(case.task, [UserMessage(text=case.task.input)])
    with BackgroundServer(ALL_CASES) as server:
        stream = _bedrock(session_base(server.base, case.id, "bedrock-converse", "stream")).converse_stream(
            modelId="model-under-test", **request)["stream"]
        with pytest.raises(botocore.exceptions.EventStreamError) as raised:
            for _ in stream:
                pass
    assert raised.value.response["Error"]["Code"] == "modelStreamErrorException"


# ---- The router ------------------------------------------------------------------------------------------------

def _post(replay: Replay, path: str, body: Any) -> tuple[int, dict[str, str], bytes]:
    reply = replay.handle("POST", path, "", json.dumps(body).encode())
    return reply.status, reply.headers, b"".join(reply.chunks)


def test_turns_advance_per_session_and_a_byte_identical_repeat_replays_the_same_turn() -> None:
    replay = Replay(ALL_CASES)
    path = "/s/normal/openai-chat/body/v1/chat/completions"
    first = _post(replay, path, {"n": 1})
    assert _post(replay, path, {"n": 1}) == first  # a client's retry
    second = _post(replay, path, {"n": 2})
    assert json.loads(first[2])["choices"][0]["finish_reason"] == "tool_calls"
    assert json.loads(second[2])["choices"][0]["finish_reason"] == "stop"
    assert second[2] == (CASES / "normal/openai-chat/turn2.json").read_bytes()
    assert first[1]["x-request-id"] == "req_normal_body_1" and second[1]["x-request-id"] == "req_normal_body_2"
    other = _post(replay, "/s/normal/openai-chat/stream/v1/chat/completions", {"n": 1, "stream": True})
    assert b'"finish_reason":"tool_calls"' in other[2].replace(b" ", b"")  # its own cursor, as a stream
    # A stream session refuses a request that does not stream: a body would pass a stream row for code that never
    # streams.
    status, _, refused = _post(replay, "/s/normal/openai-chat/stream/v1/chat/completions", {"n": 2})
    assert status == 400 and "stream session: request 2 asked for a body, not a stream: the code under test did " \
                              "not stream" in json.loads(refused)["error"]["message"]
    streamed = replay.sessions[("normal", "openai-chat", "stream")]
    assert streamed.streamed == [True, False] and streamed.did_not_stream == streamed.unmatched
    session = replay.sessions[("normal", "openai-chat", "body")]
    assert session.requests == [{"n": 1}, {"n": 2}] and session.served == [1, 2]

    status, _, body = _post(replay, path, {"n": 3})
    assert status == 400
    assert json.loads(body)["error"]["message"] == ("case normal [openai-chat]: request 3 asks for turn 3, but 2 "
                                                    "turn(s) are recorded")
    assert session.unmatched == [json.loads(body)["error"]["message"]]


@pytest.mark.parametrize(("path", "message"), [
    ("/s/no_such_case/openai-chat/body/v1/chat/completions", "no case 'no_such_case' here; cases: "),
    ("/s/normal/no-such-provider/body/v1/chat/completions", "no provider of case normal 'no-such-provider' here"),
    ("/s/normal/openai-chat/body/v2/chat", "case normal: /v2/chat is none of the vendor paths this server speaks"),
    ("/v1/chat/completions", "no session in POST /v1/chat/completions: expected POST /s/<case>/<provider>/"),
])
def test_a_request_no_session_answers_gets_an_error_naming_what_was_expected(path: str, message: str) -> None:
    status, headers, body = _post(Replay(ALL_CASES), path, {})
    assert status == 404 and headers["x-should-retry"] == "false"
    assert json.loads(body)["error"]["message"].startswith(message)


def test_the_paths_and_request_id_header_are_the_adapters_wire() -> None:
    chat = builtin_adapters()["openai-chat"]
    custom = dataclasses.replace(chat, wire=Wire(paths=((re.compile(r"/api/v9/complete"), None),),
                                                 request_id_header="x-trace-id"))
    replay = Replay(ALL_CASES, {"openai-chat": custom})
    status, headers, body = _post(replay, "/s/normal/openai-chat/body/api/v9/complete", {})
    assert status == 200 and headers["x-trace-id"] == "req_normal_body_1" and "x-request-id" not in headers
    assert body == (CASES / "normal/openai-chat/turn1.json").read_bytes()
    assert _post(replay, "/s/normal/openai-chat/body/v1/chat/completions", {})[0] == 404  # not this wire's path
    # A team's adapter that reuses a built-in id without a wire of its own keeps the built-in paths.
    replay = Replay(ALL_CASES, {"openai-chat": dataclasses.replace(chat, wire=None)})
    assert _post(replay, "/s/normal/openai-chat/body/v1/chat/completions", {})[0] == 200

    # A team's adapter without a wire of its own is served on a path a built-in speaks.
    normal = BY_ID["normal"]
    theirs = dataclasses.replace(normal, providers={"myapp-chat": normal.providers["openai-chat"]})
    mine = dataclasses.replace(chat, id="myapp-chat", wire=None)
    replay = Replay([theirs], {"openai-chat": chat, "myapp-chat": mine})
    status, headers, _ = _post(replay, "/s/normal/myapp-chat/body/v1/chat/completions", {})
    assert status == 200 and headers["x-request-id"] == "req_normal_body_1"


def test_error_turns_keep_their_status_and_headers_and_refuse_retries() -> None:
    status, headers, body = _post(Replay(ALL_CASES), "/s/http_rate_limit/anthropic-messages/body/v1/messages", {})
    recorded = BY_ID["http_rate_limit"].providers["anthropic-messages"].turns[0]
    assert status == recorded.status == 429
    assert headers["x-should-retry"] == "false" and headers["request-id"] == "req_http_rate_limit_body_1"
    for name, value in recorded.headers.items():
        assert headers[name.lower()] == value
    assert json.loads(body) == recorded.body


def test_an_sse_stream_is_served_byte_for_byte_one_event_per_chunk() -> None:
    reply = Replay(ALL_CASES).handle("POST", "/s/normal/anthropic-messages/stream/v1/messages", "",
                                     b'{"stream": true}')
    text = (CASES / "normal/anthropic-messages/turn1.sse").read_bytes()
    assert reply.streamed and reply.headers["content-type"] == "text/event-stream; charset=utf-8"
    chunks = list(reply.chunks)
    assert b"".join(chunks) == text
    assert len(chunks) == text.count(b"\n\n") and all(chunk.endswith(b"\n\n") for chunk in chunks)


# ---- The command -----------------------------------------------------------------------------------------------

def _serve(*arguments: str, client: Callable[[str], None]) -> tuple[int, str, dict[str, Any]]:
    process = subprocess.Popen([sys.executable, "-m", "conformance", "serve", *arguments], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    first = process.stdout.readline()
    base = first.split("listening on ")[1].split(" ")[0]
    while not first.endswith("export AWS_MAX_ATTEMPTS=1\n"):  # the banner, read before communicate() takes over
        first += process.stdout.readline()
    worker = threading.Thread(target=client, args=(base,))
    worker.start()
    out, err = process.communicate(timeout=60)
    worker.join()
    assert err == ""
    return process.returncode, first + out, {}


def test_the_command_prints_the_client_environment_serves_and_reports_each_session(tmp_path: Path) -> None:
    def client(base: str) -> None:
        root = session_base(base, "normal", "openai-chat", "body")
        for n in (1, 2, 3):
            request = urllib.request.Request(f"{root}/v1/chat/completions", data=json.dumps({"n": n}).encode(),
                                             headers={"content-type": "application/json"})
            try:
                urllib.request.urlopen(request, timeout=10).read()
            except urllib.error.HTTPError as error:
                assert error.code == 400

    code, out, _ = _serve("--max-requests", "3", "--max-seconds", "30", "--report-dir", str(tmp_path),
                          client=client)
    assert code == 1  # the third request asked for a turn that was not recorded
    assert "  export OPENAI_BASE_URL=http://127.0.0.1:" in out and "  export AWS_MAX_ATTEMPTS=1" in out
    assert out.rstrip().splitlines()[-1] == ("conformance serve: 1 session(s), 2 turn(s) served, 1 request(s) no "
                                             "turn answered, 2 request(s) failing the request checks")
    (session,) = json.loads((tmp_path / "serve.json").read_text())["sessions"]
    assert (session["case"], session["turns_recorded"], session["turns_served"]) == ("normal", 2, [1, 2])
    assert "no instructions in the vendor's system slot" in session["requests"][0]["problems"]


def test_the_command_stops_by_itself_after_max_seconds() -> None:
    code, out, _ = _serve("--max-seconds", "0.5", client=lambda base: None)
    assert code == 0 and out.rstrip().splitlines()[-1].startswith("conformance serve: 0 session(s)")


# ---- In process ------------------------------------------------------------------------------------------------

def test_the_in_process_transports_serve_the_same_turns_without_a_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx2

    from conformance.stacks.transports import attach_to_botocore, httpx_transport

    def no_socket(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an in-process transport opened a socket")

    replay = Replay(ALL_CASES)
    monkeypatch.setattr("socket.socket.connect", no_socket)
    case = BY_ID["normal"]
    request = ADAPTERS["openai-chat"].build_request(case.task, [UserMessage(text=case.task.input)])
    client = openai.OpenAI(base_url="http://127.0.0.1/s/normal/openai-chat/stream/v1", api_key="sk-replay",
                           max_retries=0, http_client=httpx2.Client(transport=httpx_transport(replay)))
    chunks = list(client.chat.completions.create(**request, stream=True))
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "tool_calls"
    assert replay.sent("normal", "openai-chat", "stream")[0]["messages"] == request["messages"]

    bedrock = _bedrock("http://127.0.0.1/s/normal/bedrock-converse/stream")
    attach_to_botocore(bedrock, replay)
    converse = ADAPTERS["bedrock-converse"].build_request(case.task, [UserMessage(text=case.task.input)])
    events = list(bedrock.converse_stream(modelId="model-under-test", **converse)["stream"])
    assert len(events) == 11 and events[-2] == {"messageStop": {"stopReason": "tool_use"}}
    repeat = list(bedrock.converse_stream(modelId="model-under-test", **converse)["stream"])  # the same turn again
    assert repeat == events
    with pytest.raises(Exception, match="did not stream"):  # a body asked of a stream session
        bedrock.converse(modelId="model-under-test", **converse)
    converse["messages"].append({"role": "user", "content": [{"text": "And then?"}]})
    ended = list(bedrock.converse_stream(modelId="model-under-test", **converse)["stream"])  # the next turn
    assert ended[-2] == {"messageStop": {"stopReason": "end_turn"}}


def test_a_client_that_resets_its_connection_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    import socket
    import struct

    with BackgroundServer(ALL_CASES) as server:
        port = int(server.base.rsplit(":", 1)[1])
        for _ in range(3):
            client = socket.create_connection(("127.0.0.1", port))
            client.sendall(b"POST /s/normal/openai-chat/body/v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
            # SO_LINGER 0: close with a reset, mid-request, as a client dropping a pooled connection does.
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()
        # The server still answers afterwards.
        status, _, _ = _post(server.replay, "/s/normal/openai-chat/body/v1/chat/completions", {})
        assert status == 200
        threading.Event().wait(0.3)
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "ConnectionResetError" not in captured.err


# ---- A client the server has never seen: stacks' sessions, signals, errors every client can print -------------------

def _requests(provider: str, count: int) -> list[dict[str, Any]]:
    """``count`` different first requests of the normal case, as the reference adapter builds them."""
    task = BY_ID["normal"].task
    return [ADAPTERS[provider].build_request(task, [UserMessage(text=f"{task.input} ({n})")]) for n in range(count)]


def test_a_stack_session_is_served_checked_and_reported(tmp_path: Path) -> None:
    def client(base: str) -> None:
        root = session_base(base, "normal", "openai-chat@litellm", "body")
        for request in _requests("openai-chat", 2):
            http = urllib.request.Request(f"{root}/v1/chat/completions", data=json.dumps(request).encode(),
                                          headers={"content-type": "application/json"})
            urllib.request.urlopen(http, timeout=10).read()

    code, out, _ = _serve("--max-requests", "2", "--max-seconds", "30", "--report-dir", str(tmp_path),
                          client=client)
    assert code == 0, out
    (session,) = json.loads((tmp_path / "serve.json").read_text())["sessions"]
    assert (session["provider"], session["turns_recorded"], session["turns_served"]) == (
        "openai-chat@litellm", 2, [1, 2])
    # The Chat adapter read the stack's requests: the checks ran (a list, not None) and found nothing.
    assert [request["problems"] for request in session["requests"]] == [[], []]


def test_sigterm_ends_serve_as_a_bound_does_and_serve_json_is_written(tmp_path: Path) -> None:
    import signal
    import time

    process = subprocess.Popen([sys.executable, "-m", "conformance", "serve", "--max-seconds", "60", "--report-dir",
                                str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    base = process.stdout.readline().split("listening on ")[1].split(" ")[0]
    root = session_base(base, "normal", "anthropic-messages", "body")
    request = urllib.request.Request(f"{root}/v1/messages", data=json.dumps(_requests("anthropic-messages", 1)[0])
                                     .encode(), headers={"content-type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()
    time.sleep(0.2)  # the reply is out before the request is counted
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert (process.returncode, err) == (0, "")
    assert "conformance serve: stopped by SIGTERM" in out
    (session,) = json.loads((tmp_path / "serve.json").read_text())["sessions"]
    assert (session["provider"], session["turns_served"]) == ("anthropic-messages", [1])


def _sdk_call(provider: str, base: str, request: dict[str, Any]) -> BaseException:
    """The vendor's own client, with its default retries ON, sends ``request``; the exception it raises."""
    try:
        if provider == "openai-chat":
            openai.OpenAI(base_url=f"{base}/v1", api_key="sk-replay", max_retries=2).chat.completions.create(**request)
        elif provider == "anthropic-messages":
            anthropic.Anthropic(base_url=base, api_key="sk-ant-replay", max_retries=2).messages.create(**request)
        elif provider == "gemini":
            client = genai.Client(api_key="replay", http_options=genai_types.HttpOptions(
                base_url=base, api_version="v1beta",
                retry_options=genai_types.HttpRetryOptions(attempts=3, initial_delay=0.01, max_delay=0.02)))
            config = genai_types.GenerateContentConfig.model_validate({
                **request.get("generationConfig", {}), "systemInstruction": request.get("systemInstruction"),
                "tools": request.get("tools"), "toolConfig": request.get("toolConfig")})
            client.models.generate_content(model="model-under-test", contents=request["contents"], config=config)
        else:
            boto3.client("bedrock-runtime", endpoint_url=base, region_name="us-east-1", aws_access_key_id="replay",
                         aws_secret_access_key="replay",
                         config=botocore.config.Config(retries={"mode": "standard", "total_max_attempts": 3,
                                                                "max_attempts": 2})
                         ).converse(modelId="model-under-test", **request)
    except ERRORS as error:
        return error
    raise AssertionError("the client raised nothing")


@pytest.mark.parametrize("provider", ["openai-chat", "anthropic-messages", "gemini", "bedrock-converse"])
def test_each_client_prints_the_servers_own_error_and_does_not_retry_it(provider: str) -> None:
    with BackgroundServer(ALL_CASES, max_seconds=60) as server:
        root = session_base(server.base, "normal", provider, "body")
        first, second, third = _requests(provider, 3)
        for request in (first, second):
            server.replay.handle("POST", root[len(server.base):] + _vendor_path(provider), "",
                                 json.dumps(request).encode())
        error = _sdk_call(provider, root, third)
        session = server.replay.sessions[("normal", provider, "body")]
    message = "case normal [" + provider + "]: request 3 asks for turn 3, but 2 turn(s) are recorded"
    assert message in str(error), str(error)
    assert "Conflict" not in str(error)
    assert session.unmatched == [message]  # one request: the client did not retry the 400


def _vendor_path(provider: str) -> str:
    return {"openai-chat": "/v1/chat/completions", "anthropic-messages": "/v1/messages",
            "gemini": "/v1beta/models/model-under-test:generateContent",
            "bedrock-converse": "/model/model-under-test/converse"}[provider]


@pytest.mark.parametrize("provider", ["anthropic-messages", "gemini", "bedrock-converse"])
def test_an_unknown_case_is_named_in_the_vendors_own_error_shape(provider: str) -> None:
    with BackgroundServer(ALL_CASES, max_seconds=60) as server:
        error = _sdk_call(provider, session_base(server.base, "no_such_case", provider, "body"),
                          _requests(provider, 1)[0])
    assert "no case 'no_such_case' here" in str(error), str(error)
