"""The ``openai`` SDK client the reference stacks share (docs/stacks.md): one per replay session, retries off."""

from __future__ import annotations

from typing import Any

from conformance.stacks.stack import Endpoint, client_for, retry_options
from conformance.stacks.transports import http_client


def _build(endpoint: Endpoint) -> Any:
    import openai  # noqa: PLC0415 - the SDK is an optional extra

    return openai.OpenAI(base_url=f"{endpoint.base_url}/v1", api_key="sk-replay",
                         **retry_options(endpoint, {"max_retries": 0}),
                         http_client=http_client(endpoint.replay, openai.DefaultHttpxClient))


def openai_client(endpoint: Endpoint) -> Any:
    """An ``openai.OpenAI`` client for a session: ``/v1`` after its base URL, a fake key, ``max_retries=0``, in
    process the replay's transport, over loopback the SDK's own HTTP client with the shared TLS context. Kept per
    session, as production code keeps its client."""
    return client_for(endpoint, _build)
