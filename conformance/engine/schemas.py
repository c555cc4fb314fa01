"""The JSON Schemas shipped with the suite, each compiled once."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

SCHEMA_DIR = Path(__file__).parent.parent / "schema"


@cache
def validator(name: str) -> Draft202012Validator:
    """The compiled validator of a schema shipped in conformance/schema."""
    schema = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@lru_cache(maxsize=256)
def compiled(schema_text: str) -> Draft202012Validator:
    """A validator for a schema given as canonical JSON text (tool parameters, output schemas)."""
    return Draft202012Validator(json.loads(schema_text))


@cache
def generated(name: str) -> Callable[[Any], Any]:
    """A generated validator of a schema shipped in conformance/schema (``fastjsonschema``: Python code compiled
    from the schema once, about 14 times faster than ``jsonschema``'s interpretive walk on a case file), which only
    says whether a document is valid. The shipped schemas use draft 2020-12's ``$schema`` and only keywords draft 7
    has with the same meaning, so they compile as draft 7; ``$id`` is dropped so that every ``$ref`` resolves inside
    the schema. ``tests/test_case_schema.py`` checks that it and ``validator`` agree on every document the suite
    ships and on mutations of them."""
    import fastjsonschema  # noqa: PLC0415 - compiling is a case load's business, not an import's

    schema = {key: value for key, value in json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8")).items()
              if key != "$id"}
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    return fastjsonschema.compile(schema, use_default=False)


def schema_errors(name: str, document: Any) -> Iterator[tuple[str, str, str]]:
    """(JSON pointer, what is wrong, how to fix) for every violation, deepest first. A valid document (nearly every
    one) is told apart by the generated validator (``generated``); only an invalid one is walked by ``jsonschema``,
    whose errors the messages are made of."""
    from fastjsonschema import JsonSchemaException  # noqa: PLC0415

    try:
        generated(name)(document)
        return
    except JsonSchemaException:
        pass
    for error in sorted(validator(name).iter_errors(document), key=lambda e: (list(e.absolute_path), e.message)):
        yield from _explain(error)


def _pointer(path: Any) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _explain(error: ValidationError) -> Iterator[tuple[str, str, str]]:
    pointer = _pointer(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted((error.schema.get("properties") or {}).keys())
        for key in sorted(set(error.instance) - set(known)):
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"valid keys: {', '.join(known)}"
            yield f"{pointer}/{key}", f"unknown key '{key}'", hint
        return
    if error.validator == "required":
        yield pointer, error.message, "add the missing key"
        return
    if error.validator in ("oneOf", "anyOf") and error.context:
        best = min(error.context, key=lambda sub: len(list(sub.absolute_path)))
        yield pointer, f"{best.message} (one of several accepted shapes)", "see the case schema for the accepted shapes"
        return
    if error.validator == "type":
        yield pointer, f"expected {error.validator_value}, got {type(error.instance).__name__}: {error.message}", (
            f"write a value of type {error.validator_value}"
        )
        return
    yield pointer, error.message, "see conformance/schema for the allowed values"


def schema_definition_problems(schema: Any) -> list[str]:
    """What makes ``schema`` (a case's output schema, a tool's parameters) not a usable JSON Schema: a
    metaschema violation (``type: banana``, a pattern that is not a regex) or a ``$ref`` that resolves to
    nothing inside it. Checked when the case loads, so a bad schema is the case's error, not the adapter's."""
    try:
        Draft202012Validator.check_schema(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    except SchemaError as error:
        where = _pointer(error.absolute_path)
        return [f"{error.message}" + (f" (at {where})" if where else "")]
    resolver = Registry().with_resource(_SCHEMA_URI, DRAFT202012.create_resource(schema)).resolver(_SCHEMA_URI)
    problems = []
    for reference in _references(schema):
        try:
            resolver.lookup(reference)
        except Unresolvable:
            problems.append(f"$ref '{reference}' points at nothing")
    return problems


_SCHEMA_URI = "urn:conformance:schema"


def _references(schema: Any) -> Iterator[str]:
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                yield node["$ref"]
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
