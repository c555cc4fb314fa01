"""``report.html``: one self-contained page (no network, no external assets) rendered from the report data.

The data travels as JSON inside a ``<script type="application/json">`` element with every ``<`` escaped, and
the page builds the DOM with ``textContent`` only, so text that came from a fixture is never markup.
"""

from __future__ import annotations

import json
from typing import Any

# Fields of a row the page needs; the rest of report.json stays out of the page to keep it small.
ROW_FIELDS = ("case", "scenario", "title", "provider", "mode", "expected", "override", "outcome", "detail",
              "passed", "failures", "turns", "correlation", "usage")
TURN_FIELDS = ("turn", "fixture", "kind", "reason", "source", "raw", "raw_type", "detail", "http_status", "calls", "text",
               "usage", "raw_usage", "stream")


def _page_data(report: dict[str, Any]) -> dict[str, Any]:
    rows = []
    for row in report["results"]:
        slim = {name: row.get(name) for name in ROW_FIELDS}
        slim["turns"] = [{name: turn.get(name) for name in TURN_FIELDS} for turn in row.get("turns") or []]
        rows.append(slim)
    return {"summary": report["summary"], "providers": report["providers"], "results": rows}


def _embedded_json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, allow_nan=False)
    # Inside <script>, "</script>" or "<!--" would end or confuse the element: escape every "<" (and the
    # line separators some parsers treat as line ends).
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_html(report: dict[str, Any]) -> str:
    """The self-contained report.html: the report as JSON data and a page that renders it."""
    return PAGE.replace("/*DATA*/", _embedded_json(_page_data(report)))


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
      content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conformance report</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem; color: #1d232a; }
