"""What each turn cost, by a price file, and whether the figures a team's code, a gateway or a telemetry lane report
agree with it (docs/cost.md).

A turn's cost is priced from its normalized usage (docs/contract.md, "Usage": ``input_tokens`` counts cache reads
and writes, ``output_tokens`` counts reasoning), so every API is priced one way:

    (input − cache reads − cache writes) × input + cache reads × cache_read + cache writes × cache_write (5 minutes;
    the 1-hour writes Anthropic reports apart at cache_write_1h) + (output − reasoning) × output
    + reasoning × reasoning (the output rate unless the file sets one) + the per-request fee

A reported figure that differs is told apart by the mistake it matches, each priced on the same turn: every input
token at the input rate (``cache-as-input``), the reasoning tokens left out (``reasoning-dropped``), only the last
sampling pass of a compacted request (``compaction-invisible``), or a whole multiple of the right figure
(``cost ×N``); any other difference is ``differs``.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.engine.rows import Lane
from conformance.errors import InputError, Problem
from conformance.kit.usage import NO_BILLING, Billing

BUNDLED = Path(__file__).resolve().parent.parent / "prices" / "prices.yaml"
"""The price file shipped with the suite, for the bundled cases' models."""

TOLERANCE = 0.005
"""How far a reported figure may sit from a priced one and still match it: half a percent (OpenRouter rounds its
``usage.cost`` to six decimals; a cent-rounded figure of a small turn does not match and is a finding)."""

MISTAKES = {
    "cache-as-input": "cache reads and writes priced as uncached input",
    "reasoning-dropped": "reasoning tokens left out of the output priced",
    "compaction-invisible": "only the last sampling pass priced; the compaction pass is billed too",
    "differs": "differs from the price table, by no known mistake",
}
"""Each named mistake, and what it means for a team's spend."""


@dataclass(frozen=True, slots=True)
class Prices:
    """A price file, read and checked."""

    path: str
    """The file, as shown to the user."""
    as_of: dt.date
    max_age_days: int | None
    apis: Mapping[str, Mapping[str, Any]]

    def rates(self, api: str, model: str | None) -> tuple[str, Mapping[str, Any]] | None:
        """The model key and rates for a turn of ``api`` that names ``model``: the exact key, else the longest key
        the name extends with ``-`` (a dated snapshot, ``gpt-5.5-2026-04-23``), else the API's ``assume`` model
        when the response names none (Bedrock Converse); None when the file prices no such model."""
        entry = self.apis.get(api)
        if entry is None:
            return None
        models: Mapping[str, Any] = entry["models"]
        name = model if model else entry.get("assume")
        if not name:
            return None
        if name in models:
            return name, models[name]
        extended = [key for key in models if name.startswith(key + "-")]
        if not extended:
            return None
        key = max(extended, key=len)
        return key, models[key]

    def age_days(self, today: dt.date | None = None) -> int:
        """How old the file's prices are, in days."""
        return ((today or dt.date.today()) - self.as_of).days

    def summary(self, today: dt.date | None = None) -> dict[str, Any]:
        """What the report records of the file: where, as of when, how old, and whether it is older than allowed."""
        age = self.age_days(today)
        return {"file": self.path, "as_of": self.as_of.isoformat(), "age_days": age,
                "max_age_days": self.max_age_days,
                "stale": self.max_age_days is not None and age > self.max_age_days}


def load_prices(path: Path | None = None, shown: str | None = None) -> Prices:
    """A price file (the bundled one when ``path`` is None), checked against conformance/schema/prices.schema.json;
    InputError naming the line and JSON pointer of what is wrong."""
    return _load(str(path or BUNDLED), shown or (str(path) if path else "conformance/prices/prices.yaml"))


@functools.lru_cache(maxsize=8)
def _load(path: str, shown: str) -> Prices:
    from conformance.engine.schemas import schema_errors  # noqa: PLC0415 - the report layer loads it late
    from conformance.engine.yamlfile import line_for, load_yaml  # noqa: PLC0415

    document, lines = load_yaml(Path(path), shown)
    if isinstance(document, dict) and isinstance(document.get("as_of"), dt.date):
        document["as_of"] = document["as_of"].isoformat()  # YAML reads an unquoted 2026-12-05 as a date
    problems = [Problem(shown, line_for(lines, pointer), message, fix, pointer)
                for pointer, message, fix in schema_errors("prices.schema.json", document)]
    if not problems:
        for api, entry in document["apis"].items():
            assumed = entry.get("assume")
            if assumed is not None and assumed not in entry["models"]:
                pointer = f"/apis/{api}/assume"
                problems.append(Problem(shown, line_for(lines, pointer), f"assume names {assumed!r}, which "
                                        f"/apis/{api}/models does not price", "add the model or fix the name",
                                        pointer))
    if problems:
        raise InputError(problems)
    return Prices(shown, dt.date.fromisoformat(document["as_of"]), document.get("max_age_days"), document["apis"])


