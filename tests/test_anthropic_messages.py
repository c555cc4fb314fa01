"""The Anthropic Messages adapter: stop reasons, block types, cache-aware usage, errors, replay."""

from __future__ import annotations

import pytest

from conformance.engine.classify import classify_response
from conformance.kit.task import ModelTurn, Task, ToolResult, ToolResults, ToolSpec, UserMessage
from conformance.providers.anthropic_messages import ADAPTER
from conformance.providers.anthropic_messages.response import STOP_REASONS, classify_body
from tests.helpers import fixture, fixture_names

P = "anthropic-messages"


@pytest.mark.parametrize(
    ("name", "kind", "detail", "raw"),
    [
        ("body-text.json", "text", None, "stop_reason=end_turn"),
        ("body-tool-call.json", "tool_calls", None, "stop_reason=tool_use"),
        ("body-parallel-calls.json", "tool_calls", None, "stop_reason=tool_use"),
        ("body-thinking-then-tool-call.json", "tool_calls", None, "stop_reason=tool_use"),
        ("body-server-tool-use.json", "text", None, "stop_reason=end_turn"),
        ("body-refusal.json", "refusal", "model", "stop_reason=refusal"),
        ("body-max-tokens.json", "incomplete", "max_tokens", "stop_reason=max_tokens"),
        ("body-max-tokens-partial-tool-use.json", "incomplete", "max_tokens", "stop_reason=max_tokens"),
        ("body-context-window.json", "incomplete", "context_window", "stop_reason=model_context_window_exceeded"),
        ("body-pause-turn.json", "incomplete", "pause_turn", "stop_reason=pause_turn"),
        ("unknown-block-type.json", "unsupported", "hologram", "content[0].type=hologram"),
        ("unknown-stop-reason.json", "unsupported", "stop_reason=paused_for_review", "stop_reason=paused_for_review"),
    ],
)
def test_classify_body_maps_each_wire_shape(name: str, kind: str, detail: str | None, raw: str) -> None:
    result = classify_body(fixture(P, name)).to_dict()
    assert result["kind"] == kind
    assert result["raw"] == raw
    if detail is not None:
        assert detail in (result.get("reason"), result.get("source"), result.get("raw_type"))


def test_refusal_keeps_the_stop_details_category() -> None:
    assert classify_body(fixture(P, "body-refusal.json")).provider_details == {"category": "cyber"}


def test_thinking_is_not_answer_text_and_is_replayed_with_its_signature() -> None:
    body = fixture(P, "body-thinking-then-tool-call.json")
    result = classify_body(body)
    assert result.to_dict()["text"] is None
    assert result.output_items == ({"role": "assistant", "content": body["content"]},)
    assert result.output_items[0]["content"][0]["signature"] == body["content"][0]["signature"]


def test_server_tool_use_is_not_a_client_call() -> None:
    assert classify_body(fixture(P, "body-server-tool-use.json")).calls == ()


def test_parallel_tool_use_ids_in_order_with_object_arguments() -> None:
    calls = classify_body(fixture(P, "body-parallel-calls.json")).calls
    assert [(call.call_id, call.parsed_arguments) for call in calls] == [
        ("toolu_01A", {"order_id": "ORD-1001"}), ("toolu_01B", {"order_id": "ORD-1002"})]
    assert calls[0].arguments == '{"order_id":"ORD-1001"}'


# stop_reason → (kind, reason or source) for a body holding text and no tool_use block, written from the
# Messages docs (docs.anthropic.com/en/api/handling-stop-reasons), not read from the adapter's table.
EXPECTED_STOP = {
    "end_turn": ("text", None),
    "stop_sequence": ("text", None),
    "tool_use": ("invalid_tool_call", None),  # tool_use promises a tool_use block; this body has none
    "max_tokens": ("incomplete", "max_tokens"),
    "model_context_window_exceeded": ("incomplete", "context_window"),
    "pause_turn": ("incomplete", "pause_turn"),
    "refusal": ("refusal", "model"),
    "compaction": ("incomplete", "other"),
}
# Values the adapter maps beyond the SDK's StopReason literal, and why.
EXTRA_STOP = {"compaction": "a beta stop reason of context compaction, sent before the SDK types it"}


