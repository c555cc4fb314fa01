"""The report as data (builtins only), and its JSON and Markdown renderings (written by ``reportfiles``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance import reportfiles
from conformance.errors import InputError, Problem
from conformance.findings import find_all
from conformance.html import render_html
from conformance.markdown import escape_cell
from conformance.types import USAGE_FIELDS

SCHEMA_VERSION = 1


def build_report(rows: list[dict[str, Any]], providers: list[str],
                 accepted: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, Any]:
    """The report of ``rows``; two rows under one case × provider × mode key are refused (InputError): the
    upgrade gate matches rows by key and could keep the passing one. ``accepted``: per stack row id, the findings
    its team accepts (``Stack.accepted``)."""
    rows = sorted(rows, key=lambda row: (row["case"], row["provider"], row["mode"]))
    repeated = sorted({(a["case"], a["provider"], a["mode"]) for a, b in zip(rows, rows[1:], strict=False)
                       if (a["case"], a["provider"], a["mode"]) == (b["case"], b["provider"], b["mode"])})
    if repeated:
        raise InputError([Problem(" × ".join(key), None, "two results for one case × provider × mode",
                                  "give every case a unique id across the case folders") for key in repeated])
    passed = sum(1 for row in rows if row["passed"])
    return {
        "schema_version": SCHEMA_VERSION,
        "providers": sorted(providers),
        "summary": {"rows": len(rows), "passed": passed, "failed": len(rows) - passed,
                    "cases": len({row["case"] for row in rows})},
        "results": rows,
        "findings": [finding.to_dict() for finding in find_all(rows, accepted)],
    }


def render_json(report: dict[str, Any]) -> str:
    """Sorted keys, one result row per line: rows diff line by line, and the C encoder does the work (an
    indented dump runs the pure-Python encoder over every row)."""
    lines = ["{"]
    for key in sorted(report):
        if key != "results":
            lines.append(f"  {json.dumps(key)}: "
                         f"{json.dumps(report[key], sort_keys=True, ensure_ascii=False, allow_nan=False)},")
    rows = [json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            for row in report["results"]]
    if rows:
        lines += ['  "results": [', ",\n".join(f"    {row}" for row in rows), "  ]"]
    else:
        lines.append('  "results": []')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _cell(row: dict[str, Any]) -> str:
    chain = " → ".join(escape_cell(turn["kind"]) for turn in row["turns"]) or "—"
    mark = "✅" if row["passed"] else "❌"
    note = " ⚑" if row["override"] else ""
    return f"{mark} {chain} ⇒ **{escape_cell(row['outcome'])}**{note}"


def render_markdown(report: dict[str, Any]) -> str:
    """The Markdown rendering (for a terminal, a job summary or a pull-request comment)."""
    rows = report["results"]
    providers = report["providers"]
    summary = report["summary"]
    lines = [
        "# Conformance report",
        "",
        f"{summary['passed']} of {summary['rows']} case × provider × mode results passed "
        f"({summary['cases']} cases, {len(providers)} providers).",
        "",
    ]
    failed = [row for row in rows if not row["passed"]]
    if failed:
        lines += ["## Failures", ""]
        for row in failed:
            lines.append(f"- **{escape_cell(row['case'])}** \\[{escape_cell(row['provider'])}, "
                         f"{escape_cell(row['mode'])}\\]: "
                         + "; ".join(escape_cell(failure) for failure in row["failures"]))
        lines.append("")
    modes = sorted({row["mode"] for row in rows})
    for mode in modes:
        lines += [f"## Matrix ({escape_cell(mode)} mode): turn kinds ⇒ outcome", ""]
        lines.append("| case | expected | " + " | ".join(escape_cell(provider) for provider in providers) + " |")
        lines.append("|---|---|" + "---|" * len(providers))
        by_key = {(row["case"], row["provider"]): row for row in rows if row["mode"] == mode}
        first_row: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row["mode"] == mode:
                first_row.setdefault(row["case"], row)
        for case in sorted(first_row):
            any_row = first_row[case]
            cells = [_cell(by_key[(case, provider)]) if (case, provider) in by_key else "—" for provider in providers]
            lines.append(f"| {escape_cell(case)} | {escape_cell(any_row['expected']['outcome'])} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    lines += _raw_value_table(rows, providers)
    lines += _usage_table(rows, providers)
    lines += _request_table(rows, providers)
    lines += _findings_section(report.get("findings", []))
    overrides = {(row["case"], row["provider"]): row for row in rows if row["override"]}
    if overrides:
        lines += ["## Provider differences (⚑ overrides)", ""]
        for _, row in sorted(overrides.items()):
            lines.append(f"- **{escape_cell(row['case'])}** \\[{escape_cell(row['provider'])}\\]: expects "
                         f"{escape_cell(row['expected']['outcome'])} — {escape_cell(row['override']['why'])}")
        lines.append("")
    return "\n".join(lines)


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


def _short(value: Any) -> str:
    text = "null" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _raw_value_table(rows: list[dict[str, Any]], providers: list[str]) -> list[str]:
    """How each vendor said it: the raw wire value behind every turn, side by side."""
    lines = ["## How each vendor said it (raw value per turn)", ""]
    lines.append("| case | " + " | ".join(escape_cell(provider) for provider in providers) + " |")
    lines.append("|---|" + "---|" * len(providers))
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sorted(rows, key=lambda row: row["mode"] != "body"):  # body rows first; stream-only cells too
        by_key.setdefault((row["case"], row["provider"]), row)
    for case in sorted({row["case"] for row in rows}):
        cells = []
        for provider in providers:
            found = by_key.get((case, provider))
            cells.append(" → ".join(escape_cell(turn["raw"]) for turn in found["turns"]) if found else "—")
        lines.append(f"| {escape_cell(case)} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def _usage_table(rows: list[dict[str, Any]], providers: list[str]) -> list[str]:
    """Normalized token totals per provider over all cases (body mode), so vendors compare on one scale."""
    short = {"input_tokens": "input", "cached_input_tokens": "cached", "cache_write_tokens": "cache write",
             "output_tokens": "output", "reasoning_tokens": "reasoning", "total_tokens": "total"}
    lines = ["## Normalized usage per provider (body mode, all cases)", "",
             "| provider | " + " | ".join(short[name] for name in USAGE_FIELDS) + " |",
             "|---|" + "---:|" * len(USAGE_FIELDS)]
    for provider in providers:
        usages = [row["usage"] for row in rows if row["provider"] == provider and row["mode"] == "body"
                  and row.get("usage")]
        cells = []
        for name in USAGE_FIELDS:
            known = [usage[name] for usage in usages if usage.get(name) is not None]
            cells.append(str(sum(known)) if known else "null")
        lines.append(f"| {escape_cell(provider)} | " + " | ".join(cells) + " |")
    lines += ["", "`null`: the vendor does not report that count (never read as 0).", ""]
    return lines


def _request_table(rows: list[dict[str, Any]], providers: list[str]) -> list[str]:
    """What each adapter sent (body mode, all cases): how big the static prefix is, whether it stayed byte-stable
    across turns (the vendor's prompt cache depends on it), and how many request expectations failed."""
    lines = ["## Requests per provider (body mode, all cases)", "",
             "| provider | requests | prefix bytes | prefix stable | expectations failed | not checked |",
             "|---|---:|---:|---|---:|---:|"]
    for provider in providers:
        body = [row for row in rows if row["provider"] == provider and row["mode"] == "body"]
        records = [turn["request"] for row in body for turn in row["turns"] if isinstance(turn.get("request"), dict)]
        sizes = sorted({record["prefix_bytes"] for record in records})
        size = "—" if not sizes else str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"
        moved = sum(1 for row in body if any("static prefix changed" in problem
                                             for problem in (row.get("correlation") or {}).get("problems", [])))
        failed = [row for row in body if any(failure.startswith("request: ") for failure in row["failures"])]
        unchecked = sum(1 for record in records if not record["checked"])
        lines.append(f"| {escape_cell(provider)} | {len(records)} | {size} | "
                     f"{'yes' if not moved else f'no ({moved} rows)'} | "
                     f"{sum(len(record['problems']) for record in records)} in {len(failed)} rows | {unchecked} |")
    lines += ["", "Prefix bytes: the static prefix (instructions, tools, tool choice, output schema) of the requests "
              "as canonical JSON, smallest–largest over the cases.", ""]
    return lines


def render_reports(report: dict[str, Any]) -> dict[str, str]:
    """The three report texts by file name; rendering errors surface here, before anything is written."""
    return {"report.json": render_json(report), "report.md": render_markdown(report),
            "report.html": render_html(report)}


def write_reports(report: dict[str, Any], directory: Path) -> list[Path]:
    """Render the three reports, then write them as one set (``conformance.reportfiles``)."""
    return reportfiles.write_reports(render_reports(report), directory)
