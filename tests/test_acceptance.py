"""What the vendor would refuse before it answers (docs/contract.md, "What the vendor refuses"): each API's rules
(``Wire.acceptance``) hold every request a lane sends. The reference adapters' requests break none; a request
changed as the quoted rejections were (results out of order, a call answered by no result, a schema strict mode
refuses) fails its row with the rule and the JSON pointer."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.plan import Planned
from conformance.engine.registry import builtin_adapters
from conformance.engine.request_check import acceptance_problems
from conformance.engine.runner import run_case_with_requests
from conformance.session import Run
from tests.helpers import CASES, changing_requests

ADAPTERS = builtin_adapters()
CASE_LIST = {case.id: case for case in load_cases([CASES])}


def _row(provider: str, case: str, change: Callable[[dict[str, Any]], None] | None = None) -> Any:
    adapter = changing_requests(ADAPTERS[provider], change)
    run = Run.configure()
    run.adapters = {provider: adapter}
    row, _, _ = run.execute(Planned(CASE_LIST[case], provider, "body"))
    return row


def _refusals(row: Any) -> list[str]:
    return [failure for failure in row["failures"] if "the vendor would refuse it" in failure]


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic-messages"])
@pytest.mark.parametrize("case", ["parallel_tool_calls", "multi_turn_history", "structured_output_valid"])
def test_the_reference_adapters_requests_break_no_rule(provider: str, case: str) -> None:
    assert ADAPTERS[provider].wire.acceptance  # type: ignore[union-attr]
    assert _refusals(_row(provider, case)) == []


def _results_after_text(request: dict[str, Any]) -> None:
    """Anthropic: the tool results moved behind a text block (anthropics/claude-code#21906's class)."""
    for message in request["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list) and any(
                block.get("type") == "tool_result" for block in message["content"]):
            message["content"].insert(0, {"type": "text", "text": "Here are the results."})


def _results_reversed(request: dict[str, Any]) -> None:
    """Chat: the second call's result sent before the assistant turn that made the calls."""
    messages = request["messages"]
    tools = [index for index, message in enumerate(messages) if message["role"] == "tool"]
    if tools:
        moved = messages.pop(tools[-1])
        messages.insert(tools[0] - 1, moved)


def _strict_with_optional(request: dict[str, Any]) -> None:
    """Responses: a strict function whose schema lets a property be left out."""
    for tool in request.get("tools") or []:
        if tool.get("type") == "function":
            tool["strict"] = True
            tool["parameters"] = {**tool["parameters"], "required": []}


@pytest.mark.parametrize(("provider", "change", "rule", "pointer"), [
    ("anthropic-messages", _results_after_text, "tool-results-first", "/messages/2/content"),
    ("openai-chat", _results_reversed, "tool-message-after-tool-calls", "/messages/2/tool_call_id"),
    ("openai-responses", _strict_with_optional, "strict-schema", "/tools/0/parameters/required"),
])
def test_a_request_the_vendor_refuses_fails_its_row_with_the_rule_and_the_pointer(
        provider: str, change: Callable[[dict[str, Any]], None], rule: str, pointer: str) -> None:
    row = _row(provider, "parallel_tool_calls", change)
    refusals = _refusals(row)
    assert refusals and not row["passed"], row["failures"]
    assert any(f"({rule}, " in failure and f"): {pointer}: " in failure for failure in refusals), refusals


def test_a_call_left_unanswered_and_a_schema_without_additional_properties_false_are_named() -> None:
    chat = ADAPTERS["openai-chat"]
    request = {"messages": [{"role": "user", "content": "x"},
                            {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function"},
                                                                 {"id": "call_2", "type": "function"}]},
                            {"role": "tool", "tool_call_id": "call_1", "content": "{}"},
                            {"role": "user", "content": "and?"}],
               "tools": [{"type": "function", "function": {"name": "f", "strict": True, "parameters": {
                   "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}]}
    problems = acceptance_problems(chat, request)
    assert any("/messages/3: the calls ['call_2']" in problem for problem in problems), problems
    assert any("/tools/0/function/parameters: strict mode needs additionalProperties: false" in problem
               for problem in problems), problems
    anthropic = ADAPTERS["anthropic-messages"]
    last = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]}]}
    assert any("a tool_use turn is last" in problem for problem in acceptance_problems(anthropic, last))


def _signature_dropped(request: dict[str, Any]) -> None:
    """Gemini: the replayed call rebuilt from its name and arguments, its thoughtSignature gone (NVIDIA-NeMo/Gym#2374's
    class: "Function call is missing a thought_signature")."""
    for content in request["contents"]:
        for part in content.get("parts") or []:
            part.pop("thoughtSignature", None)


def _response_dropped(request: dict[str, Any]) -> None:
    """Gemini: one of two function responses left out of the turn that answers both calls."""
    for content in request["contents"]:
        responses = [part for part in content.get("parts") or [] if "functionResponse" in part]
        if len(responses) > 1:
            content["parts"].remove(responses[-1])


def _json_schema_as_parameters(request: dict[str, Any]) -> None:
    """Gemini: a JSON Schema, `$schema` and all, sent as `parameters` (the OpenAPI-subset Schema) instead of
    `parametersJsonSchema` (probelabs/probe#569's class: a keyword the dialect refuses)."""
    for tool in request.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            schema = declaration.pop("parametersJsonSchema", None)
            if schema is not None:
                declaration["parameters"] = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def _results_split(request: dict[str, Any]) -> None:
    """Bedrock: each toolResult in a user message of its own (genkit-ai/aws-bedrock-js-plugin#664's class)."""
    messages = request["messages"]
    for index, message in enumerate(messages):
        results = [block for block in message["content"] if "toolResult" in block]
        if len(results) > 1:
            message["content"] = [results[0]]
            messages.insert(index + 1, {"role": "user", "content": results[1:]})
            return


def _bounded_output(request: dict[str, Any]) -> None:
    """Anthropic: a length bound on a structured-output string (agentjido/req_llm#302's class: "property 'minimum'
    is not supported")."""
    request["output_config"]["format"]["schema"]["properties"]["order_id"]["maxLength"] = 12


MUTATIONS = [
    ("anthropic-messages", _bounded_output, "structured-output-schema",
     "/output_config/format/schema/properties/order_id/maxLength"),
    ("gemini", _signature_dropped, "thought-signature-sent-back", "/contents/1/parts/0/thoughtSignature"),
    ("gemini", _response_dropped, "function-responses-match-calls", "/contents/2/parts"),
    ("gemini", _json_schema_as_parameters, "schema-object-fields",
     "/tools/0/functionDeclarations/0/parameters/$schema"),
    ("bedrock-converse", _results_split, "tool-results-answer-tool-uses", "/messages/2/content"),
    ("bedrock-converse", _results_split, "roles-alternate", "/messages/3/role"),
]


@pytest.mark.parametrize(("provider", "change", "rule", "pointer"), MUTATIONS)
def test_each_quoted_rejection_passes_without_its_rule_and_fails_with_it(
        provider: str, change: Callable[[dict[str, Any]], None], rule: str, pointer: str) -> None:
    adapter = ADAPTERS[provider]
    case = "structured_output_valid" if rule == "structured-output-schema" else "parallel_tool_calls"
    assert _refusals(_row(provider, case)) == []  # the reference request breaks no rule
    without = [rule_ for rule_ in adapter.wire.acceptance if rule_.id != rule]  # type: ignore[union-attr]
    ADAPTERS[provider] = dataclasses.replace(adapter, wire=dataclasses.replace(adapter.wire, acceptance=tuple(without)))
    try:
        missed = _row(provider, case, change)
    finally:
        ADAPTERS[provider] = adapter
    assert not any(f"({rule}, " in failure for failure in missed["failures"])
    caught = _row(provider, case, change)
    assert not caught["passed"]
    assert any(f"({rule}, " in failure and f"): {pointer}: " in failure for failure in _refusals(caught)), \
        caught["failures"]


def _thinking_on(request: dict[str, Any]) -> None:
    """Anthropic: extended thinking on, as a team's request sets it (the recordings were made with it)."""
    request["thinking"] = {"type": "enabled", "budget_tokens": 1024}


def _thinking_dropped(request: dict[str, Any]) -> None:
    """Anthropic: thinking on, and the assistant turn sent back without its thinking block (opencode#3077's and
    Kilo-Org/kilocode#5219's "Expected `thinking` or `redacted_thinking`, but found `tool_use`")."""
    _thinking_on(request)
    for message in request["messages"]:
        if message["role"] == "assistant" and isinstance(message["content"], list):
            message["content"] = [block for block in message["content"] if block.get("type") != "thinking"]


def _signature_stripped(request: dict[str, Any]) -> None:
    """Anthropic: thinking on, the thinking block sent back without its signature (a history rebuilt from text)."""
    _thinking_on(request)
    for message in request["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            block.pop("signature", None)


@pytest.mark.parametrize(("change", "pointer"), [(_thinking_dropped, "/messages/1/content/0/type"),
                                                 (_signature_stripped, "/messages/1/content/0/signature")])
def test_a_thinking_turn_sent_back_without_its_thinking_block_is_refused_by_name(
        change: Callable[[dict[str, Any]], None], pointer: str) -> None:
    assert _refusals(_row("anthropic-messages", "normal", _thinking_on)) == []  # as received: accepted
    caught = _row("anthropic-messages", "normal", change)
    assert any("(thinking-blocks-first, " in failure and f"): {pointer}: " in failure
               for failure in _refusals(caught)), caught["failures"]
    off = _row("anthropic-messages", "normal", lambda request: (change(request), request.pop("thinking")))
    assert not any("thinking-blocks-first" in failure for failure in off["failures"])  # thinking off: no rule


@pytest.mark.parametrize("provider", ["gemini", "bedrock-converse"])
@pytest.mark.parametrize("case", ["parallel_tool_calls", "multi_turn_history", "structured_output_valid"])
def test_the_gemini_and_bedrock_requests_break_no_rule(provider: str, case: str) -> None:
    assert ADAPTERS[provider].wire.acceptance  # type: ignore[union-attr]
    assert _refusals(_row(provider, case)) == []


def test_the_schema_fields_are_the_sdk_types() -> None:
    from google.genai import types
    from pydantic.alias_generators import to_camel

    from conformance.providers.gemini.acceptance import SCHEMA_FIELDS

    assert frozenset(to_camel(name) for name in types.Schema.model_fields) == SCHEMA_FIELDS


def test_a_stack_request_the_vendor_refuses_is_a_finding_of_the_stack() -> None:
    from conformance.report.findings import compare_rows

    raw = _row("gemini", "parallel_tool_calls")
    layer = dict(_row("gemini", "parallel_tool_calls", _signature_dropped), provider="gemini@layer", stack="layer")
    found = {finding.field: finding for finding in compare_rows(raw, layer) if finding.field.startswith("request.")}
    refused = found["request.thought-signature-sent-back"]
    assert (refused.turn, refused.effect) == (2, "changed")
    assert "/contents/1/parts/0/thoughtSignature" in refused.meaning
    assert not [finding for finding in compare_rows(raw, dict(raw, provider="gemini@layer", stack="layer"))
                if finding.field.startswith("request.")]


def test_a_case_schema_the_dialect_refuses_is_caught_only_by_the_rule() -> None:
    """The case itself asks for a bound structured outputs refuse: the adapter sends the schema as the case states
    it, every other check passes, and only the rule says the vendor would answer 400."""
    from conformance.engine.request_check import check_requests

    adapter = ADAPTERS["anthropic-messages"]
    task = CASE_LIST["structured_output_valid"].task
    schema = copy.deepcopy(dict(task.output_schema or {}))
    schema["properties"]["order_id"]["maxLength"] = 12
    bounded = dataclasses.replace(task, output_schema=schema)
    request = adapter.build_request(bounded, [])
    without = dataclasses.replace(adapter, wire=dataclasses.replace(adapter.wire, acceptance=()))  # type: ignore[arg-type]
    assert check_requests(without, bounded, [request], [[]])[1] == []
    problems = check_requests(adapter, bounded, [request], [[]])[1]
    assert len(problems) == 1 and "(structured-output-schema, " in problems[0]
    assert "/output_config/format/schema/properties/order_id/maxLength" in problems[0]



@pytest.mark.parametrize("provider", sorted(ADAPTERS))
@pytest.mark.parametrize("body", [
    {"contents": 5, "messages": 5, "tools": 5, "input": 5},
    {"contents": {"0": 1}, "messages": {"a": 1}, "tools": [5], "generationConfig": {"responseSchema": [1]}},
    {"contents": [{"role": "model", "parts": [{"functionCall": {"id": ["x"], "name": {"a": 1}}}]},
                  {"role": "user", "parts": [{"functionResponse": {"id": ["x"], "name": 5}}]}],
     "messages": [{"role": "assistant", "content": [{"toolUse": {"toolUseId": ["x"]}}, {"type": "tool_use", "id": {}}]},
                  {"role": "user", "content": [{"toolResult": {"toolUseId": {}}}, {"type": "tool_result"}]}],
     "tools": [{"functionDeclarations": 5, "strict": True, "input_schema": {"properties": 5}}]},
])
def test_a_malformed_body_is_a_named_failure_never_a_raise(provider: str, body: dict[str, Any]) -> None:
    for problem in acceptance_problems(ADAPTERS[provider], body):
        assert problem.startswith(("the vendor would refuse it (", "the rule ")), problem


def test_bedrock_text_beside_results_is_refused() -> None:
    request = {"messages": [
        {"role": "user", "content": [{"text": "x"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "f", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "{}"}]}},
                                     {"text": "and then?"}]}]}
    problems = acceptance_problems(ADAPTERS["bedrock-converse"], request)
    assert [problem.split("): ", 1)[1] for problem in problems] == [
        "/messages/2/content: text blocks and toolResult blocks cannot be in the same turn"]


