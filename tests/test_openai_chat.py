"""The Chat Completions adapter: finish reasons, message shapes, compatible-server quirks, errors."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.engine.classify import classify_response
from conformance.kit.task import ModelTurn, Task, ToolResult, ToolResults, UserMessage
from conformance.providers.openai_chat import ADAPTER
from conformance.providers.openai_chat.response import FINISH_REASONS, classify_body
from tests.helpers import fixture

P = "openai-chat"


@pytest.mark.parametrize(
    ("name", "kind", "detail", "raw"),
    [
        ("body-text.json", "text", None, "finish_reason=stop"),
        ("body-tool-call.json", "tool_calls", None, "finish_reason=tool_calls"),
        ("body-parallel-calls.json", "tool_calls", None, "finish_reason=tool_calls"),
        ("body-forced-tool-finish-stop.json", "tool_calls", None, "finish_reason=stop"),
        ("body-legacy-function-call.json", "tool_calls", None, "finish_reason=function_call/message.function_call"),
        ("body-refusal.json", "refusal", "model", "message.refusal"),
        ("body-length.json", "incomplete", "max_tokens", "finish_reason=length"),
        ("body-content-filter.json", "refusal", "filter", "finish_reason=content_filter"),
        ("body-arguments-not-object.json", "invalid_tool_call", None, "finish_reason=tool_calls"),
        ("body-empty.json", "empty", None, "finish_reason=stop"),
        ("unknown-finish-reason.json", "unsupported", "finish_reason=paused_for_review",
         "finish_reason=paused_for_review"),
        ("unknown-tool-call-type.json", "unsupported", "tool call type hologram", "tool_calls[0].type=hologram"),
        ("compatible-context-window.json", "incomplete", "context_window",
         "finish_reason=model_context_window_exceeded"),
    ],
)
def test_classify_body_maps_each_wire_shape(name: str, kind: str, detail: str | None, raw: str) -> None:
    result = classify_body(fixture(P, name)).to_dict()
    assert result["kind"] == kind
    assert result["raw"] == raw
    if detail is not None:
        assert detail in (result.get("reason"), result.get("source"), result.get("raw_type"))


def test_forced_named_tool_with_finish_stop_still_yields_the_call() -> None:
    result = classify_body(fixture(P, "body-forced-tool-finish-stop.json"))
    assert [(call.call_id, call.name) for call in result.calls] == [("call_F1", "get_order")]


def test_legacy_function_call_gets_a_flagged_synthesized_id() -> None:
    (call,) = classify_body(fixture(P, "body-legacy-function-call.json")).calls
    assert call.synthesized_id is True
    assert call.name == "get_order" and call.parsed_arguments == {"order_id": "ORD-1001"}


def test_parallel_calls_keep_their_ids_in_order() -> None:
    result = classify_body(fixture(P, "body-parallel-calls.json"))
    assert [call.call_id for call in result.calls] == ["call_A1", "call_B2"]


# finish_reason → (kind, reason or source) for a body holding text and no calls, written from the Chat docs and
# the compatible servers' docs (docs/contract.md, "OpenAI-compatible servers"), not read from the adapter's table.
EXPECTED_FINISH = {
    "stop": ("text", None),
    "tool_calls": ("text", None),
    "function_call": ("text", None),
    "length": ("incomplete", "max_tokens"),
    "content_filter": ("refusal", "filter"),
    "model_context_window_exceeded": ("incomplete", "context_window"),
    "model_length": ("incomplete", "context_window"),
    "insufficient_system_resource": ("retryable_error", "overloaded"),
    "abort": ("retryable_error", "server_error"),
    "error": ("retryable_error", "server_error"),
    "eos": ("text", None),
}
# Values beyond the SDK's Choice.finish_reason literal, and who sends them.
EXTRA_FINISH = {
    "model_context_window_exceeded": "GLM / Z.ai and gateways",
    "model_length": "Mistral",
    "insufficient_system_resource": "DeepSeek",
    "abort": "vLLM",
    "error": "Mistral",
    "eos": "Together",
}


@pytest.mark.parametrize("finish", sorted(EXPECTED_FINISH))
def test_every_finish_reason_maps_to_its_kind(finish: str) -> None:
    body = fixture(P, "body-text.json")
    body["choices"][0]["finish_reason"] = finish
    result = classify_body(body).to_dict()
    assert (result["kind"], result.get("reason") or result.get("source")) == EXPECTED_FINISH[finish]
    assert result["raw"] == f"finish_reason={finish}"


def test_the_finish_table_is_the_sdk_literal_plus_the_listed_extras() -> None:
    from typing import get_args

    from openai.types.chat.chat_completion import Choice

    sdk = set(get_args(Choice.model_fields["finish_reason"].annotation))
    assert set(FINISH_REASONS) == sdk | set(EXTRA_FINISH) == set(EXPECTED_FINISH)


def test_unknown_finish_reason_is_unsupported() -> None:
    body = fixture(P, "body-text.json")
    body["choices"][0]["finish_reason"] = "brand_new"
    result = classify_body(body)
    assert result.kind == "unsupported"
    assert result.to_dict()["raw_type"] == "finish_reason=brand_new"


@pytest.mark.parametrize("finish", [None, "", "absent"])
@pytest.mark.parametrize(("name", "kind"), [("body-text.json", "text"), ("body-tool-call.json", "tool_calls"),
                                            ("body-empty.json", "empty")])
def test_missing_finish_reason_is_decided_by_the_message(finish: str | None, name: str, kind: str) -> None:
    body = fixture(P, name)
    if finish == "absent":
        del body["choices"][0]["finish_reason"]
    else:
        body["choices"][0]["finish_reason"] = finish
    result = classify_body(body)
    assert (result.kind, result.raw) == (kind, "finish_reason absent")


def test_usage_maps_prompt_and_completion_with_missing_cache_write_as_none() -> None:
    usage = classify_body(fixture(P, "body-text.json")).usage
    assert usage is not None
    assert usage.normalized() == {
        "input_tokens": 812,
        "cached_input_tokens": 768,
        "cache_write_tokens": None,
        "output_tokens": 11,
        "reasoning_tokens": 0,
        "total_tokens": 823,
    }


@pytest.mark.parametrize(
    ("status", "name", "headers", "kind", "reason", "retry_after"),
    [
        (429, "error-429-rate-limit.json", {"retry-after": "1"}, "retryable_error", "rate_limit", 1.0),
        (429, "error-429-insufficient-quota.json", {"retry-after": "1"}, "fatal_error", "quota", None),
        (400, "error-400-context-length.json", {}, "fatal_error", "context_window", None),
        (500, "error-500.json", {}, "retryable_error", "server_error", None),
        (401, "error-401.json", {}, "fatal_error", "auth", None),
    ],
)
def test_classify_error_by_status_and_code(status: int, name: str, headers: dict[str, str], kind: str, reason: str,
                                           retry_after: float | None) -> None:
    result = classify_response(ADAPTER, status, headers, fixture(P, name)).to_dict()
    assert (result["kind"], result["reason"], result["http_status"]) == (kind, reason, status)
    assert result.get("retry_after_s") == retry_after


def test_compatible_server_context_overflow_without_the_code_is_still_context_window() -> None:
    body = {"error": {"message": "This model's maximum context length is 65536 tokens.",
                      "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}
    assert ADAPTER.classify_error(400, body, {}).to_dict()["reason"] == "context_window"


def test_dashscope_moderation_error_is_a_filter_refusal() -> None:
    body = {"error": {"message": "Input data may contain inappropriate content.", "type": "data_inspection_failed",
                      "code": "data_inspection_failed"}}
    result = ADAPTER.classify_error(400, body, {}).to_dict()
    assert (result["kind"], result["source"]) == ("refusal", "filter")


def test_build_request_system_first_then_assistant_message_then_tool_results() -> None:
    task = Task(instructions="Answer order questions.", input="Status?", max_output_tokens=64)
    response = classify_body(fixture(P, "body-parallel-calls.json"))
    results = tuple(ToolResult(call=call, output={"ok": True}) for call in response.calls)
    request = ADAPTER.build_request(
        task, [UserMessage(text="Status?"), ModelTurn(response=response), ToolResults(results=results)]
    )
    messages = request["messages"]
    assert messages[0] == {"role": "system", "content": "Answer order questions."}
    assert messages[1] == {"role": "user", "content": "Status?"}
    assert messages[2]["role"] == "assistant"
    assert messages[2]["tool_calls"] == fixture(P, "body-parallel-calls.json")["choices"][0]["message"]["tool_calls"]
    assert [(m["role"], m["tool_call_id"]) for m in messages[3:]] == [("tool", "call_A1"), ("tool", "call_B2")]
    assert request["max_completion_tokens"] == 64


def test_legacy_function_result_is_a_function_message_matched_by_name() -> None:
    task = Task(instructions="x", input="y")
    response = classify_body(fixture(P, "body-legacy-function-call.json"))
    result = ToolResult(call=response.calls[0], output={"status": "shipped"})
    request = ADAPTER.build_request(task, [UserMessage(text="y"), ModelTurn(response=response),
                                           ToolResults(results=(result,))])
    assert request["messages"][-1]["role"] == "function" and request["messages"][-1]["name"] == "get_order"
    assert list(ADAPTER.read_request(request).results) == [(None, "get_order")]


def test_an_empty_refusal_string_is_not_a_refusal() -> None:
    body = fixture(P, "body-text.json")
    body["choices"][0]["message"]["refusal"] = ""
    assert classify_body(body).kind == "text"


@pytest.mark.parametrize("request_body", [{"messages": 5}, {"messages": True}, [], None])
def test_read_request_of_odd_json_never_raises(request_body: object) -> None:
    assert list(ADAPTER.read_request(request_body).results) == []  # type: ignore[arg-type]


# error.code (platform.openai.com/docs/guides/error-codes) → (kind, reason), on a status that says nothing (418).
EXPECTED_ERROR_CODES = {
    "insufficient_quota": ("fatal_error", "quota"),
    "billing_hard_limit_reached": ("fatal_error", "quota"),
    "context_length_exceeded": ("fatal_error", "context_window"),
    "rate_limit_exceeded": ("retryable_error", "rate_limit"),
    "invalid_api_key": ("fatal_error", "auth"),
    "invalid_prompt": ("fatal_error", "policy"),
    "model_not_found": ("fatal_error", "not_found"),
    "server_error": ("retryable_error", "server_error"),
    "too_many_prompt_tokens": ("fatal_error", "context_window"),
}


@pytest.mark.parametrize("code", sorted(EXPECTED_ERROR_CODES))
def test_every_error_code_maps_to_its_kind(code: str) -> None:
    from conformance.providers.openai_common.errors import ERROR_CODES

    result = ADAPTER.classify_error(418, {"error": {"code": code, "message": "x"}}, {}).to_dict()
    assert (result["kind"], result["reason"]) == EXPECTED_ERROR_CODES[code]
    assert set(ERROR_CODES) == set(EXPECTED_ERROR_CODES)


def test_only_a_context_length_message_makes_a_plain_400_a_context_window() -> None:
    plain = {"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request_error"}}
    assert ADAPTER.classify_error(400, plain, {}).to_dict()["reason"] == "invalid_request"
    long = {"error": {"message": "This model's maximum context length is 8192 tokens", "type": "x"}}
    assert ADAPTER.classify_error(400, long, {}).to_dict()["reason"] == "context_window"
    assert ADAPTER.classify_error(500, long, {}).to_dict()["reason"] == "server_error"


def test_a_custom_tool_call_keeps_its_id_name_and_input() -> None:
    """GPT-5 custom tools: ``{"type": "custom", "custom": {"name", "input"}}`` (ChatCompletionMessageCustomToolCall)."""
    from openai.types.chat import ChatCompletion

    body = fixture(P, "body-tool-call.json")
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": "call_C1", "type": "custom", "custom": {"name": "lookup_order", "input": '{"order_id":"ORD-1003"}'}}]
    ChatCompletion.model_validate(body)
    result = classify_body(body)
    assert (result.kind, result.raw) == ("tool_calls", "finish_reason=tool_calls")
    assert [(call.call_id, call.name, call.arguments, call.parsed_arguments) for call in result.calls] == [
        ("call_C1", "lookup_order", '{"order_id":"ORD-1003"}', {"order_id": "ORD-1003"})]


def test_a_custom_call_beside_a_function_call_keeps_both_in_order() -> None:
    body = fixture(P, "body-tool-call.json")
    body["choices"][0]["message"]["tool_calls"].append(
        {"id": "call_C2", "type": "custom", "custom": {"name": "lookup_order", "input": '{"order_id":"ORD-1004"}'}})
    result = classify_body(body)
    assert [(call.call_id, call.name) for call in result.calls] == [("call_A1", "get_order"),
                                                                    ("call_C2", "lookup_order")]


def test_legacy_function_call_keeps_its_arguments_string() -> None:
    (call,) = classify_body(fixture(P, "body-legacy-function-call.json")).calls
    assert (call.call_id, call.name, call.arguments) == ("function_call-0", "get_order", '{"order_id":"ORD-1001"}')


def test_the_replayed_assistant_message_keeps_content_refusal_and_the_legacy_call() -> None:
    """REPLAYED_MESSAGE_KEYS: the assistant message sent back is the response's, minus response-only keys."""
    response = classify_body(fixture(P, "body-legacy-function-call.json"))
    assert response.output_items == ({"role": "assistant", "content": None, "refusal": None,
                                      "function_call": {"name": "get_order",
                                                        "arguments": '{"order_id":"ORD-1001"}'}},)
    result = ToolResult(call=response.calls[0], output={"status": "shipped"})
    request = ADAPTER.build_request(Task(instructions="x", input="y"), [
        UserMessage(text="y"), ModelTurn(response=response), ToolResults(results=(result,))])
    assert request["messages"][2] == {"role": "assistant", "content": None, "refusal": None,
                                      "function_call": {"name": "get_order", "arguments": '{"order_id":"ORD-1001"}'}}


