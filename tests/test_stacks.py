"""Stacks: the openai SDK as a lane of the matrix, through the replay server (docs/stacks.md)."""

from __future__ import annotations

import dataclasses
import json
import ssl
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import modes_for, run_case
from conformance.kit.task import Task, TranscriptEntry
from conformance.kit.types import ModelResponse
from conformance.providers.openai_chat.request import build_request
from conformance.report.findings import OVERRIDDEN, compare_rows
from conformance.stacks.runner import run_stack_case
from conformance.stacks.sdk import openai_chat as sdk_stack
from conformance.stacks.stack import Endpoint, builtin_stacks, gateway_stacks
from tests.helpers import CASES, OWN, cli

ADAPTERS = builtin_adapters()
CHAT = ADAPTERS["openai-chat"]
CASE = {case.id: case for case in load_cases([CASES])}
STACK = builtin_stacks()["openai-chat@openai-sdk"]


def _shape(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["outcome"], [(turn["kind"], turn.get("reason") or turn.get("source")) for turn in row["turns"]], [
        [call["call_id"] for call in turn["calls"]] for turn in row["turns"]], row["usage"]


@pytest.mark.parametrize("in_process", [False, True], ids=["loopback", "in-process"])
@pytest.mark.parametrize("row_id", sorted(builtin_stacks()))
def test_every_row_through_a_reference_stack_classifies_like_the_raw_adapter_or_is_a_declared_difference(
        row_id: str, in_process: bool) -> None:
    stack = builtin_stacks()[row_id]
    reader = ADAPTERS[stack.provider]
    rows, differing = 0, []
    for case in CASE.values():
        if stack.provider not in case.providers:
            continue
        for mode in modes_for(case, stack.provider, reader):
            raw = run_case(case, stack.provider, reader, mode)
            row, error, requests = run_stack_case(case, stack, reader, mode, in_process)
            assert error is None and row["passed"], (case.id, mode, row["failures"])
            assert (row["provider"], row["stack"]) == (row_id, stack.id)
            assert len(requests) == len(row["turns"]) and all(turn["request"]["checked"] for turn in row["turns"])
            findings = compare_rows(raw, row)
            if (case.id, mode) in stack.differences:
                # Declared: the client really differs here, and the row says why.
                assert _shape(row) != _shape(raw) and row["override"] == {"why": stack.differences[case.id, mode].why}
                assert findings and {finding.field for finding in findings} <= OVERRIDDEN, findings
                differing.append((case.id, mode))
            else:
                assert _shape(row) == _shape(raw), (case.id, mode)
                assert findings == [], findings  # a reference stack hides nothing the raw adapter reads
            rows += 1
    assert rows > 45 and sorted(differing) == sorted(stack.differences)


def test_the_requests_checked_are_the_ones_the_sdk_sent() -> None:
    row, _, requests = run_stack_case(CASE["normal"], STACK, CHAT, "stream")
    assert [request["stream"] for request in requests] == [True, True]
    assert [request["stream_options"] for request in requests] == [{"include_usage": True}] * 2
    assert requests[1]["messages"][-1]["role"] == "tool"
    assert row["correlation"]["matched"] == 1


def test_a_stack_that_decides_tool_calls_from_the_finish_reason_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    original = sdk_stack._from_message

    def by_finish_reason(turn: Any) -> ModelResponse:
        if turn.finish != "tool_calls":
            turn.calls = []
        return original(turn)

    monkeypatch.setattr(sdk_stack, "_from_message", by_finish_reason)
    row, _, _ = run_stack_case(CASE["forced_tool_choice"], STACK, CHAT, "body")
    assert row["passed"] is False
    assert row["failures"][0] == ("outcome: expected answer_ready, got empty; turn 1, read as empty, had "
                                  "finish_reason=stop")


def test_a_request_the_real_client_sends_that_breaks_correlation_fails_the_row() -> None:
    def wrong_id(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
        import openai

        params = build_request(task, transcript)
        for message in params["messages"]:
            if message.get("role") == "tool":
                message["tool_call_id"] = "call_not_the_one"
        client = openai.OpenAI(base_url=f"{endpoint.base_url}/v1", api_key="sk-replay", max_retries=0)
        return sdk_stack._from_message(sdk_stack._Turn.of_completion(client.chat.completions.create(**params)))

    stack = dataclasses.replace(STACK, id="broken-ids", call=wrong_id)
    row, _, _ = run_stack_case(CASE["normal"], stack, CHAT, "body")
    assert row["passed"] is False
    assert "correlation: turn 2: tool result call_not_the_one answers no call of turn 1" in row["failures"]


def _never_streams(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
    """A team's glue that always asks for a body, whatever the endpoint asks."""
    from conformance.stacks.sdk.openai_client import openai_client

    completion = openai_client(endpoint).chat.completions.create(**build_request(task, transcript))
    return sdk_stack._from_message(sdk_stack._Turn.of_completion(completion))


@pytest.mark.parametrize("in_process", [False, True], ids=["loopback", "in-process"])
def test_a_stream_row_passes_only_when_the_client_streamed_and_carries_what_it_was_sent(in_process: bool) -> None:
    never = dataclasses.replace(STACK, id="never-streams", call=_never_streams)
    body, _, _ = run_stack_case(CASE["normal"], never, CHAT, "body", in_process)
    assert body["passed"], body["failures"]
    row, _, _ = run_stack_case(CASE["normal"], never, CHAT, "stream", in_process)
    assert row["passed"] is False
    assert row["failures"][0].startswith("your code did not stream: case normal [openai-chat@never-streams], stream "
                                         "session: request 1 asked for a body, not a stream")
    # A client that streams: the row carries the summary of each stream it was sent, as the raw adapter's row does.
    streamed, _, _ = run_stack_case(CASE["normal"], STACK, CHAT, "stream", in_process)
    raw = run_case(CASE["normal"], "openai-chat", CHAT, "stream")
    assert [turn["stream"] for turn in streamed["turns"]] == [turn["stream"] for turn in raw["turns"]]
    assert all(turn["stream"] and turn["stream"]["terminal"] for turn in streamed["turns"])
    assert all(turn["stream"] is None for turn in body["turns"])


def test_run_adds_the_stack_lane_beside_the_providers(tmp_path: Path) -> None:
    result = cli("run", *OWN, "--stack", "sdks", "--provider", "openai-chat", "--case", "normal", "--case",
                 "truncation", "--report-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["providers"] == ["openai-chat", "openai-chat@openai-sdk"]
    assert sorted((row["provider"], row["stack"], row["case"], row["mode"]) for row in report["results"]) == sorted(
        (provider, stack, case, mode) for provider, stack in [("openai-chat", "raw"),
                                                               ("openai-chat@openai-sdk", "openai-sdk")]
        for case in ("normal", "truncation") for mode in ("body", "stream"))


def test_an_unknown_stack_is_a_usage_error_and_a_missing_sdk_skips_with_a_reason(tmp_path: Path) -> None:
    unknown = cli("run", *OWN, "--stack", "nope", "--report-dir", str(tmp_path / "a"))
    assert unknown.returncode == 2
    lanes = ("anthropic-messages@anthropic-sdk, anthropic-messages@langchain, anthropic-messages@litellm, "
             "anthropic-messages@pydantic-ai, bedrock-converse@boto3, bedrock-converse@langchain, "
             "bedrock-converse@litellm, bedrock-converse@pydantic-ai, gemini@google-genai, gemini@langchain, "
             "gemini@litellm, gemini@pydantic-ai, openai-chat@langchain, openai-chat@litellm, openai-chat@openai-sdk, "
             "openai-chat@pydantic-ai, openai-responses@langchain, openai-responses@litellm, "
             "openai-responses@openai-sdk, openai-responses@pydantic-ai")
    assert unknown.stderr.strip() == (
        f"error: --stack: unknown stack 'nope'. Fix: use all, sdks, gateways, telemetry, one of {lanes}, a telemetry "
        "lane (e.g. openai-chat@openai-sdk+openllmetry) or module:object")
    module = tmp_path / "my_stack.py"
    module.write_text("import dataclasses\nfrom conformance.stacks.stack import builtin_stacks\n"
                      "STACK = dataclasses.replace(builtin_stacks()['openai-chat@openai-sdk'], id='needs-sdk',\n"
                      "                            requires=('no_such_sdk_module',))\n")
    skipped = cli("run", *OWN, "--stack", f"{module}:STACK", "--provider", "openai-chat", "--case", "normal",
                  "--report-dir", str(tmp_path / "b"))
    assert skipped.returncode == 0
    assert ("skipped stack openai-chat@needs-sdk: no_such_sdk_module not installed (pip install "
            "'llm-conformance[stacks]')") in skipped.stderr
    assert json.loads((tmp_path / "b/report.json").read_text())["providers"] == ["openai-chat"]
    # A gateway stack names the extra that installs it.
    gateway = dataclasses.replace(gateway_stacks()["openai-chat@litellm"], requires=("no_such_gateway_module",))
    assert gateway.skip_reason() == "no_such_gateway_module not installed (pip install 'llm-conformance[gateways]')"


def test_run_in_process_opens_no_socket_for_the_stacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.stacks.runner as lane

    def no_server() -> Any:
        raise AssertionError("an in-process run started the loopback server")

    monkeypatch.setattr(lane, "shared_server", no_server)
    result = cli("run", *OWN, "--stack", "sdks", "--in-process", "--provider", "gemini", "--provider",
                 "bedrock-converse", "--case", "normal", "--report-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["providers"] == ["bedrock-converse", "bedrock-converse@boto3", "gemini", "gemini@google-genai"]
    assert report["summary"] == {"cases": 1, "failed": 0, "passed": 8, "rows": 8}


def test_an_async_stack_is_awaited_and_classifies_like_the_sync_one() -> None:
    async def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
        import openai

        async with openai.AsyncOpenAI(base_url=f"{endpoint.base_url}/v1", api_key="sk-replay",
                                      max_retries=0) as client:
            completion = await client.chat.completions.create(**build_request(task, transcript))
        return sdk_stack._from_message(sdk_stack._Turn.of_completion(completion))

    stack = dataclasses.replace(STACK, id="openai-async", call=call)
    for case_id in ("normal", "parallel_tool_calls", "forced_tool_choice"):
        row, error, _ = run_stack_case(CASE[case_id], stack, CHAT, "body")
        assert error is None and row["passed"], row["failures"]
        assert _shape(row) == _shape(run_stack_case(CASE[case_id], STACK, CHAT, "body")[0])


def test_a_forked_child_gets_a_replay_server_of_its_own() -> None:
    import os

    import conformance.stacks.runner as lane

    parent = lane.shared_server()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's server thread is gone, so a row must still be served
        import signal

        signal.alarm(60)  # a child talking to the parent's dead server would wait forever: end it instead
        try:
            row, error, _ = run_stack_case(CASE["normal"], STACK, CHAT, "body")
            ok = error is None and row["passed"] and lane.shared_server() is not parent
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert lane.shared_server() is parent


def test_a_client_built_by_a_lambda_is_built_once_per_session() -> None:
    from conformance.stacks.stack import client_for

    built: list[str] = []
    endpoint = Endpoint(base_url="http://127.0.0.1:1/s/normal/openai-chat@team/body", stream=False)
    for _ in range(3):  # a lambda written inside the stack's call: a new function object each time
        client_for(endpoint, lambda e: built.append(e.base_url) or object())
    assert built == [endpoint.base_url]
    for region in ("eu", "us"):  # what a builder closes over tells two builders apart
        client_for(endpoint, lambda e, region=region: built.append(region) or object())
    other = Endpoint(base_url="http://127.0.0.1:1/s/normal/openai-chat@team/stream", stream=True)
    client_for(other, lambda e: built.append(e.base_url) or object())
    assert built == [endpoint.base_url, "eu", "us", other.base_url]


def test_a_client_kept_from_a_module_imported_again_is_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # pytester's in-process runs remove what a session imported: the SDK imported again has new classes, and a
    # client kept from before would fail the SDK's own checks (openai: "Could not find the generic base class").
    import types

    from conformance.stacks.stack import client_for

    module = types.ModuleType("vendor_sdk_of_the_test")  # a module made on the spot, as an import makes one
    module.Client = type("Client", (), {"__module__": module.__name__})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    endpoint = Endpoint(base_url="http://127.0.0.1:1/s/normal/openai-chat@reload/body", stream=False)

    def build(_: Endpoint) -> Any:
        return sys.modules["vendor_sdk_of_the_test"].Client()

    first = client_for(endpoint, build)
    assert client_for(endpoint, build) is first  # kept while its module is the one loaded
    again = types.ModuleType(module.__name__)
    again.Client = type("Client", (), {"__module__": again.__name__})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, again)
    rebuilt = client_for(endpoint, build)
    assert isinstance(rebuilt, again.Client) and client_for(endpoint, build) is rebuilt


@pytest.mark.parametrize("in_process", [False, True], ids=["loopback", "in-process"])
@pytest.mark.parametrize("row_id", ["openai-chat@openai-sdk", "openai-responses@openai-sdk",
                                    "anthropic-messages@anthropic-sdk", "gemini@google-genai",
                                    "openai-chat@langchain", "openai-responses@langchain", "gemini@langchain",
                                    "openai-chat@pydantic-ai", "anthropic-messages@pydantic-ai",
                                    "gemini@pydantic-ai"])
def test_a_stacks_clients_share_one_tls_context_instead_of_reading_the_ca_bundle_per_row(
        row_id: str, in_process: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each replay session has its own base URL, so its own SDK client; a client left to itself reads the whole CA
    bundle into a TLS context of its own (three for google-genai), about 28 ms a time, for a replay that never speaks
    TLS. The stacks' clients take the one shared context (conformance.stacks.transports.shared_tls). The first row
    runs before counting: importing a gateway may build a context of its own once (langchain_openai does)."""
    stack = {**builtin_stacks(), **gateway_stacks()}[row_id]
    if stack.skip_reason():
        pytest.fail(f"the test extra installs every stack's client: {stack.skip_reason()}")
    adapter = ADAPTERS[stack.provider]
    first, *rest = ("normal", "parallel_tool_calls", "truncation", "refusal")
    assert run_stack_case(CASE[first], stack, adapter, "body", in_process)[1] is None
    loads: list[object] = []
    original = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    for case_id in rest:  # a gateway's row may fail (what it hides, docs/gateways.md); each made its calls
        row, error, requests = run_stack_case(CASE[case_id], stack, adapter, "body", in_process)
        assert error is None and requests, (case_id, row["error"])
    assert loads == []
