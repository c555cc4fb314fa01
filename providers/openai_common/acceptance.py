"""What OpenAI's APIs refuse before they answer, as ``Rule``s (``Wire.acceptance``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from conformance.kit.adapter import Rule
from conformance.kit.values import schema_nodes

STRICT_SOURCE = "platform.openai.com/docs/guides/structured-outputs, \"Supported schemas\""


def strict_schema_problems(schema: Any, pointer: str) -> Iterator[tuple[str, str]]:
    """Strict mode's schema subset: every object lists all its properties in ``required`` and sets
    ``additionalProperties: false``."""
    for where, node in schema_nodes(schema, pointer, ("properties", "$defs", "definitions", "items", "anyOf")):
        if node.get("type") == "object" or "properties" in node:
            properties = node.get("properties") or {}
            if node.get("additionalProperties") is not False:
                yield where or "/", "strict mode needs additionalProperties: false on every object"
            missing = [name for name in properties if name not in (node.get("required") or [])]
            if missing:
                yield f"{where}/required", f"strict mode needs every property required; not listed: {missing}"


def _chat_strict(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for index, tool in enumerate(request.get("tools") or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("strict") is True:
            yield from strict_schema_problems(function.get("parameters"), f"/tools/{index}/function/parameters")
    form = request.get("response_format")
    inner = form.get("json_schema") if isinstance(form, dict) else None
    if isinstance(inner, dict) and inner.get("strict") is True:
        yield from strict_schema_problems(inner.get("schema"), "/response_format/json_schema/schema")


def _responses_strict(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for index, tool in enumerate(request.get("tools") or []):
        if isinstance(tool, dict) and tool.get("type") == "function" and tool.get("strict") is True:
            yield from strict_schema_problems(tool.get("parameters"), f"/tools/{index}/parameters")
    text = request.get("text")
    form = text.get("format") if isinstance(text, dict) else None
    if isinstance(form, dict) and form.get("type") == "json_schema" and form.get("strict") is True:
        yield from strict_schema_problems(form.get("schema"), "/text/format/schema")


def _chat_tool_messages(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """A ``tool`` message answers a call of the assistant message before it; every call is answered before the next
    message of another role."""
    pending: list[Any] = []
    for index, message in enumerate(request.get("messages") or []):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "tool":
            call = message.get("tool_call_id")
            if call not in pending:
                yield f"/messages/{index}/tool_call_id", f"{call!r} answers no call of the assistant message before it"
            else:
                pending.remove(call)
            continue
        if pending:
            yield f"/messages/{index}", f"the calls {pending} of the assistant message before are not answered first"
            pending = []
        if role == "assistant":
            pending = [call.get("id") for call in message.get("tool_calls") or [] if isinstance(call, dict)]


CHAT_RULES = (
    Rule(id="strict-schema", source=STRICT_SOURCE, check=_chat_strict),
    Rule(id="tool-message-after-tool-calls",
         source="platform.openai.com/docs/guides/function-calling (a tool message responds to a preceding message "
                "with tool_calls; openai-python types/chat/chat_completion_tool_message_param.py)",
         check=_chat_tool_messages),
)
RESPONSES_RULES = (Rule(id="strict-schema", source=STRICT_SOURCE, check=_responses_strict),)
