"""The report as data (builtins only), and its JSON and Markdown renderings (written by ``reportfiles``)."""

from __future__ import annotations

import json
import platform
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

from conformance import __version__
from conformance.engine.fixtures import fixture_digest
from conformance.engine.rows import Lane, Row, row_key, status_of
from conformance.errors import InputError, Problem
from conformance.kit.types import USAGE_FIELDS
from conformance.report import files as reportfiles
from conformance.report.brief import Brief, briefs_of
from conformance.report.cost import CostHook, Prices, load_prices, price_rows
from conformance.report.findings import find_all
from conformance.report.html import page_row, render_html, render_html_chunks
from conformance.report.kept import KeptRows, row_text
from conformance.report.markdown import escape_cell

SCHEMA_VERSION = 1


class Stack(Protocol):
    """What the report reads of a stack (``conformance.stacks.stack.Stack``): its lane, the findings its team
    accepts and the packages it ran with."""

    @property
    def row_id(self) -> str:
        """The stack's lane, ``<provider>@<stack>``."""

    @property
    def accepted(self) -> Mapping[str, str]:
        """Accepted findings, keyed by field (or ``field@case``), each with its reason."""

    def versions(self) -> dict[str, str | None]:
        """The installed version of each package the stack runs (None: not installed)."""


def build_report(rows: list[Row], providers: list[str], stacks: Sequence[Stack] = (),
                 fixtures: dict[str, str] | None = None, shard: dict[str, Any] | None = None,
                 selection: dict[str, Any] | None = None, prices: Prices | None = None,
                 cost_hook: CostHook | None = None) -> dict[str, Any]:
    """The report of ``rows``; two rows under one case × provider × mode key are refused (InputError): the
    upgrade gate matches rows by key and could keep the passing one. ``stacks``: the stacks whose rows are here,
    for the findings their teams accept and the package versions they ran with. ``fixtures``: the fixture files
    the rows ran on (``fixture_files``), recorded as what the report verified (their count and content hash).
    ``shard``: ``index``, ``of`` and ``plan`` of shard I of N (``conformance.engine.shard.shard_record``); its report
    keeps the fixture files one by one, so that ``merge_reports`` can hash the whole set. ``selection``: the filters
    that narrowed the run (``--case``, ``-k``, ``--mode``, ``--provider``), recorded as ``measured.selection`` so that
    ``conformance verify`` does not take a part of the task set for all of it; None for a whole run. ``prices``:
    the price file each turn's ``cost`` is computed with (the bundled one when None); ``cost_hook``: the team's
    own cost function, whose figures are checked against it (``conformance.report.cost``, docs/cost.md)."""
    accepted = {stack.row_id: stack.accepted for stack in stacks}
    prices = prices or load_prices()
    found, costs = judged(rows, accepted, prices, cost_hook)
    report = assemble(rows, providers, found + costs, differs_from_majority(rows),
                      measured_with(stacks, prices, selection), fixtures)
    return _with_shard(report, shard, fixtures)


def build_report_in_groups(texts: Sequence[str], keys: Sequence[tuple[str, str, str]], stacks: Sequence[Stack] = (),
                           fixtures: dict[str, str] | None = None, shard: dict[str, Any] | None = None,
                           selection: dict[str, Any] | None = None, prices: Prices | None = None,
                           cost_hook: CostHook | None = None) -> dict[str, Any]:
    """``build_report`` of rows kept as JSON ``texts`` (``keys``: each one's case, provider and mode), the same
    report byte for byte in every rendering, with never more than one case's rows parsed at once: every finding,
    price and mark is made within a case (a stack row against the raw row of its case), so the rows are parsed a
    case at a time, judged, written out as report.json lines and kept as briefs (``conformance.report.kept``). A
    20,000-row report then holds about a tenth of the memory its parsed rows would (docs/performance.md)."""
    order = sorted(range(len(texts)), key=keys.__getitem__)  # stable: the order kept within one key
    refuse_repeated([keys[index] for index in order])
    accepted = {stack.row_id: stack.accepted for stack in stacks}
    prices = prices or load_prices()
    kept = KeptRows(page=page_row)  # the page's text of each row made while the row is parsed already
    found: list[dict[str, Any]] = []
    costs: list[dict[str, Any]] = []
    differs: list[list[str]] = []
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and keys[order[end]][0] == keys[order[start]][0]:
            end += 1
        # The case's rows in the order they were kept, as ``build_report`` judges them: a finding's place among
        # equal keys is the same.
        rows: list[Row] = json.loads("[" + ",".join(texts[index] for index in sorted(order[start:end])) + "]")
        case_found, case_costs = judged(rows, accepted, prices, cost_hook)
        found += case_found
        costs += case_costs
        differs += differs_from_majority(rows)
        for row in sorted(rows, key=row_key):
            kept.add(cast(dict[str, Any], row))
        start = end
    report = document(kept, [brief.status for brief in kept.briefs], len({key[0] for key in keys}),
                      sorted({key[1] for key in keys}), found + costs, differs,
                      measured_with(stacks, prices, selection), fixtures)
    return _with_shard(report, shard, fixtures)