@pytest.mark.parametrize("stop", sorted(EXPECTED_STOP))
def test_every_stop_reason_maps_to_its_kind(stop: str) -> None:
    body = fixture(P, "body-text.json")
    body["stop_reason"] = stop
    result = classify_body(body).to_dict()
    assert (result["kind"], result.get("reason") or result.get("source")) == EXPECTED_STOP[stop]


def test_the_stop_table_is_the_sdk_literal_plus_the_listed_extras() -> None:
    from typing import get_args

    from anthropic.types import StopReason

    assert set(STOP_REASONS) == set(get_args(StopReason)) | set(EXTRA_STOP) == set(EXPECTED_STOP)


@pytest.mark.parametrize("stop", [None, "brand_new"])
def test_missing_or_unknown_stop_reason_is_unsupported(stop: str | None) -> None:
    body = fixture(P, "body-text.json")
    body["stop_reason"] = stop
    assert classify_body(body).to_dict()["raw_type"] == f"stop_reason={stop}"


def test_usage_input_is_the_sum_of_uncached_cache_read_and_cache_write() -> None:
    usage = classify_body(fixture(P, "body-cache-read.json")).usage
    assert usage is not None
    assert usage.normalized() == {
        "input_tokens": 12 + 2048 + 256,
        "cached_input_tokens": 2048,
        "cache_write_tokens": 256,
        "output_tokens": 9,
        "reasoning_tokens": None,
        "total_tokens": 12 + 2048 + 256 + 9,
    }


@pytest.mark.parametrize("name", fixture_names(P, "body-"))
def test_usage_invariants_hold_for_every_body(name: str) -> None:
    usage = classify_body(fixture(P, name)).usage
    assert usage is not None and usage.raw is not None
    assert usage.input_tokens is not None and usage.output_tokens is not None
    assert usage.input_tokens + usage.output_tokens == usage.total_tokens
    assert usage.cached_input_tokens is not None and usage.cached_input_tokens <= usage.input_tokens
    assert usage.reasoning_tokens is None  # not reported in these bodies: null, never 0


@pytest.mark.parametrize(
    ("status", "name", "headers", "kind", "reason", "retry_after"),
    [
        (429, "error-429-rate-limit.json", {"retry-after": "7"}, "retryable_error", "rate_limit", 7.0),
        (529, "error-529-overloaded.json", {}, "retryable_error", "overloaded", None),
        (402, "error-402-billing.json", {}, "fatal_error", "quota", None),
        (400, "error-400-prompt-too-long.json", {}, "fatal_error", "context_window", None),
        (401, "error-401.json", {}, "fatal_error", "auth", None),
        (500, "error-500.json", {}, "retryable_error", "server_error", None),
    ],
)
def test_classify_error_by_type(status: int, name: str, headers: dict[str, str], kind: str, reason: str,
                                retry_after: float | None) -> None:
    result = classify_response(ADAPTER, status, headers, fixture(P, name)).to_dict()
    assert (result["kind"], result["reason"], result["http_status"]) == (kind, reason, status)
    assert result.get("retry_after_s") == retry_after


def test_spend_limit_429_is_a_quota_not_a_rate_limit() -> None:
    body = fixture(P, "error-429-rate-limit.json")
    body["error"]["details"] = {"error_code": "enforced_spend_limit_reached"}
    result = ADAPTER.classify_error(429, body, {}).to_dict()
    assert (result["kind"], result["reason"]) == ("fatal_error", "quota")


