"""Token accounting per recorded turn (docs/contract.md, "Usage"): the cached_usage case's bodies, each provider's
usage read into the contract's totals. The expected numbers are worked out by hand from the fixtures' own usage
objects (the vendor's field → the contract's, with the cache counts folded into input where the vendor leaves them
out), so a fixture whose counts change, or an adapter that stops folding them, fails here."""

from __future__ import annotations

import json

import pytest

from conformance.engine.registry import builtin_adapters
from tests.helpers import CASES

ADAPTERS = builtin_adapters()

# (provider, turn): (input_tokens, cached_input_tokens, output_tokens); None: not asserted.
EXPECTED: dict[tuple[str, int], tuple[int, int | None, int]] = {
    # prompt_tokens includes the cached ones on the Chat wire.
    ("openai-chat", 1): (410, 0, 19), ("openai-chat", 2): (500, 384, 18),
    # input_tokens includes input_tokens_details.cached_tokens.
    ("openai-responses", 1): (420, 0, 19), ("openai-responses", 2): (520, 384, 18),
    # Anthropic's input_tokens leaves the cache reads and writes out: 60 + 512 + 0.
    ("anthropic-messages", 1): (600, 0, 50), ("anthropic-messages", 2): (572, 512, 21),
    # Bedrock's inputTokens leaves them out too: 70 + 512 + 0 (totalTokens 600 = 582 + 18).
    ("bedrock-converse", 1): (600, 0, 38), ("bedrock-converse", 2): (582, 512, 18),
    # promptTokenCount includes cachedContentTokenCount; output counts the thoughts: 17 + 40, 18 + 30. Turn 1 names no
    # cache count at all, so its cached count is not asserted.
    ("gemini", 1): (590, None, 57), ("gemini", 2): (680, 448, 48),
}


@pytest.mark.parametrize(("provider", "turn"), sorted(EXPECTED))
def test_each_recorded_turn_of_cached_usage_totals_as_worked_out_by_hand(provider: str, turn: int) -> None:
    body = json.loads((CASES / "cached_usage" / provider / f"turn{turn}.json").read_text(encoding="utf-8"))
    usage = ADAPTERS[provider].classify_body(body).usage
    assert usage is not None
    input_tokens, cached, output = EXPECTED[(provider, turn)]
    assert (usage.input_tokens, usage.output_tokens) == (input_tokens, output)
    if cached is not None:
        assert usage.cached_input_tokens == cached
