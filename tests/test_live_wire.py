"""Shapes seen in recordings of the live APIs where the wire differs from the SDK types and the docs.

One section per fact (docs/contract.md names each rule). Fixtures named ``live-*`` are outside the vendor
SDK's types on purpose; ``tests/fixtures/live-wire.yaml`` says which fact each records, and the tests at the
end prove the SDK still rejects them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.kit.sse import read_chunks
from conformance.kit.stream import StreamResult
from conformance.providers.anthropic_messages import ADAPTER as ANTHROPIC
from conformance.providers.bedrock_converse import ADAPTER as BEDROCK
from conformance.providers.gemini import ADAPTER as GEMINI
from conformance.providers.gemini.partial_args import parse_json_path
from conformance.providers.openai_chat import ADAPTER as CHAT
from conformance.providers.openai_responses import ADAPTER as RESPONSES
from tests.helpers import CASES, FIXTURES, fixture

MANIFEST = FIXTURES / "live-wire.yaml"


def _assemble(adapter: Any, provider: str, name: str) -> StreamResult:
    return adapter.assemble_stream(read_chunks(str(FIXTURES / provider / name)))


def _sse_events(provider: str, name: str) -> list[str]:
    """The fixture's SSE events, each as its raw text (framing kept, separators dropped)."""
    text = (FIXTURES / provider / name).read_text(encoding="utf-8")
    return [event for event in re.split(r"\r?\n\r?\n", text) if event.strip()]


def _from_events(events: list[str], adapter: Any) -> StreamResult:
    return adapter.assemble_stream([("\n\n".join(events) + "\n\n").encode()])


def _data(event: str) -> Any:
    return json.loads(next(line[5:].strip() for line in event.splitlines() if line.startswith("data:")))


# ---- 1. Responses stream `error`, live (nested) shape, then response.failed -----------------------------

NESTED = "live-stream-error-nested-quota.sse"


def test_responses_nested_stream_error_is_a_quota_failure_with_identity_kept() -> None:
    result = _assemble(RESPONSES, "openai-responses", NESTED)
    response = result.response.to_dict()
    assert (response["kind"], response["reason"]) == ("fatal_error", "quota")
    assert response["raw"] == "status=failed/insufficient_quota"
    assert (response["response_id"], response["model"]) == ("resp_u_sq1", "gpt-5.5-2026-04-23")
    assert result.summary.terminal and result.summary.ignored_after_terminal == 0


def test_responses_nested_stream_error_alone_decides_by_its_code() -> None:
    events = [event for event in _sse_events("openai-responses", NESTED) if "response.failed" not in event]
    response = _from_events(events, RESPONSES).response.to_dict()
    assert (response["kind"], response["reason"], response["raw"]) == (
        "fatal_error", "quota", "stream error=insufficient_quota")
    assert (response["response_id"], response["model"]) == ("resp_u_sq1", "gpt-5.5-2026-04-23")


def test_responses_flat_sdk_shape_error_uses_the_same_code_table() -> None:
    events = _sse_events("openai-responses", "stream-error-event.sse")
    events[-1] = events[-1].replace('"code":"rate_limit_exceeded"', '"code":"insufficient_quota"')
    response = _from_events(events, RESPONSES).response.to_dict()
    assert (response["kind"], response["reason"]) == ("fatal_error", "quota")
    assert response["response_id"] == "resp_0a1b"


def test_responses_response_failed_alone_decides_by_its_code() -> None:
    events = [event for event in _sse_events("openai-responses", NESTED) if not event.startswith("event: error")]
    response = _from_events(events, RESPONSES).response.to_dict()
    assert (response["kind"], response["reason"], response["raw"]) == (
        "fatal_error", "quota", "status=failed/insufficient_quota")


def test_the_sdk_rejects_the_nested_error_event_and_accepts_the_flat_one() -> None:
    from openai.types.responses import ResponseErrorEvent

    nested = _data(next(e for e in _sse_events("openai-responses", NESTED) if e.startswith("event: error")))
    with pytest.raises(Exception):  # noqa: B017 - pydantic's ValidationError
        ResponseErrorEvent.model_validate(nested)
    flat = _data(_sse_events("openai-responses", "stream-error-event.sse")[-1])
    ResponseErrorEvent.model_validate(flat)


# ---- 2. Responses `status: failed` codes (body, background poll) --------------------------------------------

