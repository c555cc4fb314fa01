"""Neutral task + transcript → a stateless Responses request (``store: false``, whole history re-sent)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.kit.adapter import (
    RequestParts,
    SentEntry,
    SentPrefix,
    SentResult,
    SentTool,
    merged,
    request_history,
    request_prefix,
    result_pairs,
)
from conformance.kit.task import ModelTurn, Task, ToolChoice, TranscriptEntry, UserMessage
from conformance.kit.values import description_of, int_or_none, list_or_empty, string_or_none, text_of
from conformance.providers.switch import answered_elsewhere, turn_text


def build_request(task: Task, transcript: Sequence[TranscriptEntry]) -> dict[str, Any]:
    """The neutral task and transcript → the Responses wire request body."""
    request: dict[str, Any] = {
        "model": task.model,
        "instructions": task.instructions,
        "tools": [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
                "strict": True,
            }
            for tool in task.tools
        ],
        "tool_choice": _tool_choice(task),
        "parallel_tool_calls": True,
        "max_output_tokens": task.max_output_tokens,
        "store": False,
        # Stateless replay of reasoning items needs their encrypted content back (openai.types.responses.Response;
        # platform.openai.com/docs/api-reference/responses/object).
        "include": ["reasoning.encrypted_content"],
    }
    if task.output_schema is not None:
        request["text"] = {
            "format": {
                "type": "json_schema",
                "name": task.output_schema_name,
                "schema": dict(task.output_schema),
                "strict": True,
            }
        }
    request["input"] = [item for entry in transcript for item in _input_items(entry)]
    return request


def _tool_choice(task: Task) -> Any:
    if task.tool_choice == "tool":
        return {"type": "function", "name": task.tool_name}
    return task.tool_choice


def _input_items(entry: TranscriptEntry) -> list[Any]:
    if isinstance(entry, UserMessage):
        return [{"role": "user", "content": entry.text}]
    if isinstance(entry, ModelTurn):
        if answered_elsewhere(entry, "openai-responses"):  # another API's turn: its text and calls, no reasoning
            text = turn_text(entry)
            return [*([{"role": "assistant", "content": text}] if text else []),
                    *({"type": "function_call", "call_id": call.call_id, "name": call.name,
                       "arguments": call.arguments} for call in entry.response.calls)]
        # Every output item goes back as received, reasoning items included, in order.
        return list(entry.response.output_items)
    return [
        {
            "type": "function_call_output",
            "call_id": result.call.call_id,
            "output": json.dumps(result.output, sort_keys=True, ensure_ascii=False),
        }
        for result in entry.results
    ]


def read_request(request: Mapping[str, Any]) -> RequestParts:
    """A Responses request this adapter built → its static prefix, history, echoed call ids and what it sends."""
    history = request_history(request, "input")
    prefix = request_prefix(request, "input")
    system: list[Any] = []
    if isinstance(request, Mapping) and not isinstance(request.get("instructions"), str) and history and isinstance(
            history[0], dict) and history[0].get("role") in ("system", "developer"):
        # Without `instructions`, a leading system or developer message is the system slot (and part of the prefix).
        system, history = history[:1], history[1:]
        prefix["system"] = system
    return RequestParts(
        prefix=prefix,
        history=history,
        results=result_pairs(read_history(history)),
        sent=_sent(request, system) if isinstance(request, Mapping) else None,
    )


def _sent(request: Mapping[str, Any], system: list[Any]) -> SentPrefix:
    tools = request.get("tools")
    offered = tuple(SentTool(name=tool["name"], parameters=tool.get("parameters"), description=description_of(tool))
                    for tool in list_or_empty(tools) if isinstance(tool, dict) and isinstance(tool.get("name"), str))
    choice, forced = _read_choice(request.get("tool_choice", "auto"))
    text = request.get("text")
    form = text.get("format") if isinstance(text, dict) else None
    return SentPrefix(
        instructions=string_or_none(request.get("instructions")) if not system else text_of(system[0].get("content")),
        tools=offered,
        tool_choice=choice,
        forced_tool=forced,
        output_schema=form.get("schema") if isinstance(form, dict) and form.get("type") == "json_schema" else None,
        max_output_tokens=int_or_none(request.get("max_output_tokens")),
    )


def _read_choice(choice: Any) -> tuple[ToolChoice | None, str | None]:
    # openai.types.responses.response_create_params.ToolChoice: a mode string, or {"type": "function", "name": ...}.
    if isinstance(choice, dict) and choice.get("type") == "function":
        return "tool", string_or_none(choice.get("name"))
    return (choice, None) if choice in ("auto", "none", "required") else (None, None)


def read_history(items: Sequence[Any]) -> list[SentEntry]:
    """Input or output items → neutral entries: user messages, model output items (a reasoning item's
    ``encrypted_content`` is its signature), and ``function_call_output`` items as results."""
    return merged(_entry(item) for item in items)


def _entry(item: Any) -> SentEntry:
    if not isinstance(item, dict):
        return SentEntry(role="not an item")
    kind, role = item.get("type", "message"), item.get("role")
    if kind == "function_call_output":
        return SentEntry(role="results", results=(SentResult(call_id=string_or_none(item.get("call_id"))),))
    if kind == "message" and role in ("user", "system", "developer"):
        text = text_of(item.get("content"))
        return SentEntry(role="user", text=text) if role == "user" else SentEntry(role=f"{role} message", text=text)
    signature = item.get("encrypted_content") if kind == "reasoning" else None
    return SentEntry(role="model", signatures=(signature,) if isinstance(signature, str) else ())