def test_the_replayed_message_keeps_text_and_refusal_strings() -> None:
    body = fixture(P, "body-tool-call.json")
    body["choices"][0]["message"]["content"] = "Let me look that order up."
    assert classify_body(body).output_items[0]["content"] == "Let me look that order up."
    refusal = classify_body(fixture(P, "body-refusal.json"))
    assert refusal.output_items == ({"role": "assistant", "content": None,
                                     "refusal": "I can't help with that request."},)


def test_text_beside_tool_calls_is_kept() -> None:
    body = fixture(P, "body-tool-call.json")
    body["choices"][0]["message"]["content"] = "Let me look that order up."
    result = classify_body(body).to_dict()
    assert (result["kind"], result["text"]) == ("tool_calls", "Let me look that order up.")


def test_a_refusal_keeps_its_text() -> None:
    result = classify_body(fixture(P, "body-refusal.json")).to_dict()
    assert (result["kind"], result["source"], result["text"], result["raw"]) == (
        "refusal", "model", "I can't help with that request.", "message.refusal")


def test_an_incomplete_answer_keeps_its_partial_text() -> None:
    result = classify_body(fixture(P, "body-length.json")).to_dict()
    assert (result["kind"], result["reason"], result["text"]) == (
        "incomplete", "max_tokens", "The quarterly summary covers thr")


