"""The Responses adapter: every wire value the contract names maps to its kind, with the raw value kept."""

from __future__ import annotations

import pytest

from conformance.engine.classify import classify_response
from conformance.kit.task import ModelTurn, Task, ToolResult, ToolResults, ToolSpec, UserMessage
from conformance.providers.openai_responses import ADAPTER
from conformance.providers.openai_responses.response import FAILED_CODES, INCOMPLETE_REASONS, classify_body
from tests.helpers import fixture

P = "openai-responses"


@pytest.mark.parametrize(
    ("name", "kind", "detail", "raw"),
    [
        ("body-text.json", "text", None, "status=completed"),
        ("body-tool-call-after-reasoning.json", "tool_calls", None, "status=completed"),
        ("body-parallel-calls.json", "tool_calls", None, "status=completed"),
        ("body-refusal-part.json", "refusal", "model", "output[0].content[0].type=refusal"),
        ("body-incomplete-max-output-tokens.json", "incomplete", "max_tokens", "status=incomplete/max_output_tokens"),
        ("body-incomplete-reasoning-only.json", "incomplete", "max_tokens", "status=incomplete/max_output_tokens"),
        ("body-incomplete-content-filter.json", "refusal", "filter", "status=incomplete/content_filter"),
        ("body-failed-server-error.json", "retryable_error", "server_error", "status=failed/server_error"),
        ("body-failed-misalignment.json", "fatal_error", "policy", "status=failed/misalignment_policy_violation"),
        ("body-cancelled.json", "fatal_error", "cancelled", "status=cancelled"),
        ("body-queued.json", "unsupported", "status=queued", "status=queued"),
        ("body-arguments-not-object.json", "invalid_tool_call", None, "status=completed"),
        ("body-computer-call.json", "unsupported", "computer_call (a built-in tool the client must run)",
         "output[0].type=computer_call"),
        ("unknown-item-type.json", "unsupported", "hologram_call", "output[0].type=hologram_call"),
    ],
)
def test_classify_body_maps_each_wire_shape(name: str, kind: str, detail: str | None, raw: str) -> None:
    result = classify_body(fixture(P, name)).to_dict()
    assert result["kind"] == kind
    assert result["raw"] == raw
    if detail is not None:
        assert detail in (result.get("reason"), result.get("source"), result.get("raw_type"))


def test_classify_body_keeps_call_ids_names_and_arguments_of_parallel_calls() -> None:
    result = classify_body(fixture(P, "body-parallel-calls.json"))
    assert [(call.call_id, call.name, call.parsed_arguments) for call in result.calls] == [
        ("call_A1", "get_order", {"order_id": "ORD-1001"}),
        ("call_B2", "get_order", {"order_id": "ORD-1002"}),
    ]
    assert result.calls[0].arguments == '{"order_id":"ORD-1001"}'


def test_classify_body_uses_call_id_not_item_id() -> None:
    result = classify_body(fixture(P, "body-tool-call-after-reasoning.json"))
    assert [call.call_id for call in result.calls] == ["call_A1"]
    assert result.response_id == "resp_u_call"
    assert result.model == "gpt-5.5-2026-04-23"


def test_classify_body_keeps_reasoning_items_for_replay() -> None:
    body = fixture(P, "body-tool-call-after-reasoning.json")
    result = classify_body(body)
    assert list(result.output_items) == body["output"]
    assert result.output_items[0]["type"] == "reasoning"


def test_usage_is_normalized_without_double_counting_cache() -> None:
    usage = classify_body(fixture(P, "body-text.json")).usage
    assert usage is not None
    assert usage.normalized() == {
        "input_tokens": 812,
        "cached_input_tokens": 768,
        "cache_write_tokens": 0,
        "output_tokens": 11,
        "reasoning_tokens": 0,
        "total_tokens": 823,
    }
    assert usage.raw == fixture(P, "body-text.json")["usage"]


def test_usage_absent_is_none_not_zero() -> None:
    result = classify_body(fixture(P, "body-failed-server-error.json"))
    assert result.usage is None


def test_failed_misalignment_keeps_the_error_type() -> None:
    result = classify_body(fixture(P, "body-failed-misalignment.json"))
    assert result.provider_details == {"misalignment_error_type": "potentially_unintended_data_access"}


