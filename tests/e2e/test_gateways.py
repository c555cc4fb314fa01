"""Gateway stacks: LiteLLM, LangChain chat models and pydantic-ai in front of the five vendor APIs, and what each
hides (docs/gateways.md).

The expected findings below are the ones documented for the pinned releases against recorded turns (LiteLLM 1.110:
Anthropic's context-window stop read as `length`, reasoning tokens Anthropic never sends, a 529 turned into a 500,
Gemini call ids with the thought signature appended; LangChain 1.x and pydantic-ai 2.68: see their sections): each
is asserted on its own, so a gateway upgrade that changes one fails a named test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import modes_for, run_case
from conformance.report.findings import compare_rows
from conformance.stacks.runner import run_stack_case
from conformance.stacks.stack import gateway_stacks
from tests.helpers import CASES, OWN, cli

# End-to-end: it starts processes, builds wheels, runs gates or a browser (pytest -m "not e2e" skips it).
pytestmark = pytest.mark.e2e

GATEWAY_MODULES = ("litellm", "langchain_openai", "langchain_anthropic", "langchain_aws", "langchain_google_genai",
                   "pydantic_ai")


@pytest.fixture(scope="module", autouse=True)
def _gateways_installed() -> None:
    """Imported when the tests run, not when they are collected: a run that deselects them pays nothing."""
    for module in GATEWAY_MODULES:
        pytest.importorskip(module, reason=f"{module} is not installed (pip install 'llm-conformance[gateways]')")


GATEWAYS = ("litellm", "langchain", "pydantic-ai")

ADAPTERS = builtin_adapters()
CASE = {case.id: case for case in load_cases([CASES])}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("gateways")
    result = cli("run", *OWN, "--stack", "gateways", "--report-dir", str(folder))
    assert result.returncode in (0, 1), result.stderr
    document: dict[str, Any] = json.loads((folder / "report.json").read_text())
    document["markdown"] = (folder / "report.md").read_text()
    return document


def _finding(report: dict[str, Any], stack: str, case: str, mode: str, turn: int | None,
             field: str) -> dict[str, Any] | None:
    found = [finding for finding in report["findings"] if (finding["stack"], finding["case"], finding["mode"],
                                                            finding["turn"], finding["field"]) ==
             (stack, case, mode, turn, field)]
    return found[0] if found else None


@pytest.mark.parametrize("gateway", GATEWAYS)
def test_every_case_runs_through_each_gateway_for_every_vendor_body_and_stream(report: dict[str, Any],
                                                                              gateway: str) -> None:
    rows = report["results"]
    for provider in ADAPTERS:
        raw = {(row["case"], row["mode"]) for row in rows if row["provider"] == provider}
        stack = [row for row in rows if row["provider"] == f"{provider}@{gateway}"]
        assert {(row["case"], row["mode"]) for row in stack} == raw and len(raw) > 45, provider
        # A gateway raising is mapped to a kind; a stack exception (`error`) would be the mapping's own bug.
        assert [row["case"] for row in stack if row["error"]] == [], provider
    section = report["markdown"].split("## What each stack hides", 1)[1]
    assert all(f"### {provider}\u2060@\u2060{gateway}" in section for provider in ADAPTERS)


@pytest.mark.parametrize("mode", ["body", "stream"])
def test_litellm_reads_anthropics_context_window_stop_as_max_tokens(report: dict[str, Any], mode: str) -> None:
    reason = _finding(report, "anthropic-messages@litellm", "context_window", mode, 1, "reason")
    assert reason is not None and (reason["wire"], reason["stack_value"]) == ("context_window", "max_tokens")
    raw = _finding(report, "anthropic-messages@litellm", "context_window", mode, 1, "raw")
    assert raw is not None and raw["wire"] == "stop_reason=model_context_window_exceeded"


def test_litellm_invents_anthropic_reasoning_tokens(report: dict[str, Any]) -> None:
    invented = _finding(report, "anthropic-messages@litellm", "normal", "body", 1, "usage.reasoning_tokens")
    assert invented is not None and invented["effect"] == "invented"
    assert invented["wire"] is None and invented["stack_value"] > 0


def test_litellm_turns_anthropics_529_into_a_500_but_keeps_the_error_type(report: dict[str, Any]) -> None:
    raw = _finding(report, "anthropic-messages@litellm", "http_overloaded", "body", 1, "raw")
    assert raw is not None and raw["wire"].startswith("http=529") and raw["stack_value"].startswith("http=500")
    # The error body LiteLLM keeps in its message still says overloaded_error: the careful mapping reads it.
    assert _finding(report, "anthropic-messages@litellm", "http_overloaded", "body", 1, "reason") is None


@pytest.mark.parametrize("mode", ["body", "stream"])
def test_litellm_appends_the_thought_signature_to_gemini_call_ids(report: dict[str, Any], mode: str) -> None:
    ids = _finding(report, "gemini@litellm", "normal", mode, 1, "calls[1].id")
    assert ids is not None and ids["wire"] == "fc_n7rj2" and ids["stack_value"].startswith("fc_n7rj2__thought__")
    # Correlation is judged on the wire: the results LiteLLM sends back must answer the vendor's id, not the one it
    # shows its users.
    row = next(row for row in report["results"] if (row["case"], row["provider"], row["mode"]) ==
               ("normal", "gemini@litellm", mode))
    problems = " ".join(row["correlation"]["problems"])
    assert "call fc_n7rj2 (get_order)" in problems and "__thought__" not in problems


def test_litellm_replaces_the_anthropic_response_id(report: dict[str, Any]) -> None:
    replaced = _finding(report, "anthropic-messages@litellm", "normal", "body", 1, "response_id")
    assert replaced is not None and replaced["wire"].startswith("msg_")
    assert replaced["stack_value"].startswith("chatcmpl-")


@pytest.mark.parametrize("case_id", ["refusal", "pause_turn"])
def test_anthropic_stops_litellm_keeps_raw_read_the_same_as_the_wire(report: dict[str, Any], case_id: str) -> None:
    for field in ("kind", "reason", "raw", "outcome"):
        assert _finding(report, "anthropic-messages@litellm", case_id, "body", 1 if field != "outcome" else None,
                        field) is None, field


@pytest.mark.parametrize(("case_id", "was", "now"), [("refusal", "model", "filter"),
                                                      ("pause_turn", "pause_turn", "max_tokens")])
def test_a_mapping_that_ignores_provider_specific_fields_is_found(monkeypatch: pytest.MonkeyPatch, case_id: str,
                                                                   was: str, now: str) -> None:
    from conformance.stacks.gateways import litellm as litellm_stack

    stack, reader = gateway_stacks()["anthropic-messages@litellm"], ADAPTERS["anthropic-messages"]
    case = CASE[case_id]
    assert "body" in modes_for(case, "anthropic-messages", reader)
    raw = run_case(case, "anthropic-messages", reader, "body")
    careful, _, _ = run_stack_case(case, stack, reader, "body")
    assert [finding.field for finding in compare_rows(raw, careful) if finding.field in ("kind", "reason")] == []
    monkeypatch.setattr(litellm_stack, "vendor_stop", lambda provider, message: None)
    lazy, _, _ = run_stack_case(case, stack, reader, "body")
    reasons = [(finding.wire, finding.stack_value) for finding in compare_rows(raw, lazy) if finding.field == "reason"]
    assert reasons == [(was, now)]


def _row(report: dict[str, Any], case: str, provider: str, mode: str) -> dict[str, Any]:
    return next(row for row in report["results"] if (row["case"], row["provider"], row["mode"]) ==
                (case, provider, mode))


def test_litellm_sends_gemini_results_back_without_the_call_id(report: dict[str, Any]) -> None:
    results = _finding(report, "gemini@litellm", "normal", "body", 2, "request.results")
    assert results is not None and (results["wire"], results["stack_value"]) == (["fc_n7rj2"], [None])
    assert "correlation: turn 2: call fc_n7rj2 (get_order) of turn 1 got no result" in _row(
        report, "normal", "gemini@litellm", "body")["failures"]


def test_litellm_drops_additional_properties_from_gemini_tool_schemas(report: dict[str, Any]) -> None:
    failures = _row(report, "normal", "gemini@litellm", "body")["failures"]
    assert any("tool get_order: the parameter schema sent differs from the case's (at /additionalProperties: "
               "missing)" in failure for failure in failures), failures


@pytest.mark.parametrize("provider", ["anthropic-messages", "bedrock-converse"])
def test_litellm_sends_an_output_schema_as_a_forced_tool(report: dict[str, Any], provider: str) -> None:
    failures = _row(report, "structured_output_valid", f"{provider}@litellm", "body")["failures"]
    assert any("tools offered [json_tool_call, get_order]" in failure for failure in failures), failures


def test_litellm_loses_a_streamed_chat_refusal(report: dict[str, Any]) -> None:
    kind = _finding(report, "openai-chat@litellm", "refusal", "stream", 1, "kind")
    assert kind is not None and (kind["wire"], kind["stack_value"]) == ("refusal", "empty")
    assert _finding(report, "openai-chat@litellm", "refusal", "body", 1, "kind") is None  # the body keeps it


def test_gemini_finish_values_litellm_keeps_in_a_body_and_loses_in_a_stream(report: dict[str, Any]) -> None:
    # A body keeps Gemini's own finishReason as the choice's provider_specific_fields["native_finish_reason"]; the
    # careful mapping reads it. stream_chunk_builder does not carry it over.
    for case_id, kind in (("continuation", "incomplete"), ("unknown_tool", "invalid_tool_call")):
        body = _row(report, case_id, "gemini@litellm", "body")
        assert body["turns"][0]["kind"] == kind and "native_finish_reason=" in body["turns"][0]["raw"], case_id
        assert _finding(report, "gemini@litellm", case_id, "body", 1, "reason") is None, case_id
    lost = _finding(report, "gemini@litellm", "continuation", "stream", 1, "reason")
    assert lost is not None and (lost["wire"], lost["stack_value"]) == ("continuation", "max_tokens")
    assert _row(report, "unknown_tool", "gemini@litellm", "stream")["turns"][0]["kind"] == "empty"


def test_litellm_keeps_the_openai_error_code_and_retry_delay(report: dict[str, Any]) -> None:
    turn = _row(report, "http_rate_limit", "openai-chat@litellm", "body")["turns"][0]
    assert (turn["kind"], turn["reason"], turn["retry_after_s"]) == ("retryable_error", "rate_limit", 2.0)


# LangChain chat models (langchain-openai 1.7, -anthropic 1.7, -aws 1.9, -google-genai 4.4).


@pytest.mark.parametrize(("provider", "prefix"), [("anthropic-messages", "msg_"), ("openai-chat", "chatcmpl-")])
def test_langchain_keeps_the_response_id_in_a_body_and_loses_it_in_a_stream(report: dict[str, Any], provider: str,
                                                                            prefix: str) -> None:
    # The vendor id is in response_metadata["id"] of a body (AIMessage.id is LangChain's own lc_run-- id); the
    # summed stream chunks carry none.
    assert _finding(report, f"{provider}@langchain", "normal", "body", 1, "response_id") is None
    assert _row(report, "normal", f"{provider}@langchain", "body")["turns"][0]["response_id"].startswith(prefix)
    lost = _finding(report, f"{provider}@langchain", "normal", "stream", 1, "response_id")
    assert lost is not None and lost["effect"] == "lost" and lost["wire"].startswith(prefix)


def test_langchain_gemini_keeps_no_response_id_and_sends_results_without_the_call_id(report: dict[str, Any]) -> None:
    for mode in ("body", "stream"):
        lost = _finding(report, "gemini@langchain", "normal", mode, 1, "response_id")
        assert lost is not None and lost["effect"] == "lost", mode
        results = _finding(report, "gemini@langchain", "normal", mode, 2, "request.results")
        assert results is not None and (results["wire"], results["stack_value"]) == (["fc_n7rj2"], [None]), mode
    # The call id it shows is the wire's (unlike LiteLLM's), and the schema loses additionalProperties (as LiteLLM's).
    assert _finding(report, "gemini@langchain", "normal", "body", 1, "calls[1].id") is None
    assert any("(at /additionalProperties: missing)" in failure
               for failure in _row(report, "normal", "gemini@langchain", "body")["failures"])


def test_langchain_gemini_zero_cached_tokens_agree_with_the_wire(report: dict[str, Any]) -> None:
    # An absent cachedContentTokenCount inside usageMetadata is a proto3 zero (docs/contract.md, "Usage"): the 0
    # LangChain reports is the wire's count, so it is no finding.
    assert _finding(report, "gemini@langchain", "normal", "body", 1, "usage.cached_input_tokens") is None
    row = _row(report, "normal", "gemini@langchain", "body")
    assert row["turns"][0]["usage"]["cached_input_tokens"] == 0


def test_langchain_gemini_resumes_a_continuation_with_a_request_of_its_own(report: dict[str, Any]) -> None:
    # google-genai's automatic continuation is on unless the caller turns it off, and ChatGoogleGenerativeAI does
    # not: a CONTINUATION turn is followed by a second request the business code never sees (the replay server has
    # no second turn recorded, so it answers 400).
    kind = _finding(report, "gemini@langchain", "continuation", "body", 1, "kind")
    assert kind is not None and (kind["wire"], kind["stack_value"]) == ("incomplete", "fatal_error")
    turn = _row(report, "continuation", "gemini@langchain", "body")["turns"][0]
    assert turn["raw"].startswith("http=400")


def test_langchain_turns_a_responses_stream_error_into_a_plain_value_error(report: dict[str, Any]) -> None:
    # ChatOpenAI raises ValueError("server_error: ...") for an `error` event: nothing says it may be retried.
    kind = _finding(report, "openai-responses@langchain", "mid_stream_error", "stream", 1, "kind")
    assert kind is not None and (kind["wire"], kind["stack_value"]) == ("retryable_error", "unsupported")
    assert _row(report, "mid_stream_error", "openai-responses@langchain", "stream")["turns"][0]["raw"] == \
        "raised ValueError"


def test_langchain_reports_a_cut_bedrock_stream_as_a_connection_error(report: dict[str, Any]) -> None:
    # langchain-aws raises ConnectionError("Incomplete Bedrock response stream: missing messageStop event."): the
    # careful mapping reads a failed connection as retryable, so the kind survives.
    assert _finding(report, "bedrock-converse@langchain", "stream_interrupted", "stream", 1, "kind") is None
    turn = _row(report, "stream_interrupted", "bedrock-converse@langchain", "stream")["turns"][0]
    assert (turn["raw"], turn["reason"]) == ("raised ConnectionError", "interrupted")


def test_langchain_loses_a_streamed_chat_refusal_and_keeps_it_in_a_body(report: dict[str, Any]) -> None:
    kind = _finding(report, "openai-chat@langchain", "refusal", "stream", 1, "kind")
    assert kind is not None and (kind["wire"], kind["stack_value"]) == ("refusal", "empty")
    body = _row(report, "refusal", "openai-chat@langchain", "body")["turns"][0]
    assert (body["kind"], body["raw"]) == ("refusal", "additional_kwargs.refusal")


@pytest.mark.parametrize("provider", ["anthropic-messages", "bedrock-converse", "openai-chat", "openai-responses"])
def test_langchain_parses_cut_streamed_arguments_into_a_valid_call(report: dict[str, Any], provider: str) -> None:
    kind = _finding(report, f"{provider}@langchain", "invalid_arguments_not_json", "stream", 1, "kind")
    assert kind is not None and (kind["wire"], kind["stack_value"]) == ("invalid_tool_call", "tool_calls")


def test_langchain_anthropic_stops_read_the_same_as_the_wire(report: dict[str, Any]) -> None:
    # response_metadata keeps Anthropic's own stop_reason: the careful mapping loses none of them.
    for case_id in ("refusal", "pause_turn", "context_window", "truncation"):
        for mode in ("body", "stream"):
            for field in ("kind", "reason", "raw"):
                assert _finding(report, "anthropic-messages@langchain", case_id, mode, 1, field) is None, \
                    (case_id, mode, field)


@pytest.mark.parametrize(("case_id", "provider", "was"), [("truncation", "anthropic-messages", "incomplete"),
                                                          ("refusal", "gemini", "refusal")])
def test_a_langchain_mapping_that_ignores_response_metadata_is_found(monkeypatch: pytest.MonkeyPatch, case_id: str,
                                                                     provider: str, was: str) -> None:
    from conformance.stacks.gateways import langchain as langchain_stack

    stack, reader = gateway_stacks()[f"{provider}@langchain"], ADAPTERS[provider]
    case = CASE[case_id]
    raw = run_case(case, provider, reader, "body")
    careful, _, _ = run_stack_case(case, stack, reader, "body")
    assert [finding.field for finding in compare_rows(raw, careful) if finding.field == "kind"] == []
    # Lazier: every message is an answer, whatever response_metadata says (its stop value, its prompt feedback).
    monkeypatch.setattr(langchain_stack, "_stop", lambda provider, metadata: ("answer", langchain_stack.ANSWER, "x"))
    monkeypatch.setattr(langchain_stack, "_block_reason", lambda metadata: None)
    lazy, _, _ = run_stack_case(case, stack, reader, "body")
    kinds = [finding.wire for finding in compare_rows(raw, lazy) if finding.field == "kind"]
    assert kinds == [was]


# pydantic-ai direct model requests (pydantic-ai-slim 2.68).


@pytest.mark.parametrize(("provider", "case_id", "reason"), [
    ("anthropic-messages", "context_window", "context_window"), ("anthropic-messages", "pause_turn", "pause_turn"),
    ("anthropic-messages", "refusal", "model"), ("openai-responses", "truncation", "max_tokens")])
def test_pydantic_ai_keeps_the_raw_stop_the_normalized_one_loses(report: dict[str, Any], provider: str,
                                                                 case_id: str, reason: str) -> None:
    # The normalized finish_reason says `length` for both context_window and max_tokens, None for pause_turn,
    # `content_filter` for a model refusal; provider_details["finish_reason"] keeps the vendor's value.
    turn = _row(report, case_id, f"{provider}@pydantic-ai", "body")["turns"][0]
    assert turn.get("reason", turn.get("source")) == reason
    assert turn["raw"].startswith("status=incomplete/" if provider == "openai-responses" else "provider_details.")
    assert _finding(report, f"{provider}@pydantic-ai", case_id, "body", 1, "reason") is None


def test_pydantic_ai_reports_zero_reasoning_tokens_anthropic_never_sends(report: dict[str, Any]) -> None:
    invented = _finding(report, "anthropic-messages@pydantic-ai", "normal", "body", 1, "usage.reasoning_tokens")
    assert invented is not None and (invented["wire"], invented["stack_value"]) == (None, 0)
    # Gemini's thoughtsTokenCount is kept as output_reasoning_tokens.
    assert _finding(report, "gemini@pydantic-ai", "normal", "body", 1, "usage.reasoning_tokens") is None


def test_pydantic_ai_gives_the_bedrock_request_id_as_the_response_id(report: dict[str, Any]) -> None:
    invented = _finding(report, "bedrock-converse@pydantic-ai", "normal", "body", 1, "response_id")
    assert invented is not None and invented["wire"] is None and invented["stack_value"] == "req_normal_body_1"


def test_pydantic_ai_folds_anthropic_schema_keywords_into_the_description(report: dict[str, Any]) -> None:
    failures = _row(report, "normal", "anthropic-messages@pydantic-ai", "body")["failures"]
    assert any("at /properties/order_id/description" in failure and "{pattern: ^ORD-[0-9]{4}$}" in failure
               for failure in failures), failures


@pytest.mark.parametrize("provider", ["anthropic-messages", "bedrock-converse"])
def test_pydantic_ai_drops_a_content_block_it_does_not_know(report: dict[str, Any], provider: str) -> None:
    for mode in ("body", "stream"):
        kind = _finding(report, f"{provider}@pydantic-ai", "unsupported_item", mode, 1, "kind")
        assert kind is not None and (kind["wire"], kind["stack_value"]) == ("unsupported", "text"), mode


def test_pydantic_ai_sends_gemini_results_back_with_the_call_id(report: dict[str, Any]) -> None:
    assert _finding(report, "gemini@pydantic-ai", "normal", "body", 2, "request.results") is None
    assert not _row(report, "normal", "gemini@pydantic-ai", "body")["correlation"]["problems"]


@pytest.mark.parametrize(("case_id", "provider", "was", "now"), [
    ("context_window", "anthropic-messages", "context_window", "max_tokens"),
    ("refusal", "anthropic-messages", "model", "filter")])
def test_a_pydantic_ai_mapping_that_reads_the_normalized_finish_reason_is_found(
        monkeypatch: pytest.MonkeyPatch, case_id: str, provider: str, was: str, now: str) -> None:
    from conformance.kit.verdict import ANSWER, Refused, Truncated
    from conformance.stacks.gateways import pydantic_ai as pydantic_ai_stack

    stack, reader = gateway_stacks()[f"{provider}@pydantic-ai"], ADAPTERS[provider]
    case = CASE[case_id]
    raw = run_case(case, provider, reader, "body")
    careful, _, _ = run_stack_case(case, stack, reader, "body")
    assert [finding.field for finding in compare_rows(raw, careful) if finding.field in ("kind", "reason")] == []
    # Lazier: pydantic-ai's normalized finish_reason through a table of its five values, provider_details unread.
    normalized = {"stop": ANSWER, "tool_call": ANSWER, "length": Truncated("max_tokens"),
                  "content_filter": Refused("filter")}
    monkeypatch.setattr(pydantic_ai_stack, "vendor_stop", lambda response: response.finish_reason)
    monkeypatch.setattr(pydantic_ai_stack, "_verdict", lambda provider, stop: normalized.get(stop))
    lazy, _, _ = run_stack_case(case, stack, reader, "body")
    reasons = [(finding.wire, finding.stack_value) for finding in compare_rows(raw, lazy) if finding.field == "reason"]
    assert reasons == [(was, now)]


# Where a gateway raises an exception of its own (not the vendor SDK's), the careful mapping names it as the raw
# value. Exactly these rows, and no other: an exception anywhere else is the stack's own bug, not a finding.
RAISED = {
    ("openai-responses@langchain", "mid_stream_error", "stream"): "raised ValueError",
    ("bedrock-converse@langchain", "stream_interrupted", "stream"): "raised ConnectionError",
    ("bedrock-converse@langchain", "unsupported_item", "body"): "raised ValueError",
    ("bedrock-converse@langchain", "unsupported_item", "stream"): "raised ValueError",
    ("openai-chat@langchain", "unsupported_item", "body"): "raised TypeError",
    ("openai-chat@langchain", "unsupported_item", "stream"): "raised AttributeError",
    ("gemini@pydantic-ai", "unsupported_item", "body"): "raised UnexpectedModelBehavior",
    ("gemini@pydantic-ai", "unsupported_item", "stream"): "raised AssertionError",
    ("openai-chat@pydantic-ai", "unsupported_item", "body"): "raised UnexpectedModelBehavior",
    ("openai-responses@pydantic-ai", "unsupported_item", "body"): "raised TypeError",
}


def test_gateways_raise_their_own_exceptions_exactly_where_documented(report: dict[str, Any]) -> None:
    raised = {(row["provider"], row["case"], row["mode"]): turn["raw"] for row in report["results"]
              for turn in row["turns"] if str(turn.get("raw", "")).startswith("raised ")}
    assert raised == RAISED


# One line of docs/gateways.md each: (stack, case, mode, turn, field) → (effect, the wire, the stack's value).
FACTS = [
    ("gemini@litellm", "normal", "body", 1, "usage.cached_input_tokens", "lost", 0, None),
    ("bedrock-converse@langchain", "normal", "body", 1, "model", "invented", None,
     "anthropic.claude-3-5-sonnet-20240620-v1:0"),
    ("bedrock-converse@pydantic-ai", "normal", "body", 1, "model", "invented", None,
     "anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("openai-chat@pydantic-ai", "normal", "body", 1, "usage.cache_write_tokens", "invented", None, 0),
    ("gemini@pydantic-ai", "normal", "body", 1, "usage.cache_write_tokens", "invented", None, 0),
    ("bedrock-converse@pydantic-ai", "normal", "body", 1, "usage.reasoning_tokens", "invented", None, 0),
    ("gemini@pydantic-ai", "continuation", "body", 1, "kind", "changed", "incomplete", "fatal_error"),
    ("anthropic-messages@pydantic-ai", "mid_stream_error", "stream", 1, "response_id", "lost", "msg_01SiA1", None),
    ("openai-chat@pydantic-ai", "mid_stream_error", "stream", 1, "response_id", "lost", "chatcmpl-si1", None),
    ("gemini@langchain", "mid_stream_error", "stream", 1, "http_status", "changed", 200, 503),
    ("gemini@pydantic-ai", "mid_stream_error", "stream", 1, "http_status", "changed", 200, 503),
    ("openai-chat@pydantic-ai", "unsupported_item", "stream", 1, "kind", "changed", "unsupported", "empty"),
    ("openai-responses@pydantic-ai", "unsupported_item", "stream", 1, "kind", "changed", "unsupported", "text"),
    ("openai-responses@langchain", "unsupported_item", "body", 1, "kind", "changed", "unsupported", "text"),
    ("gemini@langchain", "unsupported_item", "body", 1, "kind", "changed", "unsupported", "text"),
    ("anthropic-messages@langchain", "unsupported_item", "stream", 1, "kind", "changed", "unsupported", "text"),
    ("bedrock-converse@langchain", "unsupported_item", "body", 1, "usage.input_tokens", "lost", 600, None),
]


@pytest.mark.parametrize(("stack", "case_id", "mode", "turn", "field", "effect", "wire", "value"), FACTS)
def test_a_documented_gateway_finding(report: dict[str, Any], stack: str, case_id: str, mode: str, turn: int,
                                      field: str, effect: str, wire: Any, value: Any) -> None:
    finding = _finding(report, stack, case_id, mode, turn, field)
    assert finding is not None and (finding["effect"], finding["wire"], finding["stack_value"]) == (effect, wire, value)


def test_pydantic_ai_reads_the_responses_incomplete_reason_the_same_as_the_wire(report: dict[str, Any]) -> None:
    for case_id in ("truncation", "content_filter"):
        for mode in ("body", "stream"):
            for field in ("kind", "reason", "raw"):
                assert _finding(report, "openai-responses@pydantic-ai", case_id, mode, 1, field) is None, \
                    (case_id, mode, field)


# ---- The next release (docs/gateways.md, "The next release") --------------------------------------------------------

@pytest.fixture(scope="module")
def next_release() -> dict[str, Any]:
    """The gateway lanes on the forward-compatibility mutants of four cases (docs/forward.md)."""
    from conformance.session import Run

    run = Run.configure(stacks=["gateways"])
    cases = [case for case in load_cases([CASES]) if case.id in ("cached_usage", "refusal", "content_filter",
                                                                  "context_window")]
    return run.forward(cases, {stack.row_id for stack in run.stacks})


def _cell(section: dict[str, Any], lane: str, family: str) -> dict[str, int]:
    return {verdict: count for verdict, count in section["lanes"][lane][family].items() if count}


def _reads(section: dict[str, Any], lane: str, family: str) -> set[str]:
    return {entry["read"] for entry in section["not_held"] if (entry["lane"], entry["family"]) == (lane, family)}


def test_litellm_folds_an_unseen_stop_into_stop(next_release: dict[str, Any]) -> None:
    for api in ("anthropic-messages", "bedrock-converse", "openai-chat", "openai-responses"):
        assert _cell(next_release, f"{api}@litellm", "stop.unseen (body)").get("guessed"), api
    for api in ("anthropic-messages", "bedrock-converse", "gemini", "openai-chat", "openai-responses"):
        assert _cell(next_release, f"{api}@litellm", "stop.unseen (stream)").get("guessed"), api
    assert set(_cell(next_release, "gemini@litellm", "stop.unseen (body)")) == {"held"}
    assert "tool_calls (finish_reason=stop)" in _reads(next_release, "openai-chat@litellm", "stop.unseen (body)")


def test_every_gateway_drops_a_new_usage_counter_but_pydantic_ai_and_litellm_on_openai_bodies(
        next_release: dict[str, Any]) -> None:
    keeps = {("openai-chat@pydantic-ai", "body"), ("openai-chat@pydantic-ai", "stream"),
             ("openai-responses@pydantic-ai", "body"), ("openai-responses@pydantic-ai", "stream"),
             ("openai-chat@litellm", "body"), ("openai-responses@litellm", "body")}
    for lane in next_release["lanes"]:
        for mode in ("body", "stream"):
            if (lane, mode) == ("openai-responses@litellm", "stream"):
                continue  # its stream rows end early on other mutants too (above): not a reading of the counter
            cell = next_release["lanes"][lane].get(f"usage.new_counter ({mode})")
            if cell:
                dropped = cell["held"] != sum(cell.values())
                assert dropped is ((lane, mode) not in keeps), (lane, mode, cell)


def test_litellm_reads_a_known_stop_in_another_case_as_stop(next_release: dict[str, Any]) -> None:
    for api in ("anthropic-messages", "bedrock-converse", "openai-chat"):
        assert _cell(next_release, f"{api}@litellm", "stop.case (body)").get("changed"), api
    assert "incomplete → text (finish_reason=stop)" in _reads(next_release, "anthropic-messages@litellm",
                                                               "stop.case (body)")


def test_litellm_drops_an_unseen_block_or_fails_with_its_own_500(next_release: dict[str, Any]) -> None:
    for api in ("anthropic-messages", "bedrock-converse", "gemini"):
        assert any(read.startswith("empty ") for read in _reads(next_release, f"{api}@litellm",
                                                                "item.unseen_alone (body)")), api
    for api in ("openai-chat", "openai-responses"):
        assert "retryable_error (http=500)" in _reads(next_release, f"{api}@litellm", "item.unseen_alone (body)")


def test_litellm_fails_on_a_body_without_an_optional_field(next_release: dict[str, Any]) -> None:
    assert any("→ retryable_error (http=500)" in read for read in _reads(
        next_release, "anthropic-messages@litellm", "field.missing (body)"))
    missing = [entry["mutant"] for entry in next_release["not_held"]
               if (entry["lane"], entry["family"]) == ("openai-responses@litellm", "field.missing (body)")]
    assert missing and {mutant.rsplit("@", 1)[1] for mutant in missing} == {"/created_at", "/id"}
    assert _cell(next_release, "openai-responses@litellm", "event.unseen (stream)").get("changed")


def test_langchain_holds_anthropic_drops_gemini_and_responses_items_and_raises_on_chat_and_bedrock(
        next_release: dict[str, Any]) -> None:
    cells = next_release["lanes"]["anthropic-messages@langchain"]
    assert sorted(family for family, cell in cells.items() if cell["held"] != sum(cell.values())) == [
        "item.unseen_beside (stream)", "usage.new_counter (body)", "usage.new_counter (stream)"]
    for api in ("gemini", "openai-responses"):
        assert set(_cell(next_release, f"{api}@langchain", "item.unseen_alone (body)")) <= {"guessed", "held"}
        assert any(read.startswith("empty ") for read in _reads(next_release, f"{api}@langchain",
                                                                "item.unseen_alone (body)")), api
    assert _reads(next_release, "openai-chat@langchain", "item.unseen_alone (body)") == {
        "unsupported (raised TypeError)"}
    assert _reads(next_release, "bedrock-converse@langchain", "item.unseen_alone (body)") == {
        "unsupported (raised ValueError)"}


def test_a_streamed_unseen_item_is_dropped_by_most_gateway_lanes_and_raises_on_three(
        next_release: dict[str, Any]) -> None:
    """Streamed, an unseen block arrives as the API streams one; the gateway drops it (the answer reads as its text
    or its calls: guessed) or raises (unnamed)."""
    drops = {"anthropic-messages@litellm", "anthropic-messages@langchain", "anthropic-messages@pydantic-ai",
             "bedrock-converse@litellm", "bedrock-converse@pydantic-ai", "gemini@litellm", "gemini@langchain",
             "openai-chat@litellm", "openai-chat@pydantic-ai", "openai-responses@langchain",
             "openai-responses@pydantic-ai"}
    raises = {"bedrock-converse@langchain", "gemini@pydantic-ai", "openai-chat@langchain"}
    for lane in drops:
        reads = _reads(next_release, lane, "item.unseen_beside (stream)")
        assert reads and {read.split(" ")[0] for read in reads} <= {"text", "tool_calls", "empty"}, (lane, reads)
    for lane in raises:
        assert set(_cell(next_release, lane, "item.unseen_beside (stream)")) == {"unnamed"}, lane
        assert all(read.startswith("unsupported (raised ") for read in _reads(
            next_release, lane, "item.unseen_beside (stream)")), lane
    assert "guessed" not in _cell(next_release, "openai-responses@litellm", "item.unseen_beside (stream)")


def test_pydantic_ai_raises_or_drops_unseen_items_and_reads_a_refusal_beside_an_unseen_stop(
        next_release: dict[str, Any]) -> None:
    for api in ("openai-chat", "gemini", "openai-responses"):
        assert set(_cell(next_release, f"{api}@pydantic-ai", "item.unseen_alone (body)")) == {"unnamed"}, api
    for api in ("anthropic-messages", "bedrock-converse"):
        reads = _reads(next_release, f"{api}@pydantic-ai", "item.unseen_alone (body)")
        assert reads and {read.split(" ")[0] for read in reads} <= {"empty", "invalid_tool_call", "tool_calls"}
        assert any(read.startswith("invalid_tool_call ") for read in reads), (api, reads)
    missing = [entry["mutant"] for entry in next_release["not_held"]
               if (entry["lane"], entry["family"]) == ("openai-chat@pydantic-ai", "field.missing (body)")]
    assert missing and {mutant.rsplit("@", 1)[1] for mutant in missing} == {"/id", "/model"}
    assert {read.split(" ")[0] for read in _reads(next_release, "openai-chat@pydantic-ai", "stop.unseen (body)")} \
        == {"refusal"}


def test_no_gateway_sends_a_request_the_vendor_refuses(report: dict[str, Any]) -> None:
    """docs/contract.md, "What the vendor refuses": over the bundled cases no gateway lane's request breaks a rule."""
    refused = [(row["provider"], row["case"], row["mode"], failure) for row in report["results"]
               for failure in row["failures"] if "the vendor would refuse it" in failure or "could not read" in failure]
    assert refused == []
    assert not [finding for finding in report["findings"] if finding["field"].startswith("request.")
                and finding["field"] not in ("request.signatures", "request.results")]