# ---- Pricing a turn -------------------------------------------------------------------------------------------------

def _known(usage: Mapping[str, Any] | None, name: str) -> int:
    value = (usage or {}).get(name)
    return value if isinstance(value, int) else 0


def billing_of(api: str, raw: Any) -> Billing:
    """What the API's adapter reads in a turn's raw usage beyond the contract's counts (``Wire.billing``); nothing
    for an API whose adapter reads nothing, or that is not a built-in one."""
    read = _billing_reader(api)
    return read(raw) if read is not None and raw is not None else NO_BILLING


@functools.cache
def _billing_reader(api: str) -> Callable[[Any], Billing] | None:
    """The built-in adapter's ``Wire.billing`` for ``api``, looked up once (every turn of every row is priced)."""
    from conformance.engine.registry import builtin_adapters  # noqa: PLC0415 - the adapters load when a row is priced

    adapters = builtin_adapters()
    adapter = adapters.get(api)
    if adapter is not None:
        return adapter.wire.billing if adapter.wire is not None else None
    # A team's adapter (its wire is a built-in one's, or its own): what any built-in reader finds in its usage.
    readers = [known.wire.billing for known in adapters.values() if known.wire is not None and known.wire.billing]
    return lambda raw: _union([read(raw) for read in readers])


def _union(found: list[Billing]) -> Billing:
    return Billing(cache_write_1h_tokens=max((item.cache_write_1h_tokens for item in found), default=0),
                   final_pass=next((item.final_pass for item in found if item.final_pass is not None), None),
                   reported_cost=next((item.reported_cost for item in found if item.reported_cost is not None), None))


def price(usage: Mapping[str, Any], rates: Mapping[str, Any], billing: Billing = NO_BILLING, *,
          cache_as_input: bool = False, drop_reasoning: bool = False) -> float:
    """The USD cost of one turn's normalized ``usage`` at ``rates`` (per million tokens), its writes of the longer
    cache lifetime at their own rate (``billing``, ``billing_of``); the keywords price one named mistake instead of
    the right figure."""
    input_tokens, output = _known(usage, "input_tokens"), _known(usage, "output_tokens")
    cached, written = _known(usage, "cached_input_tokens"), _known(usage, "cache_write_tokens")
    reasoning = min(_known(usage, "reasoning_tokens"), output)
    hour = min(billing.cache_write_1h_tokens, written)
    if cache_as_input:
        cached = written = hour = 0
    uncached = max(input_tokens - cached - written, 0)
    rate_in, rate_out = rates["input"], rates["output"]
    write_rate = rates.get("cache_write", rate_in)
    thinking = 0 if drop_reasoning else reasoning * rates.get("reasoning", rate_out)
    total = (uncached * rate_in + cached * rates.get("cache_read", rate_in) + (written - hour) * write_rate
             + hour * rates.get("cache_write_1h", write_rate) + (output - reasoning) * rate_out + thinking)
    return round(float(total) / 1_000_000 + float(rates.get("request", 0)), 10)


def turn_cost(turn: Mapping[str, Any], api: str, prices: Prices, model: str | None = None) -> dict[str, Any] | None:
    """``{"usd", "model"}`` of one turn (priced as ``model``, else the model it names), or ``{"usd": None, "why"}``
    when it cannot be priced; None for a turn without usage (an error reply costs nothing)."""
    usage = turn.get("usage")
    if not usage:
        return None
    model = model or turn.get("model")
    found = prices.rates(api, model)
    if found is None:
        named = model or "no model"
        return {"usd": None, "why": f"{prices.path} prices no {named!r} for {api}"}
    if usage.get("input_tokens") is None or usage.get("output_tokens") is None:
        return {"usd": None, "model": found[0], "why": "the input or output count is unknown"}
    return {"usd": price(usage, found[1], billing_of(api, turn.get("raw_usage"))), "model": found[0]}