def test_build_request_system_tools_and_tool_results_in_one_user_message() -> None:
    task = Task(instructions="Answer order questions.", input="Status?", max_output_tokens=300,
                tools=(ToolSpec(name="get_order", description="d", parameters={"type": "object"}),))
    body = fixture(P, "body-parallel-calls.json")
    response = classify_body(body)
    results = (ToolResult(call=response.calls[0], output={"status": "shipped"}),
               ToolResult(call=response.calls[1], output={"error": "permission_denied"}, is_error=True))
    request = ADAPTER.build_request(task, [UserMessage(text="Status?"), ModelTurn(response=response),
                                           ToolResults(results=results)])
    assert request["system"] == "Answer order questions." and request["max_tokens"] == 300
    assert request["tools"][0]["input_schema"] == {"type": "object"}
    assert request["messages"][1] == {"role": "assistant", "content": body["content"]}
    last = request["messages"][2]
    assert last["role"] == "user"
    assert [(block["tool_use_id"], block.get("is_error", False)) for block in last["content"]] == [
        ("toolu_01A", False), ("toolu_01B", True)]
    assert list(ADAPTER.read_request(request).results) == [("toolu_01A", None), ("toolu_01B", None)]


@pytest.mark.parametrize(("choice", "name", "wire"), [
    ("auto", None, {"type": "auto"}), ("required", None, {"type": "any"}), ("none", None, {"type": "none"}),
    ("tool", "get_order", {"type": "tool", "name": "get_order"})])
def test_tool_choice_mapping(choice: str, name: str | None, wire: dict[str, str]) -> None:
    task = Task(instructions="i", input="q", tool_choice=choice, tool_name=name,
                tools=(ToolSpec(name="get_order", description="d", parameters={"type": "object"}),))
    assert ADAPTER.build_request(task, [UserMessage(text="q")])["tool_choice"] == wire


def test_an_error_object_delivered_with_http_200_is_classified_by_its_type() -> None:
    result = classify_body(fixture(P, "error-529-overloaded.json")).to_dict()
    assert (result["kind"], result["reason"]) == ("retryable_error", "overloaded")


@pytest.mark.parametrize("body", [
    {"type": "message", "content": [{"type": []}, {"type": {}}], "stop_reason": "end_turn"},
    {"type": "error", "error": {"type": "rate_limit_error", "details": {"error_code": []}}},
])
def test_odd_json_never_raises(body: dict[str, object]) -> None:
    assert classify_body(body).kind in ("unsupported", "retryable_error")


@pytest.mark.parametrize("request_body", [{"messages": 5}, {"messages": ["x", [1], None]}, [], None])
def test_read_request_of_odd_json_never_raises(request_body: object) -> None:
    assert list(ADAPTER.read_request(request_body).results) == []  # type: ignore[arg-type]


# error.type (docs.anthropic.com/en/api/errors) → (kind, reason), on a status that says nothing of its own (418).
EXPECTED_ERROR_TYPES = {
    "invalid_request_error": ("fatal_error", "invalid_request"),
    "authentication_error": ("fatal_error", "auth"),
    "permission_error": ("fatal_error", "auth"),
    "billing_error": ("fatal_error", "quota"),
    "not_found_error": ("fatal_error", "not_found"),
    "request_too_large": ("fatal_error", "invalid_request"),
    "rate_limit_error": ("retryable_error", "rate_limit"),
    "timeout_error": ("retryable_error", "timeout"),
    "api_error": ("retryable_error", "server_error"),
    "overloaded_error": ("retryable_error", "overloaded"),
    "conflict_error": ("retryable_error", "conflict"),
}


@pytest.mark.parametrize("error_type", sorted(EXPECTED_ERROR_TYPES))
def test_every_error_type_maps_to_its_kind_in_a_body_and_in_a_stream(error_type: str) -> None:
    from conformance.providers.anthropic_messages.errors import ERROR_TYPES, classify_stream_error

    body = {"type": "error", "error": {"type": error_type, "message": "x"}}
    result = ADAPTER.classify_error(418, body, {}).to_dict()
    assert (result["kind"], result["reason"]) == EXPECTED_ERROR_TYPES[error_type]
    stream = classify_stream_error(body).to_dict()
    assert (stream["kind"], stream["reason"]) == EXPECTED_ERROR_TYPES[error_type]
    assert set(ERROR_TYPES) == set(EXPECTED_ERROR_TYPES)