def test_response_id_and_model_are_read_from_the_body() -> None:
    result = classify_body(fixture(P, "body-text.json"))
    assert (result.response_id, result.model) == ("chatcmpl-u1", "gpt-5.5-2026-04-23")


@pytest.mark.parametrize(("finish", "reason"), [("insufficient_system_resource", "overloaded"),
                                                ("error", "server_error")])
def test_a_retryable_finish_reason_keeps_its_reason_and_partial_identity(finish: str, reason: str) -> None:
    body = fixture(P, "body-text.json")
    body["choices"][0]["finish_reason"] = finish
    result = classify_body(body).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == ("retryable_error", reason, f"finish_reason={finish}")
    assert (result["response_id"], result["model"]) == ("chatcmpl-u1", "gpt-5.5-2026-04-23")


@pytest.mark.parametrize(("error", "detail", "provider_details"), [
    # Groq: the model's malformed call, its generation kept.
    ({"message": "Failed to call a function. Please adjust your prompt.", "type": "invalid_request_error",
      "code": "tool_use_failed", "failed_generation": "<function=get_order>{\"order_id\": ORD-1}"},
     "Failed to call a function. Please adjust your prompt.",
     {"failed_generation": "<function=get_order>{\"order_id\": ORD-1}"}),
    # No failed_generation (absent, empty or not a string): no provider details at all.
    ({"message": "Failed to call a function.", "code": "tool_use_failed"}, "Failed to call a function.", None),
    ({"message": "Failed to call a function.", "code": "tool_use_failed", "failed_generation": ""},
     "Failed to call a function.", None),
    ({"message": "Failed to call a function.", "code": "tool_use_failed", "failed_generation": {"x": 1}},
     "Failed to call a function.", None),
    # No message: the detail says what the server did, naming the code.
    ({"code": "tool_use_failed", "failed_generation": "get_order("},
     "the server rejected the model's tool call (tool_use_failed)", {"failed_generation": "get_order("}),
])
def test_a_rejected_tool_call_error_is_an_invalid_tool_call_with_its_generation(
        error: dict[str, object], detail: str, provider_details: dict[str, object] | None) -> None:
    from conformance.providers.openai_common.errors import classify_error

    expected: dict[str, object] = {
        "kind": "invalid_tool_call", "raw": "http=400/tool_use_failed", "calls": [], "text": None, "usage": None,
        "raw_usage": None, "response_id": None, "model": None, "detail": detail, "undeclared_tool": False}
    if provider_details is not None:
        expected["provider_details"] = provider_details
    assert classify_error(400, {"error": error}, {}).to_dict() == expected