# ---- Retries (docs/retries.md) ---------------------------------------------------------------------------------------

def test_every_gateway_line_of_the_retry_table_is_what_the_lane_measures() -> None:
    """docs/retries.md, "What each client does": each gateway stack at its library's default retry policy."""
    from conformance.session import Run
    from conformance.stacks import retries
    from tests.test_retries import doc_table, lanes_of

    run = Run.configure(stacks=["gateways"])
    measured = lanes_of(retries.run_lanes(run.stacks, run.adapters, load_cases([CASES])))
    documented = doc_table()
    assert len(measured) == 15
    for lane, cells in measured.items():
        assert cells == {script: text for script, text in documented[lane].items() if text != "—"}, lane


def test_every_gemini_gateway_fails_on_a_keep_alive_comment_and_the_rest_read_every_framing(
        next_release: dict[str, Any]) -> None:
    """docs/forward.md, "Framing": google-genai parses an SSE comment line as JSON, and LangChain and pydantic-ai on
    it, and LiteLLM's own Gemini stream reader, lose the answer; every other gateway lane reads each framing as
    recorded."""
    for lane, cells in next_release["lanes"].items():
        for family, cell in cells.items():
            if not family.startswith("frame."):
                continue
            ended = [entry for entry in next_release["not_held"] if (entry["lane"], entry["family"]) == (lane, family)
                     and entry["read"].startswith("the loop ended after turn 1")]
            if lane == "openai-responses@litellm" and ended:
                continue  # its multi-turn stream rows end early on every stream mutant (above)
            lost = sum(cell.values()) - cell["held"]
            if lane.startswith("gemini@") and family == "frame.keepalive (stream)":
                assert lost == sum(cell.values()) > 0, (lane, cell)
            else:
                assert lost == 0, (lane, family, cell)