@pytest.mark.parametrize("status", [400, 413])
def test_only_a_too_long_message_makes_a_400_a_context_window(status: int) -> None:
    plain = {"type": "error", "error": {"type": "invalid_request_error", "message": "messages: field required"}}
    assert ADAPTER.classify_error(status, plain, {}).to_dict()["reason"] == "invalid_request"
    long = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 2 > 1"}}
    assert ADAPTER.classify_error(status, long, {}).to_dict()["reason"] == "context_window"
    server = {"type": "error", "error": {"type": "api_error", "message": "prompt is too long: 2 > 1"}}
    assert ADAPTER.classify_error(500, server, {}).to_dict()["reason"] == "server_error"


@pytest.mark.parametrize("status", [400, 413])
@pytest.mark.parametrize("message", [
    "prompt is too long: 208110 tokens > 200000 maximum",
    "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or "
    "`max_tokens` and try again",
    "Prompt is too long",  # matched whatever the case
])
def test_each_overflow_phrase_makes_a_400_or_413_a_fatal_context_window(status: int, message: str) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    result = ADAPTER.classify_error(status, body, {}).to_dict()
    assert (result["kind"], result["reason"], result["http_status"], result["message"]) == (
        "fatal_error", "context_window", status, message)


def test_a_413_request_too_large_without_an_overflow_phrase_stays_an_invalid_request() -> None:
    body = {"type": "error", "error": {"type": "request_too_large", "message": "Request exceeds the maximum size"}}
    result = ADAPTER.classify_error(413, body, {}).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == ("fatal_error", "invalid_request",
                                                                 "http=413/request_too_large")


def test_contract_spend_limit_429_is_a_fatal_quota_naming_its_code() -> None:
    body = fixture(P, "error-429-rate-limit.json")
    body["error"]["details"] = {"error_code": "contract_spend_limit_reached"}
    result = ADAPTER.classify_error(429, body, {"retry-after": "7"}).to_dict()
    assert (result["kind"], result["reason"], result["raw"], result["provider_details"]) == (
        "fatal_error", "quota", "http=429/rate_limit_error/contract_spend_limit_reached",
        {"error_code": "contract_spend_limit_reached"})


@pytest.mark.parametrize("block", [
    {"type": "summary", "text": "A block type this adapter does not know, carrying a text string."},
    {"type": "thinking_summary", "text": "Also unknown."},
])
def test_an_unknown_block_carrying_a_text_string_is_unsupported_not_answer_text(block: dict[str, str]) -> None:
    body = fixture(P, "body-text.json")
    body["content"].insert(0, block)
    result = classify_body(body).to_dict()
    assert (result["kind"], result["raw_type"], result["raw"]) == (
        "unsupported", block["type"], f"content[0].type={block['type']}")


def test_a_text_block_whose_text_is_not_a_string_is_unsupported() -> None:
    body = fixture(P, "body-text.json")
    body["content"].append({"type": "text", "text": None})
    assert classify_body(body).to_dict()["raw_type"] == "text"


