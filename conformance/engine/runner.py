"""Runs cases against adapters and turns each case × provider × mode into one report row (builtins only)."""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from conformance.engine.cases import Case, Expectation
from conformance.engine.correlation import check_correlation
from conformance.engine.loop import LoopRun, Respond, replay_turn, run_loop
from conformance.engine.request_check import check_requests, recorded_request_problems
from conformance.engine.rows import Correlation, Lane, Mode, Row, RowError, Turn
from conformance.engine.sanitize import report_safe
from conformance.errors import InputError
from conformance.kit.adapter import Adapter
from conformance.kit.types import USAGE_FIELDS, ModelResponse
from conformance.kit.waiver import Waiver, apply_waivers


def modes_for(case: Case, provider: str, adapter: Adapter) -> list[Mode]:
    """The modes a case × provider can be replayed in: every turn must have what the mode needs."""
    turns = case.providers[provider].turns
    modes: list[Mode] = []
    if all(turn.replayable("body") for turn in turns):
        modes.append("body")
    streamed = any(turn.stream is not None for turn in turns)
    if streamed and adapter.assemble_stream is not None and all(turn.replayable("stream") for turn in turns):
        modes.append("stream")
    return modes


def run_case(case: Case, provider: str, adapter: Adapter, mode: Mode = "body") -> Row:
    """One report row. Wire values enter the report here, so the row is made report-safe here (no lone
    surrogate, no non-finite number: ``conformance.engine.sanitize``)."""
    return run_case_keeping_error(case, provider, adapter, mode)[0]


def run_case_keeping_error(case: Case, provider: str, adapter: Adapter,
                           mode: Mode = "body") -> tuple[Row, Exception | None]:
    """The report row, and the exception the adapter raised (None when it raised nothing), so a test runner can
    re-raise it with its traceback. The row records the turn, what the loop was doing, the fixture and the last
    frames of the traceback."""
    row, error, _ = run_case_with_requests(case, provider, adapter, mode)
    return row, error


def run_case_with_requests(case: Case, provider: str, adapter: Adapter,
                           mode: Mode = "body") -> tuple[Row, Exception | None, list[dict[str, Any]]]:
    """The report row, the adapter's exception (or None), and every request the adapter built, whole (the report
    keeps a reading of each; the request snapshots keep them whole)."""
    run = LoopRun()
    row, error = _run_case(case, provider, adapter, mode, run, waivers=adapter.waivers)
    return report_safe(row), error, run.requests


def run_lane(case: Case, provider: str, adapter: Adapter, mode: Mode, respond: Respond, row_provider: str,
             stack: str, difference: Expectation | None = None, waivers: Sequence[Waiver] = ()
             ) -> tuple[Row, Exception | None, list[dict[str, Any]]]:
    """A row whose calls a real client makes (``respond``, a stack's lane): ``adapter`` reads what it sent;
    ``difference`` is the stack's declared expectation for this row, when its client honestly differs; ``waivers``
    the stack's."""
    run = LoopRun()
    row, error = _run_case(case, provider, adapter, mode, run, respond, row_provider, stack, difference, waivers)
    return report_safe(row), error, run.requests


def _run_case(case: Case, provider: str, adapter: Adapter, mode: Mode, run: LoopRun, respond: Respond | None = None,
              row_provider: str | None = None, stack: str = "raw", difference: Expectation | None = None,
              waivers: Sequence[Waiver] = ()) -> tuple[Row, Exception | None]:
    fixtures = case.providers[provider]
    expectation = difference or case.expectation_for(provider)
    row = Row(case=case.id, scenario=case.scenario, title=case.title, provider=row_provider or provider, stack=stack,
              mode=mode, expected=_expected(expectation),
              override={"why": expectation.why} if expectation.why else None,
              outcome="error", detail=None, passed=False, failures=[], turns=[], correlation=None, usage=None,
              receipts=[], leaks=[], world_writes=[], error=None)
    try:
        run_loop(case, provider, adapter, fixtures.turns, mode, run, respond)
        # The checks call the adapter's readers (and its build, once more): their exceptions are the adapter's too.
        run.turn, run.phase, run.fixture = len(run.requests), "checking the requests", ""
        parts = [adapter.read_request(request) for request in run.requests]  # read once, checked twice
        # A real client's results are matched with the calls the wire made (the adapter's reading of each turn it
        # was served), not with the client's own mapping: a layer that renames call ids for its users but
        # answers the vendor's ids is correct on the wire, and its renaming is a finding (conformance.report.findings).
        wire = None if respond is None else [replay_turn(adapter, fixtures.turns[index], mode)[0]
                                             for index in range(len(run.responses))]
        correlation = check_correlation(adapter, run.requests, run.responses, parts, wire)
        requests, request_failures = check_requests(adapter, case.task, run.requests, run.transcripts,
                                                    rebuild=respond is None, parts=parts)
        if respond is None:  # the adapter's own requests, against what was recorded beside each turn
            request_failures += recorded_request_problems(adapter, case.path, provider, mode, parts)
    except InputError:
        raise
    except Exception as error:  # noqa: BLE001 - a user's adapter must not take the whole run down
        row = _error_row(row, run, error)
        row["failures"], waived = apply_waivers(waivers, case.id, mode, row["failures"], error)
        if waived is not None:  # the exception is this code's expected outcome: the row is waived, not raised
            row["waived"] = waived
            return row, None
        return row, error
    turns = [_turn_record(index, response, run) for index, response in enumerate(run.responses)]
    for turn, request in zip(turns, requests, strict=False):
        turn["request"] = request
    failures = _failures(expectation.outcome, expectation.turns, run, turns, correlation)
    failures.extend(request_failures)
    failures.extend(_detail_failures(expectation, turns, total_usage(run.responses)))
    failures, waived = apply_waivers(waivers, case.id, mode, failures)
    if waived is not None:
        row["waived"] = waived
    row["outcome"], row["detail"], row["passed"], row["failures"] = run.outcome, run.detail, not failures and \
        waived is None, failures
    row["turns"], row["correlation"], row["usage"] = turns, correlation, total_usage(run.responses)
    row["receipts"], row["leaks"], row["world_writes"] = run.receipts, run.leaks, run.world_writes
    return row, None


