"""The Gemini adapter: every finishReason, part and error the contract names maps to its kind, raw value kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.engine.classify import classify_response
from conformance.engine.correlation import check_correlation
from conformance.kit.task import ModelTurn, Task, ToolResult, ToolResults, ToolSpec, UserMessage
from conformance.providers.gemini import ADAPTER
from conformance.providers.gemini.errors import RPC_STATUSES
from conformance.providers.gemini.response import BLOCK_REASONS, FINISH_REASONS, classify_body
from tests.helpers import fixture, fixture_names

P = "gemini"


@pytest.mark.parametrize(
    ("name", "kind", "detail", "raw"),
    [
        ("body-text.json", "text", None, "finishReason=STOP"),
        ("body-text-with-thought-part.json", "text", None, "finishReason=STOP"),
        ("body-code-execution.json", "text", None, "finishReason=STOP"),
        ("body-tool-call.json", "tool_calls", None, "finishReason=STOP"),
        ("body-tool-call-without-id.json", "tool_calls", None, "finishReason=STOP"),
        ("body-parallel-calls-one-signature.json", "tool_calls", None, "finishReason=STOP"),
        ("body-prompt-blocked.json", "refusal", "filter", "promptFeedback.blockReason=PROHIBITED_CONTENT"),
        ("body-safety.json", "refusal", "filter", "finishReason=SAFETY"),
        ("body-max-tokens.json", "incomplete", "max_tokens", "finishReason=MAX_TOKENS"),
        ("body-max-tokens-no-parts.json", "incomplete", "max_tokens", "finishReason=MAX_TOKENS"),
        ("body-continuation.json", "incomplete", "continuation", "finishReason=CONTINUATION"),
        ("body-unexpected-tool-call.json", "invalid_tool_call", None, "finishReason=UNEXPECTED_TOOL_CALL"),
        ("body-malformed-function-call.json", "invalid_tool_call", None, "finishReason=MALFORMED_FUNCTION_CALL"),
        ("body-stop-no-parts.json", "empty", None, "finishReason=STOP"),
        ("body-unknown-finish-reason.json", "unsupported", "finishReason=PAUSED_FOR_REVIEW",
         "finishReason=PAUSED_FOR_REVIEW"),
        ("unknown-part.json", "unsupported", "hologram", "parts[0].hologram"),
    ],
)
def test_classify_body_maps_each_wire_shape(name: str, kind: str, detail: str | None, raw: str) -> None:
    result = classify_body(fixture(P, name)).to_dict()
    assert result["kind"] == kind
    assert result["raw"] == raw
    if detail is not None:
        assert detail in (result.get("reason"), result.get("source"), result.get("raw_type"))


@pytest.mark.filterwarnings("ignore:PAUSED_FOR_REVIEW is not a valid FinishReason")
@pytest.mark.parametrize("name", fixture_names(P, "body-"))
def test_fixture_bodies_validate_against_the_google_genai_types(name: str) -> None:
    from google.genai.types import GenerateContentResponse

    GenerateContentResponse.model_validate(fixture(P, name))


def test_the_unknown_finish_reason_is_unknown_to_the_google_genai_types() -> None:
    from google.genai.types import GenerateContentResponse

    # The SDK's enums are open: an unknown value validates, with a warning that names it.
    with pytest.warns(UserWarning, match="PAUSED_FOR_REVIEW is not a valid FinishReason"):
        GenerateContentResponse.model_validate(fixture(P, "body-unknown-finish-reason.json"))


@pytest.mark.parametrize("name", fixture_names(P, "unknown-"))
def test_unknown_value_fixtures_are_rejected_by_the_google_genai_types(name: str) -> None:
    from google.genai.types import GenerateContentResponse

    with pytest.raises(Exception):  # noqa: B017 - pydantic's ValidationError, whatever the SDK re-exports
        GenerateContentResponse.model_validate(fixture(P, name))


def _with_finish(reason: str | None) -> dict[str, Any]:
    body = fixture(P, "body-text.json")
    body["candidates"][0]["finishReason"] = reason
    return body


def test_the_finish_table_covers_exactly_the_sdk_enum() -> None:
    from google.genai.types import FinishReason

    assert set(FINISH_REASONS) == {member.value for member in FinishReason}


@pytest.mark.parametrize(("reason", "undeclared"), [("UNEXPECTED_TOOL_CALL", True), ("MALFORMED_FUNCTION_CALL", False)])
def test_only_the_unexpected_tool_call_finish_says_the_tool_was_undeclared(reason: str, undeclared: bool) -> None:
    result = classify_body(_with_finish(reason)).to_dict()
    assert (result["kind"], result["undeclared_tool"], result["raw"]) == (
        "invalid_tool_call", undeclared, f"finishReason={reason}")


@pytest.mark.parametrize(
    ("reason", "kind", "detail"),
    [
        ("STOP", "text", None),
        ("MAX_TOKENS", "incomplete", "max_tokens"),
        ("CONTINUATION", "incomplete", "continuation"),
        ("SAFETY", "refusal", "filter"),
        ("PROHIBITED_CONTENT", "refusal", "filter"),
        ("BLOCKLIST", "refusal", "filter"),
        ("SPII", "refusal", "filter"),
        ("IMAGE_SAFETY", "refusal", "filter"),
        ("IMAGE_PROHIBITED_CONTENT", "refusal", "filter"),
        ("MODEL_ARMOR", "refusal", "filter"),
        ("ESCALATION", "refusal", "filter"),
        ("RECITATION", "refusal", "filter"),
        ("IMAGE_RECITATION", "refusal", "filter"),
        ("UNEXPECTED_TOOL_CALL", "invalid_tool_call", None),
        ("MALFORMED_FUNCTION_CALL", "invalid_tool_call", None),
        ("TOO_MANY_TOOL_CALLS", "incomplete", "other"),
        ("MISSING_THOUGHT_SIGNATURE", "fatal_error", "invalid_request"),
        ("MALFORMED_RESPONSE", "retryable_error", "server_error"),
        ("PUP_LIMITED_DISABLED", "fatal_error", "policy"),
        ("LANGUAGE", "unsupported", "finishReason=LANGUAGE"),
        ("OTHER", "unsupported", "finishReason=OTHER"),
        ("IMAGE_OTHER", "unsupported", "finishReason=IMAGE_OTHER"),
        ("NO_IMAGE", "unsupported", "finishReason=NO_IMAGE"),
        ("FINISH_REASON_UNSPECIFIED", "unsupported", "finishReason=FINISH_REASON_UNSPECIFIED"),
    ],
)
def test_finish_reason_table_says_what_the_contract_says(reason: str, kind: str, detail: str | None) -> None:
    result = classify_body(_with_finish(reason)).to_dict()
    assert result["kind"] == kind
    if detail is not None:
        assert detail in (result.get("reason"), result.get("source"), result.get("raw_type"))


def test_the_contract_table_covers_every_finish_reason_of_the_sdk() -> None:
    from google.genai.types import FinishReason

    assert sorted(FINISH_REASONS) == sorted(member.value for member in FinishReason)


@pytest.mark.parametrize("reason", [None, "PAUSED_FOR_REVIEW", ""])
def test_unknown_or_missing_finish_reason_is_unsupported(reason: str | None) -> None:
    body = _with_finish(reason)
    if reason is None:
        del body["candidates"][0]["finishReason"]
    result = classify_body(body)
    assert result.kind == "unsupported"
    assert result.to_dict()["raw_type"] == f"finishReason={reason}"


@pytest.mark.parametrize("block", [*BLOCK_REASONS, "BRAND_NEW_BLOCK"])
def test_every_prompt_block_reason_is_a_filter_refusal(block: str) -> None:
    body = fixture(P, "body-prompt-blocked.json")
    body["promptFeedback"]["blockReason"] = block
    result = classify_body(body).to_dict()
    assert (result["kind"], result["source"], result["raw"]) == (
        "refusal", "filter", f"promptFeedback.blockReason={block}")


def test_the_block_table_covers_every_blocked_reason_of_the_sdk() -> None:
    from google.genai.types import BlockedReason

    assert sorted(BLOCK_REASONS) == sorted(member.value for member in BlockedReason)


@pytest.mark.parametrize(
    "body",
    [None, [], "text", 3, {}, {"candidates": []}, {"candidates": [], "promptFeedback": {}}, {"candidates": ["x"]}],
)
def test_non_response_bodies_are_unsupported(body: object) -> None:
    assert classify_body(body).kind == "unsupported"


def test_response_id_and_model_come_from_response_id_and_model_version() -> None:
    result = classify_body(fixture(P, "body-tool-call.json"))
    assert (result.response_id, result.model) == ("mKk2aZ-8Ls7SjMcP", "gemini-3.5-flash")


def test_a_real_call_id_is_kept_and_not_flagged() -> None:
    (call,) = classify_body(fixture(P, "body-tool-call.json")).calls
    assert (call.call_id, call.name, call.synthesized_id) == ("fc_7rj2", "get_invoice", False)
    assert call.arguments == '{"invoice_id":"INV-7"}'
    assert call.parsed_arguments == {"invoice_id": "INV-7"}


def test_a_missing_call_id_is_synthesized_deterministically_and_flagged() -> None:
    body = fixture(P, "body-tool-call-without-id.json")
    first, second = classify_body(body), classify_body(fixture(P, "body-tool-call-without-id.json"))
    assert [call.to_dict() for call in first.calls] == [call.to_dict() for call in second.calls]
    (call,) = first.calls
    assert (call.call_id, call.synthesized_id) == ("get_invoice#0", True)


def test_synthesized_ids_of_parallel_calls_follow_their_position() -> None:
    body = fixture(P, "body-parallel-calls-one-signature.json")
    for part in body["candidates"][0]["content"]["parts"]:
        del part["functionCall"]["id"]
    result = classify_body(body)
    assert [(call.call_id, call.synthesized_id) for call in result.calls] == [
        ("get_invoice#0", True),
        ("get_invoice#1", True),
    ]


def test_parallel_calls_keep_ids_names_and_arguments_in_order() -> None:
    result = classify_body(fixture(P, "body-parallel-calls-one-signature.json"))
    assert [(call.call_id, call.name, call.parsed_arguments) for call in result.calls] == [
        ("fc_7rj2", "get_invoice", {"invoice_id": "INV-7"}),
        ("fc_9pq4", "get_invoice", {"invoice_id": "INV-8"}),
    ]


@pytest.mark.parametrize("arguments", [None, "INV-7", ["INV-7"], 7])
def test_arguments_that_are_not_an_object_make_an_invalid_tool_call(arguments: object) -> None:
    body = fixture(P, "body-tool-call.json")
    body["candidates"][0]["content"]["parts"][0]["functionCall"]["args"] = arguments
    result = classify_body(body).to_dict()
    assert (result["kind"], result["raw"]) == ("invalid_tool_call", "finishReason=STOP")
    assert "not a JSON object" in result["detail"]
    assert result["undeclared_tool"] is False


def test_a_call_without_args_has_no_arguments() -> None:
    body = fixture(P, "body-tool-call.json")
    del body["candidates"][0]["content"]["parts"][0]["functionCall"]["args"]
    (call,) = classify_body(body).calls
    assert (call.arguments, call.parsed_arguments) == ("{}", {})


def test_unexpected_tool_call_is_the_undeclared_tool_signal_and_keeps_the_call() -> None:
    result = classify_body(fixture(P, "body-unexpected-tool-call.json"))
    assert result.to_dict()["undeclared_tool"] is True
    assert "undeclared function: delete_invoice" in result.to_dict()["detail"]
    assert [(call.name, call.synthesized_id) for call in result.calls] == [("delete_invoice", True)]


def test_malformed_function_call_carries_the_finish_message() -> None:
    result = classify_body(fixture(P, "body-malformed-function-call.json")).to_dict()
    assert result["undeclared_tool"] is False
    assert result["detail"].startswith("Malformed function call:")
    assert result["calls"] == []
    assert result["provider_details"] == {"finish_message": result["detail"]}


def test_thought_text_is_reasoning_not_answer_text() -> None:
    result = classify_body(fixture(P, "body-text-with-thought-part.json"))
    assert result.to_dict()["text"] == "Invoice INV-7 totals 42.00 EUR."


def test_a_response_with_only_thought_text_is_empty() -> None:
    body = fixture(P, "body-text-with-thought-part.json")
    del body["candidates"][0]["content"]["parts"][1]
    assert classify_body(body).kind == "empty"


def test_max_tokens_keeps_partial_text_and_works_without_parts() -> None:
    assert classify_body(fixture(P, "body-max-tokens.json")).to_dict()["text"] == "The quarterly summary covers thr"
    assert classify_body(fixture(P, "body-max-tokens-no-parts.json")).to_dict()["text"] is None


def test_truncation_wins_over_calls_in_the_parts() -> None:
    body = fixture(P, "body-tool-call.json")
    body["candidates"][0]["finishReason"] = "MAX_TOKENS"
    result = classify_body(body)
    assert (result.kind, result.calls) == ("incomplete", ())


def test_server_side_code_execution_parts_are_ignored() -> None:
    result = classify_body(fixture(P, "body-code-execution.json")).to_dict()
    assert (result["kind"], result["text"]) == ("text", "Invoice INV-7 totals 42.00 EUR.")


@pytest.mark.parametrize(
    ("part", "raw_type", "raw"),
    [
        ({"hologram": {}}, "hologram", "parts[0].hologram"),
        ({"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}},
         "inlineData (media output the suite does not read)", "parts[0].inlineData"),
        ({"functionResponse": {"name": "get_invoice", "response": {}}},
         "functionResponse (a client input, not model output)", "parts[0].functionResponse"),
        ("text", "parts[0] is not an object", "parts[0]"),
    ],
)
def test_unknown_or_unusable_parts_are_unsupported_and_named(part: object, raw_type: str, raw: str) -> None:
    body = fixture(P, "body-text.json")
    body["candidates"][0]["content"]["parts"] = [part, {"text": "Invoice INV-7 totals 42.00 EUR."}]
    result = classify_body(body).to_dict()
    assert (result["kind"], result["raw_type"], result["raw"]) == ("unsupported", raw_type, raw)


def test_metadata_only_parts_are_ignored() -> None:
    body = fixture(P, "body-text.json")
    body["candidates"][0]["content"]["parts"].append({"thoughtSignature": "CiQBjz1rX2Zha2Utc2lnbmF0dXJl"})
    assert classify_body(body).kind == "text"


def test_usage_adds_thoughts_to_output_and_keeps_cached_inside_input() -> None:
    usage = classify_body(fixture(P, "body-text.json")).usage
    assert usage is not None
    assert usage.normalized() == {
        "input_tokens": 812,
        "cached_input_tokens": 768,
        "cache_write_tokens": None,
        "output_tokens": 131,
        "reasoning_tokens": 120,
        "total_tokens": 943,
    }
    assert usage.raw == fixture(P, "body-text.json")["usageMetadata"]


def test_usage_input_adds_tool_use_prompt_tokens() -> None:
    usage = classify_body(fixture(P, "body-code-execution.json")).usage
    assert usage is not None
    # No thoughtsTokenCount in the body: a proto3 zero (docs/contract.md, "Usage").
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (135, 40, 0)


def test_usage_output_is_the_thoughts_when_no_candidate_tokens_are_reported() -> None:
    usage = classify_body(fixture(P, "body-max-tokens-no-parts.json")).usage
    assert usage is not None
    assert (usage.output_tokens, usage.reasoning_tokens, usage.total_tokens) == (256, 256, 556)


def test_usage_absent_counters_are_zero_and_absent_metadata_is_unknown() -> None:
    # usageMetadata is proto3 JSON: int32 counters without presence, a zero left out (docs/contract.md, "Usage").
    usage = classify_body(fixture(P, "body-prompt-blocked.json")).usage
    assert usage is not None
    assert usage.normalized() == {
        "input_tokens": 120,
        "cached_input_tokens": 0,
        "cache_write_tokens": None,
        "output_tokens": 0,
        "reasoning_tokens": 0,
        "total_tokens": 120,
    }
    body = fixture(P, "body-text.json")
    del body["usageMetadata"]
    assert classify_body(body).usage is None


@pytest.mark.parametrize("name", fixture_names(P, "body-"))
def test_usage_input_plus_output_is_the_reported_total(name: str) -> None:
    usage = classify_body(fixture(P, name)).usage
    assert usage is not None and usage.total_tokens is not None
    assert (usage.input_tokens or 0) + (usage.output_tokens or 0) == usage.total_tokens


@pytest.mark.parametrize(
    ("status", "name", "headers", "kind", "reason", "retry_after"),
    [
        (429, "error-429-rate-limit.json", {}, "retryable_error", "rate_limit", 27.0),
        (429, "error-429-rate-limit.json", {"retry-after": "5"}, "retryable_error", "rate_limit", 27.0),
        (429, "error-429-daily-quota.json", {}, "fatal_error", "quota", None),
        (400, "error-400-context-window.json", {}, "fatal_error", "context_window", None),
        (400, "error-400-api-key-invalid.json", {}, "fatal_error", "auth", None),
        (503, "error-503.json", {}, "retryable_error", "overloaded", None),
        (401, "error-401.json", {}, "fatal_error", "auth", None),
    ],
)
def test_classify_error_by_status_and_body(status: int, name: str, headers: dict[str, str], kind: str, reason: str,
                                           retry_after: float | None) -> None:
    body = fixture(P, name)
    result = classify_response(ADAPTER, status, headers, body).to_dict()
    assert (result["kind"], result["reason"], result["http_status"]) == (kind, reason, status)
    assert result.get("retry_after_s") == retry_after
    assert result["raw"] == f"http={status}/{body['error']['status']}"
    assert result["message"] == body["error"]["message"]


@pytest.mark.parametrize(
    ("status", "rpc_status", "kind", "reason"),
    [(400, "INVALID_ARGUMENT", "fatal_error", "invalid_request"), (403, "PERMISSION_DENIED", "fatal_error", "auth"),
     (404, "NOT_FOUND", "fatal_error", "not_found"), (500, "INTERNAL", "retryable_error", "server_error"),
     (503, "UNAVAILABLE", "retryable_error", "overloaded"), (504, "DEADLINE_EXCEEDED", "retryable_error", "timeout"),
     (429, "RESOURCE_EXHAUSTED", "retryable_error", "rate_limit"), (401, "UNAUTHENTICATED", "fatal_error", "auth")],
)
def test_every_rpc_status_maps_to_its_kind(status: int, rpc_status: str, kind: str, reason: str) -> None:
    result = ADAPTER.classify_error(status, {"error": {"code": status, "message": "x", "status": rpc_status}}, {})
    assert (result.kind, result.to_dict()["reason"]) == (kind, reason)
    assert set(RPC_STATUSES) == {"INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND", "INTERNAL", "UNAVAILABLE",
                                 "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "UNAUTHENTICATED"}


def test_a_per_minute_quota_failure_stays_a_rate_limit() -> None:
    body = fixture(P, "error-429-rate-limit.json")
    assert "PerMinute" in body["error"]["details"][0]["violations"][0]["quotaId"]
    assert ADAPTER.classify_error(429, body, {}).kind == "retryable_error"


@pytest.mark.parametrize("message", ["Quota exceeded: requests per day.", "Daily limit reached for this model."])
def test_a_message_naming_a_daily_quota_is_fatal(message: str) -> None:
    body = {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}}
    result = ADAPTER.classify_error(429, body, {}).to_dict()
    assert (result["kind"], result["reason"]) == ("fatal_error", "quota")


def test_retry_after_header_is_used_when_the_body_gives_no_retry_info() -> None:
    body = {"error": {"code": 429, "message": "Resource has been exhausted.", "status": "RESOURCE_EXHAUSTED"}}
    result = ADAPTER.classify_error(429, body, {"retry-after": "3"})
    assert result.to_dict()["retry_after_s"] == 3.0


def test_an_array_wrapped_error_body_is_unwrapped() -> None:
    body = [fixture(P, "error-429-rate-limit.json")]
    result = ADAPTER.classify_error(429, body, {}).to_dict()
    assert (result["kind"], result["reason"], result["retry_after_s"]) == ("retryable_error", "rate_limit", 27.0)
    assert result["raw"] == "http=429/RESOURCE_EXHAUSTED"


@pytest.mark.parametrize(
    ("status", "kind", "reason"),
    [(502, "retryable_error", "server_error"), (503, "retryable_error", "overloaded"),
     (400, "fatal_error", "invalid_request")],
)
def test_classify_error_without_a_json_body_falls_back_to_the_status(status: int, kind: str, reason: str) -> None:
    result = ADAPTER.classify_error(status, "<html>Bad gateway</html>", {}).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == (kind, reason, f"http={status}")
    assert result["message"] == "<html>Bad gateway</html>"


TASK = Task(
    instructions="Answer invoice questions.",
    input="What does INV-7 total?",
    tools=(ToolSpec(name="get_invoice", description="Look up one invoice.",
                    parameters={"type": "object", "properties": {"invoice_id": {"type": "string"}}}),),
    max_output_tokens=256,
)


def _second_request(name: str, is_error: bool = False) -> tuple[dict[str, Any], dict[str, Any], Any]:
    body = fixture(P, name)
    response = classify_body(body)
    results = tuple(
        ToolResult(call=call, output={"invoice_id": call.parsed_arguments["invoice_id"], "total": "42.00 EUR"},
                   is_error=is_error)
        for call in response.calls
        if call.parsed_arguments is not None
    )
    first = ADAPTER.build_request(TASK, [UserMessage(text=TASK.input)])
    second = ADAPTER.build_request(
        TASK, [UserMessage(text=TASK.input), ModelTurn(response=response), ToolResults(results=results)]
    )
    return first, second, body


def test_build_request_puts_system_instruction_tools_and_config_where_gemini_wants_them() -> None:
    task = Task(instructions="Be brief.", input="Hi", tools=TASK.tools, output_schema={"type": "object"},
                max_output_tokens=99)
    request = ADAPTER.build_request(task, [UserMessage(text="Hi")])
    assert "model" not in request
    assert request["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert request["tools"] == [{"functionDeclarations": [{
        "name": "get_invoice",
        "description": "Look up one invoice.",
        "parametersJsonSchema": {"type": "object", "properties": {"invoice_id": {"type": "string"}}},
    }]}]
    assert request["generationConfig"] == {
        "maxOutputTokens": 99,
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object"},
    }
    assert request["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]


def test_build_request_without_tools_or_schema_sends_neither() -> None:
    request = ADAPTER.build_request(Task(instructions="Be brief.", input="Hi"), [UserMessage(text="Hi")])
    assert sorted(request) == ["contents", "generationConfig", "systemInstruction"]
    assert request["generationConfig"] == {"maxOutputTokens": 1024}


@pytest.mark.parametrize(
    ("tool_choice", "tool_name", "config"),
    [
        ("auto", None, {"mode": "AUTO"}),
        ("none", None, {"mode": "NONE"}),
        ("required", None, {"mode": "ANY"}),
        ("tool", "get_invoice", {"mode": "ANY", "allowedFunctionNames": ["get_invoice"]}),
    ],
)
def test_build_request_maps_tool_choice_to_the_function_calling_mode(tool_choice: str, tool_name: str | None,
                                                                     config: dict[str, Any]) -> None:
    task = Task(instructions="x", input="y", tools=TASK.tools, tool_choice=tool_choice, tool_name=tool_name)
    request = ADAPTER.build_request(task, [UserMessage(text="y")])
    assert request["toolConfig"] == {"functionCallingConfig": config}


def test_build_request_replays_the_model_content_byte_identical_with_its_signature() -> None:
    first, second, body = _second_request("body-parallel-calls-one-signature.json")
    assert second["contents"][: len(first["contents"])] == first["contents"]
    replayed = second["contents"][len(first["contents"])]
    assert json.dumps(replayed) == json.dumps(body["candidates"][0]["content"])
    assert ["thoughtSignature" in part for part in replayed["parts"]] == [True, False]
    assert {key: value for key, value in second.items() if key != "contents"} == {
        key: value for key, value in first.items() if key != "contents"
    }


def test_build_request_echoes_server_ids_in_one_user_content_of_function_responses() -> None:
    _, second, _ = _second_request("body-parallel-calls-one-signature.json")
    results = second["contents"][-1]
    assert results["role"] == "user"
    assert results["parts"] == [
        {"functionResponse": {"id": "fc_7rj2", "name": "get_invoice",
                              "response": {"output": {"invoice_id": "INV-7", "total": "42.00 EUR"}}}},
        {"functionResponse": {"id": "fc_9pq4", "name": "get_invoice",
                              "response": {"output": {"invoice_id": "INV-8", "total": "42.00 EUR"}}}},
    ]
    assert ADAPTER.read_request(second).results == [("fc_7rj2", "get_invoice"), ("fc_9pq4", "get_invoice")]


def test_build_request_sends_no_id_for_a_synthesized_call_and_reads_it_back_by_name() -> None:
    _, second, _ = _second_request("body-tool-call-without-id.json")
    (part,) = second["contents"][-1]["parts"]
    assert part == {"functionResponse": {"name": "get_invoice",
                                         "response": {"output": {"invoice_id": "INV-7", "total": "42.00 EUR"}}}}
    assert ADAPTER.read_request(second).results == [(None, "get_invoice")]


def test_build_request_sends_a_failed_result_under_error() -> None:
    _, second, _ = _second_request("body-tool-call.json", is_error=True)
    (part,) = second["contents"][-1]["parts"]
    assert part["functionResponse"]["response"] == {"error": {"invoice_id": "INV-7", "total": "42.00 EUR"}}


def test_read_request_splits_prefix_from_contents() -> None:
    _, second, _ = _second_request("body-tool-call.json")
    parts = ADAPTER.read_request(second)
    # The tool choice (functionCallingConfig) is a per-turn slot, not part of the static prefix (docs/contract.md).
    assert "functionCallingConfig" in second["toolConfig"]
    tool_config = {key: value for key, value in second["toolConfig"].items() if key != "functionCallingConfig"}
    assert parts.prefix == {**{key: value for key, value in second.items() if key != "contents"},
                            "toolConfig": tool_config}
    assert list(parts.history) == second["contents"]


@pytest.mark.parametrize("name", ["body-tool-call.json", "body-tool-call-without-id.json",
                                  "body-parallel-calls-one-signature.json"])
def test_two_turn_requests_pass_the_correlation_checks(name: str) -> None:
    first, second, _ = _second_request(name)
    response = classify_body(fixture(P, name))
    report = check_correlation(ADAPTER, [first, second], [response, classify_body(fixture(P, "body-text.json"))])
    assert report["problems"] == []
    assert report["matched"] == report["calls"] == len(response.calls)
