"""The Gemini stream assembler: each recorded stream gives the kind its body gives; broken streams are interrupted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.kit.stream import StreamResult
from conformance.providers.gemini import ADAPTER
from conformance.providers.gemini.errors import classify_stream_error
from conformance.providers.gemini.response import classify_body
from conformance.providers.gemini.stream import assemble_stream
from tests.helpers import FIXTURES, fixture

P = "gemini"
SIGNATURE = "CiQBjz1rX2Zha2Utc2lnbmF0dXJl"
FLASH = "gemini-3.5-flash"


def stream_bytes(name: str) -> bytes:
    return (FIXTURES / P / name).read_bytes()


def assemble(data: bytes, size: int = 64 * 1024) -> StreamResult:
    return assemble_stream(data[start:start + size] for start in range(0, len(data), size))


def frames(*chunks: Any) -> bytes:
    """An SSE transcript of the given chunks, each a dict (JSON-encoded) or a raw string."""
    return b"".join(
        f"data: {chunk if isinstance(chunk, str) else json.dumps(chunk)}\r\n\r\n".encode() for chunk in chunks
    )


def text_chunk(text: str, finish: str | None = None, **part: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text, **part}], "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": FLASH, "responseId": "r1"}


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"call_id": call_id, "name": name, "parsed_arguments": arguments}


def calls_of(result: StreamResult) -> list[dict[str, Any]]:
    return [call(c.call_id, c.name, dict(c.parsed_arguments or {})) for c in result.response.calls]


def usage(input_tokens: int, output: int, total: int, *, cached: int = 0,
          reasoning: int = 0) -> dict[str, int | None]:
    """Normalized Gemini usage: a counter the chunk leaves out is a proto3 zero (docs/contract.md, "Usage")."""
    return {"input_tokens": input_tokens, "cached_input_tokens": cached, "cache_write_tokens": None,
            "output_tokens": output, "reasoning_tokens": reasoning, "total_tokens": total}


INVOICE = "Invoice INV-7 totals 42.00 EUR."

# fixture → (kind, reason/source/raw_type, raw, calls, text, normalized usage), written from wire-formats §4.
EXPECTED: dict[str, tuple[str, str | None, str, list[dict[str, Any]], str | None, dict[str, int | None] | None]] = {
    # Usage sits on every chunk; the last one is the total (812 + 768 cached, 11 + 120 thoughts), never a sum.
    "stream-text.sse": ("text", None, "finishReason=STOP", [], INVOICE,
                        usage(812, 131, 943, cached=768, reasoning=120)),
    "stream-text-with-thought.sse": ("text", None, "finishReason=STOP", [], INVOICE,
                                     usage(905, 99, 1004, reasoning=88)),
    "stream-code-execution.sse": ("text", None, "finishReason=STOP", [], INVOICE, usage(135, 40, 175)),
    "stream-unknown-event.sse": ("text", None, "finishReason=STOP", [], INVOICE,
                                 usage(812, 131, 943, cached=768, reasoning=120)),
    "stream-tool-call.sse": ("tool_calls", None, "finishReason=STOP",
                             [call("fc_7rj2", "get_invoice", {"invoice_id": "INV-7"})], None,
                             usage(640, 73, 713, reasoning=55)),
    "stream-duplicate-call.sse": ("tool_calls", None, "finishReason=STOP",
                                  [call("fc_7rj2", "get_invoice", {"invoice_id": "INV-7"})], None,
                                  usage(640, 73, 713, reasoning=55)),
    "stream-tool-call-without-id.sse": ("tool_calls", None, "finishReason=STOP",
                                        [call("get_invoice#0", "get_invoice", {"invoice_id": "INV-7"})], None,
                                        usage(640, 59, 699, reasoning=41)),
    "stream-parallel-calls.sse": ("tool_calls", None, "finishReason=STOP",
                                  [call("fc_7rj2", "get_invoice", {"invoice_id": "INV-7"}),
                                   call("fc_9pq4", "get_invoice", {"invoice_id": "INV-8"})], None,
                                  usage(640, 97, 737, reasoning=61)),
    "stream-prompt-blocked.sse": ("refusal", "filter", "promptFeedback.blockReason=PROHIBITED_CONTENT", [], None,
                                  usage(120, 0, 120)),
    "stream-safety.sse": ("refusal", "filter", "finishReason=SAFETY", [], None, usage(120, 0, 120)),
    "stream-max-tokens.sse": ("incomplete", "max_tokens", "finishReason=MAX_TOKENS", [],
                              "The quarterly summary covers thr", usage(300, 256, 556, reasoning=240)),
    "stream-continuation.sse": ("incomplete", "continuation", "finishReason=CONTINUATION", [],
                                "Section 1 of the annual report: revenue grew in every region, led by",
                                usage(410, 8502, 8912, reasoning=310)),
    "stream-stop-no-parts.sse": ("empty", None, "finishReason=STOP", [], None, usage(4210, 0, 4210)),
    "stream-malformed-function-call.sse": ("invalid_tool_call", None, "finishReason=MALFORMED_FUNCTION_CALL", [],
                                           None, usage(640, 0, 640)),
    "stream-unexpected-tool-call.sse": ("invalid_tool_call", None, "finishReason=UNEXPECTED_TOOL_CALL",
                                        [call("delete_invoice#0", "delete_invoice", {"invoice_id": "INV-7"})], None,
                                        usage(640, 14, 654)),
    "stream-unknown-part.sse": ("unsupported", "hologram", "parts[0].hologram", [], None, usage(812, 11, 823)),
    # Broken streams: usage unknown, the partial text kept but never an answer.
    "stream-interrupted.sse": ("retryable_error", "interrupted",
                               "stream ended after chunk:text without a terminal event", [],
                               "Invoice INV-7 totals 42.00", None),
    "stream-cut-mid-frame.sse": ("retryable_error", "interrupted",
                                 "stream ended after unparsable without a terminal event (an event that is not JSON)",
                                 [], "Invoice INV-7 ", None),
    "stream-error-midstream.sse": ("retryable_error", "overloaded", "stream error=503/UNAVAILABLE", [],
                                   "Invoice INV-7 ", None),
    # Gemini 3 streamFunctionCallArguments: 8 fragments are 3 calls; string pieces joined, typed values set.
    "stream-streamed-function-call-arguments.sse": (
        "tool_calls", None, "finishReason=STOP",
        [call("lookup_order#0", "lookup_order",
              {"order_id": "A-17", "include_items": True, "max_lines": 5, "filters": {"note": None}}),
         call("list_open_tickets#1", "list_open_tickets", {}), call("read_theme#2", "read_theme", {})],
        None, usage(702, 184, 886, reasoning=120)),
}

# stream fixture → the body fixture it stands for.
PARITY = {
    "stream-text.sse": "body-text.json",
    "stream-text-with-thought.sse": "body-text-with-thought-part.json",
    "stream-code-execution.sse": "body-code-execution.json",
    "stream-tool-call.sse": "body-tool-call.json",
    "stream-duplicate-call.sse": "body-tool-call.json",
    "stream-tool-call-without-id.sse": "body-tool-call-without-id.json",
    "stream-parallel-calls.sse": "body-parallel-calls-one-signature.json",
    "stream-prompt-blocked.sse": "body-prompt-blocked.json",
    "stream-safety.sse": "body-safety.json",
    "stream-max-tokens.sse": "body-max-tokens.json",
    "stream-continuation.sse": "body-continuation.json",
    "stream-stop-no-parts.sse": "body-stop-no-parts.json",
    "stream-malformed-function-call.sse": "body-malformed-function-call.json",
    "stream-unexpected-tool-call.sse": "body-unexpected-tool-call.json",
    "stream-unknown-part.sse": "unknown-part.json",
    "stream-streamed-function-call-arguments.sse": "body-calls-of-streamed-arguments.json",
}

# fixture → (events per type, first, last, terminal, duplicates).
SUMMARIES: dict[str, tuple[dict[str, int], str, str, bool, int]] = {
    "stream-text.sse": ({"chunk:text": 2, "chunk:finish": 1}, "chunk:text", "chunk:finish", True, 0),
    "stream-text-with-thought.sse": ({"chunk:thought": 2, "chunk:text": 1, "chunk:finish": 1},
                                     "chunk:thought", "chunk:finish", True, 0),
    "stream-code-execution.sse": ({"chunk:executableCode": 1, "chunk:codeExecutionResult": 1, "chunk:finish": 1},
                                  "chunk:executableCode", "chunk:finish", True, 0),
    "stream-unknown-event.sse": ({"chunk:text": 2, "chunk:serverNotice": 1, "chunk:finish": 1},
                                 "chunk:text", "chunk:finish", True, 0),
    "stream-tool-call.sse": ({"chunk:functionCall": 1, "chunk:finish": 1}, "chunk:functionCall", "chunk:finish",
                             True, 0),
    "stream-duplicate-call.sse": ({"chunk:functionCall": 1, "chunk:finish": 1}, "chunk:functionCall",
                                  "chunk:finish", True, 1),
    "stream-tool-call-without-id.sse": ({"chunk:finish": 1}, "chunk:finish", "chunk:finish", True, 0),
    "stream-parallel-calls.sse": ({"chunk:functionCall": 2, "chunk:finish": 1}, "chunk:functionCall",
                                  "chunk:finish", True, 0),
    "stream-prompt-blocked.sse": ({"chunk:blocked": 1}, "chunk:blocked", "chunk:blocked", True, 0),
    "stream-safety.sse": ({"chunk:finish": 1}, "chunk:finish", "chunk:finish", True, 0),
    "stream-max-tokens.sse": ({"chunk:text": 1, "chunk:finish": 1}, "chunk:text", "chunk:finish", True, 0),
    "stream-continuation.sse": ({"chunk:text": 1, "chunk:finish": 1}, "chunk:text", "chunk:finish", True, 0),
    "stream-stop-no-parts.sse": ({"chunk:finish": 1}, "chunk:finish", "chunk:finish", True, 0),
    "stream-malformed-function-call.sse": ({"chunk:finish": 1}, "chunk:finish", "chunk:finish", True, 0),
    "stream-unexpected-tool-call.sse": ({"chunk:functionCall": 1, "chunk:finish": 1}, "chunk:functionCall",
                                        "chunk:finish", True, 0),
    "stream-unknown-part.sse": ({"chunk:hologram": 1, "chunk:finish": 1}, "chunk:hologram", "chunk:finish", True, 0),
    "stream-interrupted.sse": ({"chunk:text": 2}, "chunk:text", "chunk:text", False, 0),
    "stream-cut-mid-frame.sse": ({"chunk:text": 1, "unparsable": 1}, "chunk:text", "unparsable", False, 0),
    "stream-error-midstream.sse": ({"chunk:text": 1, "error": 1}, "chunk:text", "error", True, 0),
    "stream-streamed-function-call-arguments.sse": ({"chunk:functionCall": 8, "chunk:finish": 1},
                                                    "chunk:functionCall", "chunk:finish", True, 0),
}


def stream_fixture_names() -> list[str]:
    return sorted(path.name for path in (FIXTURES / P).glob("stream-*.sse"))


def test_every_stream_fixture_has_an_expectation_and_a_summary() -> None:
    assert sorted(EXPECTED) == stream_fixture_names()
    assert sorted(SUMMARIES) == stream_fixture_names()


def test_the_adapter_record_exposes_the_assembler() -> None:
    assert ADAPTER.assemble_stream is assemble_stream


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_assemble_stream_maps_each_fixture(name: str) -> None:
    kind, detail, raw, calls, text, normalized = EXPECTED[name]
    result = assemble(stream_bytes(name)).response.to_dict()
    assert result["kind"] == kind
    assert result["raw"] == raw
    if detail is not None:
        assert detail in (result.get("reason"), result.get("source"), result.get("raw_type"))
    assert calls_of(assemble(stream_bytes(name))) == calls
    assert result["text"] == text
    assert result["usage"] == normalized


@pytest.mark.parametrize("name", sorted(SUMMARIES))
def test_assemble_stream_summarizes_each_fixture(name: str) -> None:
    events, first, last, terminal, duplicates = SUMMARIES[name]
    summary = assemble(stream_bytes(name)).summary.to_dict()
    assert summary["events"] == dict(sorted(events.items()))
    assert (summary["first"], summary["last"], summary["terminal"]) == (first, last, terminal)
    assert summary["duplicates"] == duplicates
    assert summary["ignored_after_terminal"] == 0


@pytest.mark.parametrize(("stream", "body"), sorted(PARITY.items()))
def test_a_stream_and_its_body_give_the_same_response(stream: str, body: str) -> None:
    from_body = classify_body(fixture(P, body))
    from_stream = assemble(stream_bytes(stream)).response
    expected, actual = from_body.to_dict(), from_stream.to_dict()
    for key in ("kind", "raw", "reason", "source", "raw_type", "text", "usage", "response_id", "model"):
        assert actual.get(key) == expected.get(key), key
    assert [(c.call_id, c.name, c.parsed_arguments, c.synthesized_id) for c in from_stream.calls] == [
        (c.call_id, c.name, c.parsed_arguments, c.synthesized_id) for c in from_body.calls
    ]
    # The content replayed next turn is the body's content: deltas merged, signatures where they came.
    assert from_stream.output_items == from_body.output_items


@pytest.mark.parametrize("name", sorted(PARITY))
def test_a_stream_cut_at_any_event_boundary_is_interrupted_until_the_terminal_chunk(name: str) -> None:
    data = stream_bytes(name)
    boundaries = [index + 4 for index in range(len(data)) if data.startswith(b"\r\n\r\n", index)]
    assert boundaries[-1] == len(data)
    for cut in [0, *boundaries[:-1]]:
        result = assemble(data[:cut]).response
        assert (result.kind, getattr(result, "reason", None)) == ("retryable_error", "interrupted"), cut
        assert result.usage is None
        assert result.calls == ()
    assert assemble(data).response.kind == EXPECTED[name][0]


def test_a_stream_cut_at_any_byte_never_raises_and_is_interrupted_until_the_last_frame_is_whole() -> None:
    data = stream_bytes("stream-text-with-thought.sse")
    last_frame_end = data.rindex(b"}") + 1
    for cut in range(len(data) + 1):
        result = assemble(data[:cut]).response
        if cut < last_frame_end:
            assert (result.kind, getattr(result, "reason", None)) == ("retryable_error", "interrupted"), cut
        else:
            assert result.kind == "text", cut


def test_byte_chunking_does_not_change_the_result() -> None:
    data = stream_bytes("stream-text-with-thought.sse")
    whole = assemble(data)
    for size in (1, 2, 3, 7, 64):
        split = assemble(data, size)
        assert split.response == whole.response
        assert split.summary == whole.summary


def test_an_interrupted_stream_keeps_the_partial_text_without_thoughts() -> None:
    data = stream_bytes("stream-text-with-thought.sse")
    cut = data.index(b"data:", data.index(INVOICE.encode()))  # after the answer, before the finish chunk
    result = assemble(data[:cut]).response
    assert result.to_dict()["text"] == INVOICE
    assert (result.response_id, result.model) == ("nQ3bZc-1Hv2PjMcP", FLASH)


def test_interrupted_partial_tool_calls_are_never_returned_as_calls() -> None:
    data = stream_bytes("stream-parallel-calls.sse")
    cut = data.index(b"data:", data.index(b"fc_9pq4"))
    result = assemble(data[:cut]).response
    assert result.kind == "retryable_error"
    assert result.calls == ()


def test_a_thought_signature_part_is_never_merged_with_its_neighbours() -> None:
    # Gemini 3 may send the signature of a streamed answer on a last, empty text part (ai.google.dev
    # thought-signatures page): it must stay a part of its own, after the merged text.
    signed = {"candidates": [{"content": {"parts": [{"text": "", "thoughtSignature": SIGNATURE}], "role": "model"},
                              "finishReason": "STOP", "index": 0}], "modelVersion": FLASH, "responseId": "r1"}
    result = assemble(frames(text_chunk("Invoice INV-7 "), text_chunk("totals 42.00 EUR."), signed)).response
    assert result.to_dict()["text"] == INVOICE
    assert result.output_items == (
        {"role": "model", "parts": [{"text": INVOICE}, {"text": "", "thoughtSignature": SIGNATURE}]},
    )


def test_a_signed_text_part_is_kept_apart_from_the_plain_text_after_it() -> None:
    result = assemble(frames(text_chunk("Invoice INV-7 ", thoughtSignature=SIGNATURE),
                             text_chunk("totals 42.00 EUR.", "STOP"))).response
    assert result.to_dict()["text"] == INVOICE
    parts = result.output_items[0]["parts"]
    assert parts == [{"text": "Invoice INV-7 ", "thoughtSignature": SIGNATURE}, {"text": "totals 42.00 EUR."}]


def test_thought_text_and_answer_text_are_not_merged_together() -> None:
    result = assemble(frames(text_chunk("Thinking.", thought=True), text_chunk(INVOICE, "STOP"))).response
    assert result.output_items[0]["parts"] == [{"text": "Thinking.", "thought": True}, {"text": INVOICE}]
    assert result.to_dict()["text"] == INVOICE


def test_usage_is_the_last_one_sent_and_never_summed() -> None:
    first = {**text_chunk("Par"), "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}
    last = {**text_chunk("is.", "STOP"),
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 3, "totalTokenCount": 12}}
    assert assemble(frames(first, last)).response.to_dict()["usage"] == usage(9, 3, 12)


def test_chunks_after_the_terminal_chunk_are_counted_and_ignored() -> None:
    extra_usage = {**text_chunk(" extra"), "usageMetadata": {"promptTokenCount": 99, "totalTokenCount": 99}}
    data = frames(text_chunk(INVOICE, "STOP"), extra_usage, "not json",
                  {"error": {"code": 500, "status": "INTERNAL", "message": "late"}})
    result = assemble(data)
    assert result.response.kind == "text"
    assert result.response.to_dict()["text"] == INVOICE
    assert result.response.usage is None
    summary = result.summary.to_dict()
    assert summary["ignored_after_terminal"] == 3
    assert summary["events"] == {"chunk:finish": 1, "chunk:text": 1, "error": 1, "unparsable": 1}


def test_a_frame_that_is_not_json_cuts_the_stream() -> None:
    result = assemble(frames(text_chunk("Invoice "), "[DONE]", text_chunk("INV-7", "STOP")))
    assert result.response.kind == "retryable_error"
    assert result.response.to_dict()["raw"].endswith("(an event that is not JSON)")
    assert result.response.to_dict()["text"] == "Invoice "


def test_a_named_event_and_a_comment_are_not_gemini_chunks_and_are_ignored() -> None:
    data = b": keep-alive\r\n\r\nevent: heartbeat\r\ndata: {}\r\n\r\n" + frames(text_chunk(INVOICE, "STOP"))
    result = assemble(data)
    assert result.response.kind == "text"
    assert result.summary.events == {"event:heartbeat": 1, "chunk:finish": 1}


def test_a_json_frame_that_is_not_an_object_is_counted_and_ignored() -> None:
    result = assemble(frames("[1, 2]", text_chunk(INVOICE, "STOP")))
    assert result.response.kind == "text"
    assert result.summary.events == {"not-an-object": 1, "chunk:finish": 1}


def test_only_candidate_zero_is_assembled() -> None:
    other = {"candidates": [{"content": {"parts": [{"text": "Other answer."}], "role": "model"}, "index": 1}]}
    result = assemble(frames(text_chunk("Invoice INV-7 "), other, text_chunk("totals 42.00 EUR.", "STOP")))
    assert result.response.to_dict()["text"] == INVOICE


def test_a_repeated_text_frame_is_not_a_duplicate() -> None:
    result = assemble(frames(text_chunk("ha"), text_chunk("ha"), text_chunk("!", "STOP")))
    assert result.response.to_dict()["text"] == "haha!"
    assert result.summary.duplicates == 0


def test_a_different_call_reusing_an_id_is_kept_for_the_duplicate_id_check() -> None:
    def call_chunk(invoice: str) -> dict[str, Any]:
        part = {"functionCall": {"id": "fc_1", "name": "get_invoice", "args": {"invoice_id": invoice}}}
        return {"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}], "responseId": "r1"}

    stop = {"candidates": [{"content": {"role": "model"}, "finishReason": "STOP", "index": 0}], "responseId": "r1"}
    result = assemble(frames(call_chunk("INV-7"), call_chunk("INV-8"), stop))
    assert [c.call_id for c in result.response.calls] == ["fc_1", "fc_1"]
    assert result.summary.duplicates == 0


@pytest.mark.parametrize(
    ("error", "kind", "reason", "retry_after"),
    [
        ({"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"},
         "retryable_error", "overloaded", None),
        ({"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"},
         "retryable_error", "server_error", None),
        ({"code": 504, "message": "Deadline exceeded.", "status": "DEADLINE_EXCEEDED"}, "retryable_error", "timeout",
         None),
        ({"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED",
          "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "27s"}]},
         "retryable_error", "rate_limit", 27.0),
        ({"code": 429, "message": "Quota exceeded for requests per day.", "status": "RESOURCE_EXHAUSTED"},
         "fatal_error", "quota", None),
        ({"code": 400, "message": "Request contains an invalid argument.", "status": "INVALID_ARGUMENT"},
         "fatal_error", "invalid_request", None),
        ({"status": "UNAVAILABLE"}, "retryable_error", "overloaded", None),
        ({"code": 502}, "retryable_error", "server_error", None),
        ({}, "retryable_error", "server_error", None),
        ({"status": "SOMETHING_NEW"}, "retryable_error", "server_error", None),
    ],
)
def test_a_mid_stream_error_frame_is_classified_by_code_and_status(
    error: dict[str, Any], kind: str, reason: str, retry_after: float | None
) -> None:
    result = assemble(frames(text_chunk("Invoice "), {"error": error}))
    response = result.response.to_dict()
    assert (response["kind"], response["reason"]) == (kind, reason)
    assert response["http_status"] is None  # the stream itself was a 200
    assert response.get("retry_after_s") == retry_after
    assert response["usage"] is None
    assert result.summary.terminal is True
    assert classify_stream_error({"error": error}).kind == kind


def test_a_mid_stream_error_keeps_the_partial_text_the_id_and_the_model() -> None:
    response = assemble(stream_bytes("stream-error-midstream.sse")).response
    assert response.to_dict()["message"] == "The model is overloaded. Please try again later."
    assert (response.response_id, response.model) == ("mKk2aZ-8Ls7SjMcP", FLASH)


def test_an_empty_stream_is_interrupted() -> None:
    result = assemble(b"")
    assert (result.response.kind, result.response.to_dict()["text"]) == ("retryable_error", None)
    assert result.summary.to_dict()["event_count"] == 0


@pytest.mark.parametrize("name", [name for name in sorted(EXPECTED) if "unknown" not in name])
@pytest.mark.filterwarnings("ignore:.*is not a valid.*:UserWarning")
def test_every_stream_chunk_validates_against_the_google_genai_types(name: str) -> None:
    from google.genai.types import GenerateContentResponse

    for line in stream_bytes(name).split(b"\r\n"):
        if not line.startswith(b"data: "):
            continue
        try:
            chunk = json.loads(line[len(b"data: "):])
        except ValueError:
            continue  # the deliberately cut frame
        if "error" not in chunk:
            GenerateContentResponse.model_validate(chunk)


def test_stream_fixtures_use_the_crlf_framing_gemini_sends() -> None:
    for name in stream_fixture_names():
        data = Path(FIXTURES / P / name).read_bytes()
        assert b"\n" not in data.replace(b"\r\n", b""), name