def test_responses_failed_poll_with_insufficient_quota_is_fatal_quota() -> None:
    response = RESPONSES.classify_body(fixture("openai-responses", "live-body-failed-insufficient-quota.json"))
    result = response.to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == (
        "fatal_error", "quota", "status=failed/insufficient_quota")
    assert result["usage"] is None and result["response_id"] == "resp_u_bgq"


@pytest.mark.parametrize(("code", "kind", "reason"), [
    ("rate_limit_exceeded", "retryable_error", "rate_limit"),
    ("server_error", "retryable_error", "server_error"),
    ("invalid_prompt", "fatal_error", "invalid_request"),
    ("a_code_from_next_year", "fatal_error", "other"),
])
def test_responses_failed_code_table(code: str, kind: str, reason: str) -> None:
    body = fixture("openai-responses", "live-body-failed-insufficient-quota.json")
    body["error"]["code"] = code
    result = RESPONSES.classify_body(body).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == (kind, reason, f"status=failed/{code}")


# ---- 3. Responses hosted tools that ran on the server -------------------------------------------------------

SHELL = "body-hosted-shell-ran-on-server.json"


def test_responses_call_with_its_output_in_the_same_response_is_transcript() -> None:
    result = RESPONSES.classify_body(fixture("openai-responses", SHELL))
    assert (result.kind, result.to_dict()["text"]) == ("text", "The file lists 41 orders after its header row.")
    assert result.calls == ()
    assert [item["type"] for item in result.output_items] == ["shell_call", "shell_call_output", "message"]


def test_responses_call_without_its_output_is_still_the_clients_to_run() -> None:
    body = fixture("openai-responses", SHELL)
    del body["output"][1]
    result = RESPONSES.classify_body(body).to_dict()
    assert (result["kind"], result["raw"]) == ("unsupported", "output[0].type=shell_call")


def test_responses_output_of_another_call_does_not_answer_this_one() -> None:
    body = fixture("openai-responses", SHELL)
    body["output"][1]["call_id"] = "call_Other"
    assert RESPONSES.classify_body(body).kind == "unsupported"


def test_responses_function_call_with_its_output_beside_it_is_not_run_again() -> None:
    body = fixture("openai-responses", "body-tool-call-after-reasoning.json")
    call = next(item for item in body["output"] if item["type"] == "function_call")
    body["output"].append({"type": "function_call_output", "id": "fco_1", "call_id": call["call_id"],
                           "output": "{\"status\":\"shipped\"}", "status": "completed"})
    assert RESPONSES.classify_body(body).kind == "empty"


# ---- 4. Responses message phases ---------------------------------------------------------------------------

def test_responses_phases_keep_the_final_answer_as_text_and_commentary_apart() -> None:
    result = RESPONSES.classify_body(fixture("openai-responses", "body-message-phases.json")).to_dict()
    assert result["kind"] == "text"
    assert json.loads(result["text"]) == {"order_id": "ORD-1001", "status": "shipped"}
    assert result["provider_details"] == {"commentary": "Checking the order record before answering."}


def test_responses_an_unknown_phase_is_unsupported() -> None:
    body = fixture("openai-responses", "body-message-phases.json")
    body["output"][2]["phase"] = "rehearsal"
    result = RESPONSES.classify_body(body).to_dict()
    assert (result["kind"], result["raw"]) == ("unsupported", "output[2].phase=rehearsal")


# ---- 5. Chat stream error frames that carry a status ---------------------------------------------------------

@pytest.mark.parametrize(("name", "kind", "detail", "identity"), [
    # tool_use_failed: the model's malformed call, not the client's bad request (docs/contract.md).
    ("compatible-stream-error-tool-use-failed.sse", "invalid_tool_call", None, "chatcmpl-u-g1"),
    ("compatible-stream-error-rate-limit-status.sse", "retryable_error", "rate_limit", "chatcmpl-u-g2"),
    ("compatible-stream-error-quota-type-only.sse", "fatal_error", "quota", "chatcmpl-u-g3"),
])
def test_chat_stream_error_frame_is_classified_like_its_http_error(name: str, kind: str, detail: str | None,
                                                                   identity: str) -> None:
    result = _assemble(CHAT, "openai-chat", name).response.to_dict()
    assert (result["kind"], result.get("reason")) == (kind, detail)
    assert (result["response_id"], result["model"]) == (identity, "openai/gpt-oss-120b")


