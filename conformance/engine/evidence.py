"""Is a text answer true to the receipts? The check behind ``answer_ready`` (docs/contract.md, "Verification").

With an output schema the answer's scalar values are compared exactly. In free text a substring test is not
enough ("ORD-1001 has NOT shipped" contains both facts), so a fact counts as stated only when:

1. its value appears as a whole token (``ORD-1001`` does not match ``ORD-10011``), case-insensitively;
2. at least one such mention is not negated: no ``not``, ``no``, ``never``, ``cannot``, ``…n't`` or
   ``yet to`` among the three words before it in the same clause (clauses end at ``, ; : . ! ?`` and ``but``);
3. no other value the world knows for that field (another order's id, another status) is stated, unnegated,
   unless a receipt of the same exchange supports it: "ORD-1001 is processing" beside the right status, or a
   status given for a record nobody looked up, is a contradiction.

Limits: paraphrases ("dispatched" for ``shipped``) are not understood and read as missing; a negation further
away, irony or a conditional are not detected. Cases that need an exact check should ask for an output schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from conformance.engine.world import FunctionTool, LookupTool, RecordsTool, World

NEGATIONS = frozenset({"not", "no", "never", "cannot", "neither", "nor", "without"})
_CLAUSE_END = re.compile(r"[,;:.!?](?:\s|$)|\n|\bbut\b", re.IGNORECASE)
_WORD = re.compile(r"[\w']+")


def verify_text(text: str, parsed: Any, structured: bool, evidence: list[Mapping[str, Any]],
                answer_contains: Iterable[str], world: World, tools: Iterable[str]) -> list[str]:
    """What the answer fails to state truthfully (empty when it states everything)."""
    if structured:
        stated = _scalars(parsed)
        missing = [f"{name}={value}" for facts in evidence for name, value in facts.items()
                   if str(value).casefold() not in stated]
        missing += [repr(expected) for expected in answer_contains if expected.casefold() not in stated]
        return [f"does not state {', '.join(missing)}"] if missing else []
    problems: list[str] = []
    supported: dict[str, set[str]] = {}
    for facts in evidence:
        for name, value in facts.items():
            supported.setdefault(name, set()).add(str(value).casefold())
    for facts in evidence:
        for name, value in facts.items():
            problem = _fact_problem(text, f"{name}={value}", str(value))
            if problem:
                problems.append(problem)
    for expected in answer_contains:
        problem = _fact_problem(text, repr(expected), expected, whole_token=False)
        if problem:
            problems.append(problem)
    domains = _domains(world, tools, supported)
    for name, others in sorted(domains.items()):
        for other in sorted(others):
            if _mentions(text, other, whole_token=True, unnegated=True):
                problems.append(f"also states {name}={other}, which no receipt supports")
    return problems


def _fact_problem(text: str, label: str, value: str, *, whole_token: bool = True) -> str | None:
    if not _mentions(text, value, whole_token=whole_token, unnegated=False):
        return f"does not state {label}"
    if not _mentions(text, value, whole_token=whole_token, unnegated=True):
        return f"negates {label}"
    return None


def _mentions(text: str, value: str, *, whole_token: bool, unnegated: bool) -> bool:
    if not value:
        return False
    escaped = re.escape(value)
    pattern = rf"(?<![\w-]){escaped}(?!-?\w)" if whole_token else escaped
    for match in re.finditer(pattern, text, re.IGNORECASE):
        if not unnegated or not _negated(text[: match.start()]):
            return True
    return False


def _negated(before: str) -> bool:
    """Whether the clause that ends at this point has a negation among its last three words."""
    clause = _CLAUSE_END.split(before)[-1]
    words = [word.casefold() for word in _WORD.findall(clause)][-3:]
    joined = " ".join(words)
    return any(word in NEGATIONS or word.endswith("n't") for word in words) or "yet to" in joined


def _domains(world: World, tools: Iterable[str], supported: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Per evidence field, the other values the world knows for it (its records, and what writes set)."""
    domains: dict[str, set[str]] = {}
    for name in tools:
        tool = world.tools.get(name)
        if tool is None:
            continue
        # A function's domain is what it declares; a python tool's is unknown (nothing to contradict with).
        records: Mapping[str, Mapping[str, Any]] = {}
        key, sets = "", {}
        if isinstance(tool, FunctionTool):
            records = {str(index): dict(result) for index, (_, result) in enumerate(tool.results)}
        elif isinstance(tool, RecordsTool):
            records, key = world.data.get(tool.collection, {}), tool.key
            sets = dict(tool.sets) if isinstance(tool, LookupTool) else {}
        for field in tool.evidence:
            values = {str(record_key) for record_key in records} if field == key else {
                str(record.get(field)) for record in records.values() if record.get(field) is not None}
            if field in sets:
                values.add(str(sets[field]))
            known = supported.get(field, set())
            domains.setdefault(field, set()).update(value for value in values if value.casefold() not in known)
    return {field: values for field, values in domains.items() if field in supported}


def _scalars(value: Any) -> set[str]:
    if isinstance(value, dict):
        return {item for child in value.values() for item in _scalars(child)}
    if isinstance(value, list):
        return {item for child in value for item in _scalars(child)}
    return {str(value).casefold()}
