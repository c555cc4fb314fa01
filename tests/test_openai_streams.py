"""OpenAI Responses and Chat streams: assembly, broken streams, and the official SDK as an oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.providers.openai_chat import ADAPTER as CHAT
from conformance.providers.openai_responses import ADAPTER as RESPONSES
from conformance.sse import read_chunks
from conformance.stream import StreamResult
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
    data = (FIXTURES / provider / name).read_bytes()
    boundaries = [index + 2 for index in range(len(data)) if data[index:index + 2] == b"\n\n"]
    for cut in boundaries[:-1]:
        result = (RESPONSES if provider == "openai-responses" else CHAT).assemble_stream([data[:cut]])  # type: ignore[misc]
        assert (result.response.kind, result.response.to_dict()["reason"]) == ("retryable_error", "interrupted"), cut


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