def test_chat_tool_use_failed_keeps_the_failed_generation() -> None:
    result = _assemble(CHAT, "openai-chat", "compatible-stream-error-tool-use-failed.sse").response.to_dict()
    assert result["raw"] == "stream error=tool_use_failed"
    assert result["provider_details"]["failed_generation"].startswith("<function=get_order>")


def test_chat_stream_error_that_is_a_bare_string_keeps_its_message() -> None:
    events = _sse_events("openai-chat", "stream-error-chunk.sse")
    events[-1] = 'data: {"error": "upstream connection reset"}'
    result = _from_events(events, CHAT).response.to_dict()
    assert (result["kind"], result["reason"], result["message"]) == (
        "retryable_error", "server_error", "upstream connection reset")


def test_chat_http_400_tool_use_failed_is_the_same_invalid_tool_call() -> None:
    body = {"error": {"message": "Failed to call a function.", "type": "invalid_request_error",
                      "code": "tool_use_failed", "failed_generation": "{\"name\": \"get_order\""}}
    assert CHAT.classify_error(400, body, {}).kind == "invalid_tool_call"


@pytest.mark.parametrize(("error", "kind", "reason"), [
    ({"message": "upstream went away"}, "retryable_error", "server_error"),
    ({"message": "denied", "status_code": 401}, "fatal_error", "auth"),
    ({"message": "slow down", "status_code": 429}, "retryable_error", "rate_limit"),
    ({"message": "bad", "type": "invalid_request_error"}, "fatal_error", "invalid_request"),
    ({"message": "too long", "code": "context_length_exceeded"}, "fatal_error", "context_window"),
    # OpenRouter and vLLM put the HTTP status in an integer `code`; vLLM names the type by exception class.
    ({"message": "Provider returned error", "code": 502}, "retryable_error", "server_error"),
    ({"object": "error", "message": "bad", "type": "BadRequestError", "param": None, "code": 400},
     "fatal_error", "invalid_request"),
    ({"message": "no credits", "code": 402}, "fatal_error", "quota"),
])
def test_chat_stream_error_frame_decides_by_what_it_carries(error: dict[str, Any], kind: str, reason: str) -> None:
    events = _sse_events("openai-chat", "stream-error-chunk.sse")
    events[-1] = "data: " + json.dumps({"error": error})
    result = _from_events(events, CHAT).response.to_dict()
    assert (result["kind"], result["reason"]) == (kind, reason)
    assert result["response_id"] == "chatcmpl-9x"


# ---- 6. Reasoning tokens reported beside completion tokens -------------------------------------------------

def test_chat_reasoning_outside_completion_is_added_to_output_tokens() -> None:
    body = fixture("openai-chat", "body-reasoning-beside-completion.json")
    usage = CHAT.classify_body(body).to_dict()
    assert usage["usage"]["output_tokens"] == 26 + 255
    assert (usage["usage"]["input_tokens"], usage["usage"]["reasoning_tokens"], usage["usage"]["total_tokens"]) == (
        307, 255, 588)
    assert usage["raw_usage"] == body["usage"]


def test_chat_reasoning_inside_completion_is_not_added_twice() -> None:
    body = fixture("openai-chat", "body-reasoning-beside-completion.json")
    body["usage"]["completion_tokens"], body["usage"]["total_tokens"] = 281, 588
    assert CHAT.classify_body(body).to_dict()["usage"]["output_tokens"] == 281


# ---- 7, 8. Anthropic: identity after a mid-stream error, the spend-limit code in raw -------------------------

def test_anthropic_mid_stream_error_keeps_id_and_model() -> None:
    events = [e for e in _sse_events("anthropic-messages", "stream-text.sse")
              if "message_delta" not in e and "message_stop" not in e]
    events.append('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')
    result = _from_events(events, ANTHROPIC).response.to_dict()
    assert (result["kind"], result["reason"]) == ("retryable_error", "overloaded")
    assert (result["response_id"], result["model"]) == ("msg_01Ut1", "claude-sonnet-5")


def test_anthropic_spend_limit_names_its_code_in_raw() -> None:
    body = fixture("anthropic-messages", "error-429-rate-limit.json")
    body["error"]["details"] = {"error_code": "enforced_spend_limit_reached"}
    result = ANTHROPIC.classify_error(429, body, {}).to_dict()
    assert (result["kind"], result["reason"]) == ("fatal_error", "quota")
    assert "enforced_spend_limit_reached" in result["raw"]
    stream = _from_events([f"event: error\ndata: {json.dumps(body)}"], ANTHROPIC).response.to_dict()
    assert (stream["kind"], stream["reason"]) == ("fatal_error", "quota")
    assert "enforced_spend_limit_reached" in stream["raw"]


