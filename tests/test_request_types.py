"""Every request every built-in adapter builds, for every turn of every bundled case, is valid for the vendor: it
validates against the vendor SDK's own request types, with a key the SDK does not know refused (docs/contract.md,
"Requests"). The SDKs are test-only; the adapters never import them."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import botocore.session
import pydantic
import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from botocore.validate import ParamValidator
from google.genai import types as genai
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from typing_extensions import is_typeddict

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.request_check import canonical
from conformance.engine.runner import modes_for, run_case_with_requests
from tests.helpers import CASES

ADAPTERS = builtin_adapters()


@cache
def built_requests() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Per provider, every distinct request built for the bundled cases, each named by case, mode and turn."""
    found: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {provider: {} for provider in ADAPTERS}
    for case in load_cases([CASES]):
        for provider, adapter in ADAPTERS.items():
            if provider not in case.providers:
                continue
            for mode in modes_for(case, provider, adapter):
                _, _, requests = run_case_with_requests(case, provider, adapter, mode)
                for turn, request in enumerate(requests, start=1):
                    found[provider].setdefault(canonical(request), (f"{case.id} [{mode}] turn {turn}", request))
    return {provider: list(requests.values()) for provider, requests in found.items()}


# ---- TypedDict request types (openai, anthropic): values by pydantic, keys by the TypedDicts themselves ----------

def key_problems(value: Any, hint: Any, where: str = "") -> list[str]:
    """Every key of ``value`` its TypedDict does not declare, and every required key missing, by JSON pointer.
    Pydantic validates the values; it ignores a TypedDict's unknown keys, which the vendors refuse."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Required, typing.NotRequired, typing.Annotated):
        return key_problems(value, arguments[0], where)
    if origin in (typing.Union, types.UnionType):
        # Only the members that can hold this value: a scalar or None member would "match" an object trivially.
        members = [member for member in arguments if _can_hold(value, member)]
        found = [key_problems(value, member, where) for member in members]
        return min(found, key=len) if found else []
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where or '/'}: not an object"]
        hints = typing.get_type_hints(hint, include_extras=True)
        problems = [f"{where}/{key}: not a key of {hint.__name__}" for key in value if key not in hints]
        problems += [f"{where}/{key}: required by {hint.__name__}" for key in hint.__required_keys__
                     if key not in value]
        for key, item in value.items():
            if key in hints:
                problems += key_problems(item, hints[key], f"{where}/{key}")
        return problems
    if origin is not None and isinstance(origin, type) and issubclass(origin, Iterable) and not issubclass(
            origin, (str, bytes, Mapping)) and arguments:
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [problem for index, item in enumerate(value)
                for problem in key_problems(item, arguments[0], f"{where}/{index}")]
    return []


@cache
def _type_adapter(tp: Any) -> pydantic.TypeAdapter[Any]:
    # Kept alive: the lazy iterators of an `Iterable[...]` field need their validator while they are drained.
    return pydantic.TypeAdapter(tp)


def _can_hold(value: Any, hint: Any) -> bool:
    """Whether ``hint`` is a type an object (or a list) could be validated as."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Required, typing.NotRequired, typing.Annotated):
        return _can_hold(value, arguments[0])
    if origin in (typing.Union, types.UnionType):
        return any(_can_hold(value, member) for member in arguments)
    if isinstance(value, dict):
        return is_typeddict(hint) or (isinstance(origin, type) and issubclass(origin, Mapping)) or hint in (
            dict, object, Any)
    if isinstance(value, list):
        return isinstance(origin, type) and issubclass(origin, Iterable) and not issubclass(origin, (str, Mapping))
    return True


def _validate_typeddict(tp: Any, request: dict[str, Any]) -> None:
    _drain(_type_adapter(tp).validate_python(request))
    problems = key_problems(request, tp)
    if problems:
        raise ValueError("; ".join(problems))


def _drain(value: Any) -> Any:
    """Pydantic validates an ``Iterable[...]`` field lazily: iterate every one, so each item is validated."""
    if isinstance(value, dict):
        return {key: _drain(item) for key, item in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, (list, tuple)) or hasattr(value, "__next__"):
        return [_drain(item) for item in value]
    return value


TYPED = {
    "openai-responses": ResponseCreateParamsNonStreaming,
    "openai-chat": CompletionCreateParamsNonStreaming,
    "anthropic-messages": MessageCreateParamsNonStreaming,
}


@pytest.mark.parametrize("provider", sorted(TYPED))
def test_every_built_request_validates_against_the_sdk_request_type(provider: str) -> None:
    requests = built_requests()[provider]
    assert len(requests) > 20
    for name, request in requests:
        try:
            _validate_typeddict(TYPED[provider], request)
        except (ValueError, pydantic.ValidationError) as error:
            pytest.fail(f"{provider} {name}: {error}")


