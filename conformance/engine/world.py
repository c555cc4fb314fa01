"""The deterministic fixture world: the tools cases may offer and the records they touch.

Tools run with the principal of the trusted session, never with identity taken from model arguments. A tool is
one of four kinds (``kind`` in ``world.yaml``; docs/world.md):

- ``lookup`` (the default): one record of a collection by its key, read, or written with the case's approval;
- ``search``: the records of a collection whose fields match the arguments (``filters``), only those the
  principal may see;
- ``function``: a pure function of its arguments with declared results (a calculator, a converter);
- ``python``: a callable of the team's own (``module:function`` or ``path/to/file.py:function``) given the
  arguments and the principal, returning the object sent back to the model.

A record with a ``tenant`` belongs to it (and to its ``user`` when it has one); a record without one is shared.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from conformance.kit.task import ToolSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """Who the session acts for; comes from the case, never from the model."""

    tenant: str
    user: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolBase:
    """What every tool of the world has: what it offers the model, and the receipt fields a verified answer states."""

    name: str
    description: str
    access: str = "read"
    """``read`` or ``write``; a write runs only with the case's approval."""
    parameters: Mapping[str, Any]
    evidence: tuple[str, ...] = ()
    """Receipt fields a verified answer must state (for a search: of every record found)."""

    def spec(self) -> ToolSpec:
        """What the tool offers the model: its name, description and parameters."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordsTool(ToolBase):
    """A tool over the records of ``collection``, keyed by the field ``key``; ``returns`` the fields sent back."""

    collection: str
    key: str
    returns: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LookupTool(RecordsTool):
    """``lookup``: one record of ``collection`` by the argument ``key``, read, or written (``sets``) when approved."""

    kind: ClassVar[str] = "lookup"
    sets: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchTool(RecordsTool):
    """``search``: the visible records of ``collection`` whose fields match the arguments."""

    kind: ClassVar[str] = "search"
    filters: Mapping[str, str] = field(default_factory=dict)
    """Argument name → record field it must match."""
    match: str = "exact"
    """``exact`` (case-insensitive equality) or ``contains`` (case-insensitive substring)."""
    limit: int = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionTool(ToolBase):
    """``function``: a pure function of its arguments with declared results."""

    kind: ClassVar[str] = "function"
    results: tuple[tuple[Mapping[str, Any], Mapping[str, Any]], ...] = ()
    """(arguments, result) pairs, matched on equal arguments."""
    default: Mapping[str, Any] | None = None
    """The result for arguments no pair declares (else the call is an error)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallableTool(ToolBase):
    """``python``: the team's callable, given the arguments and the principal."""

    kind: ClassVar[str] = "python"
    function: Callable[[Mapping[str, Any], Principal], Mapping[str, Any]] = field(compare=False)


Tool = LookupTool | SearchTool | FunctionTool | CallableTool
"""A tool is one of four kinds, as the world schema's ``oneOf`` says."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Receipt:
    """What one tool execution returned, and whether it was refused."""

    output: Mapping[str, Any]
    """The object sent back to the model."""
    is_error: bool = False
    denied: str | None = None
    """``permission_denied`` or ``approval_required`` when the call was refused for the principal."""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    """The fields a verified answer must state (empty for errors)."""
    evidence_records: tuple[Mapping[str, Any], ...] = ()
    """A search's evidence: the fields to state of each record found."""