h1 { font-size: 1.4rem; margin: 0 0 .3rem; }
.filters { display: flex; gap: 1rem; margin: 1rem 0; flex-wrap: wrap; }
label { font-weight: 600; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d5dae0; padding: .35rem .5rem; vertical-align: top; text-align: left; }
th { background: #f3f5f7; }
td.cell { cursor: pointer; min-width: 10rem; }
td.cell:hover { background: #eef4ff; }
.pass { color: #17663a; } .fail { color: #b3261e; font-weight: 600; }
.kinds { color: #56606b; font-size: 12px; }
.flag { color: #8a5a00; }
.entry + .entry { margin-top: .35rem; padding-top: .35rem; border-top: 1px dashed #d5dae0; }
#details { margin-top: 1.2rem; padding: .8rem 1rem; border: 1px solid #d5dae0; background: #fbfcfd; }
#details h2 { font-size: 1.1rem; margin: 0 0 .5rem; }
pre { white-space: pre-wrap; word-break: break-word; background: #f3f5f7; padding: .4rem; margin: .3rem 0; }
.chart text { font-size: 11px; fill: #1d232a; }
</style>
</head>
<body>
<h1>Conformance report</h1>
<p id="summary"></p>
<div class="filters">
  <span><label for="f-mode">Mode</label> <select id="f-mode"></select></span>
  <span><label for="f-provider">Provider</label> <select id="f-provider"></select></span>
  <span><label for="f-scenario">Scenario</label> <select id="f-scenario"></select></span>
  <span><label for="f-status">Status</label> <select id="f-status"></select></span>
</div>
<table id="matrix"><thead></thead><tbody></tbody></table>
<section id="details" hidden></section>
<h2 style="font-size:1.1rem;margin-top:1.5rem">Normalized total tokens per case and provider</h2>
<div id="chart"></div>
<script type="application/json" id="report-data">/*DATA*/</script>
<script>
"use strict";
const DATA = JSON.parse(document.getElementById("report-data").textContent);
const ROWS = DATA.results;
const el = (tag, text, cls) => {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
};
const unique = (values) => Array.from(new Set(values)).sort();
function fillSelect(id, values, all) {
  const select = document.getElementById(id);
  if (all) select.appendChild(el("option", all)).value = "";
  for (const value of values) select.appendChild(el("option", value)).value = value;
  select.addEventListener("change", render);
}
// Every mode by default: a failure that exists only in stream mode must be visible on load.
fillSelect("f-mode", unique(ROWS.map((row) => row.mode)), "all modes");
fillSelect("f-provider", DATA.providers, "all providers");
fillSelect("f-scenario", unique(ROWS.map((row) => row.scenario)), "all scenarios");
fillSelect("f-status", ["passed", "failed"], "any status");
const s = DATA.summary;
document.getElementById("summary").textContent =
  `${s.passed} of ${s.rows} case × provider × mode results passed (${s.cases} cases, ${DATA.providers.length} providers).`;

function value(id) { return document.getElementById(id).value; }

function render() {
  const mode = value("f-mode"), provider = value("f-provider"), scenario = value("f-scenario"), status = value("f-status");
  const providers = provider ? [provider] : DATA.providers;
  const head = document.querySelector("#matrix thead"), body = document.querySelector("#matrix tbody");
  head.replaceChildren(); body.replaceChildren();
  const header = el("tr");
  for (const title of ["case", "scenario", "expected", ...providers]) header.appendChild(el("th", title));
  head.appendChild(header);
  const cases = unique(ROWS.map((row) => row.case));
  let shown = 0;
  for (const name of cases) {
    const cells = providers.map((p) => ROWS.filter((row) => row.case === name && row.provider === p && (!mode || row.mode === mode)));
    const any = ROWS.find((row) => row.case === name);
    if (scenario && any.scenario !== scenario) continue;
    if (status && !cells.some((rows) => rows.some((row) => (row.passed ? "passed" : "failed") === status))) continue;
    shown += 1;
    const tr = el("tr");
    tr.dataset.case = name;
    tr.appendChild(el("td", name));
    tr.appendChild(el("td", any.scenario));
    tr.appendChild(el("td", any.expected.outcome));
    cells.forEach((rows) => {
      const td = el("td", undefined, "cell");
      if (!rows.length) { td.textContent = "—"; tr.appendChild(td); return; }
      td.dataset.provider = rows[0].provider;
      for (const row of rows) {
        const entry = el("div", undefined, "entry");
        entry.dataset.mode = row.mode;
        const label = (mode ? "" : row.mode + ": ") + (row.passed ? "✔ " : "✘ ") + row.outcome;
        entry.appendChild(el("div", label, row.passed ? "pass" : "fail"));
        entry.appendChild(el("div", row.turns.map((turn) => turn.kind).join(" → "), "kinds"));
        if (row.override) entry.appendChild(el("div", "⚑ override", "flag"));
        entry.addEventListener("click", () => showDetails(row));
        td.appendChild(entry);
      }
      tr.appendChild(td);
    });
    body.appendChild(tr);
  }
  if (!shown) {
    const tr = el("tr");
    const td = el("td", "No result matches these filters.");
    td.colSpan = providers.length + 3;
    tr.appendChild(td);
    body.appendChild(tr);
  }
  drawChart(mode || "body", providers, scenario);
}

function showDetails(row) {
  const box = document.getElementById("details");
  box.hidden = false;
  box.replaceChildren();
  box.appendChild(el("h2", `${row.case} · ${row.provider} · ${row.mode}`));
  box.appendChild(el("p", `${row.title} — expected ${row.expected.outcome}, got ${row.outcome}` +
                          (row.detail ? ` (${row.detail})` : "")));
  if (row.override) box.appendChild(el("p", "Override: " + row.override.why, "flag"));
  for (const failure of row.failures) box.appendChild(el("p", failure, "fail"));
  const turns = el("table");
  const th = el("tr");
  for (const title of ["turn", "raw value", "kind", "reason / source", "calls", "text", "usage (normalized)", "usage (raw)", "stream"]) th.appendChild(el("th", title));
  turns.appendChild(th);
  for (const turn of row.turns) {
    const tr = el("tr");
    tr.appendChild(el("td", turn.turn));
    tr.appendChild(el("td", turn.raw));
    tr.appendChild(el("td", turn.kind));
    tr.appendChild(el("td", turn.reason || turn.source || turn.raw_type || turn.detail || ""));
    tr.appendChild(el("td", turn.calls.map((call) => `${call.call_id} ${call.name}(${call.arguments})` +
                                                   (call.synthesized_id ? " [synthesized id]" : "")).join("\\n")));
    const text = el("td"); text.appendChild(el("pre", turn.text || "")); tr.appendChild(text);
    const normalized = el("td"); normalized.appendChild(el("pre", JSON.stringify(turn.usage, null, 1))); tr.appendChild(normalized);
    const raw = el("td"); raw.appendChild(el("pre", JSON.stringify(turn.raw_usage, null, 1))); tr.appendChild(raw);
    const stream = el("td");
    if (turn.stream) stream.appendChild(el("pre", `${turn.stream.event_count} events, ${turn.stream.first} … ${turn.stream.last}, terminal: ${turn.stream.terminal}`));
    tr.appendChild(stream);
    turns.appendChild(tr);
  }
  box.appendChild(turns);
  const correlation = row.correlation || {};
  box.appendChild(el("p", `Correlation: ${correlation.calls} call(s), ${correlation.results} result(s), ${correlation.matched} matched`));
  for (const problem of correlation.problems || []) box.appendChild(el("p", problem, "fail"));
}

function drawChart(mode, providers, scenario) {
  const NS = "http://www.w3.org/2000/svg";
  const rows = ROWS.filter((row) => row.mode === mode && providers.includes(row.provider) && (!scenario || row.scenario === scenario));
  const cases = unique(rows.map((row) => row.case));
  const max = Math.max(1, ...rows.map((row) => (row.usage && row.usage.total_tokens) || 0));
  const barHeight = 9, group = providers.length * barHeight + 10, width = 720, left = 150;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(cases.length * group + 20));
  const colors = ["#3b6fd4", "#d4793b", "#3ba86b", "#a83b8f", "#8f8f2a", "#2aa3a3"];
  cases.forEach((name, i) => {
    const label = document.createElementNS(NS, "text");
    label.setAttribute("x", "0"); label.setAttribute("y", String(i * group + 12));
    label.textContent = name;
    svg.appendChild(label);
    providers.forEach((p, j) => {
      const row = rows.find((r) => r.case === name && r.provider === p);
      const total = row && row.usage ? row.usage.total_tokens || 0 : 0;
      const bar = document.createElementNS(NS, "rect");
      bar.setAttribute("x", String(left)); bar.setAttribute("y", String(i * group + j * barHeight));
      bar.setAttribute("height", String(barHeight - 2));
      bar.setAttribute("width", String(Math.round((width - left - 60) * total / max)));
      bar.setAttribute("fill", colors[j % colors.length]);
      const tip = document.createElementNS(NS, "title");
      tip.textContent = `${p}: ${total} tokens`;
      bar.appendChild(tip);
      svg.appendChild(bar);
    });
  });
  const legend = el("p");
  providers.forEach((p, j) => { const item = el("span", "■ " + p + "  "); item.style.color = colors[j % colors.length]; legend.appendChild(item); });
  const chart = document.getElementById("chart");
  chart.replaceChildren(svg, legend);
}
render();
</script>
</body>
</html>
"""
