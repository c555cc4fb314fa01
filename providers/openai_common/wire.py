"""What the OpenAI APIs (Responses and Chat) share on the wire besides their errors: the headers their clients act
on, how the openai SDK is pointed at a base URL, and a cost the usage object reports."""

from __future__ import annotations

import math
from typing import Any

from conformance.kit.usage import NO_BILLING, Billing

# The rate-limit counters (platform.openai.com/docs/guides/rate-limits), kept as the vendor sent them.
KEPT_HEADERS = frozenset({"x-ratelimit-"})

PLACEHOLDER_KEY = "sk-replay"


def client_environment(root: str) -> dict[str, str]:
    """The openai SDK reads ``OPENAI_BASE_URL`` (the API root, ``/v1`` included) and ``OPENAI_API_KEY``."""
    return {"OPENAI_BASE_URL": f"{root}/v1", "OPENAI_API_KEY": PLACEHOLDER_KEY}


def billing(raw: Any) -> Billing:
    """A cost the usage object reports itself (``Wire.billing``, docs/cost.md): OpenRouter's ``usage.cost``, in USD
    (openrouter.ai/docs/use-cases/usage-accounting), on the Chat and Responses wires of any server that sends it."""
    cost = raw.get("cost") if isinstance(raw, dict) else None
    if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0:
        return Billing(reported_cost=float(cost))
    return NO_BILLING
