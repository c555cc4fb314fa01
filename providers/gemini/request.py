"""Neutral task + transcript → a ``generateContent`` body (camelCase; the model is in the URL, not the body)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.adapter import (
    ModelTurn,
    RequestParts,
    Task,
    ToolResult,
    TranscriptEntry,
    UserMessage,
    request_history,
    request_prefix,
)

# task.tool_choice → functionCallingConfig.mode. `ANY` means "must call a function"; a forced tool is
# `ANY` narrowed by allowedFunctionNames (google.genai.types.FunctionCallingConfig).
TOOL_CHOICE_MODES: dict[str, str] = {
    "auto": "AUTO",
    "none": "NONE",
    "required": "ANY",
    "tool": "ANY",
}


def build_request(task: Task, transcript: Sequence[TranscriptEntry]) -> dict[str, Any]:
    """The neutral task and transcript → the Gemini wire request body."""
    request: dict[str, Any] = {}
    if task.instructions:
        request["systemInstruction"] = {"parts": [{"text": task.instructions}]}
    if task.tools:
        request["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": tool.name,
                        "description": tool.description,
                        "parametersJsonSchema": dict(tool.parameters),
                    }
                    for tool in task.tools
                ]
            }
        ]
        request["toolConfig"] = {"functionCallingConfig": _function_calling_config(task)}
    generation: dict[str, Any] = {"maxOutputTokens": task.max_output_tokens}
    if task.output_schema is not None:
        generation["responseMimeType"] = "application/json"
        generation["responseJsonSchema"] = dict(task.output_schema)
    request["generationConfig"] = generation
    request["contents"] = [content for entry in transcript for content in _contents(entry)]
    return request


def _function_calling_config(task: Task) -> dict[str, Any]:
    config: dict[str, Any] = {"mode": TOOL_CHOICE_MODES.get(task.tool_choice, task.tool_choice)}
    if task.tool_choice == "tool" and task.tool_name:
        config["allowedFunctionNames"] = [task.tool_name]
    return config


def _contents(entry: TranscriptEntry) -> list[Any]:
    if isinstance(entry, UserMessage):
        return [{"role": "user", "parts": [{"text": entry.text}]}]
    if isinstance(entry, ModelTurn):
        # The candidate content goes back exactly as received: a thoughtSignature must stay on the same
        # part, in the same position, or Gemini 3 answers 400 (google.genai.types.Part; ai.google.dev/gemini-
        # api/docs/function-calling, "Thought signatures").
        return list(entry.response.output_items)
    if not entry.results:
        return []
    # Function responses travel with role `user`, one part per call, as the SDK's chat code sends them.
    return [{"role": "user", "parts": [_function_response(result) for result in entry.results]}]


def _function_response(result: ToolResult) -> dict[str, Any]:
    response: dict[str, Any] = {}
    # Only echo an id the server sent: Vertex used to reject an unknown `id` field (google.genai.types.Part;
    # ai.google.dev/gemini-api/docs/function-calling).
    if not result.call.synthesized_id:
        response["id"] = result.call.call_id
    response["name"] = result.call.name
    # There is no is_error flag; the convention is `output` for a result and `error` for a failure.
    response["response"] = {"error" if result.is_error else "output": dict(result.output)}
    return {"functionResponse": response}


def read_request(request: Mapping[str, Any]) -> RequestParts:
    """A Gemini request this adapter built → its static prefix, history and echoed call ids."""
    history = request_history(request, "contents")
    results: list[tuple[str | None, str | None]] = []
    for content in history:
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                results.append((_string(response.get("id")), _string(response.get("name"))))
    return RequestParts(
        prefix=request_prefix(request, "contents"),
        history=history,
        results=results,
    )


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None