def judged(rows: list[Row], accepted: Mapping[str, Mapping[str, str]], prices: Prices,
           cost_hook: CostHook | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What the rows' stacks hide (``find_all``) and their cost findings, each turn priced in place
    (``price_rows``); a cost finding the stack's team accepts says so."""
    found = [finding.to_dict() for finding in find_all(rows, accepted)]
    costs = price_rows(cast(list[dict[str, Any]], rows), prices, cost_hook)
    for finding in costs:
        declared = accepted.get(finding["stack"], {})
        finding["accepted"] = declared.get(f"{finding['field']}@{finding['case']}") or declared.get(finding["field"])
    return found, costs


def measured_with(stacks: Sequence[Stack], prices: Prices, selection: dict[str, Any] | None) -> dict[str, Any]:
    """The report's ``measured``: the versions (``measured``), the price file, and the selection when one was made."""
    with_prices = measured(stacks)
    with_prices["prices"] = prices.summary()
    if selection:
        with_prices["selection"] = dict(sorted(selection.items()))
    return with_prices


def _with_shard(report: dict[str, Any], shard: dict[str, Any] | None,
                fixtures: dict[str, str] | None) -> dict[str, Any]:
    if shard is not None:
        report["shard"] = {**shard, "fixture_files": dict(sorted((fixtures or {}).items()))}
    return report


def assemble(rows: list[Row], providers: Sequence[str], findings: list[dict[str, Any]],
             differs: list[list[str]], measured_with: dict[str, Any],
             fixtures: dict[str, str] | None) -> dict[str, Any]:
    """The report from its parts (``build_report``, ``merge_reports``): rows sorted by key, a repeated key refused."""
    rows = sorted(rows, key=row_key)
    refuse_repeated([row_key(row) for row in rows])
    return document(rows, [status_of(row) for row in rows], len({row["case"] for row in rows}), providers, findings,
                    differs, measured_with, fixtures)


def refuse_repeated(keys: Sequence[tuple[str, str, str]]) -> None:
    """Two rows under one case × provider × mode key (``keys`` sorted) are refused: the upgrade gate matches rows by
    key and could keep the passing one."""
    repeated = sorted({a for a, b in zip(keys, keys[1:], strict=False) if a == b})
    if repeated:
        raise InputError([Problem(" × ".join(key), None, "two results for one case × provider × mode",
                                  "give every case a unique id across the case folders") for key in repeated])


def document(results: Sequence[Row] | KeptRows, statuses: Sequence[str], cases: int, providers: Sequence[str],
             findings: list[dict[str, Any]], differs: list[list[str]], measured_with: dict[str, Any],
             fixtures: dict[str, str] | None) -> dict[str, Any]:
    """The report's document: ``results`` sorted by key, each one's status (``status_of``), the number of cases."""
    passed = sum(1 for status in statuses if status == "passed")
    waived = sum(1 for status in statuses if status == "waived")
    summary: dict[str, int] = {"rows": len(results), "passed": passed, "failed": len(results) - passed - waived,
                               "cases": cases}
    if waived:  # present only when a waiver applied, so a report without any keeps its shape
        summary["waived"] = waived
    return {
        "schema_version": SCHEMA_VERSION,
        "providers": sorted(set(providers)),
        "summary": summary,
        "results": results,
        "findings": sorted(findings, key=finding_key),
        "measured": {**measured_with, **({"fixtures": fixture_digest(fixtures)} if fixtures is not None else {})},
        "differs": sorted(differs),
    }


def finding_key(finding: dict[str, Any]) -> tuple[str, str, str, int, str]:
    """A finding's identity and sort order (``Finding.key``)."""
    return finding["stack"], finding["case"], finding["mode"], finding["turn"] or 0, finding["field"]


def measured(stacks: Sequence[Stack]) -> dict[str, Any]:
    """What the report measured with: the suite's version, Python's, and each stack's packages and versions."""
    return {"suite": __version__, "python": platform.python_version(),
            "stacks": {stack.row_id: dict(sorted(stack.versions().items()))
                       for stack in sorted(stacks, key=lambda stack: stack.row_id)}}


def differs_from_majority(rows: list[Row]) -> list[list[str]]:
    """The cells (case, mode, provider) whose turn chain or outcome differs from the one most vendors share in their
    row. The vendors vote (the raw adapters' columns; every column when fewer than three are raw), so a stack
    does not count its vendor twice; only where more than half of at least three voters agree is a cell marked."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row["case"], row["mode"]), []).append(row)
    marked = []
    for (case, mode), cells in groups.items():
        # A model variant (``openai-chat~mini``) is its vendor again: it does not vote either.
        raw = [row for row in cells if Lane.parse(row["provider"]).raw]
        voters = raw if len(raw) >= 3 else cells
        top, votes = Counter(_signature(row) for row in voters).most_common(1)[0]
        if len(voters) < 3 or votes * 2 <= len(voters):
            continue
        marked += [[case, mode, row["provider"]] for row in cells if _signature(row) != top]
    return sorted(marked)


def _signature(row: Row) -> tuple[tuple[str, ...], str]:
    return tuple(turn["kind"] for turn in row["turns"]), row["outcome"]


def render_json(report: dict[str, Any]) -> str:
    """Sorted keys, one result row per line: rows diff line by line, and the C encoder does the work (an
    indented dump runs the pure-Python encoder over every row)."""
    return "".join(render_json_chunks(report))


def render_json_chunks(report: dict[str, Any]) -> Iterator[str]:
    """``render_json``'s text in pieces, one row at a time, so that a writer can encode it without the whole text
    (or every row's) held at once."""
    yield "{"
    for key in sorted(report):
        if key != "results":
            value = json.dumps(report[key], sort_keys=True, ensure_ascii=False, allow_nan=False)
            yield f"\n  {json.dumps(key)}: {value},"
    if not report["results"]:
        yield '\n  "results": []'
    else:
        yield '\n  "results": ['
        separator = "\n"
        results = report["results"]
        for text in results.texts() if isinstance(results, KeptRows) else map(row_text, results):
            yield f"{separator}    {text}"
            separator = ",\n"
        yield "\n  ]"
    yield "\n}\n"


def _cell(row: Brief, differs: set[tuple[str, str, str]]) -> str:
    chain = " → ".join(escape_cell(turn.kind) for turn in row.turns) or "—"
    mark = {"passed": "✅", "waived": "⏸"}.get(row.status, "❌")
    note = (" ≠" if (row.case, row.mode, row.provider) in differs else "") + (" ⚑" if row.override is not None else "")
    return f"{mark} {chain} ⇒ **{escape_cell(row.outcome)}**{note}"


def render_markdown(report: dict[str, Any]) -> str:
    """The Markdown rendering (for a terminal, a job summary or a pull-request comment)."""
    rows = briefs_of(report["results"])
    providers = report["providers"]
    summary = report["summary"]
    lines = [
        "# Conformance report",
        "",
        f"{summary['passed']} of {summary['rows']} case × provider × mode results passed "
        f"({summary['cases']} cases, {len(providers)} providers)"
        + (f"; {summary['waived']} waived." if summary.get("waived") else "."),
        "",
    ]
    lines += _measured_line(report.get("measured"))
    failed = [row for row in rows if row.status == "failed"]
    if failed:
        lines += ["## Failures", ""]
        for row in failed:
            lines.append(f"- **{escape_cell(row.case)}** \\[{escape_cell(row.provider)}, {escape_cell(row.mode)}\\]: "
                         + "; ".join(escape_cell(failure) for failure in row.failures))
        lines.append("")
    waived = [(row, row.waived) for row in rows if row.waived is not None]
    if waived:
        lines += ["## Waived (⏸: does not apply to this code, by its own declaration)", ""]
        for row, (why, waives) in waived:
            lines.append(f"- **{escape_cell(row.case)}** \\[{escape_cell(row.provider)}, "
                         f"{escape_cell(row.mode)}\\]: {escape_cell('; '.join(why))} — waives "
                         + "; ".join(escape_cell(failure) for failure in waives))
        lines.append("")
    modes = sorted({row.mode for row in rows})
    differs = {(case, mode, provider) for case, mode, provider in report.get("differs", [])}
    for mode in modes:
        lines += [f"## Matrix ({escape_cell(mode)} mode): turn kinds ⇒ outcome", "",
                  "≠ the turn chain or outcome differs from what most vendors give in the row; ⚑ a declared "
                  "override.", ""]
        lines.append("| case | expected | " + " | ".join(escape_cell(provider) for provider in providers) + " |")
        lines.append("|---|---|" + "---|" * len(providers))
        by_key = {(row.case, row.provider): row for row in rows if row.mode == mode}
        first_row: dict[str, Brief] = {}
        for row in rows:
            if row.mode == mode:
                first_row.setdefault(row.case, row)
        for case in sorted(first_row):
            any_row = first_row[case]
            cells = [_cell(by_key[(case, provider)], differs) if (case, provider) in by_key else "—"
                     for provider in providers]
            lines.append(f"| {escape_cell(case)} | {escape_cell(any_row.expected)} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    lines += _raw_value_table(rows, providers)
    lines += _usage_table(rows, providers)
    lines += _request_table(rows, providers)
    lines += _cost_section(rows, providers, report)
    lines += _findings_section([finding for finding in report.get("findings", []) if not is_cost(finding)])
    lines += _forward_section(report.get("forward"))
    lines += _retries_section(report.get("retries"))
    overrides = {(row.case, row.provider): (row, row.override) for row in rows if row.override is not None}
    if overrides:
        lines += ["## Provider differences (⚑ overrides)", ""]
        for _, (row, reason) in sorted(overrides.items(), key=lambda item: item[0]):
            lines.append(f"- **{escape_cell(row.case)}** \\[{escape_cell(row.provider)}\\]: expects "
                         f"{escape_cell(row.expected)} — {escape_cell(reason)}")
        lines.append("")
    return "\n".join(lines)


def render_summary(report: dict[str, Any], limit: int = 15) -> str:
    """What ``conformance run`` prints: the totals, the failures, the cells that differ from most vendors and each
    stack's findings, each list cut at ``limit`` (report.md has everything)."""
    summary, rows = report["summary"], briefs_of(report["results"])
    lines = [f"{summary['passed']} of {summary['rows']} case × provider × mode results passed "
             f"({summary['cases']} cases, {len(report['providers'])} providers)"
             + (f"; {summary['waived']} waived." if summary.get("waived") else ".")]
    failed = [row for row in rows if row.status == "failed"]
    if failed:
        lines.append(f"Failed ({len(failed)}):")
        lines += [f"  {row.case} [{row.provider}, {row.mode}]: {(row.failures or ('error',))[0]}"
                  for row in failed[:limit]]
        lines += [f"  … and {len(failed) - limit} more (report.md)"] if len(failed) > limit else []
    differs = report.get("differs", [])
    if differs:
        cells = ", ".join(f"{case} [{provider}, {mode}]" for case, mode, provider in differs[:limit])
        lines.append(f"Differ from most vendors ({len(differs)}): {cells}" + (" …" if len(differs) > limit else ""))
    findings: dict[str, list[dict[str, Any]]] = {}
    for finding in report.get("findings", []):
        if not is_cost(finding):
            findings.setdefault(finding["stack"], []).append(finding)
    costs = [finding for finding in report.get("findings", []) if is_cost(finding)]
    prices = (report.get("measured") or {}).get("prices") or {}
    if costs:
        lines.append(f"Cost figures that are not the price table's ({len(costs)}; report.md, \"Cost\"): "
                     + ", ".join(sorted({f"{item['stack']} {item['field']}" for item in costs})[:limit]))
    if prices.get("stale"):
        lines.append(f"The price file {prices['file']} is {prices['age_days']} days old (older than "
                     f"{prices['max_age_days']}): update its prices and as_of.")
    if findings:
        lines.append("What each stack hides (findings against the raw adapter; report.md lists them):")
        lines += [f"  {stack}: {len(items)} ({sum(1 for item in items if not item['accepted'])} not accepted)"
                  for stack, items in sorted(findings.items())]
    return "\n".join(lines) + "\n"


def _measured_line(measured: dict[str, Any] | None) -> list[str]:
    if not measured:
        return []
    def spelled(packages: dict[str, str | None]) -> str:
        return ", ".join(f"{name} {version or 'not installed'}" for name, version in packages.items())

    stacks = "; ".join(f"{row_id} ({spelled(packages)})" for row_id, packages in measured["stacks"].items())
    lines = [escape_cell(f"Measured with conformance {measured['suite']} on Python {measured['python']}"
                         + (f"; stacks: {stacks}" if stacks else "") + "."), ""]
    recordings = measured.get("recordings") or {}
    if recordings:  # docs/record.md, "Provenance and age"
        said = []
        for provider, age in recordings.items():
            parts = [f"{age['oldest'][:10]} ({age['days']} days)"] if age.get("oldest") else []
            parts += [f"hand-written ({age['hand_written']} files)"] if age.get("hand_written") else []
            parts += [f"{age['unknown']} files of unknown age"] if age.get("unknown") else []
            said.append(f"{provider} {', '.join(parts)}")
        lines += [escape_cell("Oldest recording per provider: " + "; ".join(said) + "."), ""]
    return lines


def _findings_section(findings: list[dict[str, Any]]) -> list[str]:
    """Per stack, what it hides: each field where its rows part from the raw adapter's, grouped by field and
    effect, with one example, where it happens, and whether the team accepts it (docs/stacks.md, "Findings")."""
    if not findings:
        return []
    lines = ["## What each stack hides (findings against the raw adapter)", "",
             "Each stack row is compared, field by field, with the raw adapter's row on the same fixture: the wire "
             "said the first value, the stack gives the second.", ""]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for finding in findings:
        groups.setdefault((finding["stack"], finding["field"], finding["effect"]), []).append(finding)
    for stack in sorted({key[0] for key in groups}):
        lines += [f"### {escape_cell(stack)}", "",
                  "| field | effect | the wire → the stack (first seen) | what business code can no longer tell "
                  "| where | accepted |", "|---|---|---|---|---|---|"]
        for (_, field, effect), items in sorted((key, value) for key, value in groups.items() if key[0] == stack):
            first = items[0]
            where = ", ".join(sorted({f"{item['case']} ({item['mode']})" for item in items})[:3])
            more = len({(item["case"], item["mode"]) for item in items}) - 3
            open_items = [item for item in items if not item["accepted"]]
            accepted = ("no" if len(open_items) == len(items) else "yes: " + str(first["accepted"] or "")
                        if not open_items else f"{len(items) - len(open_items)} of {len(items)}")
            lines.append(f"| {escape_cell(field)} | {effect} | {escape_cell(_short(first['wire']))} → "
                         f"{escape_cell(_short(first['stack_value']))} | {escape_cell(first['meaning'])} | "
                         f"{escape_cell(where)}{f' and {more} more' if more > 0 else ''} | {escape_cell(accepted)} |")
        lines.append("")
    return lines


def is_cost(finding: Mapping[str, Any]) -> bool:
    """A cost finding (``conformance.report.cost``): a figure against the price table, not a field a stack hides."""
    field = str(finding.get("field", ""))
    return field == "cost" or field.startswith("cost.")


def dollars(value: float | None) -> str:
    """A cost in USD, with the digits a single turn needs."""
    if value is None:
        return "—"
    return f"${value:.4f}" if value >= 0.01 else f"${value:.3g}"


def _cost_section(rows: list[Brief], providers: list[str], report: dict[str, Any]) -> list[str]:
    """What each row cost by the price file (body mode, a row's turns summed), and every reported figure that is
    not the table's, named by the mistake it matches (docs/cost.md)."""
    prices = (report.get("measured") or {}).get("prices")
    priced = [row for row in rows if row.mode == "body" and row.cost is not None]
    if not prices or not priced:
        return []
    lines = ["## Cost (USD per row, body mode, by the price file)", "",
             escape_cell(f"Prices: {prices['file']}, as of {prices['as_of']} ({prices['age_days']} days old"
                         + (f"; ⚠ older than {prices['max_age_days']} days: update it" if prices.get("stale") else "")
                         + ")."), ""]
    by_key = {(row.case, row.provider): row for row in priced}
    shown = [provider for provider in providers if any(key[1] == provider for key in by_key)]
    lines.append("| case | " + " | ".join(escape_cell(provider) for provider in shown) + " |")
    lines.append("|---|" + "---|" * len(shown))
    for case in sorted({row.case for row in priced}):
        lines.append(f"| {escape_cell(case)} | " + " | ".join(
            dollars(by_key[(case, provider)].cost) if (case, provider) in by_key else "—"
            for provider in shown) + " |")
    lines.append("")
    costs = [finding for finding in report.get("findings", []) if is_cost(finding)]
    if costs:
        lines += ["Figures that are not the price table's (the table's → the reported):", ""]
        lines += [f"- **{escape_cell(item['stack'])}** {escape_cell(item['case'])} ({item['mode']}, turn "
                  f"{item['turn']}) {escape_cell(item['field'])}: {dollars(item['wire'])} → "
                  f"{dollars(item['stack_value'])} — {escape_cell(item['meaning'])}"
                  + (f" (accepted: {escape_cell(item['accepted'])})" if item.get("accepted") else "")
                  for item in costs]
        lines.append("")
    return lines


def _short(value: Any) -> str:
    text = "null" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _raw_value_table(rows: list[Brief], providers: list[str]) -> list[str]:
    """How each vendor said it: the raw wire value behind every turn, side by side."""
    lines = ["## How each vendor said it (raw value per turn)", ""]
    lines.append("| case | " + " | ".join(escape_cell(provider) for provider in providers) + " |")
    lines.append("|---|" + "---|" * len(providers))
    by_key: dict[tuple[str, str], Brief] = {}
    for row in sorted(rows, key=lambda row: row.mode != "body"):  # body rows first; stream-only cells too
        by_key.setdefault((row.case, row.provider), row)
    for case in sorted({row.case for row in rows}):
        cells = []
        for provider in providers:
            found = by_key.get((case, provider))
            cells.append(" → ".join(escape_cell(turn.raw) for turn in found.turns) if found else "—")
        lines.append(f"| {escape_cell(case)} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def _usage_table(rows: list[Brief], providers: list[str]) -> list[str]:
    """Normalized token totals per provider (body mode), over the cases every provider in the table ran to the same
    outcome: like is compared with like, and what was left out is said, with the per-case totals below."""
    short = {"input_tokens": "input", "cached_input_tokens": "cached", "cache_write_tokens": "cache write",
             "output_tokens": "output", "reasoning_tokens": "reasoning", "total_tokens": "total"}
    body = {(row.case, row.provider): row for row in rows if row.mode == "body"}
    cases = sorted({case for case, _ in body})
    # The vendors decide which cases compare (the raw columns; every column when none is raw), so the vendors'
    # totals do not depend on which stacks ran beside them.
    raw = {row.provider for row in rows if Lane.parse(row.provider).raw}
    voters = [provider for provider in providers if provider in raw] or providers
    comparable, left_out = [], []
    for case in cases:
        outcomes = {provider: body[case, provider].outcome for provider in voters if (case, provider) in body}
        if len(outcomes) < len(voters):
            left_out.append(f"{case} (not run for {', '.join(p for p in voters if p not in outcomes)})")
        elif len(set(outcomes.values())) > 1:
            left_out.append(f"{case} ({', '.join(sorted(set(outcomes.values())))})")
        else:
            comparable.append(case)
    lines = [f"## Normalized usage per provider (body mode, the {len(comparable)} case(s) every vendor ran to the "
             "same outcome)", "",
             "| provider | " + " | ".join(short[name] for name in USAGE_FIELDS) + " |",
             "|---|" + "---:|" * len(USAGE_FIELDS)]
    for provider in providers:
        usages = [body[case, provider] for case in comparable if (case, provider) in body]
        cells = []
        for name in USAGE_FIELDS:
            known = [value for usage in usages if (value := usage.count(name)) is not None]
            cells.append(str(sum(known)) if known else "null")
        lines.append(f"| {escape_cell(provider)} | " + " | ".join(cells) + " |")
    lines += ["", "`null`: the vendor does not report that count (never read as 0)."]
    if left_out:
        lines.append(f"Left out, {len(left_out)} case(s) whose outcomes differ between vendors or that not every "
                     f"vendor ran: {escape_cell('; '.join(left_out))}.")
    lines += ["", "Total tokens per case (body mode):", "",
              "| case | " + " | ".join(escape_cell(provider) for provider in providers) + " |",
              "|---|" + "---:|" * len(providers)]
    for case in comparable:
        totals = [body[case, provider].count("total_tokens") if (case, provider) in body else None
                  for provider in providers]
        lines.append(f"| {escape_cell(case)} | " + " | ".join("null" if total is None else str(total)
                                                              for total in totals) + " |")
    lines.append("")
    return lines


def _request_table(rows: list[Brief], providers: list[str]) -> list[str]:
    """What each adapter sent (body mode, all cases): how big the static prefix is, whether it stayed byte-stable
    across turns (the vendor's prompt cache depends on it), and how many request expectations failed."""
    lines = ["## Requests per provider (body mode, all cases)", "",
             "| provider | requests | prefix bytes | prefix stable | expectations failed | not checked |",
             "|---|---:|---:|---|---:|---:|"]
    for provider in providers:
        body = [row for row in rows if row.provider == provider and row.mode == "body"]
        records = [turn.request for row in body for turn in row.turns if turn.request is not None]
        sizes = sorted({record.prefix_bytes for record in records})
        size = "—" if not sizes else str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"
        moved = sum(1 for row in body if row.prefix_moved)
        failed = [row for row in body if any(failure.startswith("request: ") for failure in row.failures)]
        unchecked = sum(1 for record in records if not record.checked)
        lines.append(f"| {escape_cell(provider)} | {len(records)} | {size} | "
                     f"{'yes' if not moved else f'no ({moved} rows)'} | "
                     f"{sum(record.problems for record in records)} in {len(failed)} rows | {unchecked} |")
    lines += ["", "Prefix bytes: the static prefix (instructions, tools, tool choice, output schema) of the requests "
              "as canonical JSON, smallest–largest over the cases.", ""]
    return lines


def render_reports(report: dict[str, Any]) -> dict[str, str]:
    """The three report texts by file name; rendering errors surface here, before anything is written."""
    return {"report.json": render_json(report), "report.md": render_markdown(report),
            "report.html": render_html(report)}


def write_reports(report: dict[str, Any], directory: Path) -> list[Path]:
    """Render the three reports and write them as one set (``conformance.report.files``), report.json and
    report.html piece by piece as they are rendered: a rendering error leaves the previous set as it was."""
    return reportfiles.write_reports({"report.json": render_json_chunks(report), "report.md": render_markdown(report),
                                      "report.html": render_html_chunks(report)}, directory)


def retry_cell(cell: dict[str, Any], marks: tuple[str, str] = ("✅", "❌")) -> str:
    """One lane × script of the retry lane in words: the verdict (``marks``: right, wrong), the requests, the waits
    against the delay asked, what the caller got (docs/retries.md). Jitter aside, the same policy gives the same
    words."""
    waits, asked, sent = cell.get("waits") or [], cell.get("asked"), cell.get("sent", 0)
    if not waits:
        waited = ""
    elif asked is not None:
        waited = f", waited {'≥' if min(waits) >= asked - 1e-3 else '<'} {asked:g} s"
    else:
        waited = f", waited {'> 0' if min(waits) > 0 else '0'} s"
    return f"{marks[0] if cell.get('verdict') == 'right' else marks[1]} {sent} sent{waited} → {cell.get('kind')}"


def _retries_section(section: dict[str, Any] | None) -> list[str]:
    """The report.md section "Retries": lane × script, each cell ``retry_cell``, then why each wrong one is."""
    if not section or not section.get("lanes"):
        return []
    scripts = list(section["rules"])
    lines = ["## Retries", "", "Each stack's client at its library's default retry policy against scripted answers "
             "(docs/retries.md): requests sent, the waits it asked for against the delay the vendor asked, what "
             "the caller got.", "",
             "| lane | " + " | ".join(escape_cell(script) for script in scripts) + " |",
             "|---|" + "---|" * len(scripts)]
    wrong = []
    for lane, cells in section["lanes"].items():
        lines.append(f"| {escape_cell(lane)} | " + " | ".join(
            escape_cell(retry_cell(cells[script])) if script in cells else "—" for script in scripts) + " |")
        wrong += [f"- {lane}, {script}: {cells[script]['why']}" for script in scripts
                  if script in cells and cells[script].get("verdict") != "right"]
    lines += ["", *(f"- **{script}**: {escape_cell(rule)}" for script, rule in section["rules"].items())]
    if wrong:
        lines += ["", "Wrong:", "", *(escape_cell(line) for line in wrong)]
    return [*lines, ""]


def _forward_section(section: dict[str, Any] | None) -> list[str]:
    """The report.md section "Survives the next release": family × lane, each cell ``held/all`` and what was not."""
    from conformance.engine.forward import FAMILIES, family_key  # noqa: PLC0415 - only a mutant run has the section

    if not section or not (section["lanes"] or section.get("no_shape")):
        return []
    lanes = list(section["lanes"])
    families = [family_key(family) for family in FAMILIES]
    lines = ["## Survives the next release", "",
             f"Forward-compatibility mutants (docs/forward.md): {sum(section['mutants'].values())} made from the "
             "recorded fixtures; each cell is held/all, then what was not held.", "",
             "| family | rule | " + " | ".join(escape_cell(lane) for lane in lanes) + " |",
             "|---|---|" + "---|" * len(lanes)]
    for family in families:
        cells = []
        for lane in lanes:
            cell = section["lanes"][lane].get(family)
            if not cell or not sum(cell.values()):
                cells.append("—")
                continue
            total = sum(cell.values())
            others = ", ".join(f"{count} {verdict}" for verdict, count in cell.items() if verdict != "held" and count)
            cells.append(f"{'✅' if cell['held'] == total else '❌'} {cell['held']}/{total}" + (f" ({others})"
                                                                                              if others else ""))
        if any(cell != "—" for cell in cells):
            lines.append(f"| {family} | {section['rules'][family]} | " + " | ".join(cells) + " |")
    if section.get("no_shape"):
        lines += ["", escape_cell("No mutants for " + ", ".join(section["no_shape"]) + ": their adapter's wire has no "
                              "Shape (docs/forward.md).")]
    if section["not_held"]:
        lines += ["", "Not held (the first 40):", ""]
        lines += [escape_cell(f"- {entry['lane']}: {entry['mutant']} ({entry['change']}): {entry['verdict']}, read "
                              f"as {entry['read']}") for entry in section["not_held"][:40]]
    return [*lines, ""]