@pytest.mark.parametrize(("provider", "change"), [
    ("openai-responses", lambda request: request.update(instructionz="x")),
    ("openai-responses", lambda request: request["tools"][0].update(type="functon")),
    ("openai-chat", lambda request: request["messages"][0].update(role="sytem")),
    ("openai-chat", lambda request: request["tools"][0]["function"].update(parameter={})),
    ("anthropic-messages", lambda request: request.update(max_tokens="many")),
    ("anthropic-messages", lambda request: request["tools"][0].update(inputSchema={})),
    ("anthropic-messages", lambda request: request["messages"][0].update(role="tool")),
])
def test_a_key_or_value_the_vendor_does_not_accept_fails(provider: str, change: Any) -> None:
    request = json.loads(json.dumps(next(r for _, r in built_requests()[provider] if r.get("tools"))))
    change(request)
    with pytest.raises((ValueError, pydantic.ValidationError)):
        _validate_typeddict(TYPED[provider], request)


# ---- Gemini: the REST body's parts, against google-genai's models (camelCase aliases, extra keys forbidden) --------

GEMINI_SLOTS: dict[str, Any] = {
    "systemInstruction": genai.Content,
    "toolConfig": genai.ToolConfig,
    "generationConfig": genai.GenerationConfig,
}
GEMINI_LISTS: dict[str, Any] = {"contents": genai.Content, "tools": genai.Tool}


def _validate_gemini(request: dict[str, Any]) -> None:
    unknown = set(request) - set(GEMINI_SLOTS) - set(GEMINI_LISTS)
    if unknown:
        raise ValueError(f"keys the generateContent body does not have: {sorted(unknown)}")
    for key, model in GEMINI_SLOTS.items():
        if key in request:
            model.model_validate(request[key])
    for key, model in GEMINI_LISTS.items():
        for item in request.get(key, []):
            model.model_validate(item)


def test_every_gemini_request_validates_against_the_sdk_types() -> None:
    requests = built_requests()["gemini"]
    assert len(requests) > 20
    for name, request in requests:
        try:
            _validate_gemini(request)
        except (ValueError, pydantic.ValidationError) as error:
            pytest.fail(f"gemini {name}: {error}")


@pytest.mark.parametrize("change", [
    lambda request: request.update(system_instructions={"parts": []}),
    lambda request: request["contents"][0]["parts"][0].update(txt="x"),
    lambda request: request["generationConfig"].update(maxOutputTokens="many"),
    lambda request: request["tools"][0]["functionDeclarations"][0].update(parametersSchema={}),
])
def test_a_gemini_key_or_value_the_api_does_not_accept_fails(change: Any) -> None:
    request = json.loads(json.dumps(next(r for _, r in built_requests()["gemini"] if r.get("tools"))))
    change(request)
    with pytest.raises((ValueError, pydantic.ValidationError)):
        _validate_gemini(request)


# ---- Bedrock: botocore's Converse input shape (the service model botocore ships), modelId from the URL -----------

@cache
def _converse_input() -> Any:
    return botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse").input_shape


def _converse_problems(request: dict[str, Any]) -> str:
    report = ParamValidator().validate({"modelId": "model-under-test", **request}, _converse_input())
    return report.generate_report() if report.has_errors() else ""


def test_every_bedrock_request_validates_against_the_converse_input_shape() -> None:
    requests = built_requests()["bedrock-converse"]
    assert len(requests) > 20
    for name, request in requests:
        assert _converse_problems(request) == "", name


@pytest.mark.parametrize("change", [
    lambda request: request.update(tool_config={}),
    lambda request: request["inferenceConfig"].update(maxTokens="512"),
    lambda request: request["messages"][0]["content"][0].update(txt="x"),
    lambda request: request["toolConfig"]["tools"][0]["toolSpec"].update(input_schema={}),
])
def test_a_converse_key_or_value_the_service_does_not_accept_fails(change: Any) -> None:
    request = json.loads(json.dumps(next(r for _, r in built_requests()["bedrock-converse"] if r.get("toolConfig"))))
    change(request)
    assert _converse_problems(request) != ""


@pytest.mark.parametrize(("provider", "pick", "change"), [
    ("openai-responses", lambda r: True, lambda r: r["input"][0].update(rolee="user")),
    ("openai-responses", lambda r: any(i.get("type") == "function_call_output" for i in r["input"]),
     lambda r: next(i for i in r["input"] if i.get("type") == "function_call_output").update(callid="x")),
    ("anthropic-messages", lambda r: "output_config" in r, lambda r: r["output_config"]["format"].update(schemaa={})),
    ("anthropic-messages", lambda r: any(isinstance(m["content"], list) and m["role"] == "user"
                                         for m in r["messages"]),
     lambda r: next(m for m in r["messages"] if m["role"] == "user" and isinstance(m["content"], list))[
         "content"][0].update(tool_use_idd="x")),
    ("openai-chat", lambda r: any(m["role"] == "tool" for m in r["messages"]),
     lambda r: next(m for m in r["messages"] if m["role"] == "tool").update(call_id="x")),
])
def test_an_unknown_key_deep_inside_a_union_slot_fails(provider: str, pick: Any, change: Any) -> None:
    request = json.loads(json.dumps(next(r for _, r in built_requests()[provider] if pick(r))))
    _validate_typeddict(TYPED[provider], request)  # valid as built
    change(request)
    with pytest.raises((ValueError, pydantic.ValidationError)):
        _validate_typeddict(TYPED[provider], request)