def test_schema_nodes_walk_the_dialects_subschema_keys_with_escaped_pointers() -> None:
    from conformance.kit.values import schema_nodes

    schema = {"type": "object", "properties": {"a/b": {"type": "array", "items": {"type": "string"}},
                                               "c": {"anyOf": [{"type": "integer"}, "not a schema"]}}}
    assert [pointer for pointer, _ in schema_nodes(schema, "/s", ("properties", "items", "anyOf"))] == [
        "/s", "/s/properties/a~1b", "/s/properties/a~1b/items", "/s/properties/c", "/s/properties/c/anyOf/0"]
    assert [pointer for pointer, _ in schema_nodes(schema, "/s", ("properties",))] == [
        "/s", "/s/properties/a~1b", "/s/properties/c"]


def _proto_names(value: Any) -> Any:
    """A Gemini request in the API's proto field names (``function_call``, ``thought_signature``), as LiteLLM sends
    it."""
    import re

    if isinstance(value, dict):
        return {re.sub(r"[A-Z]", lambda upper: "_" + upper.group().lower(), key): _proto_names(inner)
                for key, inner in value.items()}
    return [_proto_names(inner) for inner in value] if isinstance(value, list) else value


def test_gemini_rules_read_the_proto_spelling_of_calls_results_and_signatures() -> None:
    """The API parses both spellings of a field (protobuf JSON): a call without its signature, or a result left out,
    is refused in either."""
    gemini = ADAPTERS["gemini"]
    case = next(case for case in load_cases([CASES]) if case.id == "parallel_tool_calls")
    request = _proto_names(run_case_with_requests(case, "gemini", gemini, "body")[2][1])
    assert "function_call" in json.dumps(request) and acceptance_problems(gemini, request) == []
    unsigned = json.loads(json.dumps(request))
    for content in unsigned["contents"]:
        for part in content.get("parts") or []:
            part.pop("thought_signature", None)
    assert any("(thought-signature-sent-back, " in problem and "/contents/1/parts/0/thoughtSignature" in problem
               for problem in acceptance_problems(gemini, unsigned))
    unanswered = json.loads(json.dumps(request))
    unanswered["contents"][2]["parts"] = unanswered["contents"][2]["parts"][:1]
    assert any("(function-responses-match-calls, " in problem for problem in acceptance_problems(gemini, unanswered))


def test_gemini_schema_rule_reads_proto_spelled_declarations_and_fields() -> None:
    """`function_declarations` (LiteLLM's spelling) are held to the Schema's fields too, and a proto-spelled field
    (`max_items`) is one of them, not a stranger."""
    gemini = ADAPTERS["gemini"]
    parameters: dict[str, Any] = {"type": "object", "properties": {
        "ids": {"type": "array", "max_items": 3, "items": {"type": "string"}}}}
    request = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
               "tools": [{"function_declarations": [{"name": "get_order", "parameters": parameters}]}]}
    assert acceptance_problems(gemini, request) == []
    parameters["properties"]["ids"]["const"] = ["ORD-1001"]
    assert any("(schema-object-fields, " in problem and "/functionDeclarations/0/parameters/properties/ids/const"
               in problem for problem in acceptance_problems(gemini, request))
