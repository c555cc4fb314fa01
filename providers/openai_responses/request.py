"""Neutral task + transcript → a stateless Responses request (``store: false``, whole history re-sent)."""

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
    """A Responses request this adapter built → its static prefix, history and echoed call ids."""
    history = request_history(request, "input")
    return RequestParts(
        prefix=request_prefix(request, "input"),
        history=history,
        results=[
            (item.get("call_id"), None)
            for item in history
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ],
    )

