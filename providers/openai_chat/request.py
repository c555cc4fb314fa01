"""Neutral task + transcript → a Chat Completions request: system message, then the growing history."""

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
from conformance.kit.values import description_of, int_or_none, string_or_none, text_of
from conformance.providers.switch import answered_elsewhere, turn_text


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
        if answered_elsewhere(entry, "openai-chat"):  # another API's turn: its text and calls, no reasoning
            calls = [{"id": call.call_id, "type": "function", "function": {"name": call.name,
                                                                            "arguments": call.arguments}}
                     for call in entry.response.calls]
            return [{"role": "assistant", "content": turn_text(entry), **({"tool_calls": calls} if calls else {})}]
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
    """A Chat Completions request this adapter built → its static prefix, history, echoed call ids and what it
    sends."""
    messages = request_history(request, "messages")
    # A leading system (or developer) message is part of the static prefix: it must never change between turns.
    system = messages[:1] if messages and isinstance(messages[0], dict) and messages[0].get("role") in (
        "system", "developer") else []
    prefix = request_prefix(request, "messages")
    prefix["system"] = system
    history = messages[len(system):]
    return RequestParts(prefix=prefix, history=history, results=result_pairs(read_history(history)),
                        sent=_sent(request, system) if isinstance(request, Mapping) else None)


def _sent(request: Mapping[str, Any], system: list[Any]) -> SentPrefix:
    tools = request.get("tools")
    functions = [tool["function"] for tool in (tools if isinstance(tools, list) else [])
                 if isinstance(tool, dict) and isinstance(tool.get("function"), dict)]
    offered = tuple(SentTool(name=function["name"], parameters=function.get("parameters"),
                             description=description_of(function))
                    for function in functions if isinstance(function.get("name"), str))
    # The API's default is `none` without tools and `auto` with them (openai.types.chat.completion_create_params).
    choice, forced = _read_choice(request.get("tool_choice", "auto" if offered else "none"))
    form = request.get("response_format")
    schema = form.get("json_schema") if isinstance(form, dict) and form.get("type") == "json_schema" else None
    return SentPrefix(
        instructions=text_of(system[0].get("content")) if system else None,
        tools=offered,
        tool_choice=choice,
        forced_tool=forced,
        output_schema=schema.get("schema") if isinstance(schema, dict) else None,
        max_output_tokens=int_or_none(request.get("max_completion_tokens", request.get("max_tokens"))),
    )


def _read_choice(choice: Any) -> tuple[ToolChoice | None, str | None]:
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict):
        return "tool", string_or_none(choice["function"].get("name"))
    return (choice, None) if choice in ("auto", "none", "required") else (None, None)


def read_history(messages: Sequence[Any]) -> list[SentEntry]:
    """Messages → neutral entries: user messages, assistant messages with the reasoning a compatible server needs
    back (``_signatures``), and `tool` (or legacy `function`) messages as results."""
    return merged(_entry(message) for message in messages)


def _entry(message: Any) -> SentEntry:
    if not isinstance(message, dict):
        return SentEntry(role="not a message")
    role = message.get("role")
    if role == "user":
        return SentEntry(role="user", text=text_of(message.get("content")))
    if role == "assistant":
        return SentEntry(role="model", signatures=_signatures(message))
    if role == "tool":
        return SentEntry(role="results", results=(SentResult(call_id=string_or_none(message.get("tool_call_id"))),))
    if role == "function":
        return SentEntry(role="results", results=(SentResult(call_id=None, name=string_or_none(message.get("name"))),))
    return SentEntry(role=f"{role} message")


def _signatures(message: Mapping[str, Any]) -> tuple[str, ...]:
    """What an assistant message carries that the server needs back unchanged; OpenAI's own Chat API sends none.

    - DeepSeek's thinking mode: the ``reasoning_content`` of a message with ``tool_calls``, even empty; without it
      the next request is refused, "Missing reasoning_content field in the assistant message at message index N"
      (api-docs.deepseek.com/guides/thinking_mode, "Tool calls"). A message without calls may leave it out.
    - OpenRouter: the opaque parts of ``reasoning_details``, the ``data`` of a ``reasoning.encrypted`` detail and the
      ``signature`` of a ``reasoning.text`` one, which an upstream Anthropic or Gemini model needs back to continue
      (openrouter.ai/docs/use-cases/reasoning-tokens, "Preserving reasoning blocks").
    """
    found: list[str] = []
    if message.get("tool_calls") and isinstance(message.get("reasoning_content"), str):
        found.append(message["reasoning_content"])
    details = message.get("reasoning_details")
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict):
            value = detail.get("data") if detail.get("type") == "reasoning.encrypted" else detail.get("signature")
            if isinstance(value, str) and value:
                found.append(value)
    return tuple(found)
