"""A report's rows as OpenTelemetry GenAI semantic-convention records (docs/telemetry.md): the suite's reading of
each recorded turn, spelled as the ``gen_ai.*`` attributes a team's dashboards already read, so the truth the suite
derived from the wire can be loaded beside what the team's own instrumentation reports.

One record per turn (a ``chat`` operation) and one per tool call it asked for (``execute_tool``), as JSON objects
``{"name", "attributes"}``. The attribute names are the convention's (opentelemetry.io/docs/specs/semconv/gen-ai/
gen-ai-spans/, "Inference" and "Execute tool"); ``conformance.*`` attributes carry what the convention has no name
for (the contract kind, the raw stop value, the case, the lane, the mode).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from conformance.engine.rows import Lane

FINISH_REASONS: Mapping[str, str | None] = {
    "text": "stop",
    "empty": "stop",
    "tool_calls": "tool_call",
    "invalid_tool_call": "tool_call",
    "incomplete": "length",
    "refusal": "content_filter",
    "retryable_error": "error",
    "fatal_error": "error",
    "unsupported": None,
}
"""The contract's kinds → the convention's finish reasons. Lossy where the convention has fewer words: ``empty`` and
``text`` are both ``stop``; an ``invalid_tool_call`` is a ``tool_call``; every ``refusal`` is ``content_filter``,
though a refusal the model states is not a filter's; both error kinds are ``error`` (``conformance.kind`` keeps
which). ``unsupported`` has no finish reason: the vendor's raw stop value goes there instead, as the convention asks
of a value it does not list."""


USAGE: Mapping[str, str] = {
    "input_tokens": "gen_ai.usage.input_tokens",  # cache reads and writes included, as the convention says
    "output_tokens": "gen_ai.usage.output_tokens",
    "cached_input_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
    "reasoning_tokens": "gen_ai.usage.reasoning.output_tokens",
}
"""The contract's usage totals (docs/contract.md, "Usage") → the convention's; a count the vendor did not report
(``null``) is left out, never written as 0."""


def _raw_stop(raw: Any) -> str | None:
    """``stop_reason=end_turn`` → ``end_turn``: the vendor's own value in a turn's raw reading."""
    if not isinstance(raw, str) or "=" not in raw:
        return None
    return raw.split("=", 1)[1].split(";", 1)[0].strip() or None


def records(report: Mapping[str, Any], provider_names: Mapping[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """The semantic-convention records of every turn of every row of ``report`` (a parsed report.json).
    ``provider_names``: API id → the convention's ``gen_ai.provider.name`` (each API's ``Wire.semconv_provider``);
    a provider id it does not name is used as it is."""
    provider_names = provider_names or {}
    for row in report.get("results") or []:
        if not isinstance(row, dict):
            continue
        lane = Lane.parse(str(row.get("provider", "")))
        base = {"gen_ai.provider.name": provider_names.get(lane.provider, lane.provider),
                "conformance.case": row.get("case"), "conformance.lane": row.get("provider"),
                "conformance.mode": row.get("mode")}
        for turn in row.get("turns") or []:
            if isinstance(turn, dict):
                yield from _turn_records(base, turn)


def chat_attributes(turn: Mapping[str, Any]) -> dict[str, Any]:
    """The convention's attributes of one turn's model call (its ``chat`` record, without the row's own)."""
    kind = turn.get("kind")
    reason = FINISH_REASONS.get(str(kind)) if kind in FINISH_REASONS else None
    if reason is None:
        reason = _raw_stop(turn.get("raw"))
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    if reason is not None:
        attributes["gen_ai.response.finish_reasons"] = [reason]
    for key, name in (("response_id", "gen_ai.response.id"), ("model", "gen_ai.response.model")):
        if isinstance(turn.get(key), str):
            attributes[name] = turn[key]
    if isinstance(turn.get("http_status"), int) and turn["http_status"] >= 400:
        attributes["error.type"] = str(turn["http_status"])
    given = turn.get("usage")
    usage: Mapping[str, Any] = given if isinstance(given, dict) else {}
    for key, name in USAGE.items():
        if isinstance(usage.get(key), int):
            attributes[name] = usage[key]
    return attributes


def _turn_records(base: dict[str, Any], turn: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    attributes = {**base, **chat_attributes(turn), "conformance.turn": turn.get("turn"),
                  "conformance.kind": turn.get("kind"), "conformance.raw": turn.get("raw")}
    model = attributes.get("gen_ai.response.model")
    yield {"name": f"chat {model}" if model else "chat", "attributes": _clean(attributes)}
    for call in turn.get("calls") or []:
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            tool = {**base, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call["name"],
                    "conformance.turn": turn.get("turn")}
            if isinstance(call.get("call_id"), str):
                tool["gen_ai.tool.call.id"] = call["call_id"]
            yield {"name": f"execute_tool {call['name']}", "attributes": _clean(tool)}


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attribute values the convention allows: no nulls."""
    return {key: value for key, value in attributes.items() if value is not None}


def to_jsonl(report: Mapping[str, Any], provider_names: Mapping[str, str] | None = None) -> str:
    """The records, one JSON object per line."""
    return "".join(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n"
                   for record in records(report, provider_names))
