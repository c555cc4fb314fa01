"""The reference stack for the Responses API through the official ``openai`` SDK (docs/stacks.md).

It calls ``client.responses.create`` (``stream=True`` for a stream, read to its end) and reads the SDK's parsed
``Response`` — and each streamed event — back in the wire shape (``model_dump(mode="json", exclude_unset=True)``):
what the SDK parsed, no more; then applies the vendor facts of the raw adapter. The stream is where the SDK
matters: it yields ``error`` and ``response.failed`` events instead of raising, and a stream cut before
``response.completed`` simply ends, so the stack reads the terminal event itself.

Facts it relies on (openai 3.x; docs/serve.md): the base URL carries ``/v1``; ``max_retries=0``; an HTTP error
raises an ``APIStatusError`` subclass chosen by status only, ``.body`` being the inner error object.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from conformance.kit.task import Task, TranscriptEntry
from conformance.kit.types import ModelResponse, RetryableError
from conformance.providers.openai_common.errors import classify_error
from conformance.providers.openai_responses.request import build_request
from conformance.providers.openai_responses.response import classify_body
from conformance.providers.openai_responses.stream import assemble_stream
from conformance.stacks.sdk.openai_client import openai_client
from conformance.stacks.stack import Endpoint, Stack, dropped


def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
    """One Responses call through the openai SDK, mapped to one kind."""
    import openai  # noqa: PLC0415

    params = build_request(task, transcript)
    client = openai_client(endpoint)
    try:
        if endpoint.stream:
            events = [b"event: " + event.type.encode("utf-8") + b"\ndata: " + json.dumps(_wire(event)).encode("utf-8")
                      + b"\n\n" for event in client.responses.create(**params, stream=True)]
            return assemble_stream(events).response
        return classify_body(_wire(client.responses.create(**params)))
    except openai.APIStatusError as error:
        body = {"error": error.body} if isinstance(error.body, dict) else error.body
        return classify_error(error.status_code, body, {k.lower(): v for k, v in error.response.headers.items()})
    except openai.APIConnectionError as error:  # the connection lost mid-answer
        return dropped(error) or RetryableError(raw=f"connection error: {error}", reason="interrupted")


def _wire(parsed: Any) -> Any:
    # An item type the SDK does not know is kept with its fields, in a model it does not fit: pydantic would warn
    # on every dump of it, so the warnings are off.
    return parsed.model_dump(mode="json", exclude_unset=True, warnings=False)


STACK = Stack(id="openai-sdk", provider="openai-responses", call=call, requires=("openai",),
              description="openai SDK, client.responses.create (body and stream)")