def verdict(reported: float, turn: Mapping[str, Any], rates: Mapping[str, Any], api: str) -> str | None:
    """None when ``reported`` is the turn's priced cost; else the named mistake it matches (``MISTAKES``, or
    ``cost ×N``)."""
    usage = turn.get("usage") or {}
    billed = billing_of(api, turn.get("raw_usage"))
    right = price(usage, rates, billed)
    if _near(reported, right):
        return None
    if (_known(usage, "cached_input_tokens") or _known(usage, "cache_write_tokens")) and \
            _near(reported, price(usage, rates, billed, cache_as_input=True)):
        return "cache-as-input"
    if _known(usage, "reasoning_tokens") and _near(reported, price(usage, rates, billed, drop_reasoning=True)):
        return "reasoning-dropped"
    if billed.final_pass is not None and _near(reported, price(billed.final_pass, rates)):
        return "compaction-invisible"
    if right > 0:
        ratio = reported / right
        whole = round(ratio)
        if whole >= 2 and abs(ratio - whole) <= TOLERANCE * whole:
            return f"cost ×{whole}"
    return "differs"


def _near(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=1e-9)


def meaning(name: str) -> str:
    """What a named mistake means, for the report."""
    if name.startswith("cost ×"):
        return f"reported {name[len('cost '):]} the price table's figure (each charge counted more than once)"
    return MISTAKES[name]


# ---- Reported figures -----------------------------------------------------------------------------------------------

CostHook = Callable[[str, str | None, Mapping[str, Any], Any], Any]
"""A team's own cost function: ``(api, model, usage, raw_usage) → USD`` (docs/cost.md)."""


def load_hook(spec: str) -> CostHook:
    """``module:function`` of a team's cost function; InputError when it cannot be imported."""
    module_name, _, name = spec.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError) as error:
        raise InputError([Problem(spec, None, f"the cost function cannot be loaded: {error}",
                                  "name it module:function, importable from the repository")]) from None
    if not callable(function):
        raise InputError([Problem(spec, None, "the cost function is not callable",
                                  "name a function (api, model, usage, raw_usage) -> USD")])
    return function  # type: ignore[no-any-return]


def reported_figures(turn: Mapping[str, Any], api: str, hook: CostHook | None) -> dict[str, float]:
    """The cost figures reported for a turn, by who reported them: the wire's own (OpenRouter's ``usage.cost``), a
    gateway's (``provider_details.reported_cost``, LiteLLM's ``response_cost``) and the team's cost function."""
    figures: dict[str, float] = {}
    raw = turn.get("raw_usage")
    wire_cost = billing_of(api, raw).reported_cost
    if wire_cost is not None:
        figures["usage.cost"] = wire_cost
    details = turn.get("provider_details") or {}
    for source, value in (details.get("reported_cost") or {}).items():
        if _number(value):
            figures[source] = float(value)
    if hook is not None and turn.get("usage"):
        value = hook(api, turn.get("model"), dict(turn["usage"]), raw)
        if not _number(value):
            raise InputError([Problem("the cost function", None, f"returned {value!r} for a turn of {api}",
                                      "return the turn's cost in USD as a number")])
        figures["team cost function"] = float(value)
    return figures


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


# ---- The report's part ----------------------------------------------------------------------------------------------

def price_rows(rows: Iterable[dict[str, Any]], prices: Prices, hook: CostHook | None = None) -> list[dict[str, Any]]:
    """Each turn's ``cost`` and each row's ``cost`` (the sum, or None when a turn could not be priced), in place;
    the cost findings, as ``conformance.report.findings.Finding`` dictionaries: every reported figure that is not
    the table's, and every stack row whose counts price otherwise than the wire's on the same turn."""
    rows = list(rows)
    # The model a turn is priced as is the one the wire names (the raw row's): a layer that reports another (the
    # one it asked for) has a `model` finding of its own, and its counts are priced like the wire's.
    # A figure reported on a stack's row is checked against the wire's counts too: what the turn really cost.
    wire_turns = {(row["case"], row["provider"], row["mode"]): row["turns"]
                  for row in rows if row.get("stack", "raw") == "raw"}
    served = {key: [turn.get("model") for turn in turns] for key, turns in wire_turns.items()}
    findings: list[dict[str, Any]] = []
    for row in rows:
        lane = Lane.parse(row["provider"])
        api = lane.provider
        models = served.get((row["case"], lane.fixtures, row["mode"]))
        wire = wire_turns.get((row["case"], lane.fixtures, row["mode"])) or []
        total: float | None = 0.0
        for index, turn in enumerate(row["turns"]):
            model = models[index] if models is not None and index < len(models) else turn.get("model")
            cost = turn_cost(turn, api, prices, model)
            if cost is None:
                continue
            turn["cost"] = cost
            total = None if total is None or cost["usd"] is None else round(total + cost["usd"], 10)
            found = prices.rates(api, model)
            if found is None or cost["usd"] is None:
                continue
            truth = wire[index] if index < len(wire) and wire[index].get("usage") else turn
            for source, reported in sorted(reported_figures(turn, api, hook).items()):
                named = verdict(reported, truth, found[1], api)
                if named is not None:
                    findings.append(_finding(row, turn["turn"], f"cost.{source}",
                                             price(truth["usage"], found[1], billing_of(api, truth.get("raw_usage"))),
                                             reported, named))
        row["cost"] = total if any("cost" in turn for turn in row["turns"]) else None
    findings.extend(_stack_costs(rows, prices))
    findings.extend(_telemetry_costs(rows, prices))
    return findings


