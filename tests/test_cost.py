"""Cost truth (docs/cost.md): every turn priced by the price file, and each kind of cost mistake a named finding,
whether the wrong figure comes from the team's own cost function, a gateway, the wire or a stack's counts."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conformance.errors import InputError
from conformance.providers.anthropic_messages import ADAPTER as ANTHROPIC
from conformance.report.build import render_markdown, render_summary
from conformance.report.cost import billing_of, load_prices, price, price_rows
from conformance.report.diff import compare
from tests.helpers import BUNDLED, CASES, OWN, cli, fixture

PRICES = load_prices()
SONNET = PRICES.rates("anthropic-messages", "claude-sonnet-5")


def _report(tmp_path: Path, *arguments: str, cwd: Path | None = None) -> dict[str, Any]:
    result = cli("run", *arguments, "--report-dir", str(tmp_path / "r"), cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return json.loads((tmp_path / "r/report.json").read_text())


def _row(report: dict[str, Any], case: str, provider: str, mode: str = "body") -> dict[str, Any]:
    (row,) = [row for row in report["results"] if (row["case"], row["provider"], row["mode"]) == (case, provider, mode)]
    return row


def _cost_findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [finding for finding in report["findings"] if finding["field"].split(".")[0] == "cost"]


# ---- Pricing ------------------------------------------------------------------------------------------------------

def test_each_turn_is_priced_by_the_table_and_a_row_is_the_sum(tmp_path: Path) -> None:
    report = _report(tmp_path, *OWN, "--case", "cached_usage")
    row = _row(report, "cached_usage", "anthropic-messages")
    # Turn 2 (fixture): 60 uncached + 512 cache reads in, 21 out, at 2.00 / 0.20 / 10.00 USD per million.
    assert row["turns"][1]["cost"] == {"usd": pytest.approx((60 * 2.00 + 512 * 0.20 + 21 * 10.00) / 1e6),
                                       "model": "claude-sonnet-5"}
    # Turn 1: 600 in, 50 out.
    assert row["turns"][0]["cost"]["usd"] == pytest.approx((600 * 2.00 + 50 * 10.00) / 1e6)
    assert row["cost"] == pytest.approx(row["turns"][0]["cost"]["usd"] + row["turns"][1]["cost"]["usd"])
    # A dated snapshot is priced as its family; Bedrock, whose responses name no model, as the one assumed.
    chat = _row(report, "cached_usage", "openai-chat")
    assert chat["turns"][0]["model"].startswith("gpt-5.5-") and chat["turns"][0]["cost"]["model"] == "gpt-5.5"
    bedrock = _row(report, "cached_usage", "bedrock-converse")
    assert bedrock["turns"][0]["model"] is None
    assert bedrock["turns"][0]["cost"]["model"] == "anthropic.claude-sonnet-5"
    assert _cost_findings(report) == []
    markdown = render_markdown(report)
    assert "## Cost (USD per row" in markdown and f"${row['cost']:.3g}" in markdown


def test_the_bundled_report_shows_dollars_on_every_row_with_usage_and_no_cost_finding(tmp_path: Path) -> None:
    report = _report(tmp_path, "--cases", str(BUNDLED))  # the main job's run: the bundled cases
    with_usage = [row for row in report["results"] if any(turn["usage"] for turn in row["turns"])]
    assert len(with_usage) > 200
    assert all(row["cost"] is not None and row["cost"] > 0 for row in with_usage), [
        (row["case"], row["provider"]) for row in with_usage if not row["cost"]]
    assert _cost_findings(report) == []
    assert report["measured"]["prices"]["file"] == "conformance/prices/prices.yaml"


def test_cache_writes_by_lifetime_and_reasoning_and_fees() -> None:
    rates = {"input": 2.0, "cache_read": 0.2, "cache_write": 2.5, "cache_write_1h": 4.0, "output": 10.0,
             "reasoning": 12.0, "request": 0.01}
    usage = {"input_tokens": 1000, "cached_input_tokens": 100, "cache_write_tokens": 300, "output_tokens": 50,
             "reasoning_tokens": 20}
    raw = {"cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 100}}
    expected = (600 * 2.0 + 100 * 0.2 + 200 * 2.5 + 100 * 4.0 + 30 * 10.0 + 20 * 12.0) / 1e6 + 0.01
    assert price(usage, rates, billing_of("anthropic-messages", raw)) == pytest.approx(expected)
    # The split is the Messages adapter's reading (Wire.billing): another API's usage says nothing of it.
    assert billing_of("anthropic-messages", raw).cache_write_1h_tokens == 100
    assert billing_of("gemini", raw).cache_write_1h_tokens == 0
    # Without the lifetime split, every write is a 5-minute one.
    assert price(usage, rates) == pytest.approx(expected - 100 * (4.0 - 2.5) / 1e6)


# ---- The named mistakes -------------------------------------------------------------------------------------------

COST_FUNCTIONS = '''
def cache_as_input(api, model, usage, raw):
    rates = {"claude-sonnet-5": (2.0, 10.0), "gpt-5.5-2026-04-23": (5.0, 30.0)}.get(model, (1.5, 9.0))
    return (usage["input_tokens"] * rates[0] + usage["output_tokens"] * rates[1]) / 1e6

def reasoning_dropped(api, model, usage, raw):
    # Gemini's candidatesTokenCount, which leaves thoughtsTokenCount out
    return (usage["input_tokens"] - (usage["cached_input_tokens"] or 0)) * 1.5e-6 \\
        + (usage["cached_input_tokens"] or 0) * 0.15e-6 + raw.get("candidatesTokenCount", 0) * 9e-6

def right(api, model, usage, raw):
    from conformance.report.cost import billing_of, load_prices, price
    return price(usage, load_prices().rates(api, model or "anthropic.claude-sonnet-5")[1], billing_of(api, raw))

def not_a_number(api, model, usage, raw):
    return "0.01"
'''


@pytest.fixture
def costs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "team_costs.py").write_text(textwrap.dedent(COST_FUNCTIONS))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_team_function_that_prices_cache_reads_as_input_is_a_named_finding(costs: Path) -> None:
    report = _report(costs, *OWN, "--case", "cached_usage", "--provider", "anthropic-messages",
                     "--cost-function", "team_costs:cache_as_input")
    found = {(f["turn"], f["field"]): f for f in _cost_findings(report) if f["mode"] == "body"}
    # Turn 1 read nothing from the cache: the naive figure is right there; turn 2's 512 cached tokens are not.
    assert list(found) == [(2, "cost.team cost function")]
    assert found[(2, "cost.team cost function")]["meaning"].startswith("cache-as-input: ")
    assert found[(2, "cost.team cost function")]["stack_value"] == pytest.approx((572 * 2.0 + 21 * 10.0) / 1e6)


def test_a_team_function_that_leaves_gemini_thoughts_out_is_reasoning_dropped(costs: Path) -> None:
    report = _report(costs, *OWN, "--case", "normal", "--provider", "gemini", "--mode", "body",
                     "--cost-function", "team_costs:reasoning_dropped")
    named = {(f["turn"], f["meaning"].split(":")[0]) for f in _cost_findings(report)}
    assert named == {(1, "reasoning-dropped"), (2, "reasoning-dropped")}


def test_the_right_function_agrees_and_a_function_that_returns_no_number_is_an_error(costs: Path) -> None:
    report = _report(costs, *OWN, "--case", "cached_usage", "--cost-function", "team_costs:right")
    assert _cost_findings(report) == []
    result = cli("run", *OWN, "--case", "cached_usage", "--cost-function", "team_costs:not_a_number",
                 "--report-dir", str(costs / "bad"))
    assert result.returncode == 2 and "returned '0.01'" in result.stderr and "Traceback" not in result.stderr
    assert not (costs / "bad/report.json").exists()
    missing = cli("run", *OWN, "--cost-function", "team_costs:absent", "--report-dir", str(costs / "bad"))
    assert missing.returncode == 2 and "cannot be loaded" in missing.stderr


def _compacted_row() -> dict[str, Any]:
    body = fixture("anthropic-messages", "beta-body-compaction-iterations.json")
    turn = {"turn": 1, **ANTHROPIC.classify_body(body).to_dict()}
    return {"case": "compacted", "provider": "anthropic-messages", "mode": "body", "stack": "raw", "turns": [turn]}


def test_a_cost_of_the_final_pass_only_is_compaction_invisible() -> None:
    row = _compacted_row()
    raw = row["turns"][0]["raw_usage"]
    assert len(raw["iterations"]) >= 2  # the fixture's compaction pass and the final one

    def top_level_only(api: str, model: str | None, usage: dict[str, Any], raw_usage: Any) -> float:
        top = {"input_tokens": raw_usage["input_tokens"] + raw_usage.get("cache_read_input_tokens", 0)
               + raw_usage.get("cache_creation_input_tokens", 0),
               "cached_input_tokens": raw_usage.get("cache_read_input_tokens", 0),
               "cache_write_tokens": raw_usage.get("cache_creation_input_tokens", 0),
               "output_tokens": raw_usage["output_tokens"]}
        assert SONNET is not None
        return price(top, SONNET[1])

    row["turns"][0]["model"] = "claude-sonnet-5"
    (finding,) = price_rows([row], PRICES, top_level_only)
    assert finding["meaning"].startswith("compaction-invisible: ") and finding["stack_value"] < finding["wire"]


def _bundled_normal(tmp_path: Path) -> Path:
    cases = tmp_path / "cases"
    cases.mkdir()
    shutil.copy(BUNDLED / "world.yaml", cases / "world.yaml")
    shutil.copytree(BUNDLED / "normal", cases / "normal", ignore=shutil.ignore_patterns("__snapshots__"))
    return cases


def test_openrouter_reporting_three_times_the_charge_is_cost_x3_and_the_diff_gates_it(tmp_path: Path) -> None:
    cases = _bundled_normal(tmp_path)
    before = _report(tmp_path / "before", "--cases", str(cases), "--provider", "openai-chat")
    assert _cost_findings(before) == []  # usage.cost is the table's figure
    for name in ("turn1.json", "turn1.sse"):
        path = cases / "normal/openai-chat~openrouter" / name
        path.write_text(path.read_text().replace('"cost": 0.002104', '"cost": 0.006312')
                        .replace('"cost":0.002104', '"cost":0.006312'))
    after = _report(tmp_path / "after", "--cases", str(cases), "--provider", "openai-chat")
    found = _cost_findings(after)
    assert {(f["stack"], f["mode"], f["turn"], f["field"], f["meaning"].split(":")[0]) for f in found} == {
        ("openai-chat~openrouter", mode, 1, "cost.usage.cost", "cost ×3") for mode in ("body", "stream")}
    changes = compare({(r["case"], r["provider"], r["mode"]): r for r in before["results"]},
                      {(r["case"], r["provider"], r["mode"]): r for r in after["results"]},
                      before["findings"], after["findings"])
    regressions = [change for change in changes if change.label == "regression"]
    assert {change.key[1] for change in regressions} == {"openai-chat~openrouter"}
    assert any("cost ×3" in note for change in regressions for note in change.notes)
    assert "cost.usage.cost" in render_summary(after)


def test_a_gateway_figure_and_a_stack_that_lost_the_cache_counts() -> None:
    wire = {"case": "c", "provider": "anthropic-messages", "mode": "body", "stack": "raw", "turns": [
        {"turn": 1, "model": "claude-sonnet-5", "raw_usage": {},
         "usage": {"input_tokens": 1000, "cached_input_tokens": 800, "cache_write_tokens": 0, "output_tokens": 10,
                   "reasoning_tokens": None, "total_tokens": 1010}}]}
    stack = json.loads(json.dumps(wire))
    stack.update(provider="anthropic-messages@gateway", stack="gateway")
    stack["turns"][0]["usage"]["cached_input_tokens"] = None  # the layer dropped the cache reads
    right = (200 * 2.0 + 800 * 0.2 + 10 * 10.0) / 1e6
    stack["turns"][0]["provider_details"] = {"reported_cost": {"litellm response_cost": right * 2}}
    findings = {f["field"]: f for f in price_rows([wire, stack], PRICES)}
    assert set(findings) == {"cost", "cost.litellm response_cost"}
    assert findings["cost"]["meaning"].startswith("cache-as-input: ")
    assert findings["cost"]["wire"] == pytest.approx(right)
    assert findings["cost.litellm response_cost"]["meaning"].startswith("cost ×2: ")
    assert findings["cost"]["stack"] == "anthropic-messages@gateway"


# ---- The price file -----------------------------------------------------------------------------------------------

def test_a_wrong_price_file_names_the_line_and_the_pointer(tmp_path: Path) -> None:
    text = (Path(__file__).parent.parent / "conformance/prices/prices.yaml").read_text()
    bad = tmp_path / "prices.yaml"
    bad.write_text(text.replace("        output: 30.00\n", "        output: -30.00\n", 1))
    with pytest.raises(InputError) as raised:
        load_prices(bad, "prices.yaml")
    (problem,) = raised.value.problems
    assert problem.pointer == "/apis/openai-responses/models/gpt-5.5/output" and problem.line is not None
    assert "-30.00" in bad.read_text().splitlines()[problem.line - 1]
    assumed = tmp_path / "assumed.yaml"
    assumed.write_text(text.replace("assume: anthropic.claude-sonnet-5", "assume: amazon.nova-pro-v1:0"))
    with pytest.raises(InputError, match="does not price"):
        load_prices(assumed, "assumed.yaml")
    result = cli("run", *OWN, "--case", "normal", "--prices", str(bad), "--report-dir", str(tmp_path / "r"))
    assert result.returncode == 2 and "/apis/openai-responses/models/gpt-5.5/output" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "r/report.json").exists()


def test_a_stale_price_file_is_flagged_and_a_teams_file_is_used(tmp_path: Path) -> None:
    text = (Path(__file__).parent.parent / "conformance/prices/prices.yaml").read_text()
    old = tmp_path / "prices.yaml"
    old.write_text(text.replace("as_of: 2026-12-05", "as_of: 2025-01-31").replace("input: 2.00", "input: 4.00"))
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nconformance_cases = {CASES}\nconformance_prices = prices.yaml\n")
    report = _report(tmp_path, "--case", "cached_usage", "--provider", "anthropic-messages", cwd=tmp_path)
    prices = report["measured"]["prices"]
    assert prices["as_of"] == "2025-01-31" and prices["stale"] is True
    assert prices["age_days"] == (dt.date.today() - dt.date(2025, 1, 31)).days
    assert _row(report, "cached_usage", "anthropic-messages")["turns"][0]["cost"]["usd"] == pytest.approx(
        (600 * 4.00 + 50 * 10.00) / 1e6)
    assert "older than 120 days" in render_markdown(report) and "days old (older than 120)" in render_summary(report)


def test_a_telemetry_lane_that_prices_its_spans_is_checked_against_the_table() -> None:
    """A team that bills from its traces: the span's counts priced as the convention names them. Spans that leave
    the cache reads out of their own count, or the reasoning out, are named findings of the lane; spans that agree
    with the wire are none; a span without counts has no figure."""
    usage = {"input_tokens": 1000, "cached_input_tokens": 800, "cache_write_tokens": 0, "output_tokens": 300,
             "reasoning_tokens": 200, "total_tokens": 1300}
    wire = {"case": "c", "provider": "anthropic-messages", "mode": "body", "stack": "raw",
            "turns": [{"turn": 1, "model": "claude-sonnet-5", "raw_usage": {}, "usage": usage}]}

    def lane(name: str, attributes: dict[str, Any]) -> dict[str, Any]:
        row = json.loads(json.dumps(wire))
        row.update(provider=f"anthropic-messages@sdk+{name}", stack=f"sdk+{name}",
                   telemetry={"instrumentation": name, "dialect": "genai", "turns": [
                       {"turn": 1, "spans": 1, "attributes": attributes}]})
        return row

    right = {"gen_ai.usage.input_tokens": 1000, "gen_ai.usage.cache_read.input_tokens": 800,
             "gen_ai.usage.cache_creation.input_tokens": 0, "gen_ai.usage.output_tokens": 300,
             "gen_ai.usage.reasoning.output_tokens": 200}
    no_cache = {key: value for key, value in right.items() if "cache" not in key}
    no_thoughts = {**right, "gen_ai.usage.output_tokens": 100}
    no_counts = {"gen_ai.response.id": "msg_1"}
    rows = [wire, lane("agrees", right), lane("nocache", no_cache), lane("nothoughts", no_thoughts),
            lane("nocounts", no_counts)]
    findings = {finding["stack"]: finding for finding in price_rows(rows, PRICES)}
    assert set(findings) == {"anthropic-messages@sdk+nocache", "anthropic-messages@sdk+nothoughts"}
    assert {finding["field"] for finding in findings.values()} == {"cost.telemetry"}
    assert findings["anthropic-messages@sdk+nocache"]["meaning"].startswith("cache-as-input: ")
    assert findings["anthropic-messages@sdk+nothoughts"]["meaning"].startswith("reasoning-dropped: ")
    table = price(usage, SONNET[1]) if SONNET else None
    assert findings["anthropic-messages@sdk+nocache"]["wire"] == pytest.approx(table)


def test_the_wire_costs_and_lifetimes_are_read_for_a_teams_adapter_and_on_responses() -> None:
    """A team's adapter id (its usage a built-in API's) still gets every built-in reading, and OpenRouter's
    usage.cost is read on the Responses wire as on Chat."""
    from conformance.report.cost import billing_of

    anthropic = {"cache_creation": {"ephemeral_1h_input_tokens": 40}, "input_tokens": 5}
    assert billing_of("app-anthropic", anthropic).cache_write_1h_tokens == 40
    assert billing_of("app-openai-chat", {"prompt_tokens": 5, "cost": 0.25}).reported_cost == 0.25
    assert billing_of("openai-responses", {"input_tokens": 5, "cost": 0.5}).reported_cost == 0.5
    assert billing_of("gemini", {"cost": 0.5}).reported_cost is None  # Gemini's usage names no cost
