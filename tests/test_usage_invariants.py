"""Usage invariants on every recorded success turn of every bundled case, for every provider.

After normalization: input + output == total wherever the vendor reports a total; cached ≤ input;
reasoning ≤ output; the vendor's raw usage object is kept beside the normalized one.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.classify import classify_response
from conformance.engine.registry import builtin_adapters
from tests.helpers import CASES

ADAPTERS = builtin_adapters()
# Providers whose API reports no total: the adapter computes it, so the sum check would prove nothing.
COMPUTED_TOTAL = {"anthropic-messages"}


def _turns() -> list[Any]:
    params = []
    for case in load_cases([CASES]):
        for provider, fixtures in sorted(case.providers.items()):
            for index, turn in enumerate(fixtures.turns, start=1):
                if turn.status < 400 and turn.has_body and provider in ADAPTERS:
                    params.append(pytest.param(provider, turn, id=f"{case.id}-{provider}-turn{index}"))
    return params


@pytest.mark.parametrize(("provider", "turn"), _turns())
def test_normalized_usage_is_consistent(provider: str, turn: Any) -> None:
    usage = classify_response(ADAPTERS[provider], turn.status, turn.headers, turn.body).usage
    assert usage is not None, "a success body without usage"
    assert usage.raw is not None
    assert usage.input_tokens is not None
    if usage.total_tokens is not None and provider not in COMPUTED_TOTAL:
        # A vendor that reports no output count (e.g. a blocked prompt) leaves it null, not 0.
        assert usage.input_tokens + (usage.output_tokens or 0) == usage.total_tokens
    if usage.cached_input_tokens is not None:
        assert usage.cached_input_tokens <= usage.input_tokens
    if usage.reasoning_tokens is not None:
        assert usage.output_tokens is not None and usage.reasoning_tokens <= usage.output_tokens


def test_every_provider_reports_in_at_least_one_case() -> None:
    providers = {param.values[0] for param in _turns()}
    assert providers == set(ADAPTERS)
