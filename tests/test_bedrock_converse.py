"""The Bedrock Converse adapter: every wire value the contract names maps to its kind, with the raw value kept."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from conformance.engine.classify import classify_response
from conformance.kit.task import ModelTurn, Task, ToolResult, ToolResults, ToolSpec, UserMessage
from conformance.providers.bedrock_converse import ADAPTER
from conformance.providers.bedrock_converse.errors import ERROR_TYPES
from conformance.providers.bedrock_converse.response import STOP_REASONS, classify_body
from tests.botocore_shapes import (
    service_model,
    shape_violations,
    validate_converse_request,
    validate_converse_response,
    validate_shape,
)
from tests.helpers import fixture, fixture_names

P = "bedrock-converse"


@pytest.mark.parametrize(
    ("name", "kind", "detail", "raw"),
    [
        ("body-text.json", "text", None, "stopReason=end_turn"),
        ("body-tool-call.json", "tool_calls", None, "stopReason=tool_use"),
        ("body-parallel-calls.json", "tool_calls", None, "stopReason=tool_use"),
        ("body-reasoning-then-tool-call.json", "tool_calls", None, "stopReason=tool_use"),
        ("body-server-tool-use.json", "text", None, "stopReason=end_turn"),
        ("body-cache-buckets.json", "text", None, "stopReason=end_turn"),
        ("body-empty.json", "empty", None, "stopReason=end_turn"),
        ("body-guardrail-intervened.json", "refusal", "filter", "stopReason=guardrail_intervened"),
        ("body-content-filtered.json", "refusal", "filter", "stopReason=content_filtered"),
        ("body-max-tokens.json", "incomplete", "max_tokens", "stopReason=max_tokens"),
        ("body-context-window.json", "incomplete", "context_window", "stopReason=model_context_window_exceeded"),
        ("body-malformed-tool-use.json", "invalid_tool_call", None, "stopReason=malformed_tool_use"),
        ("body-malformed-model-output.json", "retryable_error", "server_error", "stopReason=malformed_model_output"),
        ("body-input-not-object.json", "invalid_tool_call", None, "stopReason=tool_use"),
        ("unknown-stop-reason.json", "unsupported", "stopReason=brand_new_reason", "stopReason=brand_new_reason"),
        ("unknown-content-block.json", "unsupported", "content block hologram",
         "output.message.content[0].hologram"),
    ],
)
def test_classify_body_maps_each_wire_shape(name: str, kind: str, detail: str | None, raw: str) -> None:
    result = classify_body(fixture(P, name)).to_dict()
    assert result["kind"] == kind
    assert result["raw"] == raw
    if detail is not None:
        assert detail in (result.get("reason"), result.get("source"), result.get("raw_type"))
    assert (result["response_id"], result["model"]) == (None, None)


# stopReason → the kind it gives on a text-only body and on a body with text + a client toolUse.
KIND_BY_STOP_REASON: dict[str, tuple[str, str]] = {
    "end_turn": ("text", "tool_calls"),
    "stop_sequence": ("text", "tool_calls"),
    "tool_use": ("invalid_tool_call", "tool_calls"),
    "max_tokens": ("incomplete", "incomplete"),
    "model_context_window_exceeded": ("incomplete", "incomplete"),
    "guardrail_intervened": ("refusal", "refusal"),
    "content_filtered": ("refusal", "refusal"),
    "malformed_tool_use": ("invalid_tool_call", "invalid_tool_call"),
    "malformed_model_output": ("retryable_error", "retryable_error"),
}
# stopReason → the reason or refusal source it carries, where it carries one.
REASON_BY_STOP_REASON = {
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "context_window",
    "guardrail_intervened": "filter",
    "content_filtered": "filter",
    "malformed_model_output": "server_error",
}


def test_stop_reason_table_covers_exactly_the_service_model_enum() -> None:
    enum = service_model().shape_for("StopReason").enum
    assert sorted(STOP_REASONS) == sorted(enum) == sorted(KIND_BY_STOP_REASON)


@pytest.mark.parametrize("stop_reason", sorted(STOP_REASONS))
def test_every_stop_reason_in_the_table_is_mapped(stop_reason: str) -> None:
    text_body = fixture(P, "body-text.json")
    tool_body = fixture(P, "body-tool-call.json")
    text_body["stopReason"] = tool_body["stopReason"] = stop_reason
    text_result, tool_result = classify_body(text_body), classify_body(tool_body)
    assert (text_result.kind, tool_result.kind) == KIND_BY_STOP_REASON[stop_reason]
    assert text_result.raw == tool_result.raw == f"stopReason={stop_reason}"
    carried = text_result.to_dict().get("reason") or text_result.to_dict().get("source")
    assert carried == REASON_BY_STOP_REASON.get(stop_reason)
    assert text_result.to_dict().get("undeclared_tool", False) is False  # Bedrock never says which tool was unknown


@pytest.mark.parametrize("stop_reason", [None, "brand_new_reason", 7])
def test_unknown_or_missing_stop_reason_is_unsupported_and_named(stop_reason: object) -> None:
    body = fixture(P, "body-tool-call.json")
    if stop_reason is None:
        del body["stopReason"]
    else:
        body["stopReason"] = stop_reason
    result = classify_body(body)
    assert result.kind == "unsupported"
    assert result.to_dict()["raw_type"] == f"stopReason={stop_reason}"
    assert result.output_items == (body["output"]["message"],)


@pytest.mark.parametrize("body", [None, [], "text", 3, {"stopReason": "end_turn"},
                                  {"output": {"message": {"role": "assistant"}}, "stopReason": "end_turn"}])
def test_non_response_bodies_are_unsupported(body: object) -> None:
    assert classify_body(body).kind == "unsupported"


def test_classify_body_keeps_tool_use_ids_names_and_inputs_in_order() -> None:
    result = classify_body(fixture(P, "body-parallel-calls.json"))
    assert [(call.call_id, call.name, call.parsed_arguments) for call in result.calls] == [
        ("tooluse_A1b2C3d4E5f6G7h8I9j0Kl", "get_order", {"order_id": "ORD-1001"}),
        ("tooluse_M1n2O3p4Q5r6S7t8U9v0Wx", "get_order", {"order_id": "ORD-1002"}),
    ]
    assert result.calls[0].arguments == '{"order_id":"ORD-1001"}'
    assert not any(call.synthesized_id for call in result.calls)


def test_classify_body_keeps_text_beside_the_call() -> None:
    result = classify_body(fixture(P, "body-tool-call.json")).to_dict()
    assert result["text"] == "Let me look that order up."
    assert [call["call_id"] for call in result["calls"]] == ["tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"]


def test_classify_body_keeps_the_message_with_reasoning_for_replay() -> None:
    body = fixture(P, "body-reasoning-then-tool-call.json")
    result = classify_body(body)
    assert result.output_items == (body["output"]["message"],)
    assert "reasoningContent" in result.output_items[0]["content"][0]
    assert [call.call_id for call in result.calls] == ["tooluse_R7sT9uVwXyZ0aB1cD2eF3g"]


def test_server_tool_use_is_not_a_client_call() -> None:
    result = classify_body(fixture(P, "body-server-tool-use.json"))
    assert (result.kind, result.calls) == ("text", ())
    assert result.to_dict()["text"].startswith("Carriers currently report no delays")


def test_tool_use_stop_with_only_a_server_tool_use_is_an_invalid_tool_call() -> None:
    body = fixture(P, "body-server-tool-use.json")
    body["stopReason"] = "tool_use"
    result = classify_body(body).to_dict()
    assert (result["kind"], result["detail"]) == ("invalid_tool_call", "stop reason tool_use without a toolUse block")


def test_a_client_tool_use_wins_over_end_turn() -> None:
    body = fixture(P, "body-tool-call.json")
    body["stopReason"] = "end_turn"
    result = classify_body(body)
    assert (result.kind, result.raw) == ("tool_calls", "stopReason=end_turn")


@pytest.mark.parametrize(("stop_reason", "kind"), [("max_tokens", "incomplete"), ("guardrail_intervened", "refusal")])
def test_refusal_and_truncation_win_over_partial_tool_calls(stop_reason: str, kind: str) -> None:
    body = fixture(P, "body-parallel-calls.json")
    body["stopReason"] = stop_reason
    assert classify_body(body).kind == kind


def test_refusal_and_truncation_keep_the_content_text() -> None:
    assert classify_body(fixture(P, "body-guardrail-intervened.json")).to_dict()["text"] == (
        "Sorry, the model cannot answer this question.")
    assert classify_body(fixture(P, "body-max-tokens.json")).to_dict()["text"] == "The quarterly summary covers thr"


def test_input_that_is_not_an_object_is_an_invalid_tool_call() -> None:
    result = classify_body(fixture(P, "body-input-not-object.json")).to_dict()
    assert "arguments are not a JSON object" in result["detail"]
    assert [call["arguments"] for call in result["calls"]] == ['"ORD-1001"']


def test_malformed_tool_use_names_the_vendor_signal() -> None:
    result = classify_body(fixture(P, "body-malformed-tool-use.json")).to_dict()
    assert result["detail"].startswith("stopReason=malformed_tool_use")


@pytest.mark.parametrize(
    ("block", "raw_type"),
    [
        ({"toolUse": {"toolUseId": "t1", "name": "get_order", "input": {}, "type": "hosted_tool_use"}},
         "toolUse type hosted_tool_use"),
        ({"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}, "content block image"),
        ({"toolAddition": {"tool": {"name": "get_order"}}}, "content block toolAddition"),
        ({"text": 3}, "text block holding a int"),
        ({"text": "a", "toolUse": {}}, "content block that is not a one-member object at output.message.content[1]"),
    ],
)
def test_unknown_blocks_are_unsupported_and_named(block: dict[str, Any], raw_type: str) -> None:
    body = fixture(P, "body-text.json")
    body["output"]["message"]["content"].append(block)
    result = classify_body(body)
    assert (result.kind, result.to_dict()["raw_type"]) == ("unsupported", raw_type)


@pytest.mark.parametrize(
    "block",
    [
        {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}},
        {"cachePoint": {"type": "default"}},
        {"guardContent": {"text": {"text": "guarded"}}},
        {"searchResult": {"source": "kb", "title": "Orders", "content": [{"text": "x"}]}},
        {"toolResult": {"toolUseId": "srv", "content": [{"text": "x"}]}},
    ],
)
def test_known_non_answer_blocks_are_not_a_kind_by_themselves(block: dict[str, Any]) -> None:
    body = fixture(P, "body-text.json")
    body["output"]["message"]["content"].insert(0, block)
    result = classify_body(body)
    assert (result.kind, result.to_dict()["text"]) == ("text", "Order ORD-1002 was delivered.")


# ---- usage -----------------------------------------------------------------------------------------------


def test_usage_adds_the_cache_buckets_to_input() -> None:
    body = fixture(P, "body-cache-buckets.json")
    usage = classify_body(body).usage
    assert usage is not None
    assert usage.normalized() == {
        "input_tokens": 2425,
        "cached_input_tokens": 1800,
        "cache_write_tokens": 600,
        "output_tokens": 40,
        "reasoning_tokens": None,
        "total_tokens": 2465,
    }
    assert usage.raw == body["usage"]


def test_usage_of_a_cache_read() -> None:
    usage = classify_body(fixture(P, "body-text.json")).usage
    assert usage is not None
    assert (usage.input_tokens, usage.cached_input_tokens) == (812, 768)
    assert (usage.output_tokens, usage.total_tokens) == (14, 826)


@pytest.mark.parametrize("name", fixture_names(P, "body-"))
def test_usage_invariants_hold_for_every_body(name: str) -> None:
    usage = classify_body(fixture(P, name)).usage
    assert usage is not None
    assert usage.input_tokens is not None and usage.output_tokens is not None
    assert usage.input_tokens + usage.output_tokens == usage.total_tokens
    assert (usage.cached_input_tokens or 0) <= usage.input_tokens
    assert usage.reasoning_tokens is None


def test_usage_fields_absent_are_none_not_zero() -> None:
    body = fixture(P, "body-text.json")
    body["usage"] = {"inputTokens": 25, "outputTokens": 5, "totalTokens": 30}
    usage = classify_body(body).usage
    assert usage is not None
    assert usage.normalized() == {
        "input_tokens": 25,
        "cached_input_tokens": None,
        "cache_write_tokens": None,
        "output_tokens": 5,
        "reasoning_tokens": None,
        "total_tokens": 30,
    }


def test_input_without_input_tokens_is_unknown_even_with_cache_buckets() -> None:
    body = fixture(P, "body-text.json")
    del body["usage"]["inputTokens"]
    usage = classify_body(body).usage
    assert usage is not None
    assert (usage.input_tokens, usage.cached_input_tokens) == (None, 768)


def test_usage_absent_is_none() -> None:
    body = fixture(P, "body-text.json")
    del body["usage"]
    assert classify_body(body).usage is None


# ---- requests --------------------------------------------------------------------------------------------

ORDER_TOOL = ToolSpec(name="get_order", description="Look up one order.",
                      parameters={"type": "object", "properties": {"order_id": {"type": "string"}}})
TASK = Task(instructions="Answer order questions.", input="Status of ORD-1001?", tools=(ORDER_TOOL,),
            max_output_tokens=256)


def _follow_up(task: Task, body: dict[str, Any], *, is_error: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    response = classify_body(body)
    results = tuple(ToolResult(call=call, output={"order_id": "ORD-1001", "status": "shipped"}, is_error=is_error)
                    for call in response.calls)
    first = ADAPTER.build_request(task, [UserMessage(text=task.input)])
    second = ADAPTER.build_request(
        task, [UserMessage(text=task.input), ModelTurn(response=response), ToolResults(results=results)]
    )
    return first, second


def test_build_request_puts_instructions_tools_and_limits_where_converse_wants_them() -> None:
    request = ADAPTER.build_request(TASK, [UserMessage(text="Hi")])
    assert list(request) == ["system", "toolConfig", "inferenceConfig", "messages"]
    assert request["system"] == [{"text": "Answer order questions."}]
    assert request["toolConfig"] == {
        "tools": [{"toolSpec": {"name": "get_order", "description": "Look up one order.",
                                "inputSchema": {"json": dict(ORDER_TOOL.parameters)}}}],
        "toolChoice": {"auto": {}},
    }
    assert request["inferenceConfig"] == {"maxTokens": 256}
    assert request["messages"] == [{"role": "user", "content": [{"text": "Hi"}]}]
    assert "modelId" not in request and "model" not in request


@pytest.mark.parametrize(
    ("tool_choice", "tool_name", "expected"),
    [
        ("auto", None, {"auto": {}}),
        ("required", None, {"any": {}}),
        ("tool", "get_order", {"tool": {"name": "get_order"}}),
        ("none", None, None),
    ],
)
def test_build_request_maps_tool_choice(tool_choice: str, tool_name: str | None, expected: Any) -> None:
    task = Task(instructions="x", input="y", tools=(ORDER_TOOL,), tool_choice=tool_choice, tool_name=tool_name)
    config = ADAPTER.build_request(task, [UserMessage(text="y")])["toolConfig"]
    assert config.get("toolChoice") == expected
    assert config["tools"][0]["toolSpec"]["name"] == "get_order"


def test_build_request_rejects_an_unknown_tool_choice() -> None:
    task = Task(instructions="x", input="y", tools=(ORDER_TOOL,), tool_choice="sometimes")
    with pytest.raises(ValueError, match="sometimes"):
        ADAPTER.build_request(task, [UserMessage(text="y")])


def test_build_request_without_tools_has_no_tool_config() -> None:
    request = ADAPTER.build_request(Task(instructions="x", input="y"), [UserMessage(text="y")])
    assert "toolConfig" not in request


def test_build_request_sends_the_output_schema_as_a_compact_sorted_string() -> None:
    schema = {"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}}
    task = Task(instructions="x", input="y", output_schema=schema, output_schema_name="order_status")
    request = ADAPTER.build_request(task, [UserMessage(text="y")])
    json_schema = request["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    assert request["outputConfig"]["textFormat"]["type"] == "json_schema"
    assert json_schema == {
        "schema": '{"properties":{"status":{"type":"string"}},"required":["status"],"type":"object"}',
        "name": "order_status",
    }
    assert json.loads(json_schema["schema"]) == schema
    assert "outputConfig" not in ADAPTER.build_request(TASK, [UserMessage(text="y")])


def test_build_request_replays_the_assistant_message_byte_identical_with_reasoning() -> None:
    body = fixture(P, "body-reasoning-then-tool-call.json")
    received = json.dumps(body["output"]["message"])
    first, second = _follow_up(TASK, body)
    assert second["messages"][: len(first["messages"])] == first["messages"]
    replayed = second["messages"][len(first["messages"])]
    assert json.dumps(replayed) == received
    assert "signature" in replayed["content"][0]["reasoningContent"]["reasoningText"]
    assert {key: value for key, value in second.items() if key != "messages"} == {
        key: value for key, value in first.items() if key != "messages"
    }


def test_build_request_sends_all_results_in_one_user_message_echoing_tool_use_ids() -> None:
    _, second = _follow_up(TASK, fixture(P, "body-parallel-calls.json"))
    assert second["messages"][-1] == {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "tooluse_A1b2C3d4E5f6G7h8I9j0Kl",
                            "content": [{"json": {"order_id": "ORD-1001", "status": "shipped"}}],
                            "status": "success"}},
            {"toolResult": {"toolUseId": "tooluse_M1n2O3p4Q5r6S7t8U9v0Wx",
                            "content": [{"json": {"order_id": "ORD-1001", "status": "shipped"}}],
                            "status": "success"}},
        ],
    }


def test_build_request_marks_a_refused_call_as_an_error_result() -> None:
    _, second = _follow_up(TASK, fixture(P, "body-tool-call.json"), is_error=True)
    result = second["messages"][-1]["content"][0]["toolResult"]
    assert (result["toolUseId"], result["status"]) == ("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "error")


@pytest.mark.parametrize("tool_choice", ["auto", "required", "none", "tool"])
def test_built_requests_fit_the_converse_request_shape(tool_choice: str) -> None:
    task = Task(instructions="x", input="y", tools=(ORDER_TOOL,), tool_choice=tool_choice, tool_name="get_order",
                output_schema={"type": "object"})
    for request in _follow_up(task, fixture(P, "body-reasoning-then-tool-call.json"), is_error=True):
        validate_converse_request(request)


def test_read_request_splits_prefix_history_and_results() -> None:
    _, second = _follow_up(TASK, fixture(P, "body-parallel-calls.json"))
    parts = ADAPTER.read_request(second)
    # The tool choice is a per-turn slot, not part of the static prefix (docs/contract.md, "Requests").
    tool_config = {key: value for key, value in second["toolConfig"].items() if key != "toolChoice"}
    assert "toolChoice" in second["toolConfig"]
    assert parts.prefix == {**{key: value for key, value in second.items() if key != "messages"},
                            "toolConfig": tool_config}
    assert list(parts.history) == second["messages"]
    assert list(parts.results) == [("tooluse_A1b2C3d4E5f6G7h8I9j0Kl", None), ("tooluse_M1n2O3p4Q5r6S7t8U9v0Wx", None)]


def test_read_request_ignores_the_tool_result_of_a_server_tool_in_the_replayed_message() -> None:
    body = fixture(P, "body-server-tool-use.json")
    request = ADAPTER.build_request(TASK, [UserMessage(text="y"), ModelTurn(response=classify_body(body))])
    assert "toolResult" in request["messages"][1]["content"][1]
    assert list(ADAPTER.read_request(request).results) == []


# ---- errors ----------------------------------------------------------------------------------------------

CORAL = ":http://internal.amazon.com/coral/com.amazon.bedrock/"


@pytest.mark.parametrize(
    ("status", "name", "headers", "kind", "reason", "raw"),
    [
        (429, "error-throttling.json", {"x-amzn-errortype": "ThrottlingException" + CORAL}, "retryable_error",
         "rate_limit", "http=429/ThrottlingException"),
        (429, "error-model-not-ready.json", {"x-amzn-errortype": "ModelNotReadyException"}, "retryable_error",
         "overloaded", "http=429/ModelNotReadyException"),
        (400, "error-validation-too-long.json", {"x-amzn-errortype": "ValidationException" + CORAL}, "fatal_error",
         "context_window", "http=400/ValidationException"),
        (400, "error-prompt-too-long.json", {"x-amzn-errortype": "ValidationException"}, "fatal_error",
         "context_window", "http=400/ValidationException"),
        (400, "error-validation.json", {"x-amzn-errortype": "ValidationException"}, "fatal_error",
         "invalid_request", "http=400/ValidationException"),
        (400, "error-service-quota.json", {"x-amzn-errortype": "ServiceQuotaExceededException"}, "fatal_error",
         "quota", "http=400/ServiceQuotaExceededException"),
        (403, "error-access-denied.json", {"x-amzn-errortype": "AccessDeniedException" + CORAL}, "fatal_error",
         "auth", "http=403/AccessDeniedException"),
        (404, "error-not-found.json", {"x-amzn-errortype": "ResourceNotFoundException"}, "fatal_error",
         "not_found", "http=404/ResourceNotFoundException"),
        (424, "error-model-error.json", {"x-amzn-errortype": "ModelErrorException"}, "fatal_error",
         "invalid_request", "http=424/ModelErrorException"),
        # No error type at all: the status decides.
        (429, "error-throttling.json", {}, "retryable_error", "rate_limit", "http=429"),
        (400, "error-validation-too-long.json", {}, "fatal_error", "context_window", "http=400"),
    ],
)
def test_classify_error_by_status_and_error_type(status: int, name: str, headers: dict[str, str], kind: str,
                                                 reason: str, raw: str) -> None:
    body = fixture(P, name)
    result = classify_response(ADAPTER, status, headers, body).to_dict()
    assert (result["kind"], result["reason"], result["http_status"], result["raw"]) == (kind, reason, status, raw)
    assert result["message"] == body.get("message", body.get("Message"))


# Converse error types → (kind, reason), written here rather than read from the adapter's table
# (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html#API_runtime_Converse_Errors).
EXPECTED_ERRORS = {
    "ThrottlingException": ("retryable_error", "rate_limit"),
    "ModelNotReadyException": ("retryable_error", "overloaded"),
    "ServiceUnavailableException": ("retryable_error", "overloaded"),
    "InternalServerException": ("retryable_error", "server_error"),
    "ModelTimeoutException": ("retryable_error", "timeout"),
    "ModelStreamErrorException": ("retryable_error", "server_error"),
    "ModelErrorException": ("fatal_error", "invalid_request"),
    "ValidationException": ("fatal_error", "invalid_request"),
    "AccessDeniedException": ("fatal_error", "auth"),
    "UnrecognizedClientException": ("fatal_error", "auth"),
    "ResourceNotFoundException": ("fatal_error", "not_found"),
    "ServiceQuotaExceededException": ("fatal_error", "quota"),
}


@pytest.mark.parametrize("error_type", sorted(EXPECTED_ERRORS))
def test_every_error_type_maps_to_its_kind(error_type: str) -> None:
    # A 418 has no meaning of its own, so only the error type can decide.
    result = ADAPTER.classify_error(418, {"message": "x"}, {"x-amzn-errortype": error_type}).to_dict()
    assert (result["kind"], result["reason"]) == EXPECTED_ERRORS[error_type]
    assert result["raw"] == f"http=418/{error_type}"


def test_the_error_table_names_exactly_the_expected_types() -> None:
    assert set(ERROR_TYPES) == set(EXPECTED_ERRORS)


@pytest.mark.parametrize(
    "body",
    [
        {"__type": "ThrottlingException", "message": "Too many requests"},
        {"__type": "com.amazon.coral.service#ThrottlingException", "message": "Too many requests"},
        {"__type": "com.amazon.bedrock#ThrottlingException:http://internal.amazon.com/coral/", "message": "x"},
    ],
)
def test_classify_error_reads_the_body_type_when_no_header_names_it(body: dict[str, str]) -> None:
    result = ADAPTER.classify_error(400, body, {}).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == ("retryable_error", "rate_limit",
                                                                 "http=400/ThrottlingException")


def test_the_header_wins_over_the_body_type_and_its_name_is_case_insensitive() -> None:
    body = {"__type": "ValidationException", "message": "Too many requests"}
    result = ADAPTER.classify_error(429, body, {"X-Amzn-ErrorType": "ThrottlingException"})
    assert result.raw == "http=429/ThrottlingException"


def test_an_unknown_error_type_falls_back_to_the_status_and_is_named() -> None:
    result = ADAPTER.classify_error(503, {"message": "x"}, {"x-amzn-errortype": "BrandNewException"}).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == ("retryable_error", "overloaded",
                                                                 "http=503/BrandNewException")


@pytest.mark.parametrize(
    ("status", "body", "kind", "reason"),
    [
        (502, "<html>Bad gateway</html>", "retryable_error", "server_error"),
        (503, "<html>Service Unavailable</html>", "retryable_error", "overloaded"),
        (400, None, "fatal_error", "invalid_request"),
        (500, "", "retryable_error", "server_error"),
    ],
)
def test_classify_error_without_a_json_body_falls_back_to_the_status(status: int, body: object, kind: str,
                                                                      reason: str) -> None:
    result = ADAPTER.classify_error(status, body, {}).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == (kind, reason, f"http={status}")
    assert result["message"] == (body if body else None)


def test_model_error_keeps_the_original_status_and_resource() -> None:
    headers = {"x-amzn-errortype": "ModelErrorException"}
    result = ADAPTER.classify_error(424, fixture(P, "error-model-error.json"), headers)
    assert result.provider_details == {"originalStatusCode": 500, "resourceName": "model-under-test"}


def test_a_retry_after_header_is_honoured_when_present() -> None:
    headers = {"x-amzn-errortype": "ThrottlingException", "retry-after": "3"}
    result = ADAPTER.classify_error(429, fixture(P, "error-throttling.json"), headers).to_dict()
    assert result["retry_after_s"] == 3.0


# ---- fixtures are real wire shapes ----------------------------------------------------------------------


@pytest.mark.parametrize("name", fixture_names(P, "body-"))
def test_body_fixtures_validate_against_the_converse_response_shape(name: str) -> None:
    validate_converse_response(fixture(P, name))


@pytest.mark.parametrize("name", fixture_names(P, "unknown-"))
def test_unknown_value_fixtures_are_rejected_by_the_strict_shape(name: str) -> None:
    with pytest.raises(AssertionError, match="violation"):
        validate_converse_response(fixture(P, name))


def test_shape_check_lists_every_violation_with_its_path() -> None:
    body = copy.deepcopy(fixture(P, "body-tool-call.json"))
    body["stopReason"] = "brand_new_reason"
    body["usage"]["outputTokens"] = "71"
    del body["metrics"]
    body["output"]["message"]["content"][1]["toolUse"]["extra"] = True
    body["output"]["message"]["content"].append({"text": "a", "toolUse": {}})
    enum = service_model().shape_for("StopReason").enum
    assert sorted(shape_violations(body, "Converse")) == sorted([
        "$.output.message.content[1].toolUse.extra: unknown member of ToolUseBlock "
        "(known: toolUseId, name, input, type)",
        "$.output.message.content[2]: union ContentBlock needs exactly one member set, got ['text', 'toolUse']",
        "$.output.message.content[2].toolUse.toolUseId: required member of ToolUseBlock is missing",
        "$.output.message.content[2].toolUse.name: required member of ToolUseBlock is missing",
        "$.output.message.content[2].toolUse.input: required member of ToolUseBlock is missing",
        "$.metrics: required member of ConverseResponse is missing",
        f"$.stopReason: 'brand_new_reason' is not one of StopReason {enum}",
        "$.usage.outputTokens: expected an integer (TokenUsageOutputTokensInteger), got str '71'",
    ])
    with pytest.raises(AssertionError, match="8 violation"):
        validate_shape(body, "ConverseResponse")


def test_shape_check_rejects_a_model_id_in_the_request_body() -> None:
    request = ADAPTER.build_request(TASK, [UserMessage(text="y")])
    request["modelId"] = "model-under-test"
    assert shape_violations(request, "ConverseRequest") == [
        f"$.modelId: unknown member of ConverseRequest (known: {', '.join(_body_members('ConverseRequest'))})"
    ]


def _body_members(shape_name: str) -> list[str]:
    shape = service_model().shape_for(shape_name)
    return [name for name, member in shape.members.items() if member.serialization.get("location") is None]


def test_malformed_tool_use_keeps_the_calls_bedrock_did_parse() -> None:
    body = fixture(P, "body-tool-call.json")
    body["stopReason"] = "malformed_tool_use"
    validate_converse_response(body)
    result = classify_body(body)
    assert (result.kind, result.raw) == ("invalid_tool_call", "stopReason=malformed_tool_use")
    assert [(call.call_id, call.name, call.parsed_arguments) for call in result.calls] == [
        ("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "get_order", {"order_id": "ORD-1001"})]


def _shown(response: Any) -> dict[str, Any]:
    return {key: value for key, value in response.to_dict().items() if value not in (None, [], {}, "")}


def _message(*blocks: Any) -> dict[str, Any]:
    return {"output": {"message": {"role": "assistant", "content": list(blocks)}}, "stopReason": "end_turn"}


@pytest.mark.parametrize(("body", "expected"), [
    ([], {"raw": "body=list", "raw_type": "body of type list"}),
    ({"output": {"message": {"role": "assistant", "content": "x"}}, "stopReason": "end_turn"},
     {"raw": "stopReason=end_turn", "raw_type": "output.message without a content list"}),
    (_message({"text": "a", "x": 1}, {"text": "Paris."}),
     {"raw": "output.message.content[0]",
      "raw_type": "content block that is not a one-member object at output.message.content[0]"}),
    (_message({"toolUse": "x"}, {"text": "Paris."}),
     {"raw": "output.message.content[0].toolUse", "raw_type": "toolUse block holding a str"}),
    (_message({"text": "Paris."}, {"citationsContent": {"content": "x"}}),
     {"raw": "output.message.content[1].citationsContent.content",
      "raw_type": "citationsContent without a content list"}),
    (_message({"citationsContent": {"content": [{"x": 1}]}}),
     {"raw": "output.message.content[0].citationsContent.content",
      "raw_type": "citationsContent content item without text"}),
])
def test_a_malformed_body_or_block_is_unsupported_naming_where(body: Any, expected: dict[str, Any]) -> None:
    assert _shown(classify_body(body)) == {"kind": "unsupported", **expected}
