"""The Anthropic Messages stream assembler: SSE transcripts → the same kind as the equivalent body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.kit.stream import StreamResult
from conformance.providers.anthropic_messages import ADAPTER
from conformance.providers.anthropic_messages.response import classify_body
from conformance.providers.anthropic_messages.stream import assemble_stream
from tests.helpers import FIXTURES, fixture

P = "anthropic-messages"


def _bytes(name: str) -> bytes:
    return (FIXTURES / P / name).read_bytes()


def _assemble(name: str) -> StreamResult:
    return assemble_stream([_bytes(name)])


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _events(*events: dict[str, Any]) -> bytes:
    return b"".join(_event(event["type"], event) for event in events)


def _detail(result: dict[str, Any]) -> Any:
    for key in ("reason", "source", "raw_type", "detail"):
        if key in result:
            return result[key]
    return None


def _calls(result: Any) -> list[tuple[str, str, Any]]:
    return [(call.call_id, call.name, call.parsed_arguments) for call in result.calls]


def _usage(input_tokens: int, output_tokens: int, cached: int = 0, written: int = 0) -> dict[str, int | None]:
    total_input = input_tokens + cached + written
    return {"input_tokens": total_input, "cached_input_tokens": cached, "cache_write_tokens": written,
            "output_tokens": output_tokens, "reasoning_tokens": None, "total_tokens": total_input + output_tokens}


MESSAGE_START = {"type": "message_start", "message": {
    "id": "msg_inline", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [],
    "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}
MESSAGE_STOP = {"type": "message_stop"}


def _tool_start(index: int, call_id: str) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": "get_order", "input": {}}}


def _json_delta(index: int, partial: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": partial}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def _message_delta(stop_reason: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": usage}


# Expected results, from the wire facts (wire-formats §3d) and the fixtures' own events.
EXPECTED = [
    ("stream-text.sse", "text", None, "stop_reason=end_turn", "Order ORD-1002 was delivered.", [],
     _usage(44, 14, cached=768)),
    ("stream-tool-call.sse", "tool_calls", None, "stop_reason=tool_use", "Let me look that order up.",
     [("toolu_01A09q90qw90lq917835lq9", "get_order", {"order_id": "ORD-1001"})], _usage(640, 71)),
    ("stream-parallel-calls.sse", "tool_calls", None, "stop_reason=tool_use", None,
     [("toolu_01A", "get_order", {"order_id": "ORD-1001"}), ("toolu_01B", "get_order", {"order_id": "ORD-1002"})],
     _usage(640, 96)),
    ("stream-thinking-then-tool-call.sse", "tool_calls", None, "stop_reason=tool_use", None,
     [("toolu_01T", "get_order", {"order_id": "ORD-1001"})], _usage(640, 120)),
    ("stream-pause-turn.sse", "incomplete", "pause_turn", "stop_reason=pause_turn", None, [], _usage(1200, 40)),
    ("stream-refusal.sse", "refusal", "model", "stop_reason=refusal", None, [], _usage(120, 3)),
    ("stream-max-tokens.sse", "incomplete", "max_tokens", "stop_reason=max_tokens",
     "The quarterly summary covers thr", [], _usage(300, 16)),
    ("stream-max-tokens-partial-tool-use.sse", "incomplete", "max_tokens", "stop_reason=max_tokens", None, [],
     _usage(300, 16)),
    # message_delta repeats the cumulative input/cache counts: overwritten, so 12 + 256 + 2048, not twice that.
    ("stream-cache-usage.sse", "text", None, "stop_reason=end_turn", "ORD-1001 has shipped.", [],
     _usage(12, 9, cached=2048, written=256)),
    ("stream-interrupted.sse", "retryable_error", "interrupted",
     "stream ended after content_block_delta without a terminal event", "Order ORD-1002 was", [], None),
    ("stream-cut-mid-event.sse", "retryable_error", "interrupted",
     "stream ended after content_block_delta without a terminal event (an event that is not JSON)",
     "Order ORD-1002", [], None),
    ("stream-error-overloaded.sse", "retryable_error", "overloaded", "stream error=overloaded_error", None, [], None),
    # The old shape: input and cache counts only in message_start, message_delta carries output_tokens alone.
    ("stream-usage-start-only.sse", "text", None, "stop_reason=end_turn", "Order ORD-1002 was delivered.", [],
     _usage(44, 14, cached=768)),
    # The live shape: message_delta repeats every count and its values win (43 in message_start, 61 here).
    ("stream-usage-delta-replaces-start.sse", "text", None, "stop_reason=end_turn", "Order ORD-1002 was delivered.",
     [], _usage(61, 14, cached=768)),
    ("stream-unknown-event.sse", "text", None, "stop_reason=end_turn", "Order ORD-1002 was delivered.", [],
     _usage(44, 14, cached=768)),
    ("stream-unknown-block.sse", "unsupported", "hologram", "content[0].type=hologram", None, [], _usage(100, 5)),
    ("stream-duplicate-events.sse", "text", None, "stop_reason=end_turn", "Order ORD-1002 was delivered.", [],
     _usage(44, 14, cached=768)),
    ("stream-invalid-tool-json.sse", "invalid_tool_call",
     'tool call toolu_01X (get_order): arguments are not a JSON object: \'"{\\\\"order_id\\\\": \\\\"ORD-1001\\\\""\'',
     "stop_reason=tool_use", None, [("toolu_01X", "get_order", None)], _usage(640, 20)),
]


def test_every_stream_fixture_has_an_expectation() -> None:
    assert sorted(path.name for path in (FIXTURES / P).glob("stream-*")) == sorted(row[0] for row in EXPECTED)


def test_adapter_exports_the_stream_assembler() -> None:
    assert ADAPTER.assemble_stream is assemble_stream


@pytest.mark.parametrize(("name", "kind", "detail", "raw", "text", "calls", "usage"), EXPECTED)
def test_assemble_stream_maps_each_fixture(name: str, kind: str, detail: str | None, raw: str, text: str | None,
                                           calls: list[tuple[str, str, Any]], usage: dict[str, Any] | None) -> None:
    result = _assemble(name).response
    shown = result.to_dict()
    assert (shown["kind"], _detail(shown), shown["raw"], shown["text"]) == (kind, detail, raw, text)
    assert _calls(result) == calls
    assert shown["usage"] == usage


PARITY = [
    ("stream-text.sse", "body-text.json"),
    ("stream-tool-call.sse", "body-tool-call.json"),
    ("stream-parallel-calls.sse", "body-parallel-calls.json"),
    ("stream-thinking-then-tool-call.sse", "body-thinking-then-tool-call.json"),
    ("stream-pause-turn.sse", "body-pause-turn.json"),
    ("stream-refusal.sse", "body-refusal.json"),
    ("stream-max-tokens.sse", "body-max-tokens.json"),
    ("stream-max-tokens-partial-tool-use.sse", "body-max-tokens-partial-tool-use.json"),
    ("stream-cache-usage.sse", "body-cache-read.json"),
    ("stream-unknown-event.sse", "body-text.json"),
    ("stream-duplicate-events.sse", "body-text.json"),
    ("stream-unknown-block.sse", "unknown-block-type.json"),
]


@pytest.mark.parametrize(("stream", "body"), PARITY)
def test_stream_and_body_agree(stream: str, body: str) -> None:
    streamed, parsed = _assemble(stream).response, classify_body(fixture(P, body))
    left, right = streamed.to_dict(), parsed.to_dict()
    for key in ("kind", "raw", "text", "usage", "response_id", "model"):
        assert left[key] == right[key], key
    assert _detail(left) == _detail(right)
    assert _calls(streamed) == _calls(parsed)
    assert [call.arguments for call in streamed.calls] == [call.arguments for call in parsed.calls]
    assert streamed.provider_details == parsed.provider_details  # the refusal's stop_details category


@pytest.mark.parametrize(("stream", "body"), [
    ("stream-text.sse", "body-text.json"),
    ("stream-tool-call.sse", "body-tool-call.json"),
    ("stream-parallel-calls.sse", "body-parallel-calls.json"),
    ("stream-thinking-then-tool-call.sse", "body-thinking-then-tool-call.json"),
    ("stream-pause-turn.sse", "body-pause-turn.json"),
])
def test_assembled_blocks_equal_the_body_blocks_for_replay(stream: str, body: str) -> None:
    """Thinking text and signature, parsed tool inputs (server tools too): re-sent verbatim next turn."""
    assert _assemble(stream).response.output_items == ({"role": "assistant", "content": fixture(P, body)["content"]},)


def _split_events(data: bytes) -> list[bytes]:
    return [event + b"\n\n" for event in data.split(b"\n\n") if event]


def test_truncation_at_every_event_boundary_is_interrupted_until_message_stop() -> None:
    events = _split_events(_bytes("stream-tool-call.sse"))
    assert len(events) == 14
    for count in range(len(events)):
        result = assemble_stream([b"".join(events[:count])]).response
        assert (result.kind, result.to_dict()["reason"]) == ("retryable_error", "interrupted"), count
        assert result.usage is None and result.calls == (), count  # even after message_delta brought usage
        text = result.to_dict()["text"]
        assert text is None or "Let me look that order up.".startswith(text), count
    assert assemble_stream([b"".join(events)]).response.kind == "tool_calls"


def test_truncation_at_every_byte_never_raises() -> None:
    data = _bytes("stream-parallel-calls.sse")
    for cut in range(len(data) + 1):
        result = assemble_stream([data[:cut]]).response
        complete = b'data: {"type":"message_stop"}' in data[:cut]
        assert result.kind == ("tool_calls" if complete else "retryable_error"), cut


@pytest.mark.parametrize("size", [1, 7, 64, 100_000])
def test_chunk_size_and_line_endings_do_not_change_the_result(size: int) -> None:
    expected = _assemble("stream-thinking-then-tool-call.sse")
    for data in (_bytes("stream-thinking-then-tool-call.sse"),
                 _bytes("stream-thinking-then-tool-call.sse").replace(b"\n", b"\r\n")):
        result = assemble_stream(data[start:start + size] for start in range(0, len(data), size))
        assert result.response == expected.response
        assert result.summary == expected.summary


def test_summary_counts_each_event_type() -> None:
    assert _assemble("stream-text.sse").summary.to_dict() == {
        "events": {"content_block_delta": 3, "content_block_start": 1, "content_block_stop": 1, "message_delta": 1,
                   "message_start": 1, "message_stop": 1, "ping": 1},
        "event_count": 9, "first": "message_start", "last": "message_stop", "terminal": True,
        "ignored_after_terminal": 0, "duplicates": 0,
    }


def test_summary_of_an_interrupted_stream_has_no_terminal() -> None:
    summary = _assemble("stream-interrupted.sse").summary
    assert (summary.first, summary.last, summary.terminal) == ("message_start", "content_block_delta", False)
    assert summary.events == {"message_start": 1, "content_block_start": 1, "ping": 1, "content_block_delta": 2}


def test_interrupted_stream_keeps_partial_text_and_the_message_identity() -> None:
    result = _assemble("stream-interrupted.sse").response
    assert (result.response_id, result.model, result.usage) == ("msg_01Ut13", "claude-sonnet-5", None)
    assert result.to_dict()["text"] == "Order ORD-1002 was"


def test_duplicates_are_dropped_and_events_after_message_stop_ignored() -> None:
    """A repeated content_block_start and content_block_stop, a delta replayed after its block stopped, and a
    second message_stop after the terminal one."""
    summary = _assemble("stream-duplicate-events.sse").summary
    assert (summary.duplicates, summary.ignored_after_terminal, summary.terminal) == (3, 1, True)
    assert summary.events["message_stop"] == 2
    assert summary.events["content_block_delta"] == 2


def test_unknown_event_is_counted_and_ignored() -> None:
    assert _assemble("stream-unknown-event.sse").summary.events["message_progress"] == 1


def test_mid_stream_error_ends_the_stream_with_its_message() -> None:
    result = _assemble("stream-error-overloaded.sse")
    assert result.response.to_dict()["message"] == "Overloaded"
    assert result.response.to_dict()["http_status"] is None
    assert (result.summary.last, result.summary.terminal) == ("error", True)


@pytest.mark.parametrize(
    ("error", "kind", "reason"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, "retryable_error", "overloaded"),
        ({"type": "api_error", "message": "Internal server error"}, "retryable_error", "server_error"),
        ({"type": "rate_limit_error", "message": "slow down"}, "retryable_error", "rate_limit"),
        ({"type": "timeout_error", "message": "timed out"}, "retryable_error", "timeout"),
        ({"type": "invalid_request_error", "message": "bad"}, "fatal_error", "invalid_request"),
        ({"type": "brand_new_error", "message": "?"}, "retryable_error", "server_error"),
        (None, "retryable_error", "server_error"),
    ],
)
def test_mid_stream_error_kind_follows_its_type(error: dict[str, Any] | None, kind: str, reason: str) -> None:
    data = _events(MESSAGE_START, {"type": "error", "error": error})
    result = assemble_stream([data]).response.to_dict()
    assert (result["kind"], result["reason"]) == (kind, reason)


def test_error_and_garbage_after_message_stop_are_ignored() -> None:
    data = _bytes("stream-text.sse") + b"event: ping\ndata: not json\n\n" + _event(
        "error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    result = assemble_stream([data])
    assert result.response.kind == "text"
    assert result.summary.ignored_after_terminal == 2


def test_empty_argument_join_is_an_empty_object() -> None:
    data = _events(MESSAGE_START, _tool_start(0, "toolu_01E"), _json_delta(0, ""), _block_stop(0),
                   _message_delta("tool_use", {"output_tokens": 5}), MESSAGE_STOP)
    assert _calls(assemble_stream([data]).response) == [("toolu_01E", "get_order", {})]


def test_assemble_stream_keeps_interleaved_call_arguments_apart() -> None:
    """Deltas are keyed by block index; the API sends blocks one after another, but nothing relies on it."""
    data = _events(MESSAGE_START, _tool_start(0, "toolu_01A"), _tool_start(1, "toolu_01B"),
                   _json_delta(1, '{"order_id": "ORD-'), _json_delta(0, '{"order_id": "ORD-'),
                   _json_delta(0, '1001"}'), _json_delta(1, '1002"}'), _block_stop(1), _block_stop(0),
                   _message_delta("tool_use", {"output_tokens": 30}), MESSAGE_STOP)
    assert _calls(assemble_stream([data]).response) == [
        ("toolu_01A", "get_order", {"order_id": "ORD-1001"}), ("toolu_01B", "get_order", {"order_id": "ORD-1002"})]


def test_null_usage_field_in_message_delta_keeps_the_message_start_value() -> None:
    data = _events(MESSAGE_START, _message_delta("end_turn", {"input_tokens": None, "output_tokens": 4}), MESSAGE_STOP)
    usage = assemble_stream([data]).response.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (10, 4)


def test_citations_delta_is_kept_on_its_text_block() -> None:
    citation = {"type": "char_location", "cited_text": "shipped", "document_index": 0, "document_title": None,
                "start_char_index": 0, "end_char_index": 7, "file_id": None}
    data = _events(MESSAGE_START, {"type": "content_block_start", "index": 0,
                                   "content_block": {"type": "text", "text": ""}},
                   {"type": "content_block_delta", "index": 0,
                    "delta": {"type": "citations_delta", "citation": citation}},
                   {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "It shipped."}},
                   _block_stop(0), _message_delta("end_turn", {"output_tokens": 6}), MESSAGE_STOP)
    result = assemble_stream([data]).response
    assert result.to_dict()["text"] == "It shipped."
    assert result.output_items[0]["content"] == [{"type": "text", "text": "It shipped.", "citations": [citation]}]


def test_delta_for_a_block_never_started_is_ignored() -> None:
    data = _events(MESSAGE_START, _json_delta(3, '{"x": 1}'), _message_delta("end_turn", {"output_tokens": 1}),
                   MESSAGE_STOP)
    assert assemble_stream([data]).response.kind == "empty"


def test_non_object_data_is_counted_and_skipped() -> None:
    data = b"event: ping\ndata: [1, 2]\n\n" + _bytes("stream-text.sse")
    result = assemble_stream([data])
    assert (result.response.kind, result.summary.events["ping"]) == ("text", 2)


@pytest.mark.parametrize("name", [row[0] for row in EXPECTED if row[0] not in (
    "stream-unknown-event.sse", "stream-unknown-block.sse", "stream-cut-mid-event.sse")])
def test_fixture_events_validate_against_the_sdk_types(name: str) -> None:
    from anthropic.types import RawMessageStreamEvent
    from anthropic.types.shared import ErrorResponse
    from pydantic import TypeAdapter

    stream_event: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    for event in _split_events(_bytes(name)):
        name_line, data_line = event.decode().strip().split("\n")
        event_type, data = name_line.removeprefix("event: "), json.loads(data_line.removeprefix("data: "))
        assert data["type"] == event_type
        if event_type == "error":
            ErrorResponse.model_validate(data)
        elif event_type != "ping":
            stream_event.validate_python(data)


def _sdk_final_message(data: bytes) -> Any:
    """The official SDK's own accumulation of a transcript, offline through a mock transport."""
    anthropic = pytest.importorskip("anthropic")
    httpx = pytest.importorskip("httpx2")  # the anthropic 2.x SDK's HTTP client (the httpx successor package)

    def handler(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    client = anthropic.Anthropic(api_key="test-key", base_url="http://localhost",
                                 http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    with client.messages.stream(model="claude-sonnet-5", max_tokens=1024,
                                messages=[{"role": "user", "content": "Where is ORD-1001?"}]) as stream:
        return stream.get_final_message()


@pytest.mark.parametrize("name", ["stream-text.sse", "stream-tool-call.sse", "stream-parallel-calls.sse",
                                  "stream-cache-usage.sse", "stream-thinking-then-tool-call.sse"])
def test_assembly_equals_the_official_sdk_accumulation(name: str) -> None:
    message = _sdk_final_message(_bytes(name))
    result = _assemble(name).response
    sdk_text = "".join(block.text for block in message.content if block.type == "text") or None
    assert result.to_dict()["text"] == sdk_text
    assert _calls(result) == [(block.id, block.name, block.input) for block in message.content
                              if block.type == "tool_use"]
    assert result.usage is not None and result.usage.raw is not None
    for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        assert result.usage.raw.get(key) == getattr(message.usage, key), key
    assert (result.response_id, result.model, result.raw) == (message.id, message.model,
                                                              f"stop_reason={message.stop_reason}")


@pytest.mark.parametrize("code", ["contract_spend_limit_reached", "enforced_spend_limit_reached"])
def test_mid_stream_spend_limit_is_a_fatal_quota_naming_its_code(code: str) -> None:
    error = {"type": "rate_limit_error", "message": "Spend limit reached.", "details": {"error_code": code}}
    result = assemble_stream([_events(MESSAGE_START, {"type": "error", "error": error})]).response.to_dict()
    assert (result["kind"], result["reason"], result["raw"], result["provider_details"]) == (
        "fatal_error", "quota", f"stream error=rate_limit_error/{code}", {"error_code": code})
    assert (result["response_id"], result["model"]) == ("msg_inline", "claude-sonnet-5")


def test_mid_stream_error_keeps_a_detail_code_that_overrules_nothing() -> None:
    error = {"type": "rate_limit_error", "message": "slow down", "details": {"error_code": "tokens_per_minute"}}
    result = assemble_stream([_events(MESSAGE_START, {"type": "error", "error": error})]).response.to_dict()
    assert (result["kind"], result["reason"], result["raw"], result["provider_details"]) == (
        "retryable_error", "rate_limit", "stream error=rate_limit_error", {"error_code": "tokens_per_minute"})


def _stream_error(kind: str, raw: str, reason: str, message: str | None,
                  provider_details: dict[str, object] | None = None) -> dict[str, object]:
    """The whole ``to_dict()`` of a stream error: no HTTP status, no retry delay, no identity of its own."""
    expected: dict[str, object] = {
        "kind": kind, "raw": raw, "calls": [], "text": None, "usage": None, "raw_usage": None, "response_id": None,
        "model": None, "reason": reason, "http_status": None, "message": message}
    if kind == "retryable_error":
        expected["retry_after_s"] = None
    if provider_details is not None:
        expected["provider_details"] = provider_details
    return expected


@pytest.mark.parametrize(("event", "expected"), [
    # Nothing to go on: a retryable server error named only "stream error".
    ("overloaded", _stream_error("retryable_error", "stream error", "server_error", None)),
    (None, _stream_error("retryable_error", "stream error", "server_error", None)),
    ([{"type": "overloaded_error"}], _stream_error("retryable_error", "stream error", "server_error", None)),
    ({"type": "error"}, _stream_error("retryable_error", "stream error", "server_error", None)),
    ({"type": "error", "error": "Overloaded"}, _stream_error("retryable_error", "stream error", "server_error", None)),
    # A type that is not a non-empty string names nothing; the message is still kept.
    ({"type": "error", "error": {"type": 5, "message": "Overloaded"}},
     _stream_error("retryable_error", "stream error", "server_error", "Overloaded")),
    ({"type": "error", "error": {"type": "", "message": "Overloaded"}},
     _stream_error("retryable_error", "stream error", "server_error", "Overloaded")),
    # A message that is not a string is no message.
    ({"type": "error", "error": {"type": "overloaded_error", "message": ["Overloaded"]}},
     _stream_error("retryable_error", "stream error=overloaded_error", "overloaded", None)),
    ({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}},
     _stream_error("fatal_error", "stream error=invalid_request_error", "invalid_request", "bad")),
    # A detail code that is not a string is dropped.
    ({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down", "details": {"error_code": 5}}},
     _stream_error("retryable_error", "stream error=rate_limit_error", "rate_limit", "slow down")),
    # A spend-limit code decides even without a type, and raw names it.
    ({"type": "error", "error": {"message": "Spend limit reached.",
                                 "details": {"error_code": "contract_spend_limit_reached"}}},
     _stream_error("fatal_error", "stream error/contract_spend_limit_reached", "quota", "Spend limit reached.",
                   {"error_code": "contract_spend_limit_reached"})),
])
def test_classify_stream_error_of_hostile_events_gives_the_whole_expected_result(
        event: object, expected: dict[str, object]) -> None:
    from conformance.providers.anthropic_messages.errors import classify_stream_error

    assert classify_stream_error(event).to_dict() == expected