# ---- 9. Anthropic stream usage in message_delta -----------------------------------------------------------

OLD_USAGE_SHAPE = {"stream-usage-start-only.sse"}


def _anthropic_streams() -> list[str]:
    paths = sorted(CASES.glob("*/anthropic-messages/*.sse")) + sorted((FIXTURES / "anthropic-messages").glob("*.sse"))
    return [str(path) for path in paths]


@pytest.mark.parametrize("path", _anthropic_streams())
def test_anthropic_stream_fixtures_carry_input_counts_in_message_delta_as_live_streams_do(path: str) -> None:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    deltas = [json.loads(line[5:]) for line in lines if line.startswith("data:") and '"message_delta"' in line]
    if not deltas or path.rsplit("/", 1)[-1] in OLD_USAGE_SHAPE:
        assert not deltas or all("input_tokens" not in delta["usage"] for delta in deltas)
        return
    assert all("input_tokens" in delta["usage"] and "cache_read_input_tokens" in delta["usage"] for delta in deltas)


def test_anthropic_message_delta_counts_replace_message_start() -> None:
    usage = _assemble(ANTHROPIC, "anthropic-messages", "stream-usage-delta-replaces-start.sse").response.usage
    assert usage is not None and usage.raw is not None
    assert usage.raw["input_tokens"] == 61 and usage.raw["server_tool_use"] == {"web_search_requests": 1,
                                                                                "web_fetch_requests": 0}


# ---- 10. Gemini streamed function-call arguments ------------------------------------------------------------

PARTIAL = "stream-streamed-function-call-arguments.sse"


def test_gemini_fragments_become_whole_calls() -> None:
    result = _assemble(GEMINI, "gemini", PARTIAL).response
    assert [(call.name, call.parsed_arguments, call.synthesized_id) for call in result.calls] == [
        ("lookup_order", {"order_id": "A-17", "include_items": True, "max_lines": 5, "filters": {"note": None}}, True),
        ("list_open_tickets", {}, True),
        ("read_theme", {}, True),
    ]
    # The thought signature of the opening fragment stays on the rebuilt part, for the replayed history.
    assert result.output_items[0]["parts"][0]["thoughtSignature"] == "CiQBu2FrZS1wYXJ0aWFsLWFyZ3Mtc2ln"


def test_gemini_stream_that_ends_inside_an_open_call_is_interrupted() -> None:
    events = _sse_events("gemini", PARTIAL)
    closers = [index for index, event in enumerate(events) if '"functionCall":{}' in event]
    del events[closers[0]:-1]  # the first call never closes; the finish chunk still arrives
    result = _from_events(events, GEMINI).response.to_dict()
    assert (result["kind"], result["reason"]) == ("retryable_error", "interrupted")
    assert result["calls"] == []


def test_gemini_string_pieces_join_only_while_the_piece_before_continues() -> None:
    events = _sse_events("gemini", PARTIAL)
    events[2] = events[2].replace('"stringValue":"17"}', '"stringValue":"17"},{"jsonPath":"$.order_id",'
                                                         '"stringValue":"B-9"}')
    calls = _from_events(events, GEMINI).response.calls
    assert calls[0].parsed_arguments is not None and calls[0].parsed_arguments["order_id"] == "B-9"


@pytest.mark.parametrize(("path", "segments"), [
    ("$.order_id", ["order_id"]), ("$.items[2].sku", ["items", 2, "sku"]), ("$['odd key']", ["odd key"]),
    ("order_id", None), ("$.", None), ("$", None), (None, None),
])
def test_gemini_json_paths(path: Any, segments: list[Any] | None) -> None:
    assert parse_json_path(path) == segments


def test_gemini_an_unreadable_path_makes_the_call_not_runnable() -> None:
    events = _sse_events("gemini", PARTIAL)
    events[1] = events[1].replace('"jsonPath":"$.order_id"', '"jsonPath":"order_id"')
    result = _from_events(events, GEMINI).response
    assert result.kind == "invalid_tool_call"


def test_gemini_partial_argument_chunks_are_within_the_sdk_types() -> None:
    from google.genai.types import GenerateContentResponse

    for event in _sse_events("gemini", PARTIAL):
        chunk = GenerateContentResponse.model_validate(_data(event))
        assert chunk.candidates is not None


# ---- 11. No finish reason at all (OpenAI-compatible gateways) ----------------------------------------------

