"""OpenAI Responses and Chat streams: assembly, broken streams, and the official SDK as an oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.kit.sse import read_chunks
from conformance.kit.stream import StreamResult
from conformance.providers.openai_chat import ADAPTER as CHAT
from conformance.providers.openai_responses import ADAPTER as RESPONSES
from tests.helpers import FIXTURES


def assemble(provider: str, name: str) -> StreamResult:
    adapter = RESPONSES if provider == "openai-responses" else CHAT
    assert adapter.assemble_stream is not None
    return adapter.assemble_stream(read_chunks(str(FIXTURES / provider / name)))


@pytest.mark.parametrize(
    ("name", "kind", "detail", "text"),
    [
        ("stream-text.sse", "text", None, "Paris."),
        ("stream-tool-call.sse", "tool_calls", None, None),
        ("stream-parallel-interleaved.sse", "tool_calls", None, None),
        ("stream-cut-before-completed.sse", "retryable_error", "interrupted", "Paris."),
        ("stream-duplicate-event.sse", "text", None, "Paris."),
        ("stream-unknown-event.sse", "text", None, "Paris."),
        ("stream-error-event.sse", "retryable_error", "rate_limit", None),
        ("stream-response-failed.sse", "retryable_error", "server_error", None),
    ],
)
def test_responses_streams(name: str, kind: str, detail: str | None, text: str | None) -> None:
    result = assemble("openai-responses", name).response.to_dict()
    assert (result["kind"], result.get("reason"), result["text"]) == (kind, detail, text)


def test_responses_interleaved_argument_deltas_are_kept_apart_by_item_id() -> None:
    calls = assemble("openai-responses", "stream-parallel-interleaved.sse").response.calls
    assert [(call.call_id, call.parsed_arguments) for call in calls] == [
        ("call_A1", {"order_id": "ORD-1001"}), ("call_B2", {"order_id": "ORD-1002"})]


def test_responses_interrupted_stream_has_unknown_usage_and_no_calls() -> None:
    result = assemble("openai-responses", "stream-cut-before-completed.sse")
    assert result.response.usage is None and result.response.calls == ()
    assert result.summary.terminal is False and result.summary.last == "response.output_text.delta"


def test_responses_summary_counts_events_and_marks_duplicates() -> None:
    summary = assemble("openai-responses", "stream-duplicate-event.sse").summary.to_dict()
    assert summary["duplicates"] == 1
    assert summary["events"]["response.output_text.delta"] == 2
    assert (summary["first"], summary["last"], summary["terminal"]) == (
        "response.created", "response.completed", True)


@pytest.mark.parametrize(
    ("name", "kind", "detail", "text"),
    [
        ("stream-text-usage.sse", "text", None, "Par\u2028is."),
        ("stream-crlf-keepalive.sse", "text", None, "Par\u2028is."),
        ("stream-parallel-calls.sse", "tool_calls", None, None),
        ("stream-no-done.sse", "retryable_error", "interrupted", "Par\u2028is."),
        # [DONE] arrived: the stream is complete even though no finish_reason did; its content decides.
        ("stream-done-without-finish.sse", "text", None, "Par\u2028is."),
        ("stream-no-finish-reason-text.sse", "text", None, "Order ORD-1001 shipped."),
        ("stream-no-finish-reason-tool-calls.sse", "tool_calls", None, None),
        ("stream-error-chunk.sse", "retryable_error", "server_error", None),
        ("stream-whole-calls-without-index.sse", "tool_calls", None, None),
    ],
)
def test_chat_streams(name: str, kind: str, detail: str | None, text: str | None) -> None:
    result = assemble("openai-chat", name).response.to_dict()
    assert (result["kind"], result.get("reason"), result["text"]) == (kind, detail, text)


def test_chat_usage_comes_from_the_usage_chunk() -> None:
    usage = assemble("openai-chat", "stream-text-usage.sse").response.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (25, 4, 29)


def test_chat_parallel_fragments_are_joined_per_index() -> None:
    calls = assemble("openai-chat", "stream-parallel-calls.sse").response.calls
    assert [(call.call_id, call.parsed_arguments) for call in calls] == [
        ("call_A1", {"invoice_id": "INV-7"}), ("call_B2", {"invoice_id": "INV-8"})]


@pytest.mark.parametrize(("provider", "name"), [("openai-responses", "stream-tool-call.sse"),
                                                ("openai-chat", "stream-parallel-calls.sse")])
def test_truncating_at_every_event_never_raises_and_is_interrupted_until_the_end(provider: str, name: str) -> None:
    """Cut before its terminal event, a stream is interrupted. A Chat stream is complete from its finish reason on
    (docs/contract.md, "Streams that end without [DONE]"): a cut after it gives the whole stream's kind."""
    data = (FIXTURES / provider / name).read_bytes()
    assembler = RESPONSES.assemble_stream if provider == "openai-responses" else CHAT.assemble_stream
    assert assembler is not None
    whole = assembler([data]).response
    boundaries = [index + 2 for index in range(len(data)) if data[index:index + 2] == b"\n\n"]
    finished = [cut for cut in boundaries if provider == "openai-chat" and b'"finish_reason":"' in data[:cut]]
    for cut in boundaries[:-1]:
        result = assembler([data[:cut]])
        if cut in finished:
            assert (result.response.kind, result.response.calls) == (whole.kind, whole.calls), cut
        else:
            reason = result.response.to_dict()["reason"]
            assert (result.response.kind, reason) == ("retryable_error", "interrupted"), cut
    assert (provider == "openai-chat") == bool(finished[:-1])


