"""ConverseStream assembly: decoded event-stream transcripts give the kind their Converse body gives (§5d)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.kit.sse import read_chunks
from conformance.kit.stream import StreamResult
from conformance.providers.bedrock_converse import ADAPTER
from conformance.providers.bedrock_converse.errors import ERROR_TYPES
from conformance.providers.bedrock_converse.response import classify_body
from conformance.providers.bedrock_converse.stream import assemble_stream
from tests.botocore_shapes import converse_stream_event_violations, service_model
from tests.helpers import FIXTURES, fixture

P = "bedrock-converse"
KZ = "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"
ORDER_1001 = {"order_id": "ORD-1001"}


def _path(name: str) -> str:
    return str(FIXTURES / P / name)


def _lines(name: str) -> list[bytes]:
    """The fixture's events, one line each, terminator kept."""
    with open(_path(name), "rb") as stream:
        return stream.readlines()


def _assemble(name: str) -> StreamResult:
    return assemble_stream(read_chunks(_path(name)))


def _events(*events: dict[str, Any]) -> list[bytes]:
    return [json.dumps(event).encode() + b"\n" for event in events]


def _usage(input_tokens: int, cached: int, written: int, output: int, total: int) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "cached_input_tokens": cached, "cache_write_tokens": written,
            "output_tokens": output, "reasoning_tokens": None, "total_tokens": total}


STREAM_FIXTURES = sorted(path.name for path in (FIXTURES / P).glob("stream-*.jsonl"))

