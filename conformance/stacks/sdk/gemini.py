"""The reference stack for the Gemini API through ``google-genai`` (docs/stacks.md).

It calls ``client.models.generate_content`` (or ``generate_content_stream``) with the request's contents and a
``GenerateContentConfig``, and reads the SDK's parsed ``GenerateContentResponse`` back in the REST shape
(``model_dump(mode="json", by_alias=True, exclude_none=True)``): exactly what the SDK kept of the wire, no more —
an unknown field it drops is gone here too — then applies the vendor facts of the raw adapter. Errors are the
SDK's ``APIError`` (``.code`` is the HTTP status, ``.details`` the JSON body); an error frame mid-stream raises
``ServerError`` during iteration and is read as the error event it was.

Facts it relies on (google-genai 3.x; docs/serve.md): ``HttpOptions(base_url=..., api_version="v1beta")``; no
retries unless configured; ``automatic_continuation`` is on by default and sends a request of its own after a
``CONTINUATION`` finish, so it is turned off; the client closes its HTTP client when collected, so it is kept.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from conformance.engine.cases import Expectation
from conformance.kit.task import Task, TranscriptEntry
from conformance.kit.types import ModelResponse
from conformance.providers.gemini.errors import classify_error
from conformance.providers.gemini.request import build_request
from conformance.providers.gemini.response import classify_body
from conformance.providers.gemini.stream import assemble_stream
from conformance.stacks.stack import Endpoint, Stack, client_for, dropped
from conformance.stacks.transports import genai_tls, http_client


def _build(endpoint: Endpoint) -> Any:
    from google import genai  # noqa: PLC0415 - the SDK is an optional extra
    from google.genai import types  # noqa: PLC0415

    # The shared TLS context, instead of three contexts each reading the CA bundle (conformance.stacks.transports).
    tls = genai_tls()
    options = types.HttpOptions(base_url=endpoint.base_url, api_version="v1beta",
                                httpx_client=http_client(endpoint.replay), client_args=tls["client_args"],
                                async_client_args=tls["async_client_args"])
    return genai.Client(api_key="replay", http_options=options)


def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
    """One generateContent (or streamGenerateContent) call through google-genai, mapped to one kind."""
    from google.genai import errors, types  # noqa: PLC0415

    request = build_request(task, transcript)
    config = types.GenerateContentConfig.model_validate({
        **request.get("generationConfig", {}), "systemInstruction": request.get("systemInstruction"),
        "tools": request.get("tools"), "toolConfig": request.get("toolConfig"), "automaticContinuation": False})
    client = client_for(endpoint, _build)
    if endpoint.stream:
        try:
            return _from_stream(client.models.generate_content_stream(model=task.model, contents=request["contents"],
                                                                      config=config))
        except Exception as error:  # only a connection lost mid-answer is read; the rest goes on
            if (lost := dropped(error)) is None:
                raise
            return lost
    try:
        response = client.models.generate_content(model=task.model, contents=request["contents"], config=config)
    except errors.APIError as error:
        return classify_error(error.code, error.details, _headers(error))
    return classify_body(_rest(response))


def _rest(response: Any) -> Any:
    """The SDK's parsed response in the REST shape (camelCase keys, bytes as base64), without SDK-only fields."""
    data = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("sdkHttpResponse", None)
    data.pop("automaticFunctionCallingHistory", None)
    return data


def _headers(error: Any) -> dict[str, str]:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or {}
    return {str(name).lower(): str(value) for name, value in dict(headers).items()}


def _from_stream(chunks: Any) -> ModelResponse:
    """Each chunk the SDK yields, as the SSE event it was; an error the SDK raises mid-stream, as its error event."""
    from google.genai import errors  # noqa: PLC0415

    events: list[bytes] = []
    try:
        for chunk in chunks:
            events.append(b"data: " + json.dumps(_rest(chunk)).encode("utf-8") + b"\n\n")
    except errors.APIError as error:
        if not events:  # the HTTP status said it before any event: an HTTP error
            return classify_error(error.code, error.details, _headers(error))
        events.append(b"data: " + json.dumps(error.details).encode("utf-8") + b"\n\n")
    return assemble_stream(events).response


# google-genai removes every field its models do not declare before validating a response
# (google/genai/_common.py, _remove_extra_fields): a part of a type it does not know arrives as an empty part.
_DROPPED_PART = ("the SDK removes response fields its models do not declare (google/genai/_common.py, "
                 "_remove_extra_fields): the unknown `hologram` part arrives empty, so the turn reads as text and "
                 "business code never learns the model sent something it cannot handle")

STACK = Stack(
    id="google-genai", provider="gemini", call=call, requires=("google.genai",),
    description="google-genai, client.models.generate_content and generate_content_stream",
    differences={("unsupported_item", mode): Expectation(outcome="unverified_answer", turns=("text",),
                                                         why=_DROPPED_PART) for mode in ("body", "stream")},
)
