"""What the OpenAI APIs (Responses and Chat) share on the wire besides their errors: the headers their clients act
on, and how the openai SDK is pointed at a base URL."""

from __future__ import annotations

# The rate-limit counters (platform.openai.com/docs/guides/rate-limits), kept as the vendor sent them.
KEPT_HEADERS = frozenset({"x-ratelimit-"})

PLACEHOLDER_KEY = "sk-replay"


def client_environment(root: str) -> dict[str, str]:
    """The openai SDK reads ``OPENAI_BASE_URL`` (the API root, ``/v1`` included) and ``OPENAI_API_KEY``."""
    return {"OPENAI_BASE_URL": f"{root}/v1", "OPENAI_API_KEY": PLACEHOLDER_KEY}