# fixture → kind, reason/source/raw_type, raw, calls (id, name, parsed input), text, normalized usage.
# Usage: input_tokens = inputTokens + cacheReadInputTokens + cacheWriteInputTokens (§5c); no reasoning count.
EXPECTED: dict[str, tuple[str, str | None, str, list[tuple[str, str, Any]], str | None, dict[str, Any] | None]] = {
    "stream-text.jsonl": ("text", None, "stopReason=end_turn", [], "Order ORD-1002 was delivered.",
                          _usage(812, 768, 0, 14, 826)),
    "stream-tool-call.jsonl": ("tool_calls", None, "stopReason=tool_use", [(KZ, "get_order", ORDER_1001)],
                               "Let me look that order up.", _usage(640, 0, 0, 71, 711)),
    "stream-parallel-calls.jsonl": (
        "tool_calls", None, "stopReason=tool_use",
        [("tooluse_A1b2C3d4E5f6G7h8I9j0Kl", "get_order", ORDER_1001),
         ("tooluse_M1n2O3p4Q5r6S7t8U9v0Wx", "get_order", {"order_id": "ORD-1002"})],
        None, _usage(640, 0, 0, 96, 736)),
    "stream-reasoning-then-tool-call.jsonl": (
        "tool_calls", None, "stopReason=tool_use", [("tooluse_R7sT9uVwXyZ0aB1cD2eF3g", "get_order", ORDER_1001)],
        None, _usage(702, 0, 0, 138, 840)),
    "stream-server-tool-use.jsonl": (
        "text", None, "stopReason=end_turn", [],
        "Carriers currently report no delays around Lyon, so ORD-1002 should arrive on schedule.",
        _usage(1210, 0, 0, 52, 1262)),
    "stream-guardrail-intervened.jsonl": ("refusal", "filter", "stopReason=guardrail_intervened", [],
                                          "Sorry, the model cannot answer this question.", _usage(120, 0, 0, 0, 120)),
    "stream-max-tokens.jsonl": ("incomplete", "max_tokens", "stopReason=max_tokens", [],
                                "The quarterly summary covers thr", _usage(300, 0, 0, 16, 316)),
    "stream-context-window.jsonl": ("incomplete", "context_window", "stopReason=model_context_window_exceeded", [],
                                    "Across the 412 orders in this export, the", _usage(199640, 0, 0, 360, 200000)),
    "stream-cache-buckets.jsonl": ("text", None, "stopReason=end_turn", [],
                                   "ORD-1001 shipped on Monday and ORD-1002 was delivered.",
                                   _usage(2425, 1800, 600, 40, 2465)),
    "stream-empty.jsonl": ("empty", None, "stopReason=end_turn", [], None, _usage(640, 0, 0, 3, 643)),
    "stream-malformed-tool-use.jsonl": ("invalid_tool_call", None, "stopReason=malformed_tool_use", [], None,
                                        _usage(655, 0, 0, 0, 655)),
    # The joined fragments are cut-off JSON: the raw string stands as the input, which is not an object.
    "stream-tool-input-unparsable.jsonl": (
        "invalid_tool_call", None, "stopReason=tool_use",
        [(KZ, "get_order", None)], None, _usage(640, 0, 0, 38, 678)),
    "stream-unknown-block.jsonl": ("unsupported", "content block hologram", "output.message.content[0].hologram", [],
                                   None, _usage(44, 0, 0, 14, 58)),
    "stream-unknown-event.jsonl": ("text", None, "stopReason=end_turn", [], "Order ORD-1002 was delivered.",
                                   _usage(812, 768, 0, 14, 826)),
    "stream-duplicate-events.jsonl": ("tool_calls", None, "stopReason=tool_use", [(KZ, "get_order", ORDER_1001)],
                                      "Let me look that order up.", _usage(640, 0, 0, 71, 711)),
    # messageStop arrived, metadata never did: the answer stands, its usage is unknown.
    # The cited words arrive as text deltas of block 1, the citation beside them: one answer, as in the body.
    "stream-citations.jsonl": ("text", None, "stopReason=end_turn", [],
                               "Employees should consult with their manager for details.",
                               _usage(1830, None, None, 24, 1854)),
    # Nova web grounding: a server tool call and its result, text, and blocks of citation deltas alone.
    "stream-nova-web-grounding.jsonl": ("text", None, "stopReason=end_turn", [],
                                        "The winter timetable runs the first ferry at 06:40 and the last at 22:15.",
                                        _usage(2410, None, None, 31, 2441)),
    "stream-no-metadata.jsonl": ("text", None, "stopReason=end_turn", [], "Order ORD-1002 was delivered.", None),
    "stream-cut.jsonl": ("retryable_error", "interrupted",
                         "stream ended after contentBlockDelta without a terminal event", [], "Order ORD-1002 was",
                         None),
    "stream-cut-mid-tool-call.jsonl": ("retryable_error", "interrupted",
                                       "stream ended after contentBlockDelta without a terminal event", [],
                                       "Let me look that order up.", None),
    "stream-throttling.jsonl": ("retryable_error", "rate_limit", "stream exception=ThrottlingException", [], None,
                                None),
    "stream-model-stream-error.jsonl": ("retryable_error", "server_error",
                                        "stream exception=ModelStreamErrorException", [], None, None),
}

# stream fixture → the body fixture of the same turn (an unknown-* body holds a value the service model lacks).
PARITY = {
    "stream-text.jsonl": "body-text.json",
    "stream-tool-call.jsonl": "body-tool-call.json",
    "stream-parallel-calls.jsonl": "body-parallel-calls.json",
    "stream-reasoning-then-tool-call.jsonl": "body-reasoning-then-tool-call.json",
    "stream-server-tool-use.jsonl": "body-server-tool-use.json",
    "stream-guardrail-intervened.jsonl": "body-guardrail-intervened.json",
    "stream-max-tokens.jsonl": "body-max-tokens.json",
    "stream-context-window.jsonl": "body-context-window.json",
    "stream-cache-buckets.jsonl": "body-cache-buckets.json",
    "stream-empty.jsonl": "body-empty.json",
    "stream-malformed-tool-use.jsonl": "body-malformed-tool-use.json",
    "stream-unknown-block.jsonl": "unknown-content-block.json",
    "stream-unknown-event.jsonl": "body-text.json",
    "stream-duplicate-events.jsonl": "body-tool-call.json",
    "stream-citations.jsonl": "body-citations.json",
    "stream-nova-web-grounding.jsonl": "body-nova-web-grounding.json",
}

