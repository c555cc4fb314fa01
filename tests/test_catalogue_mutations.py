"""For every scenario family, breaking the key wire fact of its fixture (an id, a status, a stop value, a
header, a count) makes the case fail: the catalogue measures what it claims to measure."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import run_case
from conformance.errors import InputError
from tests.helpers import CASES

A, B, C, G, R = "anthropic-messages", "bedrock-converse", "openai-chat", "gemini", "openai-responses"

# (case, provider, mode, file under the case folder, text to find, replacement)
MUTATIONS = [
    ("normal", R, "body", f"{R}/turn2.json", '"status": "completed"', '"status": "in_progress"'),
    ("refusal", A, "stream", f"{A}/turn1.sse", '"stop_reason":"refusal"', '"stop_reason":"end_turn"'),
    ("truncation", G, "body", f"{G}/turn1.json", '"MAX_TOKENS"', '"STOP"'),
    ("unknown_tool", B, "body", f"{B}/turn1.json", '"delete_customer_account"', '"get_order"'),
    ("cross_tenant", G, "stream", f"{G}/turn1.sse", '"ORD-2001"', '"ORD-9999"'),
    ("loop_exhaustion", C, "body", f"{C}/turn3.json", '"call_Lc3"', '"call_Lc2"'),
    ("parallel_tool_calls", R, "body", f"{R}/turn1.json", '"call_paR1x"', '"call_paR0x"'),
    ("structured_output_valid", G, "body", f"{G}/turn2.json", '\\"shipped\\"', '\\"delivered\\"'),
    ("structured_output_schema_invalid", A, "body", f"{A}/turn2.json", '\\"state\\"', '\\"status\\"'),
    ("structured_output_contradiction", B, "stream", f"{B}/turn2.jsonl", "delivered", "shipped"),
    ("http_rate_limit", C, "body", "case.yaml", "headers: {retry-after: '2'}", "headers: {x-request-note: none}"),
    ("http_quota", A, "body", "case.yaml", "type: billing_error", "type: rate_limit_error"),
    ("http_overloaded", B, "body", "case.yaml", "ServiceUnavailableException", "AccessDeniedException"),
    ("http_context_too_long", G, "body", "case.yaml", "The input token count", "The request count"),
    ("http_auth", A, "body", "case.yaml", "type: authentication_error", "type: overloaded_error"),
    ("stream_interrupted", B, "stream", f"{B}/turn1.jsonl", "\n", '\n{"messageStop":{"stopReason":"end_turn"}}\n', ),
    ("mid_stream_error", A, "stream", f"{A}/turn1.sse", '"overloaded_error"', '"invalid_request_error"'),
    ("invalid_arguments_schema", R, "body", f"{R}/turn1.json", '\\"1001\\"', '\\"ORD-1001\\"'),
    ("invalid_arguments_not_json", C, "stream", f"{C}/turn1.sse", '\\"ORD-10"', '\\"ORD-1001\\"}"'),
    ("duplicate_call_id", G, "body", f"{G}/turn2.json", '"fc_dug1"', '"fc_dug2"'),
    ("unsupported_item", A, "body", f"{A}/turn1.json", '"type": "hologram"', '"type": "redacted_thinking"'),
    ("empty_response", C, "body", f"{C}/turn1.json", '"content": null', '"content": "Done."'),
    ("content_filter", G, "body", f"{G}/turn1.json", '"SAFETY"', '"STOP"'),
    ("plain_text_refusal", R, "body", f"{R}/turn1.json", '"type": "output_text",\n          "text"',
     '"type": "refusal",\n          "refusal"'),
    ("context_window", B, "body", f"{B}/turn1.json", '"model_context_window_exceeded"', '"max_tokens"'),
    ("pause_turn", A, "body", f"{A}/turn1.json", '"pause_turn"', '"end_turn"'),
    ("continuation", G, "stream", f"{G}/turn1.sse", '"CONTINUATION"', '"MAX_TOKENS"'),
    ("forced_tool_choice", C, "body", f"{C}/turn1.json", '"tool_calls": [', '"tool_calls_": ['),
    ("write_without_approval", R, "body", f"{R}/turn1.json", '"name": "refund_order"', '"name": "get_order"'),
    ("multi_turn_history", B, "body", f"{B}/turn4.json", "was delivered", "has shipped"),
    ("cached_usage", B, "body", f"{B}/turn2.json", '"cacheReadInputTokens": 512', '"cacheReadInputTokens": 0'),
]


def test_every_family_has_a_mutation() -> None:
    families = {case.scenario for case in load_cases([CASES])}
    covered = {case.scenario for case in load_cases([CASES]) if case.id in {row[0] for row in MUTATIONS}}
    assert covered == families


@pytest.mark.parametrize(("case_id", "provider", "mode", "name", "old", "new"), MUTATIONS,
                         ids=[f"{row[0]}-{row[1]}-{row[2]}" for row in MUTATIONS])
def test_breaking_the_key_fact_fails_the_case(tmp_path: Path, case_id: str, provider: str, mode: str, name: str,
                                              old: str, new: str) -> None:
    cases = tmp_path / "cases"
    shutil.copytree(CASES, cases)
    adapter = builtin_adapters()[provider]

    def passes() -> bool:
        case = next(case for case in load_cases([cases]) if case.id == case_id)
        try:
            return bool(run_case(case, provider, adapter, mode)["passed"])
        except InputError:  # the loop asked for a turn the fixture never recorded: the case fails
            return False

    assert passes(), "the case must pass before the mutation"
    target = cases / case_id / name
    text = target.read_text(encoding="utf-8")
    assert old in text, f"mutation target not found in {name}"
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert not passes()