TRACEBACK_FRAMES = 5


def _error_row(row: Row, run: LoopRun, error: Exception) -> Row:
    """The row of a loop the adapter broke: the turns it finished, and where and how it failed."""
    where = f"turn {run.turn}, {run.phase}" + (f", fixture {run.fixture}" if run.fixture else "")
    message = f"the adapter raised {error.__class__.__name__}: {error} ({where})"
    frames = traceback.extract_tb(error.__traceback__)[-TRACEBACK_FRAMES:]
    done = run.responses[: len(run.sources)]
    row["outcome"], row["detail"], row["passed"], row["failures"] = "error", message, False, [message]
    row["turns"] = [_turn_record(index, response, run) for index, response in enumerate(done)]
    row["correlation"], row["usage"] = None, total_usage(done) if done else None
    row["receipts"], row["leaks"], row["world_writes"] = run.receipts, run.leaks, []
    row["error"] = RowError(type=error.__class__.__name__, message=str(error), turn=run.turn, phase=run.phase,
                            fixture=run.fixture or None,
                            traceback=[f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"
                                       + (f": {frame.line}" if frame.line else "") for frame in frames])
    return row


def _expected(expectation: Expectation) -> dict[str, Any]:
    expected: dict[str, Any] = {"outcome": expectation.outcome, "turns": list(expectation.turns or [])}
    for name in ("reason", "retry_after"):
        if getattr(expectation, name) is not None:
            expected[name] = getattr(expectation, name)
    if expectation.usage_reported:
        expected["usage_reported"] = list(expectation.usage_reported)
    return expected


def run_all(cases: Iterable[Case], adapters: dict[str, Adapter]) -> list[Row]:
    """Every case against every adapter that has fixtures for it, in every mode it can replay; rows sorted."""
    rows = []
    for case in cases:
        for provider in case.providers:  # model variants (``openai-chat~mini``) are read by their provider's adapter
            adapter = adapters.get(Lane.parse(provider).provider)
            if adapter is not None:
                for mode in modes_for(case, provider, adapter):
                    rows.append(run_case(case, provider, adapter, mode))
    return sorted(rows, key=lambda row: (row["case"], row["provider"], row["mode"]))


def _turn_record(index: int, response: ModelResponse, run: LoopRun) -> Turn:
    # `source` belongs to the kind (a refusal's model/filter); where the recording lives is `fixture`.
    record: dict[str, Any] = {"turn": index + 1, "fixture": run.sources[index], "http_status": run.statuses[index]}
    record.update(response.to_dict())
    if record.get("http_status") is None:  # an error inside a 200 body or stream still came with a 200
        record["http_status"] = run.statuses[index]
    record["stream"] = run.streams[index]
    return cast(Turn, record)  # the kind's own fields (ModelResponse.to_dict) are Turn's optional ones


def _failures(outcome: str, turns_expected: tuple[str, ...] | None, run: LoopRun, turns: list[Turn],
              correlation: Correlation) -> list[str]:
    failures = []
    if run.outcome != outcome:
        # The vendor's own value that decided the last turn (``stop_reason=max_tokens``) says why, in the message
        # itself, not only in the report's row.
        raw = turns[-1].get("raw") if turns else None
        failures.append(f"outcome: expected {outcome}, got {run.outcome}" + (f" — {run.detail}" if run.detail else "")
                        + (f"; turn {turns[-1]['turn']}, read as {turns[-1]['kind']}, had {raw}" if raw else ""))
    actual = [turn["kind"] for turn in turns]
    if turns_expected is not None and list(turns_expected) != actual:
        failures.append(f"turn kinds: expected {' → '.join(turns_expected)}, got {' → '.join(actual) or 'none'}")
    failures.extend(f"correlation: {problem}" for problem in correlation["problems"])
    failures.extend(f"leak: a denied call returned protected value {value!r}" for value in run.leaks)
    return failures


def _detail_failures(expectation: Expectation, turns: list[Turn],
                     usage: dict[str, int | None]) -> list[str]:
    failures = []
    last: Mapping[str, Any] = turns[-1] if turns else {}
    if expectation.reason is not None:
        actual = last.get("reason") or last.get("source")
        if actual != expectation.reason:
            failures.append(f"last turn reason: expected {expectation.reason}, got {actual}")
    if expectation.retry_after is not None and (last.get("retry_after_s") is not None) != expectation.retry_after:
        wanted = "a retry delay" if expectation.retry_after else "no retry delay"
        failures.append(f"last turn: expected {wanted}, got retry_after_s={last.get('retry_after_s')}")
    for name in expectation.usage_reported or ():
        if not usage.get(name):
            failures.append(f"usage: expected a positive {name}, got {usage.get(name)}")
    return failures


def total_usage(responses: list[ModelResponse]) -> dict[str, int | None]:
    """Per field, the sum over the turns that reported it; None when no turn did."""
    totals: dict[str, int | None] = {}
    for name in USAGE_FIELDS:
        values = [getattr(response.usage, name) for response in responses if response.usage is not None]
        known = [value for value in values if value is not None]
        totals[name] = sum(known) if known else None
    return totals
