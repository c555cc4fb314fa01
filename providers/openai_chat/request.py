"""Neutral task + transcript → a Chat Completions request: system message, then the growing history."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.adapter import (
    ModelTurn,
    RequestParts,
    Task,
    TranscriptEntry,
    UserMessage,
    request_history,
    request_prefix,
)


def build_request(task: Task, transcript: Sequence[TranscriptEntry]) -> dict[str, Any]:
    """The neutral task and transcript → the Chat Completions wire request body."""
    request: dict[str, Any] = {"model": task.model, "max_completion_tokens": task.max_output_tokens}
    if task.tools:
        request["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                    "strict": True,
                },
            }
            for tool in task.tools
        ]
        request["tool_choice"] = _tool_choice(task)
        request["parallel_tool_calls"] = True
    if task.output_schema is not None:
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": task.output_schema_name, "schema": dict(task.output_schema), "strict": True},
        }
    messages: list[Any] = [{"role": "system", "content": task.instructions}]
    messages.extend(message for entry in transcript for message in _messages(entry))
    request["messages"] = messages
    return request


def _tool_choice(task: Task) -> Any:
    if task.tool_choice == "tool":
        return {"type": "function", "function": {"name": task.tool_name}}
    return task.tool_choice


def _messages(entry: TranscriptEntry) -> list[Any]:
    if isinstance(entry, UserMessage):
        return [{"role": "user", "content": entry.text}]
    if isinstance(entry, ModelTurn):
        return list(entry.response.output_items)
    messages: list[Any] = []
    for result in entry.results:
        content = json.dumps(result.output, sort_keys=True, ensure_ascii=False)
        if result.call.synthesized_id:
            # A legacy function_call has no id: its result is a `function` message matched by name.
            messages.append({"role": "function", "name": result.call.name, "content": content})
        else:
            messages.append({"role": "tool", "tool_call_id": result.call.call_id, "content": content})
    return messages


def read_request(request: Mapping[str, Any]) -> RequestParts:
    """A Chat Completions request this adapter built → its static prefix, history and echoed call ids."""
    messages = request_history(request, "messages")
    # The system message is part of the static prefix: it must never change between turns.
    prefix = request_prefix(request, "messages")
    prefix["system"] = messages[:1]
    history = messages[1:]
    results: list[tuple[str | None, str | None]] = []
    for message in history:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool":
            results.append((message.get("tool_call_id"), None))
        elif message.get("role") == "function":
            results.append((None, message.get("name")))
    return RequestParts(prefix=prefix, history=history, results=results)