# Expected from wire-formats §8 and CONTRACT.md, written independently of the adapter's table.
EXPECTED_INCOMPLETE = {
    "max_output_tokens": ("incomplete", "max_tokens"),
    "content_filter": ("refusal", "filter"),
    "max_messages": ("incomplete", "other"),
    "steered": ("incomplete", "other"),
}
EXPECTED_FAILED = {
    "server_error": ("retryable_error", "server_error"),
    "rate_limit_exceeded": ("retryable_error", "rate_limit"),
    "vector_store_timeout": ("retryable_error", "timeout"),
    "invalid_prompt": ("fatal_error", "invalid_request"),
    "insufficient_quota": ("fatal_error", "quota"),
    "bio_policy": ("fatal_error", "policy"),
    "misalignment_policy_violation": ("fatal_error", "policy"),
    "data_residency_mismatch": ("fatal_error", "invalid_request"),
    "image_content_policy_violation": ("fatal_error", "policy"),
    "invalid_image": ("fatal_error", "invalid_request"),
    "image_file_not_found": ("fatal_error", "invalid_request"),
    "billing_hard_limit_reached": ("fatal_error", "quota"),
    "context_length_exceeded": ("fatal_error", "context_window"),
    # The image codes name a problem with an input image: the same request fails again.
    "invalid_image_format": ("fatal_error", "invalid_request"),
    "invalid_base64_image": ("fatal_error", "invalid_request"),
    "invalid_image_url": ("fatal_error", "invalid_request"),
    "image_too_large": ("fatal_error", "invalid_request"),
    "image_too_small": ("fatal_error", "invalid_request"),
    "image_parse_error": ("fatal_error", "invalid_request"),
    "invalid_image_mode": ("fatal_error", "invalid_request"),
    "image_file_too_large": ("fatal_error", "invalid_request"),
    "unsupported_image_media_type": ("fatal_error", "invalid_request"),
    "empty_image_file": ("fatal_error", "invalid_request"),
    "failed_to_download_image": ("fatal_error", "invalid_request"),
}


def test_the_incomplete_table_covers_exactly_the_sdk_values() -> None:
    assert set(INCOMPLETE_REASONS) == set(EXPECTED_INCOMPLETE)


@pytest.mark.parametrize(("reason", "expected"), sorted(EXPECTED_INCOMPLETE.items()))
def test_every_incomplete_reason_is_mapped(reason: str, expected: tuple[str, str]) -> None:
    body = fixture(P, "body-incomplete-max-output-tokens.json")
    body["incomplete_details"] = {"reason": reason}
    result = classify_body(body).to_dict()
    assert (result["kind"], result.get("reason") or result.get("source")) == expected


@pytest.mark.parametrize("reason", [None, "brand_new_reason"])
def test_unknown_or_missing_incomplete_reason_is_unsupported(reason: str | None) -> None:
    body = fixture(P, "body-incomplete-max-output-tokens.json")
    body["incomplete_details"] = {"reason": reason}
    result = classify_body(body)
    assert result.kind == "unsupported"
    assert str(reason) in result.to_dict()["raw_type"]


def test_the_failed_table_names_every_sdk_code_and_the_live_quota_code() -> None:
    from typing import get_args

    from openai.types.responses.response_error import ResponseError

    sdk_codes = set(get_args(ResponseError.model_fields["code"].annotation))
    assert len(sdk_codes) >= 21 and sdk_codes <= set(FAILED_CODES)
    # insufficient_quota is outside the SDK's literal but sent by the live API (tests/fixtures/live-wire.yaml).
    assert "insufficient_quota" in FAILED_CODES and "insufficient_quota" not in sdk_codes
    assert set(EXPECTED_FAILED) == set(FAILED_CODES)


@pytest.mark.parametrize(("code", "expected"), sorted(EXPECTED_FAILED.items()))
def test_failed_codes_are_mapped(code: str, expected: tuple[str, str]) -> None:
    body = fixture(P, "body-failed-server-error.json")
    body["error"]["code"] = code
    result = classify_body(body).to_dict()
    assert (result["kind"], result["reason"]) == expected


@pytest.mark.parametrize("error", [None, {"message": "no code"}])
def test_failed_without_a_code_is_retryable(error: object) -> None:
    body = fixture(P, "body-failed-server-error.json")
    body["error"] = error
    assert classify_body(body).kind == "retryable_error"


def test_failed_with_an_unknown_code_is_a_fatal_error_naming_the_code() -> None:
    body = fixture(P, "body-failed-server-error.json")
    body["error"]["code"] = "brand_new_code"
    result = classify_body(body).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == ("fatal_error", "other", "status=failed/brand_new_code")


@pytest.mark.parametrize("status", [None, "in_progress", "paused"])
def test_unknown_status_is_unsupported_and_named(status: str | None) -> None:
    body = fixture(P, "body-text.json")
    body["status"] = status
    result = classify_body(body)
    assert result.kind == "unsupported"
    assert result.to_dict()["raw_type"] == f"status={status}"


@pytest.mark.parametrize("body", [None, [], "text", 3, {"status": "completed"}])
def test_non_response_bodies_are_unsupported(body: object) -> None:
    assert classify_body(body).kind == "unsupported"


