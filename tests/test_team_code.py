"""The team's own code under test: what its failures say, how its rows are waived, how its loop is driven
(docs/adapters.md, docs/stacks.md)."""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import run_case
from conformance.kit.types import Text
from tests.helpers import CASES

ADAPTERS = builtin_adapters()
CASE = {case.id: case for case in load_cases([CASES])}


def test_a_wrong_outcome_names_the_vendors_value_that_explains_it() -> None:
    """Planted bug A of docs/journey: Anthropic ``max_tokens`` taken as a final answer."""
    anthropic = ADAPTERS["anthropic-messages"]

    def max_tokens_is_an_answer(body: Any) -> Any:
        read = anthropic.classify_body(body)
        return Text(raw=read.raw, text="Returns are accepted within 30 days", response_id=read.response_id,
                    model=read.model, usage=read.usage)

    team = dataclasses.replace(anthropic, classify_body=max_tokens_is_an_answer)
    row = run_case(CASE["truncation"], "anthropic-messages", team, "body")
    assert row["failures"][0] == (
        "outcome: expected incomplete, got unverified_answer — nothing to verify the answer against (no receipts, "
        "no expected answer); turn 1, read as text, had stop_reason=max_tokens")