# One realistic block of every type the adapter keeps in the transcript but never turns into a kind (thinking and
# what server-run tools return), written from the SDK's BetaContentBlock members; each validates against them.
IGNORED_BLOCK_EXAMPLES: dict[str, dict[str, object]] = {
    "thinking": {"type": "thinking", "thinking": "The user wants an order status.", "signature": "c2lnLXRoaW5r"},
    "redacted_thinking": {"type": "redacted_thinking", "data": "ZW5jcnlwdGVkLXRoaW5raW5n"},
    "server_tool_use": {"type": "server_tool_use", "id": "srvtoolu_01S", "name": "web_search",
                        "input": {"query": "order status ORD-1002"}},
    "web_search_tool_result": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01S",
                               "content": [{"type": "web_search_result", "url": "https://example.com/orders",
                                            "title": "Orders", "encrypted_content": "ZW5j", "page_age": None}]},
    "web_fetch_tool_result": {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_01F",
                              "content": {"type": "web_fetch_result", "url": "https://example.com/orders/1002",
                                          "retrieved_at": "2026-01-05T10:00:00Z",
                                          "content": {"type": "document", "title": "Order 1002",
                                                      "source": {"type": "text", "media_type": "text/plain",
                                                                 "data": "Delivered."}}}},
    "code_execution_tool_result": {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_01C",
                                   "content": {"type": "code_execution_result", "stdout": "4\n", "stderr": "",
                                               "return_code": 0, "content": []}},
    "bash_code_execution_tool_result": {"type": "bash_code_execution_tool_result", "tool_use_id": "srvtoolu_01B",
                                        "content": {"type": "bash_code_execution_result", "stdout": "ok\n",
                                                    "stderr": "", "return_code": 0, "content": []}},
    "text_editor_code_execution_tool_result": {
        "type": "text_editor_code_execution_tool_result", "tool_use_id": "srvtoolu_01T",
        "content": {"type": "text_editor_code_execution_view_result", "content": "print(1)\n", "file_type": "text",
                    "num_lines": 1, "start_line": 1, "total_lines": 1}},
    "tool_search_tool_result": {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01R",
                                "content": {"type": "tool_search_tool_search_result",
                                            "tool_references": [{"type": "tool_reference", "tool_name": "get_order"}]}},
    "container_upload": {"type": "container_upload", "file_id": "file_01U"},
    "mcp_tool_use": {"type": "mcp_tool_use", "id": "mcptoolu_01M", "name": "lookup_order", "server_name": "orders",
                     "input": {"order_id": "ORD-1002"}},
    "mcp_tool_result": {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_01M", "is_error": False,
                        "content": [{"type": "text", "text": "ORD-1002: delivered"}]},
    "mcp_tool_listing": {"type": "mcp_tool_listing", "mcp_server_name": "orders",
                         "tools": [{"name": "lookup_order", "input_schema": {"type": "object"}}]},
    "advisor_tool_result": {"type": "advisor_tool_result", "tool_use_id": "srvtoolu_01V",
                            "content": {"type": "advisor_result", "text": "Answer from the order record."}},
    "compaction": {"type": "compaction", "content": "Earlier turns: the user asked about ORD-1002."},
    "fallback": {"type": "fallback", "from": {"model": "claude-sonnet-5"}, "to": {"model": "claude-haiku-5"},
                 "trigger": {"type": "refusal", "category": None}},
}


def test_the_ignored_block_examples_name_every_ignored_block_type() -> None:
    from conformance.providers.anthropic_messages.response import IGNORED_BLOCKS

    assert set(IGNORED_BLOCK_EXAMPLES) == set(IGNORED_BLOCKS)


@pytest.mark.parametrize("block_type", sorted(IGNORED_BLOCK_EXAMPLES))
def test_every_ignored_block_beside_text_leaves_only_the_text(block_type: str) -> None:
    from anthropic.types.beta import BetaMessage

    block = IGNORED_BLOCK_EXAMPLES[block_type]
    body = fixture(P, "body-text.json")
    body["content"].insert(0, block)
    BetaMessage.model_validate(body)
    result = classify_body(body)
    assert (result.kind, result.to_dict()["text"], result.raw) == (
        "text", "Order ORD-1002 was delivered.", "stop_reason=end_turn")
    assert result.calls == ()
    assert result.output_items == ({"role": "assistant", "content": [block,
                                    {"type": "text", "text": "Order ORD-1002 was delivered."}]},)


def _error_dict(kind: str, raw: str, reason: str, http_status: int | None, message: str | None,
                provider_details: dict[str, object] | None = None) -> dict[str, object]:
    """The whole ``to_dict()`` of an error kind with no retry delay: every field written out by the caller."""
    expected: dict[str, object] = {
        "kind": kind, "raw": raw, "calls": [], "text": None, "usage": None, "raw_usage": None, "response_id": None,
        "model": None, "reason": reason, "http_status": http_status, "message": message}
    if kind == "retryable_error":
        expected["retry_after_s"] = None
    if provider_details is not None:
        expected["provider_details"] = provider_details
    return expected


