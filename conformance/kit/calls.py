"""Building candidate tool calls from vendor fields, and deciding whether one can run as sent."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.kit.jsontext import parse_json
from conformance.kit.types import InvalidToolCall, ModelResponse, ToolCall, ToolCalls


def call_from_json_string(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A call whose vendor sends the arguments as a JSON string."""
    text = arguments if isinstance(arguments, str) else ""
    parsed: Any = None
    try:
        parsed = parse_json(text)
    except ValueError:
        parsed = None
    return ToolCall(
        call_id=call_id if isinstance(call_id, str) else "",
        name=name if isinstance(name, str) else "",
        arguments=text,
        parsed_arguments=parsed if isinstance(parsed, dict) else None,
    )


def call_from_object(call_id: Any, name: Any, arguments: Any, *, synthesized_id: bool = False) -> ToolCall:
    """A call whose vendor sends the arguments as a parsed object; they are serialized canonically."""
    spelled = compact_json(arguments)
    return ToolCall(
        call_id=call_id if isinstance(call_id, str) else "",
        name=name if isinstance(name, str) else "",
        arguments=spelled,
        parsed_arguments=arguments if isinstance(arguments, dict) and spelled.startswith("{") else None,
        synthesized_id=synthesized_id,
    )


def compact_json(value: Any) -> str:
    """One canonical spelling of a JSON value, so object-valued arguments compare across modes.

    A value JSON cannot spell (nested past the recursion limit, keys of mixed types) is spelled by ``repr``:
    the call then has no parsed arguments and is reported as not runnable, never raised."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return repr(value)[:1000]


def invalid_call_detail(call: ToolCall) -> str | None:
    """Why a call cannot be executed as sent, or None when it can."""
    if not call.call_id:
        return "a tool call has no id"
    if not call.name:
        return f"tool call {call.call_id} has no name"
    if call.parsed_arguments is None:
        return f"tool call {call.call_id} ({call.name}): arguments are not a JSON object: {call.arguments[:80]!r}"
    return None


def classify_calls(raw: str, calls: Sequence[ToolCall], text: str | None, common: Mapping[str, Any]) -> ModelResponse:
    """``tool_calls`` when every call can run as sent; otherwise ``invalid_tool_call`` naming the first that cannot."""
    for call in calls:
        detail = invalid_call_detail(call)
        if detail:
            return InvalidToolCall(raw=raw, detail=detail, tool_calls=tuple(calls), **common)
    return ToolCalls(raw=raw, tool_calls=tuple(calls), text=text, **common)
