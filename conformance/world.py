"""The deterministic fixture world: the tools cases may offer and the tenant-owned records they touch.

Tools run with the principal of the trusted session, never with identity taken from model arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.adapter import ToolSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """Who the session acts for; comes from the case, never from the model."""

    tenant: str
    user: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool of the world: what it offers the model and what it touches."""

    name: str
    description: str
    access: str
    """``read`` or ``write``; a write runs only with the case's approval."""
    parameters: Mapping[str, Any]
    collection: str
    key: str
    returns: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    """Receipt fields a verified answer must state."""
    sets: Mapping[str, Any] = field(default_factory=dict)

    def spec(self) -> ToolSpec:
        """What the tool offers the model: its name, description and parameters."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


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


@dataclass(slots=True)
class World:
    """Tools plus data; ``fork`` gives each run its own copy so writes never leak between runs."""

    tools: dict[str, Tool]
    data: dict[str, dict[str, dict[str, Any]]]
    writes: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> World:
        """The world of a validated ``world.yaml`` document."""
        tools = {
            name: Tool(
                name=name,
                description=spec["description"],
                access=spec["access"],
                parameters=spec["parameters"],
                collection=spec["collection"],
                key=spec["key"],
                returns=tuple(spec.get("returns", ())),
                evidence=tuple(spec.get("evidence", ())),
                sets=spec.get("sets", {}),
            )
            for name, spec in document["tools"].items()
        }
        return cls(tools=tools, data=copy.deepcopy(dict(document["data"])))

    def fork(self) -> World:
        """A private copy of the data (records hold scalars, so copying each record is enough)."""
        data = {name: {key: dict(record) for key, record in records.items()} for name, records in self.data.items()}
        return World(tools=self.tools, data=data)

    def execute(self, tool: Tool, arguments: Mapping[str, Any], principal: Principal, approved: bool) -> Receipt:
        """Run ``tool`` for ``principal``. Arguments choose the record, never who is asking."""
        record_key = arguments.get(tool.key)
        record = self.data.get(tool.collection, {}).get(record_key) if isinstance(record_key, str) else None
        if record is None:
            return Receipt(output={"error": "not_found", "message": f"no such record: {record_key}"}, is_error=True)
        if record.get("tenant") != principal.tenant or record.get("user") != principal.user:
            # Nothing of the record goes back: not its fields, not whether it exists elsewhere.
            return Receipt(
                output={"error": "permission_denied", "message": "not accessible to this session"},
                is_error=True,
                denied="permission_denied",
            )
        if tool.access == "write":
            if not approved:
                return Receipt(
                    output={"error": "approval_required", "message": f"{tool.name} needs an approval"},
                    is_error=True,
                    denied="approval_required",
                )
            record.update(copy.deepcopy(dict(tool.sets)))
            self.writes.append({"tool": tool.name, "key": record_key, "set": dict(tool.sets)})
        output = {name: record_key if name == tool.key else record.get(name) for name in tool.returns or (tool.key,)}
        evidence = {name: output.get(name) for name in tool.evidence}
        return Receipt(output=output, evidence=evidence)

    def protected_values(self, collection: str, key: str) -> list[str]:
        """Every string value of a record, to prove a denial leaked none of them."""
        record = self.data.get(collection, {}).get(key) or {}
        return [str(value) for name, value in record.items() if name not in ("tenant", "user") and value]
