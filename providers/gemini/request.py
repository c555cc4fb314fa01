"""Neutral task + transcript → a ``generateContent`` body (camelCase; the model is in the URL, not the body)."""

from __future__ import annotations

import re
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
from conformance.kit.task import (
    ModelTurn,
    Task,
    ToolChoice,
    ToolResult,
    TranscriptEntry,
    UserMessage,
)
from conformance.kit.values import description_of, int_or_none, list_or_empty, string_or_none, text_of
from conformance.providers.switch import answered_elsewhere, turn_text

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


FOREIGN_SIGNATURE = "skip_thought_signature_validator"
"""The stand-in thoughtSignature for a call Gemini did not make (ai.google.dev/gemini-api/docs/thought-signatures)."""


def _contents(entry: TranscriptEntry) -> list[Any]:
    if isinstance(entry, UserMessage):
        return [{"role": "user", "parts": [{"text": entry.text}]}]
    if isinstance(entry, ModelTurn) and answered_elsewhere(entry, "gemini"):
        # Another API's turn: its text and calls. Gemini 3 wants a thoughtSignature on a step's first call; a call
        # another model made has none, and the documented stand-in tells the API not to look for one
        # (ai.google.dev/gemini-api/docs/thought-signatures, "FAQs": a conversation from another model).
        text = turn_text(entry)
        parts: list[Any] = [{"text": text}] if text else []
        for position, call in enumerate(entry.response.calls):
            parts.append({"functionCall": {"id": call.call_id, "name": call.name,
                                           "args": dict(call.parsed_arguments or {})},
                          **({"thoughtSignature": FOREIGN_SIGNATURE} if position == 0 else {})})
        return [{"role": "model", "parts": parts}]
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
    """A Gemini request this adapter built → its static prefix, history, echoed call ids and what it sends."""
    history = request_history(request, "contents")
    return RequestParts(
        prefix=request_prefix(request, "contents", per_turn=(("toolConfig", "functionCallingConfig"),)),
        history=history,
        results=result_pairs(read_history(history)),
        sent=_sent(request) if isinstance(request, Mapping) else None,
    )


def _sent(request: Mapping[str, Any]) -> SentPrefix:
    declarations = [declaration for tool in list_or_empty(request.get("tools")) if isinstance(tool, dict)
                    for declaration in list_or_empty(_get(tool, "functionDeclarations"))
                    if isinstance(declaration, dict)]
    # `parametersJsonSchema` is JSON Schema as is; `parameters` (the OpenAPI subset) would need translating back,
    # and the adapters here never send it.
    offered = tuple(SentTool(name=declaration["name"], parameters=_parameters(declaration),
                             description=description_of(declaration))
                    for declaration in declarations if isinstance(declaration.get("name"), str))
    config = _get(request, "toolConfig")
    calling = _get(config, "functionCallingConfig") if isinstance(config, dict) else None
    calling = calling if isinstance(calling, dict) else {}
    choice, forced = _read_mode(_get(calling, "mode", "AUTO"), _get(calling, "allowedFunctionNames"))
    generation = _get(request, "generationConfig")
    generation = generation if isinstance(generation, dict) else {}
    system = _get(request, "systemInstruction")
    return SentPrefix(
        instructions=text_of(system.get("parts")) if isinstance(system, dict) else None,
        tools=offered,
        tool_choice=choice if offered else None,
        forced_tool=forced,
        output_schema=_get(generation, "responseJsonSchema", _get(generation, "responseSchema")),
        max_output_tokens=int_or_none(_get(generation, "maxOutputTokens")),
    )


def _get(container: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """A field by its JSON name (``functionDeclarations``) or its proto name (``function_declarations``): the REST
    API accepts both (the proto3 JSON mapping), and clients send either (google-genai 3.x and LiteLLM send some
    fields in snake_case)."""
    if name in container:
        return container[name]
    return container.get(re.sub(r"[A-Z]", lambda upper: "_" + upper.group(0).lower(), name), default)


def _parameters(declaration: dict[str, Any]) -> Any:
    # The REST API takes proto field names in either spelling; google-genai 3.x sends this one in snake_case.
    for key in ("parametersJsonSchema", "parameters_json_schema", "parameters"):
        if key in declaration:
            return declaration[key]
    return None


def _read_mode(mode: Any, allowed: Any) -> tuple[ToolChoice | None, str | None]:
    # `ANY` narrowed to one allowed function forces it; `AUTO` is the default
    # (google.genai.types.FunctionCallingConfig).
    if mode == "ANY" and isinstance(allowed, list) and len(allowed) == 1:
        return "tool", string_or_none(allowed[0])
    return (MODES.get(mode) if isinstance(mode, str) else None), None


# MODE_UNSPECIFIED means the default, AUTO; VALIDATED lets the model answer or call, with the calls held to their
# schemas: a call is allowed, not required, so it reads as `auto`.
MODES: dict[str, ToolChoice] = {"AUTO": "auto", "MODE_UNSPECIFIED": "auto", "VALIDATED": "auto", "NONE": "none",
                                "ANY": "required"}


def read_history(contents: Sequence[Any]) -> list[SentEntry]:
    """Contents → neutral entries: user text, `model` contents (each part's ``thoughtSignature`` is what Gemini needs
    back, on the same part), and user contents of ``functionResponse`` parts as results (``error`` instead of
    ``output`` marks a failure, per google.genai.types.FunctionResponse.response)."""
    entries: list[SentEntry] = []
    for content in contents:
        role = content.get("role") if isinstance(content, dict) else None
        parts = [part for part in list_or_empty(content.get("parts")) if isinstance(part, dict)] if isinstance(
            content, dict) else []
        if role == "model":
            signed = [signature for part in parts if isinstance(signature := _get(part, "thoughtSignature"), str)]
            entries.append(SentEntry(role="model", signatures=tuple(signed)))
            continue
        responses = [response for part in parts if isinstance(response := _get(part, "functionResponse"), dict)]
        if role == "user" and responses:
            entries.append(SentEntry(role="results", results=tuple(_result(response) for response in responses)))
        elif role == "user":
            entries.append(SentEntry(role="user", text=text_of(parts)))
        else:
            entries.append(SentEntry(role=f"{role} content" if isinstance(role, str) else "content without a role"))
        entries.append(SentEntry(role="content break"))
    return [entry for entry in merged(entries) if entry.role != "content break"]


def _result(response: dict[str, Any]) -> SentResult:
    body = response.get("response")
    return SentResult(call_id=string_or_none(response.get("id")), name=string_or_none(response.get("name")),
                      is_error=isinstance(body, dict) and "error" in body and "output" not in body)
