"""More shapes seen in recordings of the live APIs (docs/contract.md, "Rules decided from live traffic" and
"OpenAI-compatible servers"): Nova web grounding, filtered choices without a message, context overflows worded
differently, non-string Chat content, streams that end without ``[DONE]``, ``eos``, string errors, and usage the
SDK types do not settle. Fixtures named ``live-*`` are listed in ``tests/fixtures/live-wire.yaml``.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from deepdiff import DeepDiff

from conformance.kit.sse import read_chunks
from conformance.kit.stream import StreamResult
from conformance.providers.anthropic_messages import ADAPTER as ANTHROPIC
from conformance.providers.bedrock_converse import ADAPTER as BEDROCK
from conformance.providers.gemini import ADAPTER as GEMINI
from conformance.providers.openai_chat import ADAPTER as CHAT
from conformance.providers.openai_responses import ADAPTER as RESPONSES
from tests.helpers import FIXTURES, fixture


def _assemble(adapter: Any, provider: str, name: str) -> StreamResult:
    return adapter.assemble_stream(read_chunks(str(FIXTURES / provider / name)))


def _lines(provider: str, name: str) -> list[str]:
    return (FIXTURES / provider / name).read_text(encoding="utf-8").splitlines()


def _from_text(adapter: Any, text: str) -> StreamResult:
    return adapter.assemble_stream([text.encode()])


# ---- 1. Bedrock Nova web grounding: citations-only citationsContent blocks -----------------------------------

GROUNDING_TEXT = "The winter timetable runs the first ferry at 06:40 and the last at 22:15."


def test_nova_grounding_body_is_text_with_its_citations_kept() -> None:
    body = fixture("bedrock-converse", "body-nova-web-grounding.json")
    result = BEDROCK.classify_body(body).to_dict()
    assert (result["kind"], result["text"], result["raw"]) == ("text", GROUNDING_TEXT, "stopReason=end_turn")
    urls = [citation["location"]["web"]["url"] for citation in result["provider_details"]["citations"]]
    assert urls == ["https://ferries.example.com/winter", "https://harbour.example.org/notices/timetable"]
    assert result["calls"] == []  # the server_tool_use block was run by Bedrock


def test_nova_grounding_body_and_stream_agree() -> None:
    body = BEDROCK.classify_body(fixture("bedrock-converse", "body-nova-web-grounding.json")).to_dict()
    stream = _assemble(BEDROCK, "bedrock-converse", "stream-nova-web-grounding.jsonl")
    assert stream.summary.terminal
    difference = DeepDiff(body, stream.response.to_dict())
    assert not difference, difference.pretty()


def test_a_citations_block_with_neither_list_is_still_named() -> None:
    body = fixture("bedrock-converse", "body-nova-web-grounding.json")
    body["output"]["message"]["content"][3]["citationsContent"] = {"citations": "not a list"}
    result = BEDROCK.classify_body(body).to_dict()
    assert (result["kind"], result["raw"]) == ("unsupported", "output.message.content[3].citationsContent.content")


# ---- 2. A stop value that decides alone comes before a missing content container -----------------------------

def test_azure_content_filter_without_a_message_is_a_filter_refusal() -> None:
    body = fixture("openai-chat", "live-body-azure-content-filter-no-message.json")
    result = CHAT.classify_body(body).to_dict()
    assert (result["kind"], result["source"], result["raw"]) == ("refusal", "filter", "finish_reason=content_filter")
    assert (result["response_id"], result["usage"]["input_tokens"]) == ("chatcmpl-u-az1", 212)


@pytest.mark.parametrize("finish", ["stop", "tool_calls", None])
def test_a_choice_without_a_message_that_the_content_must_decide_is_unsupported(finish: str | None) -> None:
    body = fixture("openai-chat", "live-body-azure-content-filter-no-message.json")
    body["choices"][0]["finish_reason"] = finish
    result = CHAT.classify_body(body).to_dict()
    assert (result["kind"], result["raw"]) == ("unsupported", "choices[0].message")


def test_chat_length_without_a_message_is_incomplete() -> None:
    body = fixture("openai-chat", "live-body-azure-content-filter-no-message.json")
    body["choices"][0]["finish_reason"] = "length"
    assert CHAT.classify_body(body).to_dict()["reason"] == "max_tokens"


def test_anthropic_max_tokens_without_content_is_incomplete() -> None:
    body = fixture("anthropic-messages", "body-max-tokens.json")
    del body["content"]
    result = ANTHROPIC.classify_body(body).to_dict()
    assert (result["kind"], result["reason"]) == ("incomplete", "max_tokens")
    body["stop_reason"] = "end_turn"
    assert ANTHROPIC.classify_body(body).kind == "unsupported"


def test_bedrock_guardrail_without_a_message_is_a_filter_refusal() -> None:
    body = fixture("bedrock-converse", "body-guardrail-intervened.json")
    del body["output"]["message"]
    result = BEDROCK.classify_body(body).to_dict()
    assert (result["kind"], result["source"]) == ("refusal", "filter")
    body["stopReason"] = "end_turn"
    assert BEDROCK.classify_body(body).kind == "unsupported"


def test_responses_incomplete_with_output_null_is_read_by_its_reason() -> None:
    body = fixture("openai-responses", "body-incomplete-max-output-tokens.json")
    body["output"] = None
    result = RESPONSES.classify_body(body).to_dict()
    assert (result["kind"], result["reason"]) == ("incomplete", "max_tokens")
    body["status"] = "completed"
    assert RESPONSES.classify_body(body).to_dict()["raw"] == "output"


# ---- 3. Context-window overflows worded differently ----------------------------------------------------------

@pytest.mark.parametrize(("adapter", "provider", "name", "headers", "raw"), [
    (BEDROCK, "bedrock-converse", "error-validation-nova-input-tokens-exceeded.json",
     {"x-amzn-errortype": "ValidationException"}, "http=400/ValidationException"),
    (CHAT, "openai-chat", "error-400-ollama-context-length.json", {}, "http=400/api_error"),
    (CHAT, "openai-chat", "error-400-perplexity-too-many-prompt-tokens.json", {}, "http=400/too_many_prompt_tokens"),
])
def test_context_overflow_wordings_are_context_window(adapter: Any, provider: str, name: str,
                                                      headers: dict[str, str], raw: str) -> None:
    result = adapter.classify_error(400, fixture(provider, name), headers).to_dict()
    assert (result["kind"], result["reason"], result["raw"]) == ("fatal_error", "context_window", raw)


@pytest.mark.parametrize(("adapter", "message"), [
    (BEDROCK, "Input Tokens Exceeded: Number of input tokens exceeds maximum length of 300000."),
    (BEDROCK, "Number of input tokens exceeds maximum length"),
    (BEDROCK, "Input is too long for requested model."),
    (BEDROCK, "prompt is too long: 210345 tokens > 200000 maximum"),
    (CHAT, "prompt too long; exceeded max context length by 12 tokens"),
    (CHAT, "This model's maximum context length is 128000 tokens."),
    (ANTHROPIC, "prompt is too long: 210345 tokens > 200000 maximum"),
    (ANTHROPIC, "input length and `max_tokens` exceed context limit: 199000 + 8192 > 200000"),
])
def test_each_context_overflow_wording(adapter: Any, message: str) -> None:
    if adapter is BEDROCK:
        body: Any = {"message": message}
    elif adapter is ANTHROPIC:
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    else:
        body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    assert adapter.classify_error(400, body, {}).to_dict()["reason"] == "context_window"


def test_perplexity_code_decides_in_type_position_too() -> None:
    body = fixture("openai-chat", "error-400-perplexity-too-many-prompt-tokens.json")
    body["error"] = {"message": "too many", "type": "too_many_prompt_tokens", "code": 400}
    assert CHAT.classify_error(400, body, {}).to_dict()["reason"] == "context_window"


def test_nova_overflow_inside_a_stream_is_context_window() -> None:
    line = json.dumps({"validationException": fixture("bedrock-converse",
                                                      "error-validation-nova-input-tokens-exceeded.json")})
    result = _from_text(BEDROCK, '{"messageStart": {"role": "assistant"}}\n' + line + "\n").response.to_dict()
    assert (result["kind"], result["reason"]) == ("fatal_error", "context_window")


def test_an_unrelated_validation_message_stays_invalid_request() -> None:
    result = BEDROCK.classify_error(400, {"message": "Malformed input request: temperature must be <= 1"},
                                    {"x-amzn-errortype": "ValidationException"}).to_dict()
    assert result["reason"] == "invalid_request"


# ---- 4. A Chat message.content that is a JSON object ---------------------------------------------------------

def test_chat_content_object_is_unsupported_never_empty() -> None:
    result = CHAT.classify_body(fixture("openai-chat", "live-body-content-json-object.json")).to_dict()
    assert (result["kind"], result["raw"]) == ("unsupported", "message.content=object")
    assert "object" in result["raw_type"] and "string" in result["raw_type"]


@pytest.mark.parametrize(("value", "name"), [([{"type": "text", "text": "hi"}], "array"), (7, "number"),
                                             (True, "boolean")])
def test_chat_content_of_another_json_type_is_named(value: Any, name: str) -> None:
    body = fixture("openai-chat", "live-body-content-json-object.json")
    body["choices"][0]["message"]["content"] = value
    assert CHAT.classify_body(body).to_dict()["raw"] == f"message.content={name}"


def test_chat_stream_with_object_content_is_unsupported_as_its_body() -> None:
    chunk = {"id": "chatcmpl-u-cf2", "object": "chat.completion.chunk", "created": 1764403200, "model": "m",
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": {"status": "shipped"}},
                          "finish_reason": "stop"}]}
    result = _from_text(CHAT, f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n").response.to_dict()
    assert (result["kind"], result["raw"]) == ("unsupported", "message.content=object")


# ---- 5. Streams that end without [DONE] after a finish reason ------------------------------------------------

def test_a_finish_reason_then_the_end_of_the_body_is_a_complete_answer() -> None:
    result = _assemble(CHAT, "openai-chat", "compatible-stream-finish-without-done.sse").response.to_dict()
    assert (result["kind"], result["text"], result["raw"]) == ("text", "Order ORD-1001 has shipped.",
                                                               "finish_reason=stop")
    assert result["usage"]["total_tokens"] == 100


def test_perplexity_done_object_ends_the_stream_without_repeating_the_answer() -> None:
    stream = _assemble(CHAT, "openai-chat", "live-stream-done-object-crlf.sse")
    assert "\r\n" in (FIXTURES / "openai-chat" / "live-stream-done-object-crlf.sse").read_bytes().decode()
    result = stream.response.to_dict()
    assert (result["kind"], result["text"]) == ("text", "The ferry leaves at 06:40.")
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (9, 8)


def test_without_finish_reason_and_without_done_the_stream_is_still_interrupted() -> None:
    text = (FIXTURES / "openai-chat" / "compatible-stream-finish-without-done.sse").read_text()
    events = [event for event in re.split(r"\n\n", text) if event.strip()]
    result = _from_text(CHAT, "\n\n".join(events[:-1]) + "\n\n").response.to_dict()
    assert (result["kind"], result["reason"]) == ("retryable_error", "interrupted")


# ---- 6. Together finish_reason "eos" --------------------------------------------------------------------------

def test_together_eos_body_is_text() -> None:
    result = CHAT.classify_body(fixture("openai-chat", "live-body-eos-text.json")).to_dict()
    assert (result["kind"], result["text"], result["raw"]) == ("text", "Order ORD-1001 has shipped.",
                                                               "finish_reason=eos")


def test_together_eos_stream_is_tool_calls() -> None:
    response = _assemble(CHAT, "openai-chat", "live-stream-eos-tool-calls.sse").response
    assert (response.kind, response.raw) == ("tool_calls", "finish_reason=eos")
    assert [(call.call_id, call.parsed_arguments) for call in response.calls] == [
        ("call_u_tg1", {"order_id": "ORD-1001"})]


# ---- 7. An error that is a plain string (xAI) -----------------------------------------------------------------

@pytest.mark.parametrize("adapter", [RESPONSES, CHAT])
def test_a_string_error_saying_the_key_is_wrong_is_auth(adapter: Any) -> None:
    body = fixture("openai-responses", "error-400-xai-string-error.json")
    result = adapter.classify_error(400, body, {}).to_dict()
    assert (result["kind"], result["reason"]) == ("fatal_error", "auth")
    assert result["message"].startswith("Incorrect API key provided")


def test_a_string_error_about_something_else_keeps_its_message() -> None:
    body = {"code": "Client specified an invalid argument", "error": "Unknown parameter: temperatur"}
    result = RESPONSES.classify_error(400, body, {}).to_dict()
    assert (result["kind"], result["reason"], result["message"]) == (
        "fatal_error", "invalid_request", "Unknown parameter: temperatur")


# ---- 8. Usage the SDK types do not settle ---------------------------------------------------------------------

def test_anthropic_compaction_iterations_are_all_counted() -> None:
    body = fixture("anthropic-messages", "beta-body-compaction-iterations.json")
    result = ANTHROPIC.classify_body(body).to_dict()
    assert (result["kind"], result["text"]) == ("text", "Order ORD-1002 is out for delivery.")
    usage = result["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (
        99000 + 23000, 3500 + 1000, 99000 + 23000 + 3500 + 1000)
    assert result["raw_usage"]["iterations"] == body["usage"]["iterations"]


def test_anthropic_iteration_cache_counts_are_summed_with_their_inputs() -> None:
    body = fixture("anthropic-messages", "beta-body-compaction-iterations.json")
    body["usage"]["iterations"][1]["cache_read_input_tokens"] = 20000
    usage = ANTHROPIC.classify_body(body).to_dict()["usage"]
    assert (usage["input_tokens"], usage["cached_input_tokens"]) == (99000 + 23000 + 20000, 20000)


def test_anthropic_usage_without_iterations_is_the_top_level() -> None:
    body = fixture("anthropic-messages", "beta-body-compaction-iterations.json")
    del body["usage"]["iterations"]
    assert ANTHROPIC.classify_body(body).to_dict()["usage"]["input_tokens"] == 23000


def test_the_compaction_body_is_within_the_sdk_beta_types() -> None:
    from anthropic.types.beta import BetaMessage

    BetaMessage.model_validate(fixture("anthropic-messages", "beta-body-compaction-iterations.json"))


def test_anthropic_style_cache_counts_on_the_chat_wire_are_added_when_the_total_proves_it() -> None:
    usage = CHAT.classify_body(fixture("openai-chat", "body-anthropic-style-cache-counts.json")).to_dict()["usage"]
    assert usage == {"input_tokens": 18 + 2048 + 100, "cached_input_tokens": 2048, "cache_write_tokens": 100,
                     "output_tokens": 9, "reasoning_tokens": None, "total_tokens": 2175}


def test_anthropic_style_cache_counts_inside_prompt_tokens_are_not_added_twice() -> None:
    body = fixture("openai-chat", "body-anthropic-style-cache-counts.json")
    body["usage"].update(prompt_tokens=2166, total_tokens=2175)
    usage = CHAT.classify_body(body).to_dict()["usage"]
    assert (usage["input_tokens"], usage["cached_input_tokens"]) == (2166, 2048)


def test_together_top_level_cached_tokens_are_cache_reads() -> None:
    usage = CHAT.classify_body(fixture("openai-chat", "live-body-eos-text.json")).to_dict()["usage"]
    assert (usage["input_tokens"], usage["cached_input_tokens"]) == (120, 64)
    stream = _assemble(CHAT, "openai-chat", "live-stream-eos-tool-calls.sse").response.to_dict()["usage"]
    assert stream["cached_input_tokens"] == 256


def test_openai_details_win_over_the_other_places() -> None:
    body = fixture("openai-chat", "live-body-eos-text.json")
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 32}
    assert CHAT.classify_body(body).to_dict()["usage"]["cached_input_tokens"] == 32


# ---- 9. Gemini: absent counters inside usageMetadata are 0 (proto3 JSON) --------------------------------------

def test_gemini_absent_counters_are_zero() -> None:
    body = fixture("gemini", "body-text.json")
    body["usageMetadata"] = {"promptTokenCount": 40, "totalTokenCount": 40}
    usage = GEMINI.classify_body(body).to_dict()["usage"]
    assert usage == {"input_tokens": 40, "cached_input_tokens": 0, "cache_write_tokens": None,
                     "output_tokens": 0, "reasoning_tokens": 0, "total_tokens": 40}


def test_gemini_missing_usage_metadata_is_unknown() -> None:
    body = fixture("gemini", "body-text.json")
    del body["usageMetadata"]
    assert GEMINI.classify_body(body).to_dict()["usage"] is None


def test_gemini_a_present_counter_that_is_not_a_count_is_unknown() -> None:
    body = copy.deepcopy(fixture("gemini", "body-text.json"))
    body["usageMetadata"]["thoughtsTokenCount"] = "120"
    usage = GEMINI.classify_body(body).to_dict()["usage"]
    assert (usage["reasoning_tokens"], usage["output_tokens"]) == (None, 11)


def test_vendors_whose_counts_have_presence_keep_null() -> None:
    body = fixture("openai-chat", "live-body-eos-text.json")
    del body["usage"]["cached_tokens"]
    assert CHAT.classify_body(body).to_dict()["usage"]["cached_input_tokens"] is None


# ---- 10. A forced tool choice holds until the forced call is answered ----------------------------------------

def _forced_case() -> Any:
    from conformance.engine.cases import load_cases
    from tests.helpers import BUNDLED

    return next(case for case in load_cases([BUNDLED]) if case.id == "forced_tool_choice")


@pytest.mark.parametrize("provider", ["openai-responses", "openai-chat", "anthropic-messages", "gemini",
                                      "bedrock-converse"])
def test_the_follow_up_after_a_forced_call_sends_auto(provider: str) -> None:
    from conformance.engine.registry import builtin_adapters
    from conformance.engine.runner import run_case

    adapter = builtin_adapters()[provider]
    row = run_case(_forced_case(), provider, adapter)
    assert row["passed"], row["failures"]
    sent = [turn["request"]["sent"]["tool_choice"] for turn in row["turns"]]
    assert sent == ["tool get_order", "auto"]


def test_a_loop_that_keeps_forcing_is_told_which_turn_may_carry_it() -> None:
    from conformance.engine.registry import builtin_adapters
    from conformance.engine.request_check import check_sent
    from conformance.kit.task import ModelTurn, ToolResults, UserMessage

    adapter = builtin_adapters()["openai-chat"]
    task = _forced_case().task
    call = CHAT.classify_body(fixture("openai-chat", "body-tool-call.json"))
    from conformance.kit.task import ToolResult

    results = ToolResults(results=(ToolResult(call=call.calls[0], output={"status": "shipped"}),))
    first = adapter.build_request(task, [UserMessage(text=task.input)])
    kept = adapter.build_request(task, [UserMessage(text=task.input), ModelTurn(response=call), results])
    assert check_sent(adapter, task, first) == []
    problems = check_sent(adapter, task, kept)
    assert len(problems) == 1 and "after the forced call was answered" in problems[0] and "auto" in problems[0]


def test_a_new_user_message_after_the_forced_call_forces_again() -> None:
    from conformance.kit.task import ModelTurn, ToolResult, ToolResults, UserMessage, task_for_turn

    task = _forced_case().task
    call = CHAT.classify_body(fixture("openai-chat", "body-tool-call.json"))
    answer = CHAT.classify_body(fixture("openai-chat", "body-text.json"))
    results = ToolResults(results=(ToolResult(call=call.calls[0], output={"status": "shipped"}),))
    after_call = [UserMessage(text="a"), ModelTurn(response=call), results]
    assert task_for_turn(task, after_call).tool_choice == "auto"
    again = [*after_call, ModelTurn(response=answer), UserMessage(text="and the other order?")]
    assert (task_for_turn(task, again).tool_choice, task_for_turn(task, again).tool_name) == ("tool", "get_order")


def test_the_tool_choice_is_not_part_of_the_static_prefix() -> None:
    from conformance.engine.registry import builtin_adapters
    from conformance.engine.runner import run_case_with_requests

    for provider, adapter in builtin_adapters().items():
        row, _, requests = run_case_with_requests(_forced_case(), provider, adapter)
        assert row["correlation"]["problems"] == [], provider
        first, second = (adapter.read_request(request) for request in requests)
        assert first.prefix == second.prefix, provider
        assert first.sent is not None and second.sent is not None
        assert (first.sent.tool_choice, second.sent.tool_choice) == ("tool", "auto"), provider


# ---- 11. The Gemini continuation token, body and stream ---------------------------------------------------------

def test_gemini_continuation_keeps_its_token_in_body_and_stream() -> None:
    from conformance.engine.cases import load_cases
    from tests.helpers import BUNDLED

    case = next(case for case in load_cases([BUNDLED]) if case.id == "continuation")
    turn = case.providers["gemini"].turns[0]
    body = GEMINI.classify_body(turn.body).to_dict()
    assert turn.stream is not None
    stream = GEMINI.assemble_stream(read_chunks(str(turn.stream))).response.to_dict()
    assert body["provider_details"]["continuation_token"] == turn.body["candidates"][0]["continuationToken"]
    assert stream["provider_details"] == body["provider_details"]
    assert (body["kind"], body["reason"]) == ("incomplete", "continuation")


def test_a_stream_that_ends_after_its_finish_reason_is_terminal_without_done() -> None:
    summary = _assemble(CHAT, "openai-chat", "compatible-stream-finish-without-done.sse").summary.to_dict()
    assert summary["terminal"] is True and "[DONE]" not in summary["events"]
    assert summary["ignored_after_terminal"] == 0