# Events the service model deliberately does not know: (fixture, 1-based line).
UNKNOWN_EVENTS = {("stream-unknown-block.jsonl", 2), ("stream-unknown-event.jsonl", 3)}


def test_every_stream_fixture_has_an_expectation() -> None:
    assert sorted(EXPECTED) == STREAM_FIXTURES


def test_adapter_assembles_streams() -> None:
    assert ADAPTER.assemble_stream is assemble_stream


@pytest.mark.parametrize("name", STREAM_FIXTURES)
def test_assemble_stream_gives_the_kind_the_wire_facts_say(name: str) -> None:
    kind, detail, raw, calls, text, usage = EXPECTED[name]
    result = _assemble(name).response.to_dict()
    assert result["kind"] == kind
    assert result["raw"] == raw
    if detail is not None:
        assert detail in (result.get("reason"), result.get("source"), result.get("raw_type"))
    response = _assemble(name).response
    assert [(call.call_id, call.name, call.parsed_arguments) for call in response.calls] == calls
    assert result["text"] == text
    assert result["usage"] == usage
    assert (result["response_id"], result["model"]) == (None, None)


@pytest.mark.parametrize(("stream", "body"), sorted(PARITY.items()))
def test_stream_and_body_of_the_same_turn_agree(stream: str, body: str) -> None:
    from_stream = _assemble(stream).response
    from_body = classify_body(fixture(P, body))
    streamed, parsed = from_stream.to_dict(), from_body.to_dict()
    for key in ("kind", "raw", "text", "usage", "raw_usage", "reason", "source", "raw_type", "detail"):
        assert streamed.get(key) == parsed.get(key), key
    assert [(c.call_id, c.name, c.parsed_arguments) for c in from_stream.calls] == \
        [(c.call_id, c.name, c.parsed_arguments) for c in from_body.calls]
    # The next request re-sends the message verbatim, reasoning signature included: it must be rebuilt exactly.
    assert from_stream.output_items == from_body.output_items


@pytest.mark.parametrize("name", STREAM_FIXTURES)
def test_stream_fixture_events_fit_the_converse_stream_output_shapes(name: str) -> None:
    for number, line in enumerate(_lines(name), start=1):
        violations = converse_stream_event_violations(json.loads(line))
        if (name, number) in UNKNOWN_EVENTS:
            assert violations, f"{name}:{number} was meant to be unknown to the service model"
        else:
            assert violations == [], f"{name}:{number}"


def test_summary_counts_each_event_type_first_last_and_terminal() -> None:
    summary = _assemble("stream-tool-call.jsonl").summary.to_dict()
    assert summary == {
        "events": {"contentBlockDelta": 6, "contentBlockStart": 1, "contentBlockStop": 2, "messageStart": 1,
                   "messageStop": 1, "metadata": 1},
        "event_count": 12,
        "first": "messageStart",
        "last": "metadata",
        "terminal": True,
        "ignored_after_terminal": 0,
        "duplicates": 0,
    }


def test_duplicates_the_framing_exposes_are_counted_and_not_applied() -> None:
    summary = _assemble("stream-duplicate-events.jsonl").summary
    # messageStart, contentBlockStart for index 1, a delta and a stop for index 1 after its stop.
    assert summary.duplicates == 4
    # The second metadata comes after messageStop and after the first metadata: ignored, not a duplicate.
    assert summary.ignored_after_terminal == 1
    assert summary.events == {"messageStart": 1, "contentBlockDelta": 4, "contentBlockStop": 2,
                              "contentBlockStart": 1, "messageStop": 1, "metadata": 2}


def test_unknown_event_types_are_counted_and_ignored() -> None:
    summary = _assemble("stream-unknown-event.jsonl").summary
    assert summary.events["messageProgress"] == 1
    assert summary.ignored_after_terminal == 0


