"""What the gateway stacks share: the gateway's own message per model turn, kept as a team's history keeps it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from conformance.adapter import ModelTurn, Task, ToolResults, TranscriptEntry, UserMessage
from conformance.stack import Endpoint
from conformance.types import ModelResponse


class Memory:
    """Per replay session, each response a stack returned and the gateway's own message behind it.

    A team keeps the gateway's message objects in its history and sends them back as they came (with the thinking
    blocks, signatures and provider fields the gateway hides there); the neutral transcript holds the contract's
    responses. This finds the gateway's message of each model turn again, by the response object itself."""

    def __init__(self) -> None:
        self.sessions: dict[str, list[tuple[ModelResponse, Any]]] = {}

    def start(self, endpoint: Endpoint, transcript: Sequence[TranscriptEntry]) -> None:
        """Forget a session's messages when its row starts again (a transcript with no model turn yet)."""
        if not any(isinstance(entry, ModelTurn) for entry in transcript):
            self.sessions[endpoint.base_url] = []

    def keep(self, endpoint: Endpoint, response: ModelResponse, message: Any) -> ModelResponse:
        """Remember the gateway's message behind ``response``; returns ``response``."""
        self.sessions.setdefault(endpoint.base_url, []).append((response, message))
        return response

    def message(self, endpoint: Endpoint, response: ModelResponse) -> Any:
        """The gateway's message behind ``response``, or None when the stack kept none (an error turn)."""
        for kept, message in self.sessions.get(endpoint.base_url, []):
            if kept is response:
                return message
        return None


def openai_messages(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint,
                    memory: Memory) -> list[dict[str, Any]]:
    """The transcript as OpenAI Chat messages (the shape LiteLLM takes for every vendor): the instructions as the
    system message, each model turn as the gateway returned it, each result as a ``tool`` message."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": task.instructions}] if task.instructions else []
    for entry in transcript:
        if isinstance(entry, UserMessage):
            messages.append({"role": "user", "content": entry.text})
        elif isinstance(entry, ModelTurn):
            kept = memory.message(endpoint, entry.response)
            messages.append(kept if kept is not None else _rebuilt(entry.response))
        elif isinstance(entry, ToolResults):
            messages += [{"role": "tool", "tool_call_id": result.call.call_id,
                          "content": json.dumps(dict(result.output), ensure_ascii=False)} for result in entry.results]
    return messages


def _rebuilt(response: ModelResponse) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": getattr(response, "text", None)}
    if response.calls:
        message["tool_calls"] = [{"id": call.call_id, "type": "function",
                                  "function": {"name": call.name, "arguments": call.arguments}}
                                 for call in response.calls]
    return message


def openai_tools(task: Task) -> dict[str, Any]:
    """The task's tools, tool choice, output schema and token cap as OpenAI Chat parameters."""
    params: dict[str, Any] = {"max_tokens": task.max_output_tokens}
    if task.tools:
        params["tools"] = [{"type": "function", "function": {"name": tool.name, "description": tool.description,
                                                             "parameters": dict(tool.parameters)}}
                           for tool in task.tools]
        params["tool_choice"] = ({"type": "function", "function": {"name": task.tool_name}}
                                 if task.tool_choice == "tool" else task.tool_choice)
    if task.output_schema is not None:
        params["response_format"] = {"type": "json_schema", "json_schema": {
            "name": task.output_schema_name, "schema": dict(task.output_schema), "strict": True}}
    return params