# docs/stacks.md, "Model variants and reasoning state": what each gateway's next request re-sends of the reasoning a
# compatible server needs back, on the bundled `normal` case's variants (True: `request.signatures` lost on turn 2,
# the request that re-sends turn 1).
REASONING_LOST = {
    "openai-chat~deepseek-v4@litellm": False, "openai-chat~openrouter@litellm": False,
    "openai-chat~deepseek-v4@pydantic-ai": False, "openai-chat~openrouter@pydantic-ai": True,
    "openai-chat~deepseek-v4@langchain": True, "openai-chat~openrouter@langchain": True,
    "anthropic-messages~redacted-thinking@litellm": False, "anthropic-messages~redacted-thinking@langchain": False,
    "anthropic-messages~redacted-thinking@pydantic-ai": False,
}


def test_each_gateway_on_the_reasoning_variants_keeps_or_loses_what_the_docs_say(tmp_path: Any) -> None:
    result = cli("run", "--no-config", "--case", "normal", "--stack", "gateways", "--report-dir", str(tmp_path))
    assert result.returncode in (0, 1), result.stderr
    document = json.loads((tmp_path / "report.json").read_text())
    lanes = {row["provider"] for row in document["results"]}
    assert set(REASONING_LOST) <= lanes
    for lane, lost in REASONING_LOST.items():
        for mode in ("body", "stream"):
            assert (_finding(document, lane, "normal", mode, 2, "request.signatures") is not None) is lost, \
                (lane, mode)


def test_litellm_response_cost_is_the_price_tables_except_four_gemini_streams(report: dict[str, Any]) -> None:
    """docs/cost.md, "What the bundled stacks report": LiteLLM's own figure, read from each response, agrees with
    the price table on every turn it prices but four Gemini streams, where it reports about a fifth of the charge;
    every gateway's counts price as the wire's."""
    priced = [(row["provider"], row["case"], turn["turn"]) for row in report["results"]
              if row["provider"].endswith("@litellm") for turn in row["turns"]
              if (turn.get("provider_details") or {}).get("reported_cost")]
    assert len(priced) > 100
    costs = [finding for finding in report["findings"] if finding["field"].split(".")[0] == "cost"]
    assert sorted((f["stack"], f["case"], f["mode"], f["turn"], f["field"], f["meaning"].split(":")[0])
                  for f in costs) == [
        ("gemini@litellm", case, "stream", 1, "cost.litellm response_cost", "differs")
        for case in ("content_filter", "empty_response", "invalid_arguments_not_json", "unknown_tool")]
    assert all(0.15 < f["stack_value"] / f["wire"] < 0.25 for f in costs)