@pytest.mark.parametrize(
    ("status", "name", "headers", "kind", "reason", "retry_after"),
    [
        (429, "error-429-rate-limit.json", {"retry-after": "2"}, "retryable_error", "rate_limit", 2.0),
        (429, "error-429-rate-limit.json", {"retry-after-ms": "1400", "retry-after": "2"}, "retryable_error",
         "rate_limit", 1.4),
        (429, "error-429-insufficient-quota.json", {}, "fatal_error", "quota", None),
        (400, "error-400-context-length.json", {}, "fatal_error", "context_window", None),
        (500, "error-500.json", {}, "retryable_error", "server_error", None),
        (503, "error-500.json", {}, "retryable_error", "server_error", None),
        (401, "error-401.json", {}, "fatal_error", "auth", None),
    ],
)
def test_classify_error_by_status_and_code(status: int, name: str, headers: dict[str, str], kind: str, reason: str,
                                           retry_after: float | None) -> None:
    result = classify_response(ADAPTER, status, headers, fixture(P, name)).to_dict()
    assert (result["kind"], result["reason"], result["http_status"]) == (kind, reason, status)
    assert result.get("retry_after_s") == retry_after
    assert result["raw"].startswith(f"http={status}")


def test_classify_error_without_a_json_body_falls_back_to_the_status() -> None:
    result = ADAPTER.classify_error(502, "<html>Bad gateway</html>", {})
    assert (result.kind, result.to_dict()["reason"]) == ("retryable_error", "server_error")


def test_x_should_retry_false_overrules_the_status() -> None:
    assert ADAPTER.classify_error(503, {"error": {"message": "x"}}, {"x-should-retry": "false"}).kind == "fatal_error"


TASK = Task(
    instructions="Answer order questions.",
    input="Status of ORD-1001?",
    tools=(ToolSpec(name="get_order", description="Look up one order.",
                    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}}),),
    max_output_tokens=256,
)


def test_build_request_replays_output_items_and_echoes_call_id() -> None:
    body = fixture(P, "body-tool-call-after-reasoning.json")
    response = classify_body(body)
    first = ADAPTER.build_request(TASK, [UserMessage(text=TASK.input)])
    result = ToolResult(call=response.calls[0], output={"order_id": "ORD-1001", "status": "shipped"})
    second = ADAPTER.build_request(
        TASK, [UserMessage(text=TASK.input), ModelTurn(response=response), ToolResults(results=(result,))]
    )
    assert second["input"][: len(first["input"])] == first["input"]
    tail = second["input"][len(first["input"]):]
    assert tail[:2] == body["output"]
    assert tail[2]["type"] == "function_call_output"
    assert tail[2]["call_id"] == "call_A1"
    assert {key: value for key, value in second.items() if key != "input"} == {
        key: value for key, value in first.items() if key != "input"
    }


def test_build_request_puts_instructions_tools_and_schema_where_responses_wants_them() -> None:
    task = Task(instructions="Be brief.", input="Hi", tools=TASK.tools, output_schema={"type": "object"},
                tool_choice="tool", tool_name="get_order", max_output_tokens=99)
    request = ADAPTER.build_request(task, [UserMessage(text="Hi")])
    assert request["instructions"] == "Be brief."
    assert request["tools"][0]["type"] == "function" and request["tools"][0]["name"] == "get_order"
    assert request["tool_choice"] == {"type": "function", "name": "get_order"}
    assert request["text"]["format"]["type"] == "json_schema"
    assert request["max_output_tokens"] == 99
    assert request["input"] == [{"role": "user", "content": "Hi"}]


def test_a_503_from_a_proxy_page_is_overloaded() -> None:
    result = classify_response(ADAPTER, 503, {}, "<html>Service Unavailable</html>").to_dict()
    assert (result["kind"], result["reason"], result["message"]) == (
        "retryable_error", "overloaded", "<html>Service Unavailable</html>")


PLAIN_400 = {"error": {"message": "Invalid value for 'temperature': must be at most 2.",
                       "type": "invalid_request_error", "param": "temperature", "code": "invalid_value"}}


def test_a_plain_400_is_a_fatal_invalid_request_not_a_context_window() -> None:
    result = ADAPTER.classify_error(400, PLAIN_400, {}).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == ("fatal_error", "invalid_request",
                                                                 "http=400/invalid_value")


