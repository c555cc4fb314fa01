"""The contract's words live once, in conformance/kit/types.py; the case schema and docs/contract.md list the same."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

from conformance.kit.types import KINDS, OUTCOMES, USAGE_FIELDS, IncompleteReason, RefusalSource

ROOT = Path(__file__).parent.parent
SCHEMA = json.loads((ROOT / "conformance/schema/case.schema.json").read_text(encoding="utf-8"))
CONTRACT = (ROOT / "docs/contract.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    return CONTRACT.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_case_schema_lists_the_kinds_and_outcomes_of_the_code() -> None:
    assert SCHEMA["$defs"]["kind"]["enum"] == list(KINDS)
    assert SCHEMA["$defs"]["outcome"]["enum"] == list(OUTCOMES)


def test_the_case_schema_lists_the_usage_fields_of_the_code() -> None:
    enums = [node["items"]["enum"] for node in _walk(SCHEMA) if isinstance(node.get("items"), dict)
             and "enum" in node["items"] and node["items"]["enum"][0] == "input_tokens"]
    assert enums and all(enum == list(USAGE_FIELDS) for enum in enums)


def test_the_contract_doc_names_every_kind_outcome_and_usage_field() -> None:
    kinds = re.findall(r"^\| `(\w+)` \|", _section("Kinds: what one response means"), re.MULTILINE)
    assert kinds == list(KINDS)
    outcomes = re.findall(r"`(\w+)`", _section("Outcomes: what the business got"))
    assert outcomes == list(OUTCOMES)
    assert re.findall(r"`(\w+)`", _section("Usage"))[: len(USAGE_FIELDS)] == list(USAGE_FIELDS)


def test_the_contract_doc_names_the_refusal_sources_and_incomplete_reasons() -> None:
    kinds = _section("Kinds: what one response means")
    refusal = next(line for line in kinds.splitlines() if line.startswith("| `refusal`"))
    incomplete = next(line for line in kinds.splitlines() if line.startswith("| `incomplete`"))
    assert re.findall(r"`(model|filter)`", refusal) == list(get_args(RefusalSource))
    assert re.findall(r"`(\w+)`", incomplete.split("`reason`:")[1]) == list(get_args(IncompleteReason))


def _walk(node: object) -> list[dict]:
    found: list[dict] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, dict):
            found.append(current)
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)
    return found
