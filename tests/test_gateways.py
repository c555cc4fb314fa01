"""Gateway stacks: LiteLLM in front of the five vendor APIs, and what it hides (docs/gateways.md).

The expected findings below are the ones documented for LiteLLM 1.110 against recorded turns (Anthropic's
context-window stop read as `length`, reasoning tokens Anthropic never sends, a 529 turned into a 500, Gemini call
ids with the thought signature appended): each is asserted on its own, so a gateway upgrade that changes one
fails a named test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.cases import load_cases
from conformance.findings import compare_rows
from conformance.registry import builtin_adapters
from conformance.runner import modes_for, run_case
from conformance.stack import gateway_stacks
from conformance.stack_runner import run_stack_case
from tests.helpers import CASES, cli

pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'conformance[gateways]')")

ADAPTERS = builtin_adapters()
CASE = {case.id: case for case in load_cases([CASES])}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("gateways")
    result = cli("run", "--stack", "gateways", "--report-dir", str(folder))
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


def test_every_case_runs_through_litellm_for_every_vendor_body_and_stream(report: dict[str, Any]) -> None:
    rows = report["results"]
    for provider in ADAPTERS:
        raw = {(row["case"], row["mode"]) for row in rows if row["provider"] == provider}
        gateway = [row for row in rows if row["provider"] == f"{provider}@litellm"]
        assert {(row["case"], row["mode"]) for row in gateway} == raw and len(raw) > 45, provider
        # LiteLLM raising is mapped to a kind; a stack exception (`error`) would be the mapping's own bug.
        assert [row["case"] for row in gateway if row["error"]] == [], provider
    section = report["markdown"].split("## What each stack hides", 1)[1]
    assert all(f"### {provider}\u2060@\u2060litellm" in section for provider in ADAPTERS)


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
    from conformance.providers.gateways import litellm_stack  # noqa: PLC0415 - imports LiteLLM

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