@pytest.mark.parametrize(("status", "body", "expected"), [
    # A type that is not a string names nothing: raw keeps the status only, the status decides.
    (400, {"type": "error", "error": {"type": 5, "message": "bad"}},
     _error_dict("fatal_error", "http=400", "invalid_request", 400, "bad")),
    # An empty type adds nothing to raw either.
    (400, {"type": "error", "error": {"type": "", "message": "bad"}},
     _error_dict("fatal_error", "http=400", "invalid_request", 400, "bad")),
    # A message that is not a string is no message (and never read for an overflow phrase).
    (400, {"type": "error", "error": {"type": "invalid_request_error", "message": ["prompt is too long"]}},
     _error_dict("fatal_error", "http=400/invalid_request_error", "invalid_request", 400, None)),
    (418, {"type": "error", "error": {"type": "overloaded_error", "message": {"text": "Overloaded"}}},
     _error_dict("retryable_error", "http=418/overloaded_error", "overloaded", 418, None)),
    # No error object at all: the status alone, no message, no provider details.
    (500, {}, _error_dict("retryable_error", "http=500", "server_error", 500, None)),
    (500, {"type": "error", "error": "boom"}, _error_dict("retryable_error", "http=500", "server_error", 500, None)),
    (403, [], _error_dict("fatal_error", "http=403", "auth", 403, None)),
    (404, None, _error_dict("fatal_error", "http=404", "not_found", 404, None)),
    # A text (non-JSON) body is the message, stripped.
    (502, "  <html>Bad gateway</html>\n", _error_dict("retryable_error", "http=502", "server_error", 502,
                                                       "<html>Bad gateway</html>")),
    # A detail code that is not a string is dropped: no quota override, no provider details.
    (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down",
                                      "details": {"error_code": 5}}},
     _error_dict("retryable_error", "http=429/rate_limit_error", "rate_limit", 429, "slow down")),
    (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down", "details": "x"}},
     _error_dict("retryable_error", "http=429/rate_limit_error", "rate_limit", 429, "slow down")),
    # A detail code that overrules nothing is kept in provider_details only.
    (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down",
                                      "details": {"error_code": "tokens_per_minute"}}},
     _error_dict("retryable_error", "http=429/rate_limit_error", "rate_limit", 429, "slow down",
                 {"error_code": "tokens_per_minute"})),
])
def test_classify_error_of_hostile_bodies_gives_the_whole_expected_result(
        status: int, body: object, expected: dict[str, object]) -> None:
    from conformance.providers.anthropic_messages.errors import classify_error

    assert classify_error(status, body, {}).to_dict() == expected


def test_a_long_text_error_body_is_cut_to_500_characters() -> None:
    from conformance.providers.anthropic_messages.errors import classify_error

    body = "\n  " + "A" * 500 + "B" * 100 + "  \n"
    result = classify_error(503, body, {"retry-after": "3"}).to_dict()
    assert result == {
        "kind": "retryable_error", "raw": "http=503", "calls": [], "text": None, "usage": None, "raw_usage": None,
        "response_id": None, "model": None, "reason": "overloaded", "http_status": 503, "retry_after_s": 3.0,
        "message": "A" * 500}


def test_an_error_object_with_http_200_keeps_status_200_in_raw_and_http_status() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert classify_body(body).to_dict() == _error_dict(
        "retryable_error", "http=200/overloaded_error", "overloaded", 200, "Overloaded")


def _unsupported_dict(raw: str, raw_type: str, response_id: str | None = None,
                      model: str | None = None) -> dict[str, object]:
    return {"kind": "unsupported", "raw": raw, "calls": [], "text": None, "usage": None, "raw_usage": None,
            "response_id": response_id, "model": model, "raw_type": raw_type}


