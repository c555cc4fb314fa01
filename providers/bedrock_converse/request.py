"""Neutral task + transcript → a Converse request body (camelCase; the model id travels in the URL, not here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.adapter import (
    ModelTurn,
    RequestParts,
    Task,
    ToolResults,
    TranscriptEntry,
    UserMessage,
    request_history,
    request_prefix,
)
from conformance.calls import compact_json

# Task.tool_choice → the member of Converse `toolChoice` (service model `ToolChoice`: auto | any | tool).
# Converse has no `none` choice (botocore bedrock-runtime ToolChoice): `toolChoice` is left out, which means "auto", and
# `toolConfig` stays: Bedrock is said to want it whenever the history holds tool blocks (unverified, §11).
TOOL_CHOICES: dict[str, str | None] = {
    "auto": "auto",
    "required": "any",
    "none": None,
}


def build_request(task: Task, transcript: Sequence[TranscriptEntry]) -> dict[str, Any]:
    """The neutral task and transcript → the Bedrock Converse wire request body."""
    request: dict[str, Any] = {"system": [{"text": task.instructions}]}
    if task.tools:
        request["toolConfig"] = _tool_config(task)
    request["inferenceConfig"] = {"maxTokens": task.max_output_tokens}
    if task.output_schema is not None:
        request["outputConfig"] = {
            "textFormat": {
                "type": "json_schema",
                # `schema` is a JSON string, not an object (service model `JsonSchemaDefinition`).
                "structure": {
                    "jsonSchema": {"schema": compact_json(task.output_schema), "name": task.output_schema_name}
                },
            }
        }
    request["messages"] = [message for entry in transcript for message in _messages(entry)]
    return request


def _tool_config(task: Task) -> dict[str, Any]:
    config: dict[str, Any] = {"tools": [{"toolSpec": _tool_spec(tool.name, tool.description, tool.parameters)}
                                        for tool in task.tools]}
    choice = _tool_choice(task)
    if choice is not None:
        config["toolChoice"] = choice
    return config


def _tool_spec(name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name}
    # `description` is a NonEmptyString in the service model: an empty one is a ValidationException.
    if description:
        spec["description"] = description
    spec["inputSchema"] = {"json": dict(parameters)}
    return spec


def _tool_choice(task: Task) -> dict[str, Any] | None:
    if task.tool_choice == "tool":
        return {"tool": {"name": task.tool_name}}
    if task.tool_choice not in TOOL_CHOICES:
        raise ValueError(
            f"tool_choice {task.tool_choice!r} is not one of auto, none, required, tool; fix the case's task"
        )
    member = TOOL_CHOICES[task.tool_choice]
    return {member: {}} if member is not None else None


def _messages(entry: TranscriptEntry) -> list[Any]:
    if isinstance(entry, UserMessage):
        return [{"role": "user", "content": [{"text": entry.text}]}]
    if isinstance(entry, ModelTurn):
        # The assistant message goes back as received, reasoningContent (with its signature) included.
        return list(entry.response.output_items)
    return [_tool_results(entry)]


def _tool_results(entry: ToolResults) -> dict[str, Any]:
    # All results of one turn share one user message, one toolResult block per call.
    return {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": result.call.call_id,
                    "content": [{"json": dict(result.output)}],
                    "status": "error" if result.is_error else "success",
                }
            }
            for result in entry.results
        ],
    }


def read_request(request: Mapping[str, Any]) -> RequestParts:
    """A Bedrock Converse request this adapter built → its static prefix, history and echoed call ids."""
    history = request_history(request, "messages")
    return RequestParts(
        prefix=request_prefix(request, "messages"),
        history=history,
        results=[(block["toolResult"].get("toolUseId"), None) for block in _user_blocks(history)
                 if isinstance(block.get("toolResult"), Mapping)],
    )


def _user_blocks(history: Sequence[Any]) -> list[Mapping[str, Any]]:
    # Only user messages carry our results; a replayed assistant message may hold the toolResult of a
    # server-executed tool (`type: server_tool_use`), which answers no client call.
    return [
        block
        for message in history
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict)
    ]
