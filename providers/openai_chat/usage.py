"""Chat ``usage`` → normalized usage: prompt tokens include cached ones; output includes reasoning (see below)."""

from __future__ import annotations

from typing import Any

from conformance.types import Usage
from conformance.usage import count


def normalize_usage(raw: Any) -> Usage | None:
    """The Chat Completions usage object → normalized usage (None when there is none)."""
    if not isinstance(raw, dict):
        return None
    prompt = count(raw, "prompt_tokens")
    completion = count(raw, "completion_tokens")
    reasoning = count(raw, "completion_tokens_details", "reasoning_tokens")
    total = count(raw, "total_tokens")
    return Usage(
        input_tokens=prompt,
        cached_input_tokens=count(raw, "prompt_tokens_details", "cached_tokens"),
        cache_write_tokens=count(raw, "prompt_tokens_details", "cache_write_tokens"),
        output_tokens=output_tokens(prompt, completion, reasoning, total),
        reasoning_tokens=reasoning,
        total_tokens=total,
        raw=raw,
    )


def output_tokens(prompt: int | None, completion: int | None, reasoning: int | None, total: int | None) -> int | None:
    """Generated tokens, reasoning included.

    OpenAI counts reasoning inside ``completion_tokens``. Some compatible servers (xAI) report it beside them:
    ``total = prompt + completion + reasoning``. Only when the counts prove that (reasoning > 0) is reasoning
    added; otherwise ``completion_tokens`` is taken as it is (docs/contract.md, "Usage").
    """
    if completion is None or not reasoning or prompt is None or total is None:
        return completion
    if total == prompt + completion + reasoning:
        return completion + reasoning
    return completion