@pytest.mark.parametrize(("body", "expected"), [
    ({"type": "completion", "completion": "Hi"}, _unsupported_dict("type=completion", "body of type completion")),
    ({"id": "msg_01", "content": []}, _unsupported_dict("type=None", "body of type None")),
    ("Order shipped.", _unsupported_dict("type=str", "body of type str")),
    ([{"type": "message"}], _unsupported_dict("type=list", "body of type list")),
    (None, _unsupported_dict("type=NoneType", "body of type NoneType")),
])
def test_a_body_that_is_not_a_message_is_unsupported_naming_its_type(body: object,
                                                                      expected: dict[str, object]) -> None:
    result = classify_body(body)
    assert result.to_dict() == expected
    assert result.output_items == ()


@pytest.mark.parametrize("content", ["Order shipped.", {"type": "text", "text": "Order shipped."}, None, 7])
def test_a_message_whose_content_is_not_a_list_is_unsupported_with_its_identity(content: object) -> None:
    body = {"type": "message", "id": "msg_01", "model": "claude-sonnet-4-5", "content": content,
            "stop_reason": "end_turn"}
    result = classify_body(body)
    assert result.to_dict() == _unsupported_dict("stop_reason=end_turn", "content is not a list",
                                                 "msg_01", "claude-sonnet-4-5")
    assert result.output_items == ({"role": "assistant", "content": []},)


@pytest.mark.parametrize(("stop", "raw"), [
    (["end_turn"], "stop_reason=['end_turn']"),
    ({"reason": "end_turn"}, "stop_reason={'reason': 'end_turn'}"),
    (5, "stop_reason=5"),
    ("brand_new", "stop_reason=brand_new"),
])
def test_a_stop_reason_that_is_not_a_known_string_is_unsupported_with_its_identity(stop: object, raw: str) -> None:
    body = {"type": "message", "id": "msg_02", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Hi"}], "stop_reason": stop}
    result = classify_body(body)
    assert result.to_dict() == _unsupported_dict(raw, raw, "msg_02", "claude-sonnet-4-5")
    assert result.output_items == ({"role": "assistant", "content": [{"type": "text", "text": "Hi"}]},)


def test_an_id_or_model_that_is_not_a_string_is_left_out() -> None:
    body = {"type": "message", "id": 5, "model": ["claude"], "content": [{"type": "text", "text": "Hi"}],
            "stop_reason": "end_turn"}
    assert classify_body(body).to_dict() == {
        "kind": "text", "raw": "stop_reason=end_turn", "calls": [], "text": "Hi", "usage": None, "raw_usage": None,
        "response_id": None, "model": None}


def test_stop_reason_tool_use_without_a_tool_use_block_is_an_invalid_tool_call_saying_so() -> None:
    body = {"type": "message", "id": "msg_03", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Let me check that order."}], "stop_reason": "tool_use"}
    assert classify_body(body).to_dict() == {
        "kind": "invalid_tool_call", "raw": "stop_reason=tool_use", "calls": [], "text": None, "usage": None,
        "raw_usage": None, "response_id": "msg_03", "model": "claude-sonnet-4-5",
        "detail": "stop_reason tool_use without a tool_use block", "undeclared_tool": False}


@pytest.mark.parametrize("block", ["Order shipped.", None, 5, ["text"]])
def test_a_content_block_that_is_not_an_object_is_unsupported_without_a_type(block: object) -> None:
    body = {"type": "message", "content": [{"type": "text", "text": "Hi"}, block], "stop_reason": "end_turn"}
    assert classify_body(body).to_dict() == _unsupported_dict("content[1].type=None", "None")


@pytest.mark.parametrize(("status", "error_type"), [(404, "not_found_error"), (400, "invalid_request_error")])
def test_the_replay_servers_own_error_is_a_messages_error_the_sdk_reads(status: int, error_type: str) -> None:
    from anthropic.types.shared import ErrorResponse

    from conformance.providers.anthropic_messages.errors import error_reply

    headers, body = error_reply(status, "no recorded turn 3 for case normal")
    assert headers == {}
    parsed = ErrorResponse.model_validate(body)  # the shape docs.anthropic.com/en/api/errors gives
    assert (parsed.type, parsed.error.type, parsed.error.message) == (
        "error", error_type, "no recorded turn 3 for case normal")
    assert body == {"type": "error", "error": {"type": error_type, "message": "no recorded turn 3 for case normal"}}
