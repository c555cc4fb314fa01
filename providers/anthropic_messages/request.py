"""Neutral task + transcript → a Messages request: top-level system, tools, and alternating messages."""

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
    """The neutral task and transcript → the Anthropic Messages wire request body."""
    request: dict[str, Any] = {
        "model": task.model,
        "max_tokens": task.max_output_tokens,
        "system": task.instructions,
    }
    if task.tools:
        request["tools"] = [
            {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}
            for tool in task.tools
        ]
        request["tool_choice"] = _tool_choice(task)
    if task.output_schema is not None:
        request["output_config"] = {"format": {"type": "json_schema", "schema": dict(task.output_schema)}}
    request["messages"] = [message for entry in transcript for message in _messages(entry)]
    return request


def _tool_choice(task: Task) -> dict[str, Any]:
    if task.tool_choice == "tool":
        return {"type": "tool", "name": task.tool_name}
    return {"type": {"auto": "auto", "required": "any", "none": "none"}[task.tool_choice]}


def _messages(entry: TranscriptEntry) -> list[Any]:
    if isinstance(entry, UserMessage):
        return [{"role": "user", "content": entry.text}]
    if isinstance(entry, ModelTurn):
        # The assistant content goes back as received: thinking blocks keep their signatures.
        return list(entry.response.output_items)
    blocks = []
    for result in entry.results:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": result.call.call_id,
            "content": json.dumps(result.output, sort_keys=True, ensure_ascii=False),
        }
        if result.is_error:
            block["is_error"] = True
        blocks.append(block)
    # All results answering one assistant turn travel in a single user message.
    return [{"role": "user", "content": blocks}]


def read_request(request: Mapping[str, Any]) -> RequestParts:
    """A Anthropic Messages request this adapter built → its static prefix, history and echoed call ids."""
    history = request_history(request, "messages")
    results: list[tuple[str | None, str | None]] = []
    for message in history:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        results.extend(
            (block.get("tool_use_id"), None)
            for block in content
            if isinstance(block, dict) and block.get("type") == "tool_result"
        )
    return RequestParts(
        prefix=request_prefix(request, "messages"),
        history=history,
        results=results,
    )
