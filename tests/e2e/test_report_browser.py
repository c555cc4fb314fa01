"""report.html in a real headless Chromium: loads without console errors, one row per case, filters work,
and model text that looks like markup stays text (no script runs)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.runner import run_all
from conformance.report.build import build_report, write_reports
from tests.helpers import CASES

HOSTILE = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
CHROMIUM = next((path for path in (shutil.which("chromium"), shutil.which("chromium-browser"),
                                   shutil.which("google-chrome")) if path), None)

# End-to-end: it drives a browser (pytest -m "not e2e" skips it).
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium on this machine: .ci/run installs Debian's chromium (scripts/install-chromium)",
)]


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    cases = folder / "cases"
    shutil.copytree(CASES, cases)
    fixture = cases / "normal/openai-chat/turn2.json"
    body = json.loads(fixture.read_text())
    body["choices"][0]["message"]["content"] = "Order ORD-1001 has shipped. " + HOSTILE
    fixture.write_text(json.dumps(body))
    # A failure that exists only in stream mode: the body still says length, the stream now says stop.
    stream = cases / "truncation/openai-chat/turn1.sse"
    stream.write_text(stream.read_text().replace('"finish_reason":"length"', '"finish_reason":"stop"'))
    adapters = builtin_adapters()
    rows = run_all(load_cases([cases]), adapters)
    # A stack column that reads Anthropic's context-window stop as a token cap: a finding and a differing cell.
    wire = next(row for row in rows if (row["case"], row["provider"], row["mode"]) ==
                ("context_window", "anthropic-messages", "body"))
    gateway = json.loads(json.dumps(wire))
    gateway.update(provider="anthropic-messages@gw", stack="gw")
    gateway["turns"][0].update(reason="max_tokens", raw="finish_reason=length")
    write_reports(build_report(rows + [gateway], [*adapters, "anthropic-messages@gw"]), folder)
    return folder / "report.html"


@pytest.fixture(scope="module")
def page(report_page: Path) -> Any:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        errors: list[str] = []
        requests: list[str] = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("request", lambda request: requests.append(request.url))
        page.goto(report_page.as_uri())
        page.wait_for_selector("#matrix tbody tr")
        page.errors, page.requests = errors, requests  # type: ignore[attr-defined]
        yield page
        browser.close()


def visible_cases(page: Any) -> list[str]:
    return page.eval_on_selector_all("#matrix tbody tr[data-case]", "rows => rows.map(row => row.dataset.case)")


def test_the_page_loads_with_no_console_error_and_no_network(page: Any, report_page: Path) -> None:
    assert page.errors == []
    assert page.requests == [report_page.as_uri()]


def test_one_row_per_case(page: Any) -> None:
    assert visible_cases(page) == sorted(case.id for case in load_cases([CASES]))


def test_the_filters_narrow_the_matrix(page: Any) -> None:
    page.select_option("#f-scenario", "refusal")
    assert visible_cases(page) == ["refusal"]
    page.select_option("#f-scenario", "")
    page.select_option("#f-provider", "gemini")
    headers = page.eval_on_selector_all("#matrix thead th", "cells => cells.map(cell => cell.textContent)")
    assert headers == ["case", "scenario", "expected", "gemini"]
    page.select_option("#f-provider", "")
    page.select_option("#f-status", "failed")
    assert visible_cases(page) == ["truncation"]
    page.select_option("#f-mode", "body")
    assert visible_cases(page) == []
    assert "No result matches these filters." in page.inner_text("#matrix tbody")
    page.select_option("#f-status", "")
    page.select_option("#f-mode", "stream")
    assert len(visible_cases(page)) == len(load_cases([CASES]))
    page.select_option("#f-mode", "")


def test_a_failure_only_in_stream_mode_is_visible_on_load(report_page: Path, page: Any) -> None:
    page.reload()
    page.wait_for_selector("#matrix tbody tr")
    assert page.input_value("#f-mode") == ""  # all modes
    cell = page.inner_text('tr[data-case="truncation"] td[data-provider="openai-chat"]')
    assert "stream: ✘" in cell and "body: ✔" in cell


def test_model_text_that_looks_like_markup_renders_as_text(page: Any) -> None:
    page.click('tr[data-case="normal"] td[data-provider="openai-chat"] .entry[data-mode="body"]')
    details = page.inner_text("#details")
    assert HOSTILE in details
    assert page.evaluate("window.__xss") is None
    assert page.eval_on_selector_all("#details img, #details script", "nodes => nodes.length") == 0
    assert "Order ORD-1001 has shipped." in details


def test_each_turn_shows_the_request_sent_beside_its_response(page: Any) -> None:
    page.click('tr[data-case="parallel_tool_calls"] td[data-provider="anthropic-messages"] .entry[data-mode="body"]')
    headers = page.eval_on_selector_all("#details th", "nodes => nodes.map(node => node.textContent)")
    assert headers[:3] == ["turn", "request sent", "raw value"]
    cells = page.eval_on_selector_all("#details tr td:nth-child(2)", "nodes => nodes.map(node => node.innerText)")
    assert cells[0].splitlines()[1:] == ["system slot: yes", "tools: get_order", "choice: auto", "output schema: no",
                                         "token cap: 512", "user"]
    assert cells[1].splitlines()[-1] == "user → model → results [toolu_01pa0Qz, toolu_01pa1Qz]"


def test_cells_that_part_from_most_vendors_are_marked(page: Any, report_page: Path) -> None:
    rows = json.loads((report_page.parent / "report.json").read_text())["results"]
    body = {row["provider"]: row for row in rows if (row["case"], row["mode"]) == ("context_window", "body")}
    votes = Counter(row["outcome"] for row in body.values() if row["stack"] == "raw")
    majority, count = votes.most_common(1)[0]
    assert count * 2 > sum(votes.values())  # the fixtures give a majority here: some vendors answer HTTP 400
    marked = page.eval_on_selector_all(
        'tr[data-case="context_window"] .entry[data-mode="body"]',
        "entries => entries.filter(e => e.querySelector('.differs')).map(e => e.parentElement.dataset.provider)")
    assert sorted(marked) == sorted(provider for provider, row in body.items() if row["outcome"] != majority)
    assert marked and "≠" in page.inner_text("#legend")


def test_the_stack_view_lists_what_each_stack_hides(page: Any, tmp_path: Path) -> None:
    page.select_option("#f-mode", "body")
    page.screenshot(path=str(tmp_path / "matrix.png"))
    page.click('tr[data-case="normal"] td[data-provider="openai-chat"] .entry[data-mode="body"]')
    page.locator("#details").screenshot(path=str(tmp_path / "turns.png"))
    page.select_option("#f-mode", "")
    assert page.is_visible("#findings")
    assert page.eval_on_selector_all("#f-stack option", "options => options.map(o => o.value)") == [
        "anthropic-messages@gw"]
    rows = page.eval_on_selector_all("#findings-table tbody tr", "rows => rows.map(r => r.innerText)")
    reason = next(row for row in rows if row.startswith("reason"))
    assert "context_window → max_tokens" in reason and "context_window (body)" in reason and reason.endswith("no")
    assert any(row.startswith("raw\tlost\tstop_reason=model_context_window_exceeded") for row in rows), rows
    page.locator("#findings").screenshot(path=str(tmp_path / "findings.png"))
    assert all((tmp_path / name).stat().st_size > 5000 for name in ("matrix.png", "turns.png", "findings.png"))


def test_a_waived_row_reads_as_waived_with_its_reason_and_filters_apart(tmp_path: Path, page: Any) -> None:
    import dataclasses

    from conformance.engine.runner import run_case
    from conformance.kit import Waiver

    chat = builtin_adapters()["openai-chat"]

    def no_schema(task: Any, transcript: Any) -> Any:
        request = chat.build_request(task, transcript)
        request.pop("response_format", None)
        return request

    team = dataclasses.replace(chat, build_request=no_schema, waivers=(
        Waiver(why="the app offers no structured output", cases=("structured_output_*",)),))
    by_id = {case.id: case for case in load_cases([CASES])}
    rows = [run_case(by_id[case_id], "openai-chat", team, "body") for case_id in ("normal", "structured_output_valid")]
    write_reports(build_report(rows, ["openai-chat"]), tmp_path)
    context = page.context.browser.new_context()  # the module's browser: one Playwright per thread
    other = context.new_page()
    try:
        other.goto((tmp_path / "report.html").as_uri())
        other.wait_for_selector("#matrix tbody tr")
        summary = "1 of 2 case × provider × mode results passed (2 cases, 1 providers); 1 waived."
        assert summary in other.inner_text("body")
        cell = other.locator("#matrix tbody tr[data-case=structured_output_valid] .waived")
        assert cell.inner_text() == "body: waived: answer_ready"
        assert cell.get_attribute("title") == "waived: the app offers no structured output"
        other.select_option("#f-status", "waived")
        assert visible_cases(other) == ["structured_output_valid"]
        other.select_option("#f-status", "failed")
        assert visible_cases(other) == []
    finally:
        context.close()
