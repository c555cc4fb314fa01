"""Helpers for a team's glue: the suite's transcript handed to the team's own request builder, and the team's own
reading of a response handed back as one of the contract's kinds (docs/glue.md).

The glue a stack needs is two translations, the same for every team: the transcript (``UserMessage``, ``ModelTurn``,
``ToolResults``) into the application's conversation, and the application's own result into a ``ModelResponse``.
``turns`` gives the first as plain entries; ``response`` builds the second from plain values, so the mapping under
test stays the application's own code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.kit.calls import call_from_json_string, call_from_object, classify_calls
from conformance.kit.task import ModelTurn, ToolResults, TranscriptEntry, UserMessage
from conformance.kit.types import (
    Empty,
    FatalError,
    Incomplete,
    ModelResponse,
    Refusal,
    RetryableError,
    Text,
    Unsupported,
    Usage,
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One transcript entry as plain values. ``role``: ``user`` (``text``), ``assistant`` (``sent_back``: what the
    application keeps of the model's answer to send it back, as ``response`` was told; ``response``: the kind), or
    ``tool`` (``call_id``, ``name``, ``content``: the result as compact JSON text, ``is_error``)."""

    role: str
    text: str | None = None
    sent_back: Any = None
    response: ModelResponse | None = None
    call_id: str | None = None
    name: str | None = None
    content: str | None = None
    is_error: bool = False


def turns(transcript: Sequence[TranscriptEntry]) -> list[Turn]:
    """The transcript as plain entries, in order; one ``tool`` entry per tool result, in the order the calls came."""
    out: list[Turn] = []
    for entry in transcript:
        if isinstance(entry, UserMessage):
            out.append(Turn("user", text=entry.text))
        elif isinstance(entry, ModelTurn):
            items = entry.response.output_items
            out.append(Turn("assistant", text=getattr(entry.response, "text", None),
                            sent_back=items[0] if len(items) == 1 else items, response=entry.response))
        elif isinstance(entry, ToolResults):
            out += [Turn("tool", call_id=result.call.call_id, name=result.call.name, is_error=result.is_error,
                         content=json.dumps(result.output, separators=(",", ":"), ensure_ascii=False))
                    for result in entry.results]
    return out


KINDS = ("text", "tool_calls", "refusal", "incomplete", "retryable_error", "fatal_error", "empty")


def response(kind: str, *, raw: str, text: str | None = None,
             calls: Iterable[tuple[str, str, str | Mapping[str, Any]]] = (), reason: str | None = None,
             usage: Usage | None = None, response_id: str | None = None, model: str | None = None,
             sent_back: Any = None, http_status: int | None = None, message: str | None = None,
             retry_after_s: float | None = None) -> ModelResponse:
    """One contract kind from the application's own reading.

    ``kind``: what the application decided (``text``, ``tool_calls``, ``refusal``, ``incomplete``,
    ``retryable_error``, ``fatal_error``, ``empty``); anything else is ``unsupported`` with ``kind`` as its raw type,
    never a guess. ``raw``: the vendor's value the decision came from (``stop_reason=max_tokens``), shown in every
    failure. ``calls``: ``(call_id, name, arguments)`` with the arguments as the JSON text the model sent (or a
    mapping); arguments that are no JSON object make an ``invalid_tool_call``, as in the built-in adapters, and
    ``tool_calls`` with no call is ``unsupported``. ``reason``: an incomplete's (``max_tokens``,
    ``context_window``, ``pause_turn``, ...), an error's (``rate_limit``, ``overloaded``, ``auth``,
    ``invalid_request``, ...: docs/contract.md); a refusal's source (``model`` or ``filter``). ``sent_back``: what
    the application sends back of this answer on the next turn (its assistant message), which ``turns`` hands
    back."""
    common: dict[str, Any] = {"raw": raw, "response_id": response_id, "model": model, "usage": usage,
                              "output_items": () if sent_back is None else (sent_back,)}
    if kind == "text":
        return Text(text=text or "", **common)
    if kind == "tool_calls":
        # As the built-in adapters read calls: arguments that are no JSON object make an ``invalid_tool_call``.
        read = [call_from_json_string(call_id, name, arguments) if isinstance(arguments, str)
                else call_from_object(call_id, name, dict(arguments)) for call_id, name, arguments in calls]
        if not read:
            return Unsupported(raw_type="tool_calls without any call", **common)
        return classify_calls(raw, read, text, {name: value for name, value in common.items() if name != "raw"})
    if kind == "refusal":
        return Refusal(source=reason or "model", text=text, **common)  # type: ignore[arg-type]
    if kind == "incomplete":
        return Incomplete(reason=reason or "max_tokens", text=text, **common)  # type: ignore[arg-type]
    if kind == "retryable_error":
        return RetryableError(reason=reason or "server_error", http_status=http_status, message=message,
                              retry_after_s=retry_after_s, text=text, **common)
    if kind == "fatal_error":
        return FatalError(reason=reason or "invalid_request", http_status=http_status, message=message, **common)
    if kind == "empty":
        return Empty(**common)
    return Unsupported(raw_type=kind, **common)
