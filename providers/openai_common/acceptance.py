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


DEEPSEEK_THINKING_MODELS = ("deepseek-reasoner", "deepseek-v4")
"""Model names (prefixes) that think by default on DeepSeek's API; ``thinking: {"type": "disabled"}`` turns it off."""


def _deepseek_thinking(request: Mapping[str, Any]) -> bool:
    thinking = request.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    model = request.get("model")
    return kind == "enabled" or (kind != "disabled" and isinstance(model, str)
                                 and model.startswith(DEEPSEEK_THINKING_MODELS))


def _reasoning_content_back(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """DeepSeek in thinking mode: every assistant message with ``tool_calls`` goes back with its
    ``reasoning_content`` (a string, empty when the model thought nothing aloud). The API's refusals: "Missing
    reasoning_content field in the assistant message at message index 2" and "The reasoning_content in the thinking
    mode must be passed back to the API". Other Chat servers ignore the field; the rule holds only in thinking
    mode (``thinking.type: enabled``, or a thinking model not switched off)."""
    if not _deepseek_thinking(request):
        return
    for index, message in enumerate(request.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "assistant" and message.get("tool_calls") and \
                not isinstance(message.get("reasoning_content"), str):
            yield f"/messages/{index}/reasoning_content", \
                "in thinking mode an assistant message with tool_calls goes back with its reasoning_content"


CHAT_RULES = (
    Rule(id="strict-schema", source=STRICT_SOURCE, check=_chat_strict),
    Rule(id="tool-message-after-tool-calls",
         source="platform.openai.com/docs/guides/function-calling (a tool message responds to a preceding message "
                "with tool_calls; openai-python types/chat/chat_completion_tool_message_param.py)",
         check=_chat_tool_messages),
    Rule(id="reasoning-content-sent-back",
         source="api-docs.deepseek.com/guides/thinking_mode (\"Tool calls\": the reasoning_content of a turn that "
                "called tools is passed back in every later request, or the API answers 400)",
         check=_reasoning_content_back),
)

OUTPUT_ITEMS = frozenset({"reasoning", "message", "function_call", "custom_tool_call", "web_search_call",
                          "file_search_call", "computer_call", "code_interpreter_call", "image_generation_call",
                          "local_shell_call", "mcp_call", "mcp_list_tools", "mcp_approval_request"})
"""Input items that are a response's output items sent back (openai.types.responses.ResponseOutputItem)."""


def _reasoning_items(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Reasoning items sent back statelessly: with ``store: false`` nothing is kept server-side, so each reasoning item
    carries its ``encrypted_content`` (refused: "Item with id 'rs_…' not found. Items are not persisted when `store`
    is set to false"); and a reasoning item is followed by an output item of its response (refused: "Item 'rs_…' of
    type 'reasoning' was provided without its required following item")."""
    items = request.get("input")
    if not isinstance(items, list):
        return
    stateless = request.get("store") is False
    for index, item in enumerate(items):
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        if stateless and not (isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]):
            yield f"/input/{index}/encrypted_content", \
                "with store false a reasoning item goes back with its encrypted_content"
        following = items[index + 1] if index + 1 < len(items) else None
        if not (isinstance(following, dict) and following.get("type") in OUTPUT_ITEMS):
            yield f"/input/{index}", "a reasoning item goes back followed by the output item it produced"


RESPONSES_RULES = (
    Rule(id="strict-schema", source=STRICT_SOURCE, check=_responses_strict),
    Rule(id="reasoning-items-replayable",
         source="platform.openai.com/docs/guides/reasoning (\"Keeping reasoning items in context\": with store false, "
                "reasoning items go back with encrypted_content, each before the item it produced; "
                "openai.types.responses.ResponseReasoningItemParam)",
         check=_reasoning_items),
)