@dataclass(slots=True)
class World:
    """Tools plus data; ``fork`` gives each run its own copy so writes never leak between runs."""

    tools: dict[str, Tool]
    data: dict[str, dict[str, dict[str, Any]]]
    writes: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_document(cls, document: Mapping[str, Any],
                      load: Callable[[str], Any] | None = None) -> World:
        """The world of a validated ``world.yaml`` document; ``load`` imports a python tool's callable."""
        tools = {name: _tool(name, spec, load) for name, spec in document["tools"].items()}
        return cls(tools=tools, data=copy.deepcopy(dict(document["data"])))

    def fork(self) -> World:
        """A private copy of the data (records hold scalars, so copying each record is enough)."""
        data = {name: {key: dict(record) for key, record in records.items()} for name, records in self.data.items()}
        return World(tools=self.tools, data=data)

    def execute(self, tool: Tool, arguments: Mapping[str, Any], principal: Principal, approved: bool) -> Receipt:
        """Run ``tool`` for ``principal``. Arguments choose the record, never who is asking. A write other than a
        lookup's is refused without approval before it runs (a lookup first checks the record is visible)."""
        match tool:
            case SearchTool():
                return self._search(tool, arguments, principal)
            case LookupTool():
                return self._lookup(tool, arguments, principal, approved)
            case _ if tool.access == "write" and not approved:
                return _approval_required(tool)
            case FunctionTool():
                return _function(tool, arguments)
            case CallableTool():
                return _python(tool, arguments, principal)

    def _lookup(self, tool: LookupTool, arguments: Mapping[str, Any], principal: Principal, approved: bool) -> Receipt:
        record_key = arguments.get(tool.key)
        record = self.data.get(tool.collection, {}).get(record_key) if isinstance(record_key, str) else None
        if record is None:
            return Receipt(output={"error": "not_found", "message": f"no such record: {record_key}"}, is_error=True)
        if not visible(record, principal):
            # Nothing of the record goes back: not its fields, not whether it exists elsewhere.
            return Receipt(
                output={"error": "permission_denied", "message": "not accessible to this session"},
                is_error=True,
                denied="permission_denied",
            )
        if tool.access == "write":
            if not approved:
                return _approval_required(tool)
            record.update(copy.deepcopy(dict(tool.sets)))
            self.writes.append({"tool": tool.name, "key": record_key, "set": dict(tool.sets)})
        output = {name: record_key if name == tool.key else record.get(name) for name in tool.returns or (tool.key,)}
        evidence = {name: output.get(name) for name in tool.evidence}
        return Receipt(output=output, evidence=evidence)

    def _search(self, tool: SearchTool, arguments: Mapping[str, Any], principal: Principal) -> Receipt:
        """The visible records whose filtered fields match the arguments given (an argument left out filters
        nothing), in key order, at most ``limit``; ``count`` says how many matched."""
        wanted = {field_name: str(arguments[argument]).casefold() for argument, field_name in tool.filters.items()
                  if arguments.get(argument) is not None}
        found = []
        for key, record in sorted(self.data.get(tool.collection, {}).items()):
            if not visible(record, principal):
                continue
            values = {field_name: str(key if field_name == tool.key else record.get(field_name, "")).casefold()
                      for field_name in wanted}
            if all(_matches(values[name], value, tool.match) for name, value in wanted.items()):
                found.append({name: key if name == tool.key else record.get(name)
                              for name in tool.returns or (tool.key,)})
        shown = found[: tool.limit]
        return Receipt(output={"results": shown, "count": len(found)},
                       evidence_records=tuple({name: item.get(name) for name in tool.evidence} for item in shown))

    def protected_values(self, collection: str, key: str) -> list[str]:
        """Every string value of a record, to prove a denial leaked none of them."""
        record = self.data.get(collection, {}).get(key) or {}
        return [str(value) for name, value in record.items() if name not in ("tenant", "user") and value]


def visible(record: Mapping[str, Any], principal: Principal) -> bool:
    """A record without a tenant is shared; one with a tenant (and maybe a user) is the principal's only."""
    if "tenant" not in record:
        return True
    return record.get("tenant") == principal.tenant and record.get("user", principal.user) == principal.user


def _matches(actual: str, wanted: str, how: str) -> bool:
    return wanted in actual if how == "contains" else actual == wanted


def _approval_required(tool: ToolBase) -> Receipt:
    return Receipt(output={"error": "approval_required", "message": f"{tool.name} needs an approval"},
                   is_error=True, denied="approval_required")


def _function(tool: FunctionTool, arguments: Mapping[str, Any]) -> Receipt:
    result = next((result for when, result in tool.results if dict(when) == dict(arguments)), tool.default)
    if result is None:
        return Receipt(output={"error": "no_result", "message": f"{tool.name} declares no result for these arguments"},
                       is_error=True)
    output = dict(result)
    return Receipt(output=output, evidence={name: output.get(name) for name in tool.evidence})


def _python(tool: CallableTool, arguments: Mapping[str, Any], principal: Principal) -> Receipt:
    """The team's callable; an ``error`` key in what it returns makes the result an error, and
    ``permission_denied`` or ``approval_required`` there a denial."""
    output = tool.function(dict(arguments), principal)
    if not isinstance(output, Mapping):
        raise TypeError(f"tool {tool.name} returned {type(output).__name__}, not a mapping")
    error = output.get("error")
    denied = error if error in ("permission_denied", "approval_required") else None
    evidence = {} if error else {name: output.get(name) for name in tool.evidence}
    return Receipt(output=dict(output), is_error=error is not None, denied=denied, evidence=evidence)


def _tool(name: str, spec: Mapping[str, Any], load: Callable[[str], Any] | None) -> Tool:
    """The tool of a schema-validated ``world.yaml`` entry, of the class its ``kind`` names."""
    base: dict[str, Any] = {"name": name, "description": spec["description"], "access": spec.get("access", "read"),
                            "parameters": spec["parameters"], "evidence": tuple(spec.get("evidence", ()))}
    kind = spec.get("kind", "lookup")
    if kind == "search":
        return SearchTool(**base, collection=spec.get("collection", ""), key=spec.get("key", ""),
                          returns=tuple(spec.get("returns", ())), filters=spec.get("filters", {}),
                          match=spec.get("match", "exact"), limit=spec.get("limit", 10))
    if kind == "function":
        return FunctionTool(**base, results=tuple((entry["when"], entry["result"]) for entry in spec.get("results",
                            ())), default=spec.get("default"))
    if kind == "python":
        if load is None:
            raise ValueError(f"tool {name}: a python tool needs a loader")
        return CallableTool(**base, function=load(spec["callable"]))
    return LookupTool(**base, collection=spec.get("collection", ""), key=spec.get("key", ""),
                      returns=tuple(spec.get("returns", ())), sets=spec.get("sets", {}))
