"""The generated validator of the case and world schemas (``conformance.engine.schemas.generated``) and jsonschema's
agree: on every case and world file the suite ships or tests with, and on deterministic mutations of each (a key
dropped, a value of another type, an unknown key). A document the generated validator passes is never one jsonschema
would refuse: the messages come from jsonschema, so the other direction only costs time."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastjsonschema import JsonSchemaException

from conformance.engine.schemas import generated, schema_errors, validator
from conformance.engine.yamlfile import load_yaml
from conformance.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = [ROOT / "cases", ROOT / "tests" / "frozen_cases", ROOT / "tests" / "broken_cases",
           ROOT / "conformance" / "templates" / "init"]
SCHEMAS = {"case.yaml": "case.schema.json", "world.yaml": "world.schema.json"}
REPLACEMENTS: list[Any] = [None, 0, -1, 1.5, "", "x", [], {}, True, ["x"], {"zz": 1}]


def _documents() -> Iterator[tuple[str, str, Any]]:
    for folder in FOLDERS:
        for path in sorted(folder.rglob("*.yaml")):
            if path.name not in SCHEMAS or path.is_symlink():
                continue
            try:
                document, _ = load_yaml(path, str(path.relative_to(ROOT)))
            except InputError:
                continue  # not YAML at all (a broken case's point): never reaches a schema
            yield str(path.relative_to(ROOT)), SCHEMAS[path.name], document


DOCUMENTS = list(_documents())


def _passes(schema: str, document: Any) -> bool:
    try:
        generated(schema)(document)
    except JsonSchemaException:
        return False
    return True


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _mutants(document: Any) -> Iterator[Any]:
    """Every node changed once, the change chosen by the node's position, so that each kind of change meets nodes
    of every depth without the product of the two."""
    for index, path in enumerate(_paths(document)):
        if not path:
            continue
        changed = copy.deepcopy(document)
        parent = changed
        for step in path[:-1]:
            parent = parent[step]
        kind = index % (len(REPLACEMENTS) + 2)
        if kind == len(REPLACEMENTS):
            del parent[path[-1]]
        elif kind == len(REPLACEMENTS) + 1:
            if not isinstance(parent, dict):
                continue
            parent["zz_unknown"] = 1
        else:
            parent[path[-1]] = REPLACEMENTS[kind]
        yield changed


def test_the_documents_cover_the_catalogue_the_broken_cases_and_both_schemas() -> None:
    names = {name for name, _, _ in DOCUMENTS}
    assert sum(name.startswith("cases/") for name in names) >= 32  # 31 cases and the world
    assert sum(name.startswith("tests/broken_cases/") for name in names) >= 30
    assert {schema for _, schema, _ in DOCUMENTS} == set(SCHEMAS.values())
    invalid = [name for name, schema, document in DOCUMENTS if not validator(schema).is_valid(document)]
    assert len(invalid) >= 2, invalid  # the broken cases that break the schema (wrong_type, unknown_key)


@pytest.mark.parametrize(("name", "schema", "document"), DOCUMENTS, ids=[name for name, _, _ in DOCUMENTS])
def test_both_validators_agree_on_the_file(name: str, schema: str, document: Any) -> None:
    assert _passes(schema, document) == validator(schema).is_valid(document)


def test_both_validators_agree_on_mutations_of_every_file() -> None:
    checked = refused = 0
    for name, schema, document in DOCUMENTS:
        for mutant in _mutants(document):
            expected = validator(schema).is_valid(mutant)
            assert _passes(schema, mutant) == expected, (name, mutant)
            checked += 1
            refused += not expected
    assert checked > 2000 and refused > checked // 4, (checked, refused)


def test_an_invalid_document_is_still_explained_by_jsonschema() -> None:
    name, schema, document = next(item for item in DOCUMENTS if item[0].startswith("cases/normal/"))
    broken = {**document, "zz_unknown": 1}
    assert not _passes(schema, broken)
    assert [pointer for pointer, _, _ in schema_errors(schema, broken)] == ["/zz_unknown"]
    assert "zz_unknown" in next(message for _, message, _ in schema_errors(schema, broken))
    assert list(schema_errors(schema, document)) == []