def span_usage(attributes: Mapping[str, Any]) -> dict[str, int | None] | None:
    """A telemetry reading's counts (``conformance.report.telemetry.read_spans``, under the convention's names) as the
    contract's usage, as a team that prices its spans reads them: the convention's input count holds the cache reads
    and writes (``conformance.report.semconv.USAGE``). None when the span gives no input or output count."""
    from conformance.report.semconv import USAGE  # noqa: PLC0415

    usage = {name: attributes.get(attribute) if isinstance(attributes.get(attribute), int) else None
             for name, attribute in USAGE.items()}
    if usage["input_tokens"] is None or usage["output_tokens"] is None:
        return None
    return usage


def _telemetry_costs(rows: list[dict[str, Any]], prices: Prices) -> list[dict[str, Any]]:
    """A telemetry lane's spans priced against the wire's turn: what a team that computes spend from its traces
    would bill, named by the mistake it makes (field ``cost.telemetry``). A span without counts has no figure: its
    count findings say what is missing."""
    by_key = {(row["case"], row["provider"], row["mode"]): row for row in rows}
    findings = []
    for row in rows:
        reading = row.get("telemetry")
        if not isinstance(reading, dict):
            continue
        lane = Lane.parse(row["provider"])
        wire = by_key.get((row["case"], lane.fixtures, row["mode"]))
        if wire is None or wire.get("error"):
            continue
        wire_turns = {turn.get("turn"): turn for turn in wire["turns"]}
        for entry in reading.get("turns") or []:
            truth = wire_turns.get(entry.get("turn")) if isinstance(entry, dict) else None
            theirs = (truth or {}).get("cost") or {}
            usage = span_usage(entry.get("attributes") or {}) if truth is not None else None
            found = prices.rates(lane.provider, theirs.get("model")) if theirs.get("usd") is not None else None
            if usage is None or found is None or truth is None:
                continue
            figure = price(usage, found[1], billing_of(lane.provider, truth.get("raw_usage")))
            named = verdict(figure, truth, found[1], lane.provider)
            if named is not None:
                findings.append(_finding(row, entry["turn"], "cost.telemetry", theirs["usd"], figure, named))
    return findings


def _stack_costs(rows: list[dict[str, Any]], prices: Prices) -> list[dict[str, Any]]:
    """A stack row's counts priced against the wire's on the same turn: what a team that prices the counts its
    layer gives would compute, named by the mistake it makes."""
    by_key = {(row["case"], row["provider"], row["mode"]): row for row in rows}
    findings = []
    for row in rows:
        if row.get("stack", "raw") == "raw" or row.get("telemetry") or row.get("error"):
            continue
        lane = Lane.parse(row["provider"])
        wire = by_key.get((row["case"], lane.fixtures, row["mode"]))
        if wire is None or wire.get("error"):
            continue
        for turn, wire_turn in zip(row["turns"], wire["turns"], strict=False):
            mine, theirs = turn.get("cost") or {}, wire_turn.get("cost") or {}
            if mine.get("usd") is None or theirs.get("usd") is None:
                continue
            found = prices.rates(lane.provider, theirs.get("model"))
            named = verdict(mine["usd"], wire_turn, found[1], lane.provider) if found else None
            if named is not None:
                findings.append(_finding(row, turn["turn"], "cost", theirs["usd"], mine["usd"], named))
    return findings


def _finding(row: Mapping[str, Any], turn: int, field: str, table: float, reported: float,
             named: str) -> dict[str, Any]:
    return {"stack": row["provider"], "case": row["case"], "mode": row["mode"], "turn": turn, "field": field,
            "effect": "changed", "wire": table, "stack_value": reported, "meaning": f"{named}: {meaning(named)}",
            "accepted": None}
