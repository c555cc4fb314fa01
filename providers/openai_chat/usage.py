"""Chat ``usage`` → normalized usage: prompt tokens include cached ones; output includes reasoning (see below)."""

from __future__ import annotations

from typing import Any

from conformance.kit.types import Usage
from conformance.kit.usage import add, count


def normalize_usage(raw: Any) -> Usage | None:
    """The Chat Completions usage object → normalized usage (None when there is none).

    Compatible servers report cache counts in their own places (docs/contract.md, "Usage"): OpenAI's
    ``prompt_tokens_details.cached_tokens`` first, then Anthropic-style ``cache_read_input_tokens`` /
    ``cache_creation_input_tokens`` beside the Chat counts (Databricks, Vercel AI Gateway), then Together's
    top-level ``cached_tokens``.
    """
    if not isinstance(raw, dict):
        return None
    prompt = count(raw, "prompt_tokens")
    completion = count(raw, "completion_tokens")
    reasoning = count(raw, "completion_tokens_details", "reasoning_tokens")
    total = count(raw, "total_tokens")
    cached = _first(count(raw, "prompt_tokens_details", "cached_tokens"), count(raw, "cache_read_input_tokens"),
                    count(raw, "cached_tokens"))
    cache_write = _first(count(raw, "prompt_tokens_details", "cache_write_tokens"),
                         count(raw, "cache_creation_input_tokens"))
    return Usage(
        input_tokens=input_tokens(raw, prompt, completion, total),
        cached_input_tokens=cached,
        cache_write_tokens=cache_write,
        output_tokens=output_tokens(prompt, completion, reasoning, total),
        reasoning_tokens=reasoning,
        total_tokens=total,
        raw=raw,
    )


def input_tokens(raw: dict[str, Any], prompt: int | None, completion: int | None, total: int | None) -> int | None:
    """All prompt tokens, cache reads and writes included.

    ``prompt_tokens`` includes cached tokens on the Chat wire. A server that reports Anthropic-style cache counts
    beside it may count them outside ``prompt_tokens``, as Anthropic does; only when the counts prove that
    (``total = prompt + cache reads + cache writes + completion``, with some cache count > 0) are they added.
    """
    anthropic_cache = add(count(raw, "cache_read_input_tokens"), count(raw, "cache_creation_input_tokens"))
    if prompt is None or not anthropic_cache or completion is None or total is None:
        return prompt
    if total == prompt + anthropic_cache + completion:
        return prompt + anthropic_cache
    return prompt


def _first(*values: int | None) -> int | None:
    return next((value for value in values if value is not None), None)


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

