"""What the Messages API refuses before it answers, as ``Rule``s (``Wire.acceptance``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from conformance.kit.adapter import Rule
from conformance.kit.values import schema_nodes


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _tool_results(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """After an assistant turn with ``tool_use`` blocks, the next message is the user's, and its content starts with
    one ``tool_result`` per ``tool_use``, before any other block; no result answers a call that was not made."""
    messages = request.get("messages") or []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        before = messages[index - 1] if index > 0 else None
        called = [block.get("id") for block in _blocks(before) if isinstance(block, dict)
                  and block.get("type") == "tool_use"] if isinstance(before, dict) and before.get(
            "role") == "assistant" else []
        blocks = _blocks(message)
        kinds = [block.get("type") if isinstance(block, dict) else None for block in blocks]
        results = [block.get("tool_use_id") for block in blocks if isinstance(block, dict)
                   and block.get("type") == "tool_result"]
        if results and kinds[:len(results)] != ["tool_result"] * len(results):
            yield f"/messages/{index}/content", "tool_result blocks come first in the content, before any other block"
        for position, answered in enumerate(results):
            if answered not in called:
                yield f"/messages/{index}/content/{position}/tool_use_id", \
                    f"{answered!r} answers no tool_use of the assistant message before it"
        for call in called:
            if results.count(call) != 1:
                yield f"/messages/{index}/content", f"tool_use {call!r} needs exactly one tool_result here, " \
                                                    f"found {results.count(call)}"
    if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant" and any(
            isinstance(block, dict) and block.get("type") == "tool_use" for block in _blocks(messages[-1])):
        yield f"/messages/{len(messages) - 1}", "a tool_use turn is last: its results are not sent"


UNSUPPORTED_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                                  "minLength", "maxLength", "maxItems", "uniqueItems", "minProperties",
                                  "maxProperties"})
"""JSON Schema keywords a structured-output schema may not use (the API answers 400 "For 'integer' type, property
'minimum' is not supported"); ``minItems`` is taken only as 0 or 1."""


def _structured_schema(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """The schema of ``output_config.format`` (and the older ``output_format``) and of each ``strict`` tool uses the
    subset structured outputs compile: no numeric, length or count bounds, ``minItems`` 0 or 1, and every object
    closed with ``additionalProperties: false``."""
    config = request.get("output_config")
    format_ = config.get("format") if isinstance(config, dict) else request.get("output_format")
    if isinstance(format_, dict) and isinstance(format_.get("schema"), dict):
        where = "/output_config/format/schema" if isinstance(config, dict) else "/output_format/schema"
        yield from _walk(format_["schema"], where)
    for index, tool in enumerate(request.get("tools") or []):
        if isinstance(tool, dict) and tool.get("strict") is True and isinstance(tool.get("input_schema"), dict):
            yield from _walk(tool["input_schema"], f"/tools/{index}/input_schema")


def _walk(schema: Mapping[str, Any], pointer: str) -> Iterator[tuple[str, str]]:
    for where, node in schema_nodes(schema, pointer, ("properties", "$defs", "definitions", "items", "anyOf",
                                                      "allOf")):
        for key in sorted(UNSUPPORTED_KEYWORDS & set(node)):
            yield f"{where}/{key}", f"{key!r} is not supported in a structured-output schema"
        if isinstance(node.get("minItems"), int) and node["minItems"] > 1:
            yield f"{where}/minItems", "minItems is supported only as 0 or 1"
        if node.get("type") == "object" and node.get("additionalProperties") is not False:
            yield where, "an object needs additionalProperties: false"


THINKING_ON = frozenset({"enabled", "adaptive"})
"""The ``thinking.type`` values that turn extended thinking on."""


def _thinking_first(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """With thinking on, the last assistant message, when it holds ``tool_use`` blocks (the step whose results the
    request sends), starts with its ``thinking`` or ``redacted_thinking`` block, and every thinking block of it goes
    back with its ``signature`` (a redacted one with its ``data``), as received. The API's refusal: "messages.1.
    content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a
    final `assistant` message must start with a thinking block"."""
    thinking = request.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") not in THINKING_ON:
        return
    messages = request.get("messages") or []
    last = max((index for index, message in enumerate(messages) if isinstance(message, dict)
                and message.get("role") == "assistant"), default=None)
    if last is None:
        return
    blocks = _blocks(messages[last])
    if not any(isinstance(block, dict) and block.get("type") == "tool_use" for block in blocks):
        return
    first = blocks[0].get("type") if isinstance(blocks[0], dict) else None
    if first not in ("thinking", "redacted_thinking"):
        yield f"/messages/{last}/content/0/type", f"with thinking on, the assistant message whose tool calls are " \
                                                  f"answered starts with its thinking block; found {first!r}"
    for position, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        field = {"thinking": "signature", "redacted_thinking": "data"}.get(str(kind))
        if field is not None and not (isinstance(block.get(field), str) and block.get(field)):
            yield f"/messages/{last}/content/{position}/{field}", \
                f"a {kind} block goes back with its {field}, unchanged"


RULES = (
    Rule(id="thinking-blocks-first",
         source="docs.claude.com/en/docs/build-with-claude/extended-thinking (\"Preserving thinking blocks\": with "
                "tool use, the last assistant turn's thinking blocks go back complete and unmodified, first)",
         check=_thinking_first),
    Rule(id="tool-results-first",
         source="docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use (\"Handling results\": "
                "tool_result blocks must immediately follow their tool_use and come first in the user message)",
         check=_tool_results),
    Rule(id="structured-output-schema",
         source="docs.claude.com/en/docs/build-with-claude/structured-outputs (\"JSON Schema limitations\": no "
                "numeric, string-length or array bounds beyond minItems 0/1; additionalProperties false on objects)",
         check=_structured_schema),
)
