"""What the Gemini API refuses before it answers, as ``Rule``s (``Wire.acceptance``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from conformance.kit.adapter import Rule
from conformance.kit.values import schema_nodes

SCHEMA_FIELDS = frozenset({
    "additionalProperties", "anyOf", "default", "defs", "description", "enum", "example", "format", "items",
    "maxItems", "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum",
    "nullable", "pattern", "properties", "propertyOrdering", "ref", "required", "title", "type"})
"""The fields of the API's ``Schema`` object (google-genai ``types.Schema``, camelCase as the wire spells them):
``responseSchema`` and a declaration's ``parameters`` take these and nothing else. JSON Schema's own keywords
(``$schema``, ``$ref``, ``const``, ``oneOf``, ``exclusiveMinimum``, …) belong in ``responseJsonSchema`` and
``parametersJsonSchema``, which take JSON Schema."""


def _field(part: Mapping[str, Any], name: str) -> Any:
    """A field of a part under its JSON name (``functionCall``) or its proto name (``function_call``): the API
    parses both, as every protobuf JSON parser does (protobuf.dev/programming-guides/json, "JSON options"), and
    gateways send either (LiteLLM the proto names)."""
    if name in part:
        return part[name]
    return part.get(re.sub(r"[A-Z]", lambda upper: "_" + upper.group().lower(), name))


def _camel(name: str) -> str:
    """A proto field name in its JSON spelling: ``max_items`` → ``maxItems``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _parts(content: Any) -> list[Any]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _calls(content: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(index, {**part, "functionCall": _field(part, "functionCall")})
            for index, part in enumerate(_parts(content)) if isinstance(_field(part, "functionCall"), dict)]


def _responses(content: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(index, _field(part, "functionResponse")) for index, part in enumerate(_parts(content))
            if isinstance(_field(part, "functionResponse"), dict)]


def _results_match_calls(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """A model turn with function calls is followed by one user content holding one ``functionResponse`` per call,
    each naming its call (its ``id``, when the call had one, and its ``name``)."""
    contents = request.get("contents") or []
    for index, content in enumerate(contents):
        calls = _calls(content)
        if not calls or not isinstance(content, dict) or content.get("role") != "model":
            continue
        following = contents[index + 1] if index + 1 < len(contents) else None
        if following is None:
            continue  # a model turn last is the history of the call the request continues, not a turn to answer
        answers = _responses(following)
        if len(answers) != len(calls):
            yield (f"/contents/{index + 1}/parts", f"{len(answers)} functionResponse part(s) answer the "
                   f"{len(calls)} functionCall part(s) of /contents/{index}: the numbers must be equal")
            continue
        ids = {part["functionCall"].get("id") for _, part in calls} - {None}
        names = {part["functionCall"].get("name") for _, part in calls}
        for position, answer in answers:
            if ids and answer.get("id") not in ids:
                yield (f"/contents/{index + 1}/parts/{position}/functionResponse/id",
                       f"{answer.get('id')!r} is the id of no functionCall of /contents/{index}")
            if answer.get("name") not in names:
                yield (f"/contents/{index + 1}/parts/{position}/functionResponse/name",
                       f"{answer.get('name')!r} names no functionCall of /contents/{index}")


def _signatures_sent_back(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """In the current turn (the contents after the user's last text), the first ``functionCall`` part of each model
    step carries the ``thoughtSignature`` it came with. Gemini 3 models refuse the request without it; parallel calls
    carry one signature, on the first call only."""
    contents = request.get("contents") or []
    start = 0
    for index, content in enumerate(contents):
        if isinstance(content, dict) and content.get("role") == "user" and any(
                "text" in part for part in _parts(content)):
            start = index + 1
    for index in range(start, len(contents)):
        calls = _calls(contents[index])
        if calls and not _field(calls[0][1], "thoughtSignature"):
            yield (f"/contents/{index}/parts/{calls[0][0]}/thoughtSignature",
                   f"the function call {calls[0][1]['functionCall'].get('name')!r} of the current turn is sent back "
                   "without the thoughtSignature it came with")


def _schema_fields(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``generationConfig.responseSchema`` and each declaration's ``parameters`` use only the ``Schema`` object's
    fields (``SCHEMA_FIELDS``), each under either spelling (``_field``). The pointer names the JSON spelling."""
    config = _field(request, "generationConfig")
    schema = _field(config, "responseSchema") if isinstance(config, dict) else None
    if isinstance(schema, dict):
        yield from _walk(schema, "/generationConfig/responseSchema")
    for tool_index, tool in enumerate(_field(request, "tools") or []):
        declarations = _field(tool, "functionDeclarations") if isinstance(tool, dict) else None
        for index, declaration in enumerate(declarations or []):
            if isinstance(declaration, dict) and isinstance(declaration.get("parameters"), dict):
                yield from _walk(declaration["parameters"],
                                 f"/tools/{tool_index}/functionDeclarations/{index}/parameters")


def _walk(schema: Mapping[str, Any], pointer: str) -> Iterator[tuple[str, str]]:
    for where, node in schema_nodes(schema, pointer, ("properties", "defs", "items", "anyOf")):
        for key in node:
            if key not in SCHEMA_FIELDS and _camel(key) not in SCHEMA_FIELDS:
                yield (f"{where}/{key.replace('~', '~0').replace('/', '~1')}", f"{key!r} is not a field of the API's "
                       "Schema (use responseJsonSchema or parametersJsonSchema for JSON Schema)")


RULES = (
    Rule(id="function-responses-match-calls",
         source="ai.google.dev/gemini-api/docs/function-calling (the function responses of a turn answer its "
                "function calls, one each; the API refuses a turn whose numbers differ)",
         check=_results_match_calls),
    Rule(id="thought-signature-sent-back",
         source="ai.google.dev/gemini-api/docs/thought-signatures (Gemini 3: the first function call of each step "
                "of the current turn is sent back with its thoughtSignature, or the request is refused)",
         check=_signatures_sent_back),
    Rule(id="schema-object-fields",
         source="ai.google.dev/api/caching#Schema and google-genai types.Schema (the fields responseSchema and "
                "parameters accept; JSON Schema goes in responseJsonSchema / parametersJsonSchema)",
         check=_schema_fields),
)
