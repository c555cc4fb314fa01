"""``report.html``: one self-contained page (no network, no external assets) rendered from the report data.

The data travels as JSON inside a ``<script type="application/json">`` element with every ``<`` escaped, and
the page builds the DOM with ``textContent`` only, so text that came from a fixture is never markup.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import cache
from importlib.resources import files
from typing import Any

from conformance.report.kept import KeptRows

# Fields of a row the page needs; the rest of report.json stays out of the page to keep it small.
DATA_MARK = "/*DATA*/"
"""Where the page template takes its data."""
ROW_FIELDS = ("case", "scenario", "title", "provider", "mode", "expected", "override", "outcome", "detail",
              "passed", "failures", "turns", "correlation", "usage", "cost")
TURN_FIELDS = ("turn", "fixture", "kind", "reason", "source", "raw", "raw_type", "detail", "http_status", "calls",
               "text", "usage", "raw_usage", "cost", "stream", "request")


def _slim(row: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of one row."""
    slim = {name: row.get(name) for name in ROW_FIELDS}
    if row.get("waived"):  # only on a waived row, so a report without waivers keeps its page byte for byte
        slim["waived"] = row["waived"]
    slim["turns"] = [{name: turn.get(name) for name in TURN_FIELDS} for turn in row.get("turns") or []]
    return slim


class _Slimmed:
    """The report's rows, each made slim (``_slim``) only when the page's data is written: a report built in groups
    (``conformance.report.kept.KeptRows``) gives them one at a time, none held."""

    def __init__(self, rows: Iterable[dict[str, Any]]) -> None:
        self.rows = rows


def _page_data(report: dict[str, Any], lazy: bool = False) -> dict[str, Any]:
    """The page's data; ``lazy``: its rows are the report's own, slimmed as they are written (``_embedded_chunks``)."""
    rows = _Slimmed(report["results"]) if lazy else [_slim(row) for row in report["results"]]
    data = {"summary": report["summary"], "providers": report["providers"], "results": rows,
            "differs": report.get("differs", []), "findings": report.get("findings", []),
            "measured": report.get("measured")}
    if report.get("forward"):  # only with --mutants, so a report without them keeps its page byte for byte
        from conformance.engine.forward import FAMILIES, family_key  # noqa: PLC0415 - only a mutant run needs it

        data["forward"] = {"rules": report["forward"]["rules"], "lanes": report["forward"]["lanes"],
                           "families": [family_key(family) for family in FAMILIES]}
    if report.get("retries") and report["retries"].get("lanes"):  # only with --retries
        from conformance.report.build import retry_cell  # noqa: PLC0415

        section = report["retries"]
        lanes = {lane: {script: {"text": retry_cell(cell, ("✔", "✘")), "right": cell.get("verdict") == "right",
                                 "why": cell.get("why")} for script, cell in cells.items()}
                 for lane, cells in section["lanes"].items()}
        data["retries"] = {"rules": section["rules"], "scripts": list(section["rules"]), "lanes": lanes}
    return data


def page_row(row: dict[str, Any]) -> str:
    """One row as the page's data holds it: slim (``_slim``), escaped (``_dumped``)."""
    return _dumped(_slim(row))


def _dumped(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    # Inside <script>, "</script>" or "<!--" would end or confuse the element: escape every "<" (and the
    # line separators some parsers treat as line ends).
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _embedded_json(data: dict[str, Any]) -> str:
    """``json.dumps(data, sort_keys=True)``, escaped, written out key by key and row by row: the escaping then
    scans each row's short text rather than the whole page's, which at thousands of rows is most of the page's
    cost. The text is the same as one dump's (its separators are ``", "`` and ``": "``)."""
    return "".join(_embedded_chunks(data))


def _embedded_chunks(data: dict[str, Any]) -> Iterator[str]:
    """``_embedded_json``'s text in pieces, a row at a time."""
    separator = "{"
    for key in sorted(data):
        value = data[key]
        yield f"{separator}{_dumped(key)}: "
        separator = ", "
        if key == "results" and isinstance(value, list | _Slimmed):
            yield "["
            texts: Iterable[str]
            if not isinstance(value, _Slimmed):
                texts = map(_dumped, value)
            elif isinstance(value.rows, KeptRows):  # the page's text of each row, made as the row was kept
                texts = value.rows.pages(page_row)
            else:
                texts = map(page_row, value.rows)
            for index, text in enumerate(texts):
                yield (", " if index else "") + text
            yield "]"
        else:
            yield _dumped(value)
    yield "}" if separator == ", " else "{}"


@cache
def page_template() -> str:
    """The page (HTML, CSS and script) from ``conformance/templates/report.html``, package data."""
    return files("conformance").joinpath("templates/report.html").read_text(encoding="utf-8")


def render_html(report: dict[str, Any]) -> str:
    """The self-contained report.html: the report as JSON data and a page that renders it."""
    return "".join(render_html_chunks(report))


def render_html_chunks(report: dict[str, Any]) -> Iterator[str]:
    """``render_html``'s text in pieces: the page around its data, the data a row at a time."""
    before, marker, after = page_template().partition(DATA_MARK)
    if not marker or DATA_MARK in after:  # not one place for the data: the page as ``str.replace`` makes it
        yield page_template().replace(DATA_MARK, _embedded_json(_page_data(report)))
        return
    yield before
    yield from _embedded_chunks(_page_data(report, lazy=True))
    yield after
