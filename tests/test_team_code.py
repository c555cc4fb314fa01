"""The team's own code under test: what its failures say, how its rows are waived, how its loop is driven
(docs/adapters.md, docs/stacks.md)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.rows import status_of
from conformance.engine.runner import run_case
from conformance.kit.types import Text
from conformance.kit.waiver import Waiver
from conformance.report.build import build_report, render_markdown, render_summary
from conformance.report.diff import compare
from tests.helpers import CASES

ADAPTERS = builtin_adapters()
CASE = {case.id: case for case in load_cases([CASES])}


def test_a_wrong_outcome_names_the_vendors_value_that_explains_it() -> None:
    """Planted bug A of docs/journey: Anthropic ``max_tokens`` taken as a final answer."""
    anthropic = ADAPTERS["anthropic-messages"]

    def max_tokens_is_an_answer(body: Any) -> Any:
        read = anthropic.classify_body(body)
        return Text(raw=read.raw, text="Returns are accepted within 30 days", response_id=read.response_id,
                    model=read.model, usage=read.usage)

    team = dataclasses.replace(anthropic, classify_body=max_tokens_is_an_answer)
    row = run_case(CASE["truncation"], "anthropic-messages", team, "body")
    assert row["failures"][0] == (
        "outcome: expected incomplete, got unverified_answer — nothing to verify the answer against (no receipts, "
        "no expected answer); turn 1, read as text, had stop_reason=max_tokens")


# ---- Waivers ----------------------------------------------------------------------------------------------------

CHAT = ADAPTERS["openai-chat"]
NO_SCHEMA = Waiver(why="the app offers no structured output", cases=("structured_output_*",),
                   failures=("output schema is not in the vendor's structured-output slot",))


def _without_structured_output(task: Any, transcript: Any) -> dict[str, Any]:
    request = CHAT.build_request(task, transcript)
    request.pop("response_format", None)
    return request


def _team(*waivers: Waiver, **functions: Any) -> Any:
    return dataclasses.replace(CHAT, build_request=_without_structured_output, waivers=waivers, **functions)


def test_a_waiver_needs_a_reason_and_says_what_it_covers_in_tuples() -> None:
    with pytest.raises(ValueError, match="needs its reason"):
        Waiver(why=" ")
    with pytest.raises(ValueError, match="Waiver.cases is a tuple"):
        Waiver(why="x", cases="structured_output_*")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="neither body nor stream"):
        Waiver(why="x", cases=("http_*",), modes=("sse",))
    for everything in ({}, {"cases": ("*",)}, {"cases": ("**", "*")}, {"modes": ("stream",)}):
        with pytest.raises(ValueError, match="names no case, failure or exception waives every row"):
            Waiver(why="x", **everything)
    assert Waiver(why="x", failures=("tools offered",)).cases == ("*",)  # every case, one failure: narrow enough


def test_a_waived_row_is_reported_waived_never_passed_and_a_failure_it_does_not_cover_still_fails() -> None:
    rows = [run_case(CASE[case_id], "openai-chat", _team(NO_SCHEMA), "body")
            for case_id in ("structured_output_valid", "normal")]
    waived, normal = rows
    assert [status_of(row) for row in rows] == ["waived", "passed"]
    assert waived["passed"] is False and waived["failures"] == []
    assert waived["waived"] == {"why": ["the app offers no structured output"], "failures": [
        "request: turns 1, 2: the case's output schema is not in the vendor's structured-output slot"]}
    unwaived = run_case(CASE["structured_output_valid"], "openai-chat", _team(), "body")
    assert status_of(unwaived) == "failed" and "waived" not in unwaived
    # The waiver covers one failure; another one the same row has still fails it.
    other = Waiver(why="not this one", cases=("structured_output_*",), failures=("tools offered",))
    partly = run_case(CASE["structured_output_valid"], "openai-chat", _team(other), "body")
    assert status_of(partly) == "failed" and "waived" not in partly
    report = build_report(rows, ["openai-chat"])
    assert report["summary"] == {"rows": 2, "passed": 1, "failed": 0, "cases": 2, "waived": 1}
    markdown = render_markdown(report)
    assert "1 of 2 case × provider × mode results passed (2 cases, 1 providers); 1 waived." in markdown
    assert "## Waived" in markdown and "the app offers no structured output — waives request: turns 1, 2" in markdown
    assert "## Failures" not in markdown and "⏸" in markdown
    assert "1 waived." in render_summary(report)
    # Without any waiver the report has no waived count at all: its shape is unchanged.
    assert "waived" not in build_report([normal], ["openai-chat"])["summary"]


def test_an_exception_the_code_lets_through_on_purpose_is_waived_not_raised() -> None:
    class RateLimitError(Exception):
        """The team's SDK's exception for a 429."""

    def raises(status: int, body: Any, headers: Any) -> Any:
        raise RateLimitError("429 from the vendor")

    propagates = Waiver(why="errors propagate: the caller retries", cases=("http_*",), raises=("RateLimitError",))
    team = _team(propagates, classify_error=raises)
    row = run_case(CASE["http_rate_limit"], "openai-chat", team, "body")
    assert status_of(row) == "waived" and row["waived"]["why"] == ["errors propagate: the caller retries"]
    assert row["waived"]["failures"][0].startswith("the adapter raised RateLimitError: 429 from the vendor")
    # Another exception, or the same one outside the waiver's cases, is not waived.
    elsewhere = Waiver(why="x", cases=("http_auth",), raises=("RateLimitError",))
    assert status_of(run_case(CASE["http_rate_limit"], "openai-chat", _team(elsewhere, classify_error=raises),
                              "body")) == "failed"
    other = Waiver(why="x", cases=("http_*",), raises=("TimeoutError",))
    assert status_of(run_case(CASE["http_rate_limit"], "openai-chat", _team(other, classify_error=raises),
                              "body")) == "failed"


def test_diff_shows_a_new_waiver_as_a_change_to_review_and_a_waived_row_that_breaks_as_a_regression() -> None:
    unwaived = run_case(CASE["structured_output_valid"], "openai-chat", _team(), "body")
    waived = run_case(CASE["structured_output_valid"], "openai-chat", _team(NO_SCHEMA), "body")
    passing = run_case(CASE["structured_output_valid"], "openai-chat", CHAT, "body")

    def labels(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
        key = (old["case"], old["provider"], old["mode"])
        changes = compare({key: old}, {key: new})
        assert all(any("waived" in note for note in change.notes) for change in changes)
        return [change.label for change in changes]

    # The same code, a waiver added: a change to review, never an improvement, never silent.
    assert labels(unwaived, waived) == ["change"]
    # Code that stops sending the schema, waived in the same change: the request problems it brings are still a
    # regression; the waiver does not launder them.
    assert labels(passing, waived) == ["regression"]
    assert labels(waived, unwaived) == ["regression"]
    assert labels(waived, passing) == ["improvement"]
    # A bug that makes a passing row fail, under a waiver broad enough to cover it: a regression all the same,
    # naming what it broke.
    def length_is_an_answer(body: Any) -> Any:
        read = CHAT.classify_body(body)
        return Text(raw=read.raw, text="Returns are accepted within 30 days", usage=read.usage)

    broad = Waiver(why="the app reads truncation its own way", cases=("truncation",))
    hidden = run_case(CASE["truncation"], "openai-chat", dataclasses.replace(
        CHAT, classify_body=length_is_an_answer, waivers=(broad,)), "body")
    before = run_case(CASE["truncation"], "openai-chat", CHAT, "body")
    assert status_of(hidden) == "waived" and status_of(before) == "passed"
    key = ("truncation", "openai-chat", "body")
    (change,) = compare({key: before}, {key: hidden})
    assert change.label == "regression"
    assert change.notes[0].startswith("passed → waived: outcome: expected incomplete, got unverified_answer")
    assert change.notes[0].endswith("(waived: the app reads truncation its own way)")