def test_truncation_at_every_event_boundary_is_interrupted_until_message_stop() -> None:
    lines = _lines("stream-tool-call.jsonl")
    stop_at = next(index for index, line in enumerate(lines) if line.startswith(b'{"messageStop"'))
    for cut in range(len(lines) + 1):
        response = assemble_stream(lines[:cut]).response
        if cut <= stop_at:
            assert (response.kind, getattr(response, "reason", None)) == ("retryable_error", "interrupted"), cut
            assert response.usage is None and response.calls == (), cut
            partial = "".join(["Let me look", " that order up."][: max(cut - 1, 0)]) or None
            assert getattr(response, "text", None) == partial, cut
        else:
            assert response.kind == "tool_calls", cut
            assert [call.parsed_arguments for call in response.calls] == [ORDER_1001]
            assert (response.usage is None) == (cut == stop_at + 1), cut


@pytest.mark.parametrize("name", ["stream-reasoning-then-tool-call.jsonl", "stream-server-tool-use.jsonl"])
def test_truncation_at_every_byte_never_raises(name: str) -> None:
    data = b"".join(_lines(name))
    whole = assemble_stream([data]).response.to_dict()
    # A final line without its newline is still a whole event: messageStop counts once its closing brace is in.
    stop_end = data.index(b"\n", data.index(b'{"messageStop"'))
    for cut in range(len(data) + 1):
        response = assemble_stream([data[:cut]]).response
        if cut < stop_end:
            assert (response.kind, getattr(response, "reason", None)) == ("retryable_error", "interrupted"), cut
        else:
            assert response.kind == whole["kind"], cut
        # Split into two chunks anywhere, the whole transcript assembles to the same result.
        assert assemble_stream([data[:cut], data[cut:]]).response.to_dict() == whole, cut


def test_one_byte_chunks_assemble_like_the_whole_file() -> None:
    data = b"".join(_lines("stream-tool-call.jsonl"))
    assert assemble_stream([data[i: i + 1] for i in range(len(data))]).response.to_dict() == \
        _assemble("stream-tool-call.jsonl").response.to_dict()


def test_blank_lines_and_crlf_endings_are_not_events() -> None:
    lines = [line.rstrip(b"\n") + b"\r\n\r\n" for line in _lines("stream-text.jsonl")]
    result = assemble_stream(lines)
    assert result.response.to_dict() == _assemble("stream-text.jsonl").response.to_dict()
    assert result.summary.events == _assemble("stream-text.jsonl").summary.events


def test_interleaved_blocks_keep_their_input_fragments_apart_by_content_block_index() -> None:
    lines = _events(
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_A",
                                                                             "name": "get_order"}}}},
        {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_B",
                                                                             "name": "get_order"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"order_id\": \"ORD-"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{\"order_id\": "}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "1002\"}"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "\"ORD-1001\"}"}}}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    )
    response = assemble_stream(lines).response
    assert [(call.call_id, call.parsed_arguments) for call in response.calls] == [
        ("tooluse_A", ORDER_1001), ("tooluse_B", {"order_id": "ORD-1002"})]


def test_a_tool_use_without_input_fragments_has_an_empty_object_input() -> None:
    response = assemble_stream(_events(
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_N",
                                                                             "name": "list_orders"}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    )).response
    assert [(call.call_id, call.name, call.parsed_arguments) for call in response.calls] == [
        ("tooluse_N", "list_orders", {})]


EXCEPTION_MEMBERS = sorted(
    name for name, shape in service_model().shape_for("ConverseStreamOutput").members.items()
    if shape.metadata.get("exception")
)


def test_every_stream_exception_of_the_service_model_is_in_the_error_table() -> None:
    assert EXCEPTION_MEMBERS == ["internalServerException", "modelStreamErrorException", "serviceUnavailableException",
                                 "throttlingException", "validationException"]
    assert all(name[0].upper() + name[1:] in ERROR_TYPES for name in EXCEPTION_MEMBERS)