def _shown(response: Any) -> dict[str, Any]:
    return {key: value for key, value in response.to_dict().items() if value not in (None, [], {}, "")}


_IDENTITY = {"response_id": "c1", "model": "m"}


@pytest.mark.parametrize(("body", "expected"), [
    ("x", {"kind": "unsupported", "raw": "body=str", "raw_type": "body of type str"}),
    ({"id": "c1", "model": "m", "choices": []},
     {"kind": "unsupported", "raw": "choices", "raw_type": "a body without choices[0]", **_IDENTITY}),
    ({"id": "c1", "model": "m", "choices": ["x"]},
     {"kind": "unsupported", "raw": "choices", "raw_type": "a body without choices[0]", **_IDENTITY}),
    ({"id": "c1", "model": "m", "choices": [{"index": 0, "finish_reason": "stop"}]},
     {"kind": "unsupported", "raw": "choices[0].message", "raw_type": "a choice without a message", **_IDENTITY}),
    ({"id": "c1", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": "x"}}]},
     {"kind": "unsupported", "raw": "message.tool_calls", "raw_type": "message.tool_calls is not a list",
      **_IDENTITY}),
    ({"id": "c1", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "x", "type": "function", "custom": {"name": "a", "input": "{}"}}]}}]},
     {"kind": "unsupported", "raw": "tool_calls[0].type=function",
      "raw_type": "a function tool call without its function object",
      **_IDENTITY}),
    ({"id": "c1", "model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "hi", "tool_calls": None}}]},
     {"kind": "text", "raw": "finish_reason=stop", "text": "hi", **_IDENTITY}),
])
def test_a_malformed_body_choice_or_call_list_is_unsupported_naming_what(body: Any, expected: dict[str, Any]) -> None:
    assert _shown(classify_body(body)) == expected
