"""The JSON Schemas shipped with the suite, each compiled once."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

SCHEMA_DIR = Path(__file__).parent / "schema"


@cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@lru_cache(maxsize=256)
def compiled(schema_text: str) -> Draft202012Validator:
    """A validator for a schema given as canonical JSON text (tool parameters, output schemas)."""
    return Draft202012Validator(json.loads(schema_text))


def schema_errors(name: str, document: Any) -> Iterator[tuple[str, str, str]]:
    """(JSON pointer, what is wrong, how to fix) for every violation, deepest first."""
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
