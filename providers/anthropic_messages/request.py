"""Neutral task + transcript → a Messages request: top-level system, tools, and alternating messages."""

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
        if answered_elsewhere(entry, "anthropic-messages"):  # another API's turn: its text and calls; another
            text = turn_text(entry)                          # vendor's signature is refused, so no thinking
            return [{"role": "assistant", "content": [
                *([{"type": "text", "text": text}] if text else []),
                *({"type": "tool_use", "id": call.call_id, "name": call.name,
                   "input": dict(call.parsed_arguments or {})} for call in entry.response.calls)]}]
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
    """A Messages request this adapter built → its static prefix, history, echoed call ids and what it sends."""
    history = request_history(request, "messages")
    return RequestParts(
        prefix=request_prefix(request, "messages"),
        history=history,
        results=result_pairs(read_history(history)),
        sent=_sent(request) if isinstance(request, Mapping) else None,
    )


# anthropic.types.ToolChoiceParam: auto | any | tool (with name) | none.
CHOICES: dict[str, ToolChoice] = {"auto": "auto", "any": "required", "tool": "tool", "none": "none"}


def _sent(request: Mapping[str, Any]) -> SentPrefix:
    tools = request.get("tools")
    offered = tuple(SentTool(name=tool["name"], parameters=tool.get("input_schema"), description=description_of(tool))
                    for tool in list_or_empty(tools) if isinstance(tool, dict) and isinstance(tool.get("name"), str))
    # Without `tool_choice` the API applies `auto` (docs.anthropic.com, "Tool use": "Forcing tool use").
    choice = request.get("tool_choice", {"type": "auto"} if offered else None)
    kind = choice.get("type") if isinstance(choice, dict) else None
    config = request.get("output_config")
    form = config.get("format") if isinstance(config, dict) else None
    return SentPrefix(
        instructions=text_of(request.get("system")),
        tools=offered,
        tool_choice=CHOICES.get(kind) if isinstance(kind, str) else None,
        forced_tool=string_or_none(choice.get("name")) if kind == "tool" and isinstance(choice, dict) else None,
        output_schema=form.get("schema") if isinstance(form, dict) and form.get("type") == "json_schema" else None,
        max_output_tokens=int_or_none(request.get("max_tokens")),
    )


def read_history(messages: Sequence[Any]) -> list[SentEntry]:
    """Messages → neutral entries, block by block in order: a user message's text, its ``tool_result`` blocks (a
    result before its text, as the API requires, reads results → user), and assistant messages, whose
    ``thinking`` signatures and ``redacted_thinking`` data are what the API needs back."""
    entries: list[SentEntry] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if role == "assistant":
            entries.append(SentEntry(role="model", signatures=_signatures(content)))
        elif role == "user" and isinstance(content, str):
            entries.append(SentEntry(role="user", text=content))
        elif role == "user" and isinstance(content, list):
            # Entries of one message are not merged with the message before: two results messages stay two.
            entries.append(SentEntry(role="message break"))
            entries.extend(_user_block(block) for block in content)
        else:
            entries.append(SentEntry(role=f"{role} message" if isinstance(role, str) else "not a message"))
    return [entry for entry in merged(entries) if entry.role != "message break"]


def _user_block(block: Any) -> SentEntry:
    if isinstance(block, dict) and block.get("type") == "tool_result":
        return SentEntry(role="results", results=(
            SentResult(call_id=string_or_none(block.get("tool_use_id")), is_error=block.get("is_error") is True),))
    if isinstance(block, dict) and block.get("type") == "text":
        return SentEntry(role="user", text=string_or_none(block.get("text")))
    return SentEntry(role=f"{block.get('type')} block" if isinstance(block, dict) else "not a block")


# The field of each reasoning block the API needs back unchanged (anthropic.types.ThinkingBlockParam,
# RedactedThinkingBlockParam).
SIGNED_BLOCKS = {"thinking": "signature", "redacted_thinking": "data"}


def _signatures(content: Any) -> tuple[str, ...]:
    blocks = [block for block in (content if isinstance(content, list) else []) if isinstance(block, dict)]
    values = [block.get(SIGNED_BLOCKS[block["type"]]) for block in blocks if block.get("type") in SIGNED_BLOCKS]
    return tuple(value for value in values if isinstance(value, str))