@pytest.mark.parametrize("message", [
    "This model's maximum context length is 65536 tokens. However, you requested 70012 tokens.",  # DeepSeek
    "This Model's Maximum Context Length is 8192 tokens",  # matched whatever the case
    "Error from upstream: context_length_exceeded (130000 > 128000)",
])
def test_each_context_overflow_phrase_makes_a_400_a_fatal_context_window(message: str) -> None:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    result = ADAPTER.classify_error(400, body, {}).to_dict()
    assert (result["kind"], result["reason"], result["message"]) == ("fatal_error", "context_window", message)


def test_x_should_retry_true_overrules_the_status() -> None:
    from conformance.kit.http import lower_headers

    result = ADAPTER.classify_error(400, PLAIN_400, lower_headers({"X-Should-Retry": "true"})).to_dict()
    assert (result["kind"], result["reason"]) == ("retryable_error", "invalid_request")
    plain = ADAPTER.classify_error(400, PLAIN_400, {"x-should-retry": "maybe"}).to_dict()
    assert (plain["kind"], plain["reason"]) == ("fatal_error", "invalid_request")


def test_x_should_retry_false_makes_a_server_error_fatal_and_keeps_its_reason() -> None:
    from conformance.kit.http import lower_headers

    result = ADAPTER.classify_error(500, {"error": {"message": "x"}}, lower_headers({"X-Should-Retry": "false"}))
    assert (result.kind, result.to_dict()["reason"]) == ("fatal_error", "server_error")


@pytest.mark.parametrize("error", [
    {"message": "Input data may contain inappropriate content.", "code": "data_inspection_failed"},
    {"message": "Input data may contain inappropriate content.", "type": "data_inspection_failed"},
])
def test_a_filter_named_by_only_its_code_or_only_its_type_is_a_filter_refusal(error: dict[str, str]) -> None:
    result = ADAPTER.classify_error(400, {"error": error}, {}).to_dict()
    assert (result["kind"], result["source"], result["text"], result["raw"]) == (
        "refusal", "filter", "Input data may contain inappropriate content.", "http=400/data_inspection_failed")


def _http_error(kind: str, raw: str, reason: str, status: int, message: str | None) -> dict[str, object]:
    """The whole ``to_dict()`` of an HTTP error kind with no retry delay and no provider details."""
    expected: dict[str, object] = {
        "kind": kind, "raw": raw, "calls": [], "text": None, "usage": None, "raw_usage": None, "response_id": None,
        "model": None, "reason": reason, "http_status": status, "message": message}
    if kind == "retryable_error":
        expected["retry_after_s"] = None
    return expected


@pytest.mark.parametrize(("status", "body", "expected"), [
    # No error object: the status alone, no message. An error that is a plain string is the message (xAI's shape).
    (500, {}, _http_error("retryable_error", "http=500", "server_error", 500, None)),
    (500, {"error": "boom"}, _http_error("retryable_error", "http=500", "server_error", 500, "boom")),
    (500, {"error": 7}, _http_error("retryable_error", "http=500", "server_error", 500, None)),
    (401, None, _http_error("fatal_error", "http=401", "auth", 401, None)),
    (404, [{"error": {"code": "model_not_found"}}], _http_error("fatal_error", "http=404", "not_found", 404, None)),
    # A code or type that is not a non-empty string names nothing: raw falls back to the next label or the status.
    (400, {"error": {"code": 5, "type": "invalid_request_error", "message": "bad"}},
     _http_error("fatal_error", "http=400/invalid_request_error", "invalid_request", 400, "bad")),
    (400, {"error": {"code": 5, "type": ["x"], "message": "bad"}},
     _http_error("fatal_error", "http=400", "invalid_request", 400, "bad")),
    (400, {"error": {"code": "", "type": "", "message": ""}},
     _http_error("fatal_error", "http=400", "invalid_request", 400, None)),
    # A message that is not a string is none (and never read for an overflow phrase).
    (400, {"error": {"code": None, "type": "invalid_request_error", "message": ["maximum context length"]}},
     _http_error("fatal_error", "http=400/invalid_request_error", "invalid_request", 400, None)),
    # A text (non-JSON) body is the message, stripped.
    (502, "\n <html>Bad gateway</html> \n", _http_error("retryable_error", "http=502", "server_error", 502,
                                                         "<html>Bad gateway</html>")),
])
def test_classify_error_of_hostile_bodies_gives_the_whole_expected_result(
        status: int, body: object, expected: dict[str, object]) -> None:
    from conformance.providers.openai_common.errors import classify_error

    assert classify_error(status, body, {}).to_dict() == expected


def test_a_long_text_error_body_is_cut_to_500_characters() -> None:
    from conformance.providers.openai_common.errors import classify_error

    body = "  " + "A" * 500 + "B" * 100 + "\n"
    assert classify_error(503, body, {}).to_dict() == _http_error("retryable_error", "http=503", "overloaded", 503,
                                                                  "A" * 500)
