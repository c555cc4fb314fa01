"""The reference stack for Chat Completions through the official ``openai`` SDK (docs/stacks.md).

What a careful team's production adapter does: build the call's parameters, call ``client.chat.completions.create``
(``stream=True`` for a stream, read to its end), and map the SDK's typed objects — ``ChatCompletion``, the streamed
``ChatCompletionChunk`` deltas, and its exception classes — to the contract's kinds. It reads typed fields only, never
the raw JSON: what the SDK drops is dropped here too, which is what the stack lane is for.

Facts it relies on (openai 3.x; ../docs/serve.md): the base URL carries ``/v1``; ``max_retries=0`` so a retry
cannot consume a turn; an HTTP error raises an ``APIStatusError`` subclass chosen by status only, with ``.code``,
``.type`` and ``.message`` of the error object; an ``{"error": ...}`` chunk mid-stream raises ``APIError`` with no
status; a stream cut before its finish reason just ends, so the stack checks for the finish reason itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.kit.calls import call_from_json_string
from conformance.kit.task import Task, TranscriptEntry
from conformance.kit.types import ModelResponse, RetryableError, Unsupported
from conformance.kit.verdict import Content, resolve
from conformance.providers.openai_chat.request import build_request
from conformance.providers.openai_chat.response import FINISH_REASONS
from conformance.providers.openai_chat.usage import normalize_usage
from conformance.providers.openai_common.errors import classify_error
from conformance.stacks.sdk.openai_client import openai_client
from conformance.stacks.stack import Endpoint, Stack


def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
    """One Chat Completions call through the openai SDK, mapped to one kind."""
    import openai  # noqa: PLC0415

    params = build_request(task, transcript)
    client = openai_client(endpoint)
    try:
        if endpoint.stream:
            return _from_stream(client.chat.completions.create(**params, stream=True,
                                                               stream_options={"include_usage": True}))
        return _from_message(_Turn.of_completion(client.chat.completions.create(**params)))
    except openai.APIStatusError as error:
        # `.message` is "Error code: 429 - …" and its tail changed between SDK releases (3.30 spelled the whole
        # error object there, 3.57 its message): the vendor's message is the error object's own.
        message = error.body.get("message") if isinstance(error.body, dict) else error.message
        envelope = {"error": {"message": message, "type": error.type, "code": error.code, "param": error.param}}
        return classify_error(error.status_code, envelope, {k.lower(): v for k, v in error.response.headers.items()})


class _Turn:
    """The typed fields a mapping reads, gathered from a whole completion or from a stream's deltas."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.model: str | None = None
        self.usage: Any = None
        self.finish: str | None = None
        self.text: str | None = None
        self.refusal: str | None = None
        self.calls: list[dict[str, Any]] = []  # {"id", "type", "name", "arguments"}
        self.choices = False

    @classmethod
    def of_completion(cls, completion: Any) -> _Turn:
        turn = cls()
        turn.id, turn.model, turn.usage = completion.id, completion.model, completion.usage
        if completion.choices:
            turn.choices = True
            choice = completion.choices[0]
            turn.finish, message = choice.finish_reason, choice.message
            turn.text, turn.refusal = message.content, message.refusal
            for tool_call in message.tool_calls or []:
                function = getattr(tool_call, "function", None)
                turn.calls.append({"id": tool_call.id, "type": tool_call.type,
                                   "name": getattr(function, "name", None),
                                   "arguments": getattr(function, "arguments", None)})
        return turn


def _from_stream(stream: Any) -> ModelResponse:
    import openai  # noqa: PLC0415

    turn, texts, refusals = _Turn(), list[str](), list[str]()
    try:
        _read_chunks(stream, turn, texts, refusals)
    except openai.APIStatusError:
        raise
    except openai.APIError as error:  # an error chunk: keep the id and model the stream had already given
        return RetryableError(raw=f"stream error={getattr(error, 'type', None) or 'unknown'}", reason="server_error",
                              message=error.message, response_id=turn.id, model=turn.model)
    turn.text = "".join(texts) if any(texts) else None
    turn.refusal = "".join(refusals) or None
    if turn.finish is None:  # the SDK ends a cut stream quietly: no finish reason is not an answer
        return RetryableError(raw="stream ended without a finish reason", reason="interrupted",
                              response_id=turn.id, model=turn.model, usage=None, text="".join(texts) or None)
    return _from_message(turn)


def _read_chunks(stream: Any, turn: _Turn, texts: list[str], refusals: list[str]) -> None:
    for chunk in stream:
        turn.id, turn.model = turn.id or chunk.id, turn.model or chunk.model
        if chunk.usage is not None:
            turn.usage = chunk.usage
        for choice in chunk.choices[:1]:
            turn.choices = True
            delta = choice.delta
            texts.append(delta.content or "")
            refusals.append(delta.refusal or "")
            for fragment in delta.tool_calls or []:
                while len(turn.calls) <= fragment.index:
                    turn.calls.append({"id": None, "type": "function", "name": None, "arguments": ""})
                entry = turn.calls[fragment.index]
                entry["id"] = entry["id"] or fragment.id
                entry["type"] = fragment.type or entry["type"]  # the SDK keeps a type it does not know
                if fragment.function is not None:
                    entry["name"] = entry["name"] or fragment.function.name
                    entry["arguments"] += fragment.function.arguments or ""
            turn.finish = choice.finish_reason or turn.finish


def _from_message(turn: _Turn) -> ModelResponse:
    common: dict[str, Any] = {"response_id": turn.id, "model": turn.model, "usage": _usage(turn.usage)}
    if not turn.choices:
        return Unsupported(raw="choices", raw_type="a completion without choices[0]", **common)
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.refusal:
        message["refusal"] = turn.refusal
    if turn.calls:
        message["tool_calls"] = [{"id": call["id"], "type": call["type"],
                                  "function": {"name": call["name"], "arguments": call["arguments"]}}
                                 for call in turn.calls]
    common["output_items"] = (message,)
    raw = f"finish_reason={turn.finish}"
    verdict = FINISH_REASONS.get(turn.finish) if turn.finish else None
    if verdict is None:
        return Unsupported(raw=raw, raw_type=raw, **common)
    content = Content()
    if turn.text is not None:
        content.texts.append(turn.text)
    if turn.refusal:
        content.mark_refusal(turn.refusal, "message.refusal")
    for index, entry in enumerate(turn.calls):
        if entry["type"] != "function":
            content.mark_unknown(f"tool call type {entry['type']}", f"tool_calls[{index}].type={entry['type']}")
            break
        content.calls.append(call_from_json_string(entry["id"], entry["name"], entry["arguments"]))
    return resolve(verdict, raw, content, common)


def _usage(usage: Any) -> Any:
    if usage is None:
        return None
    return normalize_usage(usage.model_dump(mode="json", exclude_none=True))


STACK = Stack(id="openai-sdk", provider="openai-chat", call=call, requires=("openai",),
              description="openai SDK, client.chat.completions.create (body and stream)")
