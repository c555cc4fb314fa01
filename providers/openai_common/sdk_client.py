"""The ``openai`` SDK client the reference stacks share (docs/stacks.md): one per replay session, retries off."""

from __future__ import annotations

from typing import Any

from conformance.stack import Endpoint
from conformance.transports import http_client

_CLIENTS: dict[str, Any] = {}


def openai_client(endpoint: Endpoint) -> Any:
    """An ``openai.OpenAI`` client for a session: ``/v1`` after its base URL, a fake key, ``max_retries=0``, and in
    process the replay's transport. Kept per session, as production code keeps its client."""
    import openai  # noqa: PLC0415 - the SDK is an optional extra

    client = _CLIENTS.get(endpoint.base_url)
    if client is None:
        client = _CLIENTS[endpoint.base_url] = openai.OpenAI(
            base_url=f"{endpoint.base_url}/v1", api_key="sk-replay", max_retries=0,
            http_client=http_client(endpoint.replay))
    return client
