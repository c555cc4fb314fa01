"""Checks a JSON body against a botocore ``bedrock-runtime`` shape, strictly: unknown members and enum values fail.

botocore itself never validates what it parses, so this walks the service model and reports every violation
with its JSON path at once. Test-only: the adapters never import botocore.
"""

from __future__ import annotations

import base64
import binascii
from functools import lru_cache
from typing import Any

from botocore.model import ListShape, MapShape, ServiceModel, Shape, StructureShape

SERVICE = "bedrock-runtime"

# Members bound to the URL or headers are not part of a rest-json body.
NON_BODY_LOCATIONS = frozenset({"uri", "querystring", "header", "headers", "statusCode"})


@lru_cache(maxsize=1)
def service_model() -> ServiceModel:
    import botocore.session

    return botocore.session.get_session().get_service_model(SERVICE)


def resolve_shape(shape_name_or_operation_output: str | Shape) -> Shape:
    """A Shape as given, a shape name (``ConverseResponse``), or an operation name (``Converse``) → its output."""
    if isinstance(shape_name_or_operation_output, Shape):
        return shape_name_or_operation_output
    model = service_model()
    if shape_name_or_operation_output in model.operation_names:
        output = model.operation_model(shape_name_or_operation_output).output_shape
        assert output is not None, f"operation {shape_name_or_operation_output} has no output shape"
        return output
    return model.shape_for(shape_name_or_operation_output)


def shape_violations(body: Any, shape_name_or_operation_output: str | Shape) -> list[str]:
    """Every violation of the shape in ``body``, as ``<json path>: expected …, got …``."""
    violations: list[str] = []
    _walk(body, resolve_shape(shape_name_or_operation_output), "$", violations)
    return violations


def validate_shape(body: Any, shape_name_or_operation_output: str | Shape) -> None:
    """Raise AssertionError listing every violation when ``body`` does not fit the shape."""
    shape = resolve_shape(shape_name_or_operation_output)
    violations = shape_violations(body, shape)
    if violations:
        listing = "\n  ".join(violations)
        raise AssertionError(f"{len(violations)} violation(s) of {SERVICE} shape {shape.name}:\n  {listing}")


def validate_converse_response(body: Any) -> None:
    """A Converse success body (HTTP 200) against ``ConverseResponse``."""
    validate_shape(body, "ConverseResponse")


def validate_converse_request(body: Any) -> None:
    """A Converse request body against ``ConverseRequest``, minus ``modelId`` (it travels in the URL)."""
    validate_shape(body, "ConverseRequest")


def converse_stream_event_violations(event: Any) -> list[str]:
    """One decoded ConverseStream event, ``{"<member>": payload}`` as boto3 yields it, against the member shapes
    of ``ConverseStreamOutput`` (events and exceptions alike): exactly one known member, its payload strict."""
    shape = resolve_shape("ConverseStreamOutput")
    if not isinstance(event, dict) or len(event) != 1:
        return [f"$: expected a one-member object naming a {shape.name} member, got {_describe(event)}"]
    return shape_violations(event, shape)


def _walk(value: Any, shape: Shape, path: str, violations: list[str]) -> None:
    if isinstance(shape, StructureShape):
        _walk_structure(value, shape, path, violations)
    elif isinstance(shape, ListShape):
        if not isinstance(value, list):
            violations.append(f"{path}: expected a list ({shape.name}), got {_describe(value)}")
            return
        for index, item in enumerate(value):
            _walk(item, shape.member, f"{path}[{index}]", violations)
    elif isinstance(shape, MapShape):
        if not isinstance(value, dict):
            violations.append(f"{path}: expected an object ({shape.name}), got {_describe(value)}")
            return
        for key, item in value.items():
            _walk(key, shape.key, f"{path}<key {key!r}>", violations)
            _walk(item, shape.value, f"{path}.{key}", violations)
    else:
        problem = _scalar_problem(value, shape)
        if problem:
            violations.append(f"{path}: {problem}")


def _walk_structure(value: Any, shape: StructureShape, path: str, violations: list[str]) -> None:
    if shape.is_document_type:
        return
    if not isinstance(value, dict):
        violations.append(f"{path}: expected an object ({shape.name}), got {_describe(value)}")
        return
    members = {
        member.serialization.get("jsonName", name): member
        for name, member in shape.members.items()
        if member.serialization.get("location") not in NON_BODY_LOCATIONS
    }
    required = [
        name for name in shape.required_members
        if shape.members[name].serialization.get("location") not in NON_BODY_LOCATIONS
    ]
    violations.extend(
        f"{path}.{name}: unknown member of {shape.name} (known: {', '.join(members)})"
        for name in value if name not in members
    )
    violations.extend(f"{path}.{name}: required member of {shape.name} is missing"
                      for name in required if name not in value)
    present = [name for name in value if name in members and value[name] is not None]
    if shape.is_tagged_union and len(present) != 1:
        violations.append(f"{path}: union {shape.name} needs exactly one member set, got {present or 'none'}")
    for name in present:
        _walk(value[name], members[name], f"{path}.{name}", violations)


def _scalar_problem(value: Any, shape: Shape) -> str | None:
    type_name = shape.type_name
    if type_name == "string":
        if not isinstance(value, str):
            return f"expected a string ({shape.name}), got {_describe(value)}"
        if shape.enum and value not in shape.enum:
            return f"{value!r} is not one of {shape.name} {shape.enum}"
        return None
    if type_name in ("integer", "long"):
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"expected an integer ({shape.name}), got {_describe(value)}"
    if type_name in ("double", "float"):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else f"expected a number ({shape.name}), got {_describe(value)}"
    if type_name == "boolean":
        return None if isinstance(value, bool) else f"expected a boolean ({shape.name}), got {_describe(value)}"
    if type_name == "timestamp":
        # rest-json sends epoch seconds unless the shape names another timestampFormat (an ISO string).
        ok = isinstance(value, int | float | str) and not isinstance(value, bool)
        return None if ok else f"expected a timestamp ({shape.name}), got {_describe(value)}"
    if type_name == "blob":
        return _blob_problem(value, shape)
    return f"shape type {type_name} ({shape.name}) is not handled by this checker"


def _blob_problem(value: Any, shape: Shape) -> str | None:
    # A blob travels base64-encoded in JSON.
    if not isinstance(value, str):
        return f"expected a base64 string ({shape.name}), got {_describe(value)}"
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return f"expected a base64 string ({shape.name}), got {value[:40]!r}"
    return None


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}"
