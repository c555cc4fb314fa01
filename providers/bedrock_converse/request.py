"""Neutral task + transcript → a Converse request body (camelCase; the model id travels in the URL, not here)."""

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
from conformance.kit.calls import compact_json
from conformance.kit.task import (
    ModelTurn,
    Task,
    ToolChoice,
    ToolResults,
    TranscriptEntry,
    UserMessage,
)
from conformance.kit.values import description_of, int_or_none, list_or_empty, string_or_none, text_of
from conformance.providers.switch import answered_elsewhere, turn_text

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
    if isinstance(entry, ModelTurn) and answered_elsewhere(entry, "bedrock-converse"):
        text = turn_text(entry)  # another API's turn: its text and calls, no reasoningContent
        return [{"role": "assistant", "content": [
            *([{"text": text}] if text else []),
            *({"toolUse": {"toolUseId": call.call_id, "name": call.name, "input": dict(call.parsed_arguments or {})}}
              for call in entry.response.calls)]}]
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
    """A Bedrock Converse request this adapter built → its static prefix, history, echoed call ids and what it
    sends."""
    history = request_history(request, "messages")
    return RequestParts(
        prefix=request_prefix(request, "messages", per_turn=(("toolConfig", "toolChoice"),)),
        history=history,
        results=result_pairs(read_history(history)),
        sent=_sent(request) if isinstance(request, Mapping) else None,
    )


def _sent(request: Mapping[str, Any]) -> SentPrefix:
    config = request.get("toolConfig")
    config = config if isinstance(config, dict) else {}
    specs = [tool["toolSpec"] for tool in list_or_empty(config.get("tools"))
             if isinstance(tool, dict) and isinstance(tool.get("toolSpec"), dict)]
    offered = tuple(SentTool(name=spec["name"], parameters=spec["inputSchema"].get("json"),
                             description=description_of(spec)) for spec in specs
                    if isinstance(spec.get("name"), str) and isinstance(spec.get("inputSchema"), dict))
    choice = config.get("toolChoice", {"auto": {}})  # left out, Converse applies `auto` (service model ToolChoice)
    member = next(iter(choice), None) if isinstance(choice, dict) and len(choice) == 1 else None
    forced = choice.get("tool") if member == "tool" and isinstance(choice, dict) else None
    inference = request.get("inferenceConfig")
    return SentPrefix(
        instructions=text_of(request.get("system")),
        tools=offered,
        tool_choice=CHOICE_MEMBERS.get(member) if offered and isinstance(member, str) else None,
        forced_tool=string_or_none(forced.get("name")) if isinstance(forced, dict) else None,
        output_schema=_output_schema(request.get("outputConfig")),
        max_output_tokens=int_or_none(inference.get("maxTokens")) if isinstance(inference, dict) else None,
    )


# The member of `toolChoice` → the neutral choice (service model ToolChoice: auto | any | tool).
CHOICE_MEMBERS: dict[str, ToolChoice] = {"auto": "auto", "any": "required", "tool": "tool"}


def _output_schema(config: Any) -> Any:
    path = ("textFormat", "structure", "jsonSchema", "schema")
    for key in path:
        config = config.get(key) if isinstance(config, dict) else None
    if not isinstance(config, str):
        return config
    try:
        return json.loads(config)  # sent as a JSON string (service model JsonSchemaDefinition)
    except ValueError:
        return config


def read_history(messages: Sequence[Any]) -> list[SentEntry]:
    """Messages → neutral entries: user text, assistant messages (a ``reasoningContent`` block's signature or
    redacted content is what Converse needs back), and user ``toolResult`` blocks as results (``status: error``
    marks a failure)."""
    entries: list[SentEntry] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        blocks = [block for block in list_or_empty(message.get("content")) if isinstance(block, dict)] if isinstance(
            message, dict) else []
        if role == "assistant":
            entries.append(SentEntry(role="model", signatures=tuple(_signatures(blocks))))
        elif role == "user":
            # A cache checkpoint marks where the cached prefix ends; it is no entry of its own.
            entries.extend(_user_block(block) for block in blocks if not set(block) & MARKER_BLOCKS)
        else:
            entries.append(SentEntry(role=f"{role} message" if isinstance(role, str) else "not a message"))
        entries.append(SentEntry(role="message break"))
    return [entry for entry in merged(entries) if entry.role != "message break"]


# ContentBlock members that mark other content rather than carry a turn (botocore bedrock-runtime service model).
MARKER_BLOCKS = frozenset({"cachePoint"})


def _user_block(block: Mapping[str, Any]) -> SentEntry:
    result = block.get("toolResult")
    if isinstance(result, dict):
        return SentEntry(role="results", results=(SentResult(call_id=string_or_none(result.get("toolUseId")),
                                                             is_error=result.get("status") == "error"),))
    if isinstance(block.get("text"), str):
        return SentEntry(role="user", text=block["text"])
    guarded = block.get("guardContent")
    if isinstance(guarded, dict) and isinstance(guarded.get("text"), dict):  # text a guardrail evaluates
        return SentEntry(role="user", text=string_or_none(guarded["text"].get("text")))
    return SentEntry(role=f"{next(iter(block), 'empty')} block")


def _signatures(blocks: list[dict[str, Any]]) -> list[str]:
    found = []
    for block in blocks:
        reasoning = block.get("reasoningContent")
        if not isinstance(reasoning, dict):
            continue
        text = reasoning.get("reasoningText")
        value = text.get("signature") if isinstance(text, dict) else reasoning.get("redactedContent")
        if isinstance(value, str):
            found.append(value)
    return found
