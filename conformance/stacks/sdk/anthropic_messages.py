"""The reference stack for Messages through the official ``anthropic`` SDK (docs/stacks.md).

It calls ``client.messages.create`` for a body and the ``client.messages.stream(...)`` helper for a stream (its
``get_final_message()``), and maps the typed ``Message`` — ``stop_reason``, ``stop_details``, the content blocks'
``type``, ``text``, ``id``, ``name``, ``input`` — and the SDK's exceptions to the contract's kinds.

Facts it relies on (anthropic 2.x; docs/serve.md): the base URL has no ``/v1``; ``max_retries=0``; an HTTP error
raises an ``APIStatusError`` subclass chosen by (status, error type) with the envelope in ``.body``; an ``error``
event mid-stream raises a plain ``APIStatusError`` with ``status_code == 200``; a stream cut before
``message_stop`` gives a final message whose ``stop_reason`` is None, with no exception.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from conformance.engine.cases import Expectation
from conformance.kit.calls import call_from_object
from conformance.kit.task import Task, TranscriptEntry
from conformance.kit.types import ModelResponse, RetryableError, Unsupported
from conformance.kit.verdict import Content, Refused, resolve
from conformance.providers.anthropic_messages.errors import classify_error
from conformance.providers.anthropic_messages.request import build_request
from conformance.providers.anthropic_messages.response import IGNORED_BLOCKS, STOP_REASONS
from conformance.providers.anthropic_messages.usage import normalize_usage
from conformance.stacks.stack import Endpoint, Stack, client_for, dropped, retry_options
from conformance.stacks.transports import http_client


def _build(endpoint: Endpoint) -> Any:
    import anthropic  # noqa: PLC0415 - the SDK is an optional extra

    return anthropic.Anthropic(base_url=endpoint.base_url, api_key="sk-ant-replay",
                               **retry_options(endpoint, {"max_retries": 0}),
                               http_client=http_client(endpoint.replay, anthropic.DefaultHttpxClient))


def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
    """One Messages call through the anthropic SDK, mapped to one kind."""
    import anthropic  # noqa: PLC0415

    params = build_request(task, transcript)
    client = client_for(endpoint, _build)
    try:
        if endpoint.stream:
            with client.messages.stream(**params) as stream:
                try:
                    message = stream.get_final_message()
                except anthropic.APIStatusError as error:  # an `error` event mid-stream
                    return _with_snapshot(_from_error(error), stream)
            if message.stop_reason is None:  # the helper ends a cut stream quietly
                return RetryableError(raw="stream ended without message_stop", reason="interrupted",
                                      response_id=message.id or None, model=message.model or None,
                                      text=_text(message) or None)
            return _from_message(message)
        return _from_message(client.messages.create(**params))
    except anthropic.APIStatusError as error:
        return _from_error(error)
    except anthropic.APIConnectionError as error:  # the connection lost mid-answer
        return dropped(error) or RetryableError(raw=f"connection error: {error}", reason="interrupted")


def _from_error(error: Any) -> ModelResponse:
    headers = {name.lower(): value for name, value in error.response.headers.items()}
    return classify_error(error.status_code, error.body, headers)


def _with_snapshot(response: ModelResponse, stream: Any) -> ModelResponse:
    """A mid-stream error with the id and model the stream had already given (``message_start``), as the helper's
    ``current_message_snapshot`` keeps them: a careful team keeps them for the vendor's support."""
    try:
        snapshot = stream.current_message_snapshot
    except AssertionError:  # the error came before message_start
        return response
    return dataclasses.replace(response, response_id=snapshot.id or None, model=snapshot.model or None)


def _text(message: Any) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def _from_message(message: Any) -> ModelResponse:
    blocks = [block.model_dump(mode="json", exclude_unset=True) for block in message.content]
    usage = message.usage.model_dump(mode="json", exclude_none=True) if message.usage is not None else None
    common: dict[str, Any] = {"response_id": message.id, "model": message.model, "usage": normalize_usage(usage),
                              "output_items": ({"role": "assistant", "content": blocks},)}
    raw = f"stop_reason={message.stop_reason}"
    verdict = STOP_REASONS.get(message.stop_reason) if isinstance(message.stop_reason, str) else None
    if verdict is None:
        return Unsupported(raw=raw, raw_type=raw, **common)
    if isinstance(verdict, Refused):
        category = getattr(getattr(message, "stop_details", None), "category", None)
        if isinstance(category, str):
            common["provider_details"] = {"category": category}
    content = Content()
    for index, block in enumerate(message.content):
        if block.type == "text":
            content.texts.append(block.text)
        elif block.type == "tool_use":
            content.calls.append(call_from_object(block.id, block.name, block.input))
        elif block.type not in IGNORED_BLOCKS:
            content.mark_unknown(str(block.type), f"content[{index}].type={block.type}")
    return resolve(verdict, raw, content, common, detail="stop_reason tool_use without a tool_use block")


STACK = Stack(
    id="anthropic-sdk", provider="anthropic-messages", call=call, requires=("anthropic",),
    description="anthropic SDK, client.messages.create and client.messages.stream",
    differences={
        ("invalid_arguments_not_json", "stream"): Expectation(
            outcome="invalid_arguments", turns=("tool_calls",),
            why="the SDK's stream helper parses streamed tool input in partial mode (anthropic/lib/streaming/"
                "_messages.py: jiter.from_json(..., partial_mode=True)): the cut-off arguments "
                '{"order_id": "ORD-10 become {}, a call with no arguments, not an invalid tool call'),
    },
)