@pytest.mark.parametrize(
    ("event", "message", "kind", "reason"),
    [
        ("throttlingException", "Too many requests, please wait before trying again.", "retryable_error",
         "rate_limit"),
        ("modelStreamErrorException", "Received error from the model.", "retryable_error", "server_error"),
        ("internalServerException", "An internal server error occurred.", "retryable_error", "server_error"),
        ("serviceUnavailableException", "The service is unavailable.", "retryable_error", "overloaded"),
        ("validationException", "The provided request is not valid.", "fatal_error", "invalid_request"),
        ("validationException", "Input is too long for requested model.", "fatal_error", "context_window"),
        ("brandNewException", "Something new.", "retryable_error", "server_error"),
    ],
)
def test_a_mid_stream_exception_is_the_error_kind_of_its_name(event: str, message: str, kind: str,
                                                              reason: str) -> None:
    result = assemble_stream(_events(
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Order"}}},
        {event: {"message": message}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": " ORD-1002"}}},
    ))
    response = result.response.to_dict()
    assert (response["kind"], response["reason"], response["message"]) == (kind, reason, message)
    assert response["raw"] == f"stream exception={event[0].upper()}{event[1:]}"
    assert response["usage"] is None and response["http_status"] is None
    assert result.summary.terminal and result.summary.last == event


def test_model_stream_error_keeps_the_model_s_original_status_and_message() -> None:
    details = _assemble("stream-model-stream-error.jsonl").response.provider_details
    assert details == {"originalStatusCode": 424,
                       "originalMessage": "The model produced an invalid sequence of tokens."}


def test_events_after_message_stop_other_than_the_first_metadata_are_ignored() -> None:
    lines = _lines("stream-text.jsonl")
    extra = _events({"throttlingException": {"message": "late"}},
                    {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": " Late."}}})
    result = assemble_stream(lines[:-1] + extra + lines[-1:])
    assert result.response.to_dict() == _assemble("stream-text.jsonl").response.to_dict()
    assert result.summary.ignored_after_terminal == 2
    assert result.summary.last == "metadata"


def test_a_line_that_is_not_json_cuts_the_stream_before_message_stop() -> None:
    lines = _lines("stream-text.jsonl")
    result = assemble_stream([*lines[:3], b'{"contentBlockDelta": {"contentBlockIndex": 0, "del\n', *lines[3:]])
    response = result.response.to_dict()
    assert (response["kind"], response["reason"], response["text"]) == ("retryable_error", "interrupted",
                                                                         "Order ORD-1002 was")
    assert response["raw"].endswith("(an event that is not JSON)")
    assert response["usage"] is None and not result.summary.terminal


def test_a_line_that_is_not_json_after_message_stop_leaves_the_answer_standing() -> None:
    lines = _lines("stream-text.jsonl")
    result = assemble_stream([*lines[:-1], lines[-1][:40]])
    assert result.response.kind == "text" and result.response.usage is None
    assert result.summary.ignored_after_terminal == 1


def test_lines_that_are_not_one_member_objects_are_counted_and_ignored() -> None:
    lines = _lines("stream-text.jsonl")
    result = assemble_stream([lines[0], b"[]\n", b'{"messageStart": {}, "metadata": {}}\n', *lines[1:]])
    assert result.response.to_dict() == _assemble("stream-text.jsonl").response.to_dict()
    assert result.summary.events["not-an-event"] == 2


def test_a_block_of_an_unknown_start_member_reaches_classify_body_as_unsupported() -> None:
    response = assemble_stream(_events(
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {"image": {"format": "png"}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
    )).response.to_dict()
    assert (response["kind"], response["raw_type"]) == ("unsupported", "content block image")


def test_a_block_mixing_text_and_tool_input_is_unsupported_not_guessed() -> None:
    response = assemble_stream(_events(
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_X",
                                                                             "name": "get_order"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Sure."}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    )).response
    assert response.kind == "unsupported"