# The official SDK as an oracle: its own stream machinery, fed the same bytes through a mock transport.

def _sdk_final_response(path: Path) -> Any:
    import httpx2 as httpx  # the transport library this SDK generation uses
    import openai

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=path.read_bytes(), headers={"content-type": "text/event-stream"})

    client = openai.OpenAI(api_key="test-key", base_url="http://localhost/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    with client.responses.stream(model="gpt-5.5", input="x") as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


@pytest.mark.parametrize("name", ["stream-text.sse", "stream-tool-call.sse"])
def test_responses_assembly_matches_the_openai_sdk(name: str) -> None:
    path = FIXTURES / "openai-responses" / name
    sdk = _sdk_final_response(path)
    ours = assemble("openai-responses", name).response
    sdk_calls = [(item.call_id, item.name, item.arguments) for item in sdk.output if item.type == "function_call"]
    assert [(call.call_id, call.name, call.arguments) for call in ours.calls] == sdk_calls
    assert ours.to_dict()["text"] == (sdk.output_text or None)
    assert ours.usage is not None and sdk.usage is not None
    assert (ours.usage.input_tokens, ours.usage.output_tokens, ours.usage.total_tokens) == (
        sdk.usage.input_tokens, sdk.usage.output_tokens, sdk.usage.total_tokens)


def _chat_stream_ending_in_error(error: object) -> StreamResult:
    """``stream-error-chunk.sse`` with its closing error frame replaced by ``{"error": error}``."""
    import json

    data = (FIXTURES / "openai-chat" / "stream-error-chunk.sse").read_bytes()
    head = data[: data.index(b'data: {"error"')]
    return CHAT.assemble_stream([head + b"data: " + json.dumps({"error": error}).encode() + b"\n\n"])  # type: ignore[misc]


def test_chat_unknown_mid_stream_error_is_a_retryable_server_error() -> None:
    result = _chat_stream_ending_in_error(
        {"message": "upstream went away", "type": "upstream_glitch", "code": "glitch_42"}).response.to_dict()
    assert (result["kind"], result["reason"], result["message"], result["raw"]) == (
        "retryable_error", "server_error", "upstream went away", "stream error=glitch_42")
    assert result["response_id"] == "chatcmpl-9x"


@pytest.mark.parametrize("error", [
    {"message": "Output data may contain inappropriate content.", "code": "data_inspection_failed"},
    {"message": "Output data may contain inappropriate content.", "type": "data_inspection_failed"},
])
def test_chat_filter_code_in_a_stream_error_is_a_filter_refusal(error: dict[str, str]) -> None:
    result = _chat_stream_ending_in_error(error).response.to_dict()
    assert (result["kind"], result["source"], result["text"], result["raw"]) == (
        "refusal", "filter", "Output data may contain inappropriate content.", "stream error=data_inspection_failed")


def test_chat_stream_error_with_a_400_status_and_an_overflow_message_is_a_context_window() -> None:
    result = _chat_stream_ending_in_error(
        {"message": "This model's maximum context length is 32768 tokens.", "status_code": 400}).response.to_dict()
    assert (result["kind"], result["reason"]) == ("fatal_error", "context_window")


def _stream_error(kind: str, raw: str, reason: str, message: str | None,
                  provider_details: dict[str, object] | None = None) -> dict[str, object]:
    """The whole ``to_dict()`` of a Chat stream error frame: no HTTP status, no retry delay, no identity."""
    expected: dict[str, object] = {
        "kind": kind, "raw": raw, "calls": [], "text": None, "usage": None, "raw_usage": None, "response_id": None,
        "model": None, "reason": reason, "http_status": None, "message": message}
    if kind == "retryable_error":
        expected["retry_after_s"] = None
    if provider_details is not None:
        expected["provider_details"] = provider_details
    return expected


@pytest.mark.parametrize(("error", "expected"), [
    # Nothing to go on: a retryable server error named only "stream error".
    (None, _stream_error("retryable_error", "stream error", "server_error", None)),
    ([{"code": "rate_limit_exceeded"}], _stream_error("retryable_error", "stream error", "server_error", None)),
    (503, _stream_error("retryable_error", "stream error", "server_error", None)),
    ({}, _stream_error("retryable_error", "stream error", "server_error", None)),
    ("upstream went away", _stream_error("retryable_error", "stream error", "server_error", "upstream went away")),
    ({"code": "", "type": "", "message": ""}, _stream_error("retryable_error", "stream error", "server_error", None)),
    # The status, from status_code (Groq) or an integer code (OpenRouter), decides as the HTTP status would, and
    # is kept in provider_details.
    ({"status_code": 503, "message": "Service unavailable"},
     _stream_error("retryable_error", "stream error=503", "overloaded", "Service unavailable", {"status_code": 503})),
    ({"code": 429, "message": "Rate limit exceeded"},
     _stream_error("retryable_error", "stream error=429", "rate_limit", "Rate limit exceeded", {"status_code": 429})),
    ({"status_code": 400, "message": "messages: field required"},
     _stream_error("fatal_error", "stream error=400", "invalid_request", "messages: field required",
                   {"status_code": 400})),
    ({"status_code": 599, "message": "edge"},
     _stream_error("retryable_error", "stream error=599", "server_error", "edge", {"status_code": 599})),
    ({"status_code": 400, "type": "invalid_request_error", "message": "bad"},
     _stream_error("fatal_error", "stream error=invalid_request_error", "invalid_request", "bad",
                   {"status_code": 400})),
    # Not an HTTP error status (out of 400..599, a bool, a string): nothing to go on.
    ({"status_code": 600, "message": "edge"}, _stream_error("retryable_error", "stream error", "server_error", "edge")),
    ({"status_code": 399, "message": "edge"}, _stream_error("retryable_error", "stream error", "server_error", "edge")),
    ({"status_code": True, "message": "edge"},
     _stream_error("retryable_error", "stream error", "server_error", "edge")),
    ({"status_code": "429", "message": "edge"},
     _stream_error("retryable_error", "stream error", "server_error", "edge")),
    # Without a status, a known type stands for its status; the frame carried none, so none is kept.
    ({"type": "rate_limit_error", "message": "slow down"},
     _stream_error("retryable_error", "stream error=rate_limit_error", "rate_limit", "slow down")),
    ({"type": "BadRequestError", "message": "bad"},
     _stream_error("fatal_error", "stream error=BadRequestError", "invalid_request", "bad")),
    # Without a status or a known type, a known code decides.
    ({"code": "insufficient_quota", "message": "You exceeded your current quota."},
     _stream_error("fatal_error", "stream error=insufficient_quota", "quota", "You exceeded your current quota.")),
    ({"type": "server_error", "message": "oops"},
     _stream_error("retryable_error", "stream error=server_error", "server_error", "oops")),
])
def test_chat_classify_stream_error_of_hostile_frames_gives_the_whole_expected_result(
        error: object, expected: dict[str, object]) -> None:
    from conformance.providers.openai_common.errors import classify_stream_error

    assert classify_stream_error(error).to_dict() == expected


@pytest.mark.parametrize(("error", "detail", "provider_details"), [
    ({"code": "tool_use_failed", "message": "Failed to call a function.", "failed_generation": "get_order("},
     "Failed to call a function.", {"failed_generation": "get_order("}),
    ({"code": "tool_use_failed", "status_code": 400}, "the server rejected the model's tool call (tool_use_failed)",
     None),
])
def test_chat_stream_error_for_a_rejected_tool_call_is_an_invalid_tool_call(
        error: dict[str, object], detail: str, provider_details: dict[str, object] | None) -> None:
    from conformance.providers.openai_common.errors import classify_stream_error

    expected: dict[str, object] = {
        "kind": "invalid_tool_call", "raw": "stream error=tool_use_failed", "calls": [], "text": None, "usage": None,
        "raw_usage": None, "response_id": None, "model": None, "detail": detail, "undeclared_tool": False}
    if provider_details is not None:
        expected["provider_details"] = provider_details
    assert classify_stream_error(error).to_dict() == expected