def test_chat_stream_of_calls_with_no_finish_reason_is_tool_calls() -> None:
    result = _assemble(CHAT, "openai-chat", "stream-no-finish-reason-tool-calls.sse").response
    assert (result.kind, result.raw) == ("tool_calls", "finish_reason absent")
    assert [(call.call_id, call.parsed_arguments) for call in result.calls] == [
        ("toolu_u_A1", {"order_id": "ORD-1001"})]


def test_chat_stream_cut_before_done_is_still_interrupted() -> None:
    events = _sse_events("openai-chat", "stream-no-finish-reason-tool-calls.sse")[:-1]
    assert _from_events(events, CHAT).response.to_dict()["reason"] == "interrupted"


def test_chat_body_with_null_finish_reason_keeps_its_text() -> None:
    result = CHAT.classify_body(fixture("openai-chat", "live-body-no-finish-reason.json")).to_dict()
    assert (result["kind"], result["text"], result["raw"]) == ("text", "Order ORD-1001 shipped.",
                                                               "finish_reason absent")


# ---- 12. Bedrock toolUse.type "tool_use" ------------------------------------------------------------------

def test_bedrock_typed_tool_use_is_a_client_call_in_body_and_stream() -> None:
    body = BEDROCK.classify_body(fixture("bedrock-converse", "live-body-tool-use-typed.json"))
    stream = _assemble(BEDROCK, "bedrock-converse", "live-stream-tool-use-typed.jsonl").response
    for result in (body, stream):
        assert result.kind == "tool_calls"
        assert [(call.call_id, call.parsed_arguments) for call in result.calls] == [
            ("tooluse_u_Typed01", {"order_id": "ORD-1001"})]
    assert body.to_dict() == stream.to_dict()


@pytest.mark.parametrize(("tool_use_type", "kind"), [("server_tool_use", "text"), ("robot_tool_use", "unsupported"),
                                                     (7, "unsupported")])
def test_bedrock_other_tool_use_types(tool_use_type: Any, kind: str) -> None:
    body = fixture("bedrock-converse", "live-body-tool-use-typed.json")
    body["output"]["message"]["content"][1]["toolUse"]["type"] = tool_use_type
    body["stopReason"] = "end_turn"
    assert BEDROCK.classify_body(body).kind == kind


# ---- 13. Bedrock citationsContent carries answer text -------------------------------------------------------

def test_bedrock_cited_text_is_part_of_the_answer_and_citations_are_extras() -> None:
    body = fixture("bedrock-converse", "body-citations.json")
    result = BEDROCK.classify_body(body).to_dict()
    assert result["text"] == "Employees should consult with their manager for details."
    assert result["provider_details"]["citations"] == body["output"]["message"]["content"][1]["citationsContent"][
        "citations"]
    stream = _assemble(BEDROCK, "bedrock-converse", "stream-citations.jsonl").response.to_dict()
    assert stream == result


# ---- live-* fixtures are outside the SDK's types, and each is listed with its fact ---------------------------

def _manifest() -> dict[str, dict[str, str]]:
    loaded = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_every_live_fixture_is_listed_with_the_fact_it_records() -> None:
    listed = {(provider, name) for provider, names in _manifest().items() for name in names}
    on_disk = {(path.parent.name, path.name) for path in FIXTURES.glob("*/live-*")}
    assert listed == on_disk
    assert all(len(fact) > 40 for names in _manifest().values() for fact in names.values())


@pytest.mark.parametrize(("provider", "name"), sorted(
    (provider, name) for provider, names in _manifest().items() for name in names if name.endswith(".json")))
def test_live_bodies_are_rejected_by_the_vendor_sdk(provider: str, name: str) -> None:
    from tests.test_sdk_validation import VALIDATORS

    with pytest.raises(Exception):  # noqa: B017 - pydantic's ValidationError or the botocore shape check
        VALIDATORS[provider](fixture(provider, name))


def test_live_bedrock_stream_has_an_event_outside_the_service_model() -> None:
    from tests.botocore_shapes import converse_stream_event_violations

    lines = (FIXTURES / "bedrock-converse" / "live-stream-tool-use-typed.jsonl").read_text().splitlines()
    violations = [v for line in lines for v in converse_stream_event_violations(json.loads(line))]
    assert violations == ["$.contentBlockStart.start.toolUse.type: 'tool_use' is not one of ToolUseType "
                          "['server_tool_use']"]
