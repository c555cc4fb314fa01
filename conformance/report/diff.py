"""The upgrade gate: two reports compared row by row (case × provider × mode), each change labelled.

Rows are matched by key and compared whole first; only rows that differ go through DeepDiff, which is far
slower than a keyed comparison on a whole report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from deepdiff import DeepDiff

from conformance.engine.files import read_regular_file
from conformance.engine.rows import Row, status_of
from conformance.errors import InputError, Problem
from conformance.kit.jsontext import parse_json
from conformance.kit.types import USAGE_FIELDS
from conformance.report.build import SCHEMA_VERSION
from conformance.report.markdown import escape_cell

Key = tuple[str, str, str]
# A report.json is read whole; one of 100,000 rows is a few hundred MB.
MAX_REPORT_BYTES = 1024 * 1024 * 1024


@dataclass(slots=True)
class RowChange:
    """One row that differs between the two reports."""

    key: Key
    label: str
    """``regression``, ``change``, ``improvement`` or ``added`` (a row the base did not have)."""
    notes: list[str] = field(default_factory=list)
    """What changed, in words, most important first."""
    paths: list[str] = field(default_factory=list)
    """DeepDiff paths that changed (for the details)."""
    fixtures: list[str] = field(default_factory=list)
    """The fixture files behind the new row's turns (the old row's when the row is gone): what to open."""


def read_report(path: Path) -> dict[str, Any]:
    """A report.json as parsed JSON, with a ``results`` list and this version's ``schema_version``; InputError,
    naming the file, otherwise."""
    shown = str(path)
    try:
        document = parse_json(read_regular_file(path, shown, MAX_REPORT_BYTES).decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError([Problem(shown, None, "not UTF-8", "pass a report.json written by conformance")]) from None
    except ValueError as error:
        line = getattr(error, "lineno", None)
        raise InputError([Problem(shown, line, f"not JSON: {getattr(error, 'msg', error)}",
                                  "pass a report.json written by conformance")]) from None
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, list):
        raise InputError([Problem(shown, None, "no 'results' list: not a conformance report",
                                  "pass the report.json that `conformance run` wrote")])
    version = document.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError([Problem(shown, None, f"schema_version is {version!r}; this conformance reads "
                                               f"{SCHEMA_VERSION}", "compare reports written by the same version")])
    return cast(dict[str, Any], document)


def load_document(path: Path) -> tuple[dict[Key, Row], list[dict[str, Any]] | None]:
    """A report.json's rows by case × provider × mode, and its findings (None in a report written before findings
    were measured); InputError for anything the gate cannot trust."""
    shown = str(path)
    document = read_report(path)
    results = document["results"]
    rows: dict[Key, Row] = {}
    problems: list[Problem] = []
    for index, row in enumerate(results):
        wrong = row_shape_problem(row)
        if wrong:
            problems.append(Problem(shown, None, f"results[{index}] {wrong}", "pass an unmodified report.json",
                                    f"/results/{index}"))
            continue
        key = (row["case"], row["provider"], row["mode"])
        if key in rows:
            # Keeping either copy could hide the failing one: the gate refuses to guess.
            problems.append(Problem(shown, None, f"results[{index}] repeats the row {' × '.join(key)}",
                                    "one row per case × provider × mode: were two case folders merged?",
                                    f"/results/{index}"))
        rows[key] = cast(Row, row)  # its shape checked (row_shape_problem)
    findings = document.get("findings")
    if findings is not None and not (isinstance(findings, list) and all(map(_finding_shape, findings))):
        problems.append(Problem(shown, None, "'findings' is not a list of findings", "pass an unmodified report.json",
                                "/findings"))
    if problems:
        raise InputError(problems)
    return rows, findings


def _finding_shape(finding: Any) -> bool:
    return (isinstance(finding, dict) and all(isinstance(finding.get(name), str) for name in FINDING_KEY[:-2])
            and isinstance(finding.get("turn"), int | None) and isinstance(finding.get("field"), str)
            and finding.get("effect") in ("lost", "invented", "changed"))


FINDING_KEY = ("stack", "case", "mode", "turn", "field")


# Row fields the comparison reads, with the JSON types they must have.
ROW_FIELDS: dict[str, tuple[type, ...]] = {
    "case": (str,), "provider": (str,), "mode": (str,), "passed": (bool,), "outcome": (str,),
    "turns": (list,), "failures": (list,), "usage": (dict, type(None)), "correlation": (dict, type(None)),
}


def row_shape_problem(row: Any) -> str | None:
    """What makes ``row`` unreadable as a report row, or None."""
    if not isinstance(row, dict):
        return "is not an object"
    for name, types in ROW_FIELDS.items():
        if not isinstance(row.get(name), types):
            return f"has no valid '{name}'"
    if not all(isinstance(turn, dict) and isinstance(turn.get("calls", []), list)
               and all(isinstance(call, dict) for call in turn.get("calls", [])) for turn in row["turns"]):
        return "has a turn that is not an object with a 'calls' list"
    if not all(isinstance(failure, str) for failure in row["failures"]):
        return "has a failure that is not a string"
    problems = (row.get("correlation") or {}).get("problems", [])
    if not isinstance(problems, list) or not all(isinstance(problem, str) for problem in problems):
        return "has correlation problems that are not a list of strings"
    return None


def compare(old: dict[Key, Row], new: dict[Key, Row],
            old_findings: list[dict[str, Any]] | None = None,
            new_findings: list[dict[str, Any]] | None = None) -> list[RowChange]:
    """Every row that differs between two reports, labelled regression, change or improvement. With both reports'
    findings (``conformance.report.findings``), a finding the new report adds is a regression unless its stack accepts
    it, and one it drops is an improvement."""
    changes = _compare_all_rows(old, new)
    if old_findings is not None and new_findings is not None:
        _compare_findings(changes, old_findings, new_findings)
    return changes


def _compare_findings(changes: list[RowChange], old: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
    before = {tuple(finding[name] for name in FINDING_KEY): finding for finding in old}
    after = {tuple(finding[name] for name in FINDING_KEY): finding for finding in new}
    by_row = {change.key: change for change in changes}
    # A finding kept under the same key but with another effect or other values is a new finding: what a team
    # accepted (a stack that dropped a count) does not accept what it became (the count reported 100× wrong).
    moved = {key for key in set(before) & set(after) if _finding_facts(before[key]) != _finding_facts(after[key])}
    for key in sorted((set(before) ^ set(after)) | moved, key=str):
        finding = after.get(key) or before[key]
        row_key: Key = (finding["case"], finding["stack"], finding["mode"])
        what = _finding_text(finding)
        if key in moved:
            label, note = "regression", f"finding changed: was {_finding_text(before[key])}; now {what}"
        elif key not in after:
            label, note = "improvement", f"finding gone: {what}"
        elif finding.get("accepted"):
            label, note = "change", f"new finding, accepted ({finding['accepted']}): {what}"
        else:
            label, note = "regression", f"new finding, not accepted: {what}"
        change = by_row.get(row_key)
        if change is not None and key not in before and change.notes[:1] and change.notes[0].startswith("new row"):
            # A row the old report did not have (a case added): what its stack hides is part of what was added, to
            # read, not a regression of something that worked before.
            change.notes.append(f"finding: {what}" + (f" (accepted: {finding['accepted']})"
                                                      if finding.get("accepted") else ""))
            continue
        if change is None:
            change = by_row[row_key] = RowChange(row_key, label, [])
            changes.append(change)
        elif LABEL_ORDER[label] < LABEL_ORDER[change.label]:
            change.label = label
        change.notes.insert(0, note) if label == "regression" else change.notes.append(note)
    changes.sort(key=lambda change: change.key)


LABELS = ("regression", "change", "improvement", "added")
LABEL_ORDER = {label: index for index, label in enumerate(LABELS)}


def _finding_facts(finding: dict[str, Any]) -> tuple[str, str, str]:
    """What a finding says, beside its key: its effect and both values (canonical JSON, so 1 and 1.0 differ)."""
    return (finding["effect"], json.dumps(finding.get("wire"), sort_keys=True),
            json.dumps(finding.get("stack_value"), sort_keys=True))


def _finding_text(finding: dict[str, Any]) -> str:
    turn = f"turn {finding['turn']} " if finding["turn"] else ""
    return (f"{turn}{finding['field']} {finding['effect']}: {_value(finding.get('wire'))} → "
            f"{_value(finding.get('stack_value'))} ({finding.get('meaning')})")


def _value(value: Any) -> str:
    return "null" if value is None else str(value)


def _compare_all_rows(old: dict[Key, Row], new: dict[Key, Row]) -> list[RowChange]:
    changes = []
    for key in sorted(set(old) | set(new)):
        before, after = _comparable(old.get(key)), _comparable(new.get(key))
        if before == after:
            continue
        fixtures = fixtures_of(new.get(key)) or fixtures_of(old.get(key))
        if before is None:
            assert after is not None
            # A row the base did not have (a case added, a provider recorded, a stack configured): reported as
            # added, with its status, never as a regression of something that was not there (docs/ci.md).
            status = status_of(after)
            why = "; ".join((after.get("waived") or {}).get("why", []))
            said = {"passed": ", passing", "waived": f", waived: {why}"}
            changes.append(RowChange(key, "added", ["new row" + said.get(status, ", failing: " + "; ".join(
                after.get("failures") or []))], [], fixtures))
        elif after is None:
            changes.append(RowChange(key, "regression", ["row removed: the case no longer runs for this provider"],
                                     [], fixtures))
        else:
            change = _compare_rows(key, before, after)
            change.fixtures = fixtures
            changes.append(change)
    return changes


# Where a fixture lives is not a classification: a renamed cases folder must not read as a change.
IGNORED_TURN_KEYS = frozenset({"fixture"})


def _comparable(row: Row | None) -> dict[str, Any] | None:
    if row is None:
        return None
    turns = row.get("turns")
    if not isinstance(turns, list):
        return row
    stripped = [{name: value for name, value in turn.items() if name not in IGNORED_TURN_KEYS}
                if isinstance(turn, dict) else turn for turn in turns]
    return {**row, "turns": stripped}


def _compare_rows(key: Key, before: dict[str, Any], after: dict[str, Any]) -> RowChange:
    regressions: list[str] = []
    improvements: list[str] = []
    notes: list[str] = []
    was, now = status_of(before), status_of(after)
    if was != "failed" and now == "failed":
        regressions.append(f"{was} → failed: " + "; ".join(after.get("failures") or []))
    elif was != "passed" and now == "passed":
        improvements.append(f"{was} → passed")
    elif now == "waived" and was == "passed":
        # The code now fails what it passed, and a waiver covers it: what it broke is a regression all the same.
        regressions.append("passed → waived: " + "; ".join((after.get("waived") or {}).get("failures", []))
                           + " (waived: " + "; ".join((after.get("waived") or {}).get("why", [])) + ")")
    elif now == "waived" and was != "waived":
        # A new waiver is a decision about what the code under test must do: a change to review, never a pass.
        notes.append(f"{was} → waived: " + "; ".join((after.get("waived") or {}).get("why", [])))
    if (before.get("waived") or {}).get("why") != (after.get("waived") or {}).get("why") and was == now:
        notes.append("waiver " + "; ".join((before.get("waived") or {}).get("why", [])) + " → "
                     + ("; ".join((after.get("waived") or {}).get("why", [])) or "none"))
    if before.get("outcome") != after.get("outcome"):
        notes.append(f"outcome {before.get('outcome')} → {after.get('outcome')}")
    old_turns, new_turns = before.get("turns") or [], after.get("turns") or []
    for number, (old_turn, new_turn) in enumerate(zip(old_turns, new_turns, strict=False), start=1):
        _compare_turns(number, old_turn, new_turn, regressions, improvements, notes)
    if len(old_turns) != len(new_turns):
        notes.append(f"turns {len(old_turns)} → {len(new_turns)}")
    regressions.extend(_usage_nulls("usage", before.get("usage"), after.get("usage")))
    improvements.extend(_usage_nulls("usage", after.get("usage"), before.get("usage"), gained=True))
    old_usage, new_usage = before.get("usage") or {}, after.get("usage") or {}
    notes.extend(f"usage.{name} {old_usage.get(name)} → {new_usage.get(name)}" for name in USAGE_FIELDS
                 if old_usage.get(name) != new_usage.get(name) and None not in (old_usage.get(name),
                                                                                new_usage.get(name)))
    _compare_correlation(before, after, regressions, improvements)
    paths = sorted(DeepDiff(before, after).affected_paths)
    label = "regression" if regressions else "improvement" if improvements else "change"
    return RowChange(key, label, regressions + improvements + notes, paths)


def fixtures_of(row: Row | None) -> list[str]:
    """The fixture files a row's turns were read from, in turn order, each once."""
    turns = row["turns"] if row is not None else []
    return list(dict.fromkeys(turn["fixture"] for turn in turns
                              if isinstance(turn.get("fixture"), str) and turn["fixture"]))


def _compare_turns(number: int, old_turn: dict[str, Any], new_turn: dict[str, Any], regressions: list[str],
                   improvements: list[str], notes: list[str]) -> None:
    """One turn's kind, raw value, call ids and usage: a kind turned unsupported is a regression."""
    if old_turn.get("kind") != new_turn.get("kind"):
        text = f"turn {number} kind {old_turn.get('kind')} → {new_turn.get('kind')} ({new_turn.get('raw')})"
        if new_turn.get("kind") == "unsupported":
            regressions.append(text)
        elif old_turn.get("kind") == "unsupported":
            improvements.append(text)
        else:
            notes.append(text)
    elif old_turn.get("raw") != new_turn.get("raw"):
        notes.append(f"turn {number} raw {old_turn.get('raw')} → {new_turn.get('raw')}")
    old_ids = [call.get("call_id") for call in old_turn.get("calls") or []]
    new_ids = [call.get("call_id") for call in new_turn.get("calls") or []]
    if old_ids != new_ids:
        notes.append(f"turn {number} call ids {old_ids} → {new_ids}")
    regressions.extend(_usage_nulls(f"turn {number} usage", old_turn.get("usage"), new_turn.get("usage")))
    improvements.extend(_usage_nulls(f"turn {number} usage", new_turn.get("usage"), old_turn.get("usage"),
                                     gained=True))
    _compare_requests(number, old_turn.get("request"), new_turn.get("request"), regressions, notes)


def _compare_requests(number: int, old: Any, new: Any, regressions: list[str], notes: list[str]) -> None:
    """A request that lost a part the vendor needs (a tool, a result, a signature) or gained a problem is a
    regression; any other change of its bytes is a change (docs/report.md, "Requests")."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return
    if old.get("checked") and not new.get("checked"):
        regressions.append(f"turn {number} request no longer checked: the adapter stopped reading it back")
        return
    if old.get("sha256") == new.get("sha256"):
        return
    lost = [f"{what} {before} → {after}" for what, before, after in _request_parts(old, new) if after < before]
    if lost:
        regressions.append(f"turn {number} request lost " + ", ".join(lost))
    fresh = [problem for problem in new.get("problems") or [] if problem not in (old.get("problems") or [])]
    regressions.extend(f"turn {number} request: {problem}" for problem in fresh)
    if not lost and not fresh:
        moved = _fields_moved(old.get("fields"), new.get("fields"))
        notes.append(f"turn {number} request " + (moved or f"changed ({old.get('bytes')} → {new.get('bytes')} bytes)"))


def _fields_moved(old: Any, new: Any) -> str:
    """The top-level request fields that went, came and changed (``max_tokens → max_completion_tokens`` when one
    went and one came with the same value); empty when either report does not record them."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return ""
    gone = [key for key in old if key not in new]
    came = [key for key in new if key not in old]
    renamed = []
    for before in list(gone):
        after = next((key for key in came if new[key] == old[before]), None)
        if after is not None:
            renamed.append((before, after))
            gone.remove(before)
            came.remove(after)
    changed = [key for key in old if key in new and old[key] != new[key]]
    parts = [f"{before} → {after}" for before, after in renamed]
    parts += [f"{key} gone" for key in gone] + [f"{key} new" for key in came] + [f"{key} changed" for key in changed]
    return ", ".join(parts)


def _request_parts(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, int, int]]:
    def counts(record: dict[str, Any]) -> tuple[int, int, int]:
        sent = record.get("sent")
        sent = sent if isinstance(sent, dict) else {}
        entries = [entry for entry in record.get("conversation") or [] if isinstance(entry, dict)]
        return (len(sent.get("tools") or []),
                sum(len(entry.get("results") or []) for entry in entries),
                sum(entry.get("signatures") or 0 for entry in entries))

    return list(zip(("tools", "results", "signatures"), counts(old), counts(new), strict=True))


def _compare_correlation(before: dict[str, Any], after: dict[str, Any], regressions: list[str],
                         improvements: list[str]) -> None:
    old_problems = (before.get("correlation") or {}).get("problems") or []
    new_problems = (after.get("correlation") or {}).get("problems") or []
    regressions.extend(f"correlation broken: {problem}" for problem in new_problems if problem not in old_problems)
    if old_problems and not new_problems:
        improvements.append("correlation repaired")


def _usage_nulls(where: str, before: Any, after: Any, gained: bool = False) -> list[str]:
    """The usage counts ``before`` had and ``after`` lost (``… 120 → null``, a regression); with ``gained``, the
    arguments come swapped and the lines read the other way (``… null → 120``, an improvement: docs/ci.md)."""
    if not isinstance(before, dict):
        return []
    after = after if isinstance(after, dict) else {}
    return [f"{where}.{name} null → {before[name]}" if gained else f"{where}.{name} {before[name]} → null"
            for name in USAGE_FIELDS if before.get(name) is not None and after.get(name) is None]


def forward_changes(old_path: Path, new_path: Path) -> list[RowChange]:
    """The forward-compatibility matrix of two reports (``conformance run --mutants``), lane × family: a lane that
    holds fewer of a family's mutants than it did is a regression, more an improvement, and one that checks fewer
    mutants, or is no longer run on them, a regression (docs/forward.md). Nothing when either report was run without
    mutants."""
    def lanes(path: Path) -> dict[str, Any] | None:
        section = read_report(path).get("forward")
        found = section.get("lanes") if isinstance(section, dict) else None
        return found if isinstance(found, dict) else None

    def counts(cell: Any) -> dict[str, int]:
        return {str(name): value for name, value in cell.items() if isinstance(value, int)} \
            if isinstance(cell, dict) else {}

    old, new = lanes(old_path), lanes(new_path)
    if old is None or new is None:
        return []
    changes = [RowChange(("all families", lane, "mutants"), "regression",
                         ["mutants: the lane is no longer run on the mutants"], [])
               for lane in sorted(set(old) - set(new))]
    for lane in sorted(set(old) & set(new)):
        before_lane, after_lane = old[lane], new[lane]
        if not isinstance(before_lane, dict) or not isinstance(after_lane, dict):
            continue
        for family in sorted(set(before_lane) | set(after_lane)):
            before, after = counts(before_lane.get(family)), counts(after_lane.get(family))
            if sum(after.values()) < sum(before.values()):
                # Fewer mutants checked is coverage lost (a shape field removed, a lane's stream rows dropped), never an
                # improvement however many of the rest hold.
                changes.append(RowChange((family, lane, "mutants"), "regression", [
                    f"mutants {family}: {sum(before.values())} checked → {sum(after.values())} (held "
                    f"{before.get('held', 0)} → {after.get('held', 0)})"], []))
                continue
            lost_before = sum(before.values()) - before.get("held", 0)
            lost_after = sum(after.values()) - after.get("held", 0)
            if lost_before == lost_after:
                continue
            others = ", ".join(f"{count} {verdict}" for verdict, count in after.items() if verdict != "held" and count)
            note = (f"mutants {family}: held {before.get('held', 0)}/{sum(before.values())} → "
                    f"{after.get('held', 0)}/{sum(after.values())}" + (f" ({others})" if others else ""))
            changes.append(RowChange((family, lane, "mutants"), "regression" if lost_after > lost_before
                                     else "improvement", [note], []))
    return changes


def retry_changes(old_path: Path, new_path: Path) -> list[RowChange]:
    """The retry lane of two reports (``conformance run --retries``), lane × script: a cell that was right and is
    wrong, or a lane no longer run, is a regression; wrong to right an improvement; the same verdict with another
    count of requests a change (docs/retries.md). Nothing when either report was run without the lane."""
    def lanes(path: Path) -> dict[str, Any] | None:
        section = read_report(path).get("retries")
        found = section.get("lanes") if isinstance(section, dict) else None
        return found if isinstance(found, dict) else None

    old, new = lanes(old_path), lanes(new_path)
    if old is None or new is None:
        return []
    changes = [RowChange(("retries: all scripts", lane, "retries"), "regression",
                         ["retries: the lane is no longer run"], []) for lane in sorted(set(old) - set(new))]
    for lane in sorted(set(old) & set(new)):
        before_lane, after_lane = old[lane], new[lane]
        if not isinstance(before_lane, dict) or not isinstance(after_lane, dict):
            continue
        for script in sorted(set(before_lane) | set(after_lane)):
            before, after = before_lane.get(script), after_lane.get(script)
            if not isinstance(before, dict):
                continue
            if not isinstance(after, dict):
                changes.append(RowChange((f"retries {script}", lane, "retries"), "regression",
                                         [f"retries {script}: no longer checked"], []))
                continue
            was, now = before.get("verdict"), after.get("verdict")
            note = (f"retries {script}: {was}, {before.get('sent')} sent → {now}, {after.get('sent')} sent "
                    f"({after.get('why')})")
            if was == "right" and now != "right":
                changes.append(RowChange((f"retries {script}", lane, "retries"), "regression", [note], []))
            elif was != "right" and now == "right":
                changes.append(RowChange((f"retries {script}", lane, "retries"), "improvement", [note], []))
            elif before.get("sent") != after.get("sent") or before.get("kind") != after.get("kind"):
                changes.append(RowChange((f"retries {script}", lane, "retries"), "change", [note], []))
    return changes


def versions_moved(old_path: Path, new_path: Path) -> list[str]:
    """What the two reports were measured with and that moved: the suite, Python, and each stack's packages
    (``openai 3.56.0 → 3.57.0``), one line per package whichever stacks share it; [] when a report records none."""
    def versions(path: Path) -> dict[str, str | None]:
        measured = read_report(path).get("measured")
        if not isinstance(measured, dict):
            return {}
        found: dict[str, str | None] = {"suite": measured.get("suite"), "python": measured.get("python")}
        stacks = measured.get("stacks")
        for packages in (stacks.values() if isinstance(stacks, dict) else ()):
            if isinstance(packages, dict):
                found.update({str(name): version for name, version in packages.items()
                              if version is None or isinstance(version, str)})
        return found

    old, new = versions(old_path), versions(new_path)
    return [f"{name} {old.get(name) or '(none)'} → {new.get(name) or '(none)'}" for name in sorted(set(old) | set(new))
            if old.get(name) != new.get(name) and old and new]


def render_markdown(changes: list[RowChange], old_name: str, new_name: str, versions: Sequence[str] = (),
                    max_lines: int | None = None) -> str:
    """The Markdown rendering (for a terminal, a job summary or a pull-request comment); ``versions``: what the
    reports were measured with that moved (``versions_moved``), said first. ``max_lines``: list at most this many
    lines of the changes table (regressions first), then say how many rows are left out and where they are."""
    counts = {label: sum(1 for change in changes if change.label == label) for label in LABELS}
    lines = [
        f"# Conformance diff: {escape_cell(old_name)} → {escape_cell(new_name)}",
        "",
        *([f"**Versions:** {escape_cell('; '.join(versions))}", ""] if versions else []),
        f"**{counts['regression']} regression(s)**, {counts['change']} change(s), "
        f"{counts['improvement']} improvement(s)" + (f", {counts['added']} added row(s)." if counts["added"]
                                                        else "."),
        "",
    ]
    if not changes:
        lines.append("No classification, request, correlation, usage or outcome changed.")
        return "\n".join(lines) + "\n"
    added = " added |" if counts["added"] else ""
    lines += [f"| provider | regressions | changes | improvements |{added}", "|---|---:|---:|---:|"
              + ("---:|" if added else "")]
    for provider, tally in tally_by_provider(changes).items():
        lines.append(f"| {escape_cell(provider)} | {tally['regression']} | {tally['change']} | "
                     f"{tally['improvement']} |" + (f" {tally['added']} |" if added else ""))
    lines += ["", "| | case | provider | mode | what changed |", "|---|---|---|---|---|"]
    order = LABEL_ORDER
    marks = {"regression": "❌ regression", "change": "↔ change", "improvement": "✅ improvement",
             "added": "➕ added"}
    table: list[tuple[str, int]] = []  # each line of the table, with the number of rows it stands for
    groups: dict[tuple[str, str, tuple[str, ...]], list[RowChange]] = {}
    for change in changes:
        groups.setdefault((change.label, change.key[1], _shape_of(change.notes)), []).append(change)
    for (label, provider, shape), members in sorted(groups.items(), key=lambda item: (
            order[item[0][0]], min(change.key for change in item[1]))):
        if len(members) >= GROUPED_FROM and shape:
            # One logical change across many rows (an SDK bump that moves a field in every request): one line,
            # with the rows it covers counted and folded.
            cases = sorted({change.key[0] for change in members})
            modes = ", ".join(sorted({change.key[2] for change in members}))
            listed = ", ".join(escape_cell(case) for case in cases[:GROUP_CASES_SHOWN]) + (
                f", … ({len(cases) - GROUP_CASES_SHOWN} more)" if len(cases) > GROUP_CASES_SHOWN else "")
            what = "<br>".join(escape_cell(note) for note in shape[:6]) + f"<br>**{len(members)} rows** alike"
            table.append((f"| {marks[label]} | {listed} | {escape_cell(provider)} | {escape_cell(modes)} | {what} |",
                          len(members)))
            continue
        for change in sorted(members, key=lambda change: change.key):
            case, _, mode = change.key
            what = "<br>".join(escape_cell(note) for note in change.notes[:6]) or (
                f"{len(change.paths)} field(s): " + ", ".join(escape_cell(path) for path in change.paths[:4]))
            if change.fixtures:
                what += "<br>fixtures: " + ", ".join(escape_cell(path) for path in change.fixtures[:4])
            table.append((f"| {marks[label]} | {escape_cell(case)} | {escape_cell(provider)} | "
                          f"{escape_cell(mode)} | {what} |", 1))
    shown = table if max_lines is None else table[:max_lines]
    lines += [line for line, _ in shown]
    left = sum(count for _, count in table[len(shown):])
    if left:
        lines += ["", f"… and {left} more changed row(s), not listed here: the job summary and `diff.json` in the "
                      "reports artifact list every one."]
    return "\n".join(lines) + "\n"


GROUPED_FROM = 3
"""Rows of one provider with the same change (turn numbers aside) are one line from this many on."""
GROUP_CASES_SHOWN = 8


def _shape_of(notes: list[str]) -> tuple[str, ...]:
    """A change's notes with the turn numbers taken out (``turn 2 request x → y`` → ``request x → y``), each once:
    what makes two rows' changes the same change."""
    import re  # noqa: PLC0415

    return tuple(dict.fromkeys(re.sub(r"^turn \d+ ", "", note) for note in notes))


def tally_by_provider(changes: list[RowChange]) -> dict[str, dict[str, int]]:
    """Regressions, changes and improvements per provider column (a stack's rows under their own column)."""
    tally: dict[str, dict[str, int]] = {}
    for change in changes:
        counts = tally.setdefault(change.key[1], dict.fromkeys(LABELS, 0))
        counts[change.label] += 1
    return dict(sorted(tally.items()))


def render_json(changes: list[RowChange], old_name: str, new_name: str) -> str:
    """The same comparison for machines: totals, the per-provider tally, and every changed row."""
    counts = {label: sum(1 for change in changes if change.label == label) for label in LABELS}
    document = {
        "old": old_name, "new": new_name, "counts": counts, "by_provider": tally_by_provider(changes),
        "changes": [{"case": change.key[0], "provider": change.key[1], "mode": change.key[2], "label": change.label,
                     "notes": change.notes, "fixtures": change.fixtures, "paths": change.paths}
                    for change in sorted(changes, key=lambda change: change.key)],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def fails(changes: list[RowChange], fail_on: str) -> bool:
    """Whether the gate fails: on a regression (``regression``), or on any regression or change (``change``)."""
    labels = {"regression"} if fail_on == "regression" else {"regression", "change", "added"}
    return any(change.label in labels for change in changes)


def load_accepted(path: Path) -> list[dict[str, str]]:
    """An allow-list of accepted changes (YAML or JSON): a list of ``{case, provider, mode?, change, reason}``, where
    case and provider are shell patterns (``http_*``), ``change`` a shell pattern of the diff's note it accepts
    (``outcome refusal → text``, ``*kind refusal → text*``) and the reason is required. A bad entry is an InputError
    naming the file and the entry."""
    import yaml  # noqa: PLC0415

    shown = str(path)
    try:
        document = yaml.safe_load(read_regular_file(path, shown, 1024 * 1024).decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise InputError([Problem(shown, None, f"not a YAML or JSON file ({error})",
                                  "write a list of {case, provider, mode, change, reason} entries")]) from None
    if not isinstance(document, list):
        raise InputError([Problem(shown, None, "not a list of accepted changes",
                                  "write a list of {case, provider, mode, change, reason} entries")])
    entries, problems = [], []
    for index, entry in enumerate(document):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(name), str) and entry[name].strip()
                                                  for name in ("case", "provider", "change", "reason")) \
                or entry.get("mode") not in (None, "body", "stream") or set(entry) - {"case", "provider", "mode",
                                                                                       "change", "reason"}:
            problems.append(Problem(shown, None, f"entry {index + 1} is not {{case, provider, mode?, change, reason}}",
                                    "give case and provider (shell patterns), mode body or stream or none, the "
                                    "change accepted (the diff's note, e.g. 'outcome refusal → text'; a shell "
                                    "pattern) and why it is accepted", f"/{index}"))
            continue
        if set(entry["change"].strip()) <= {"*", "?"}:  # wildcards alone match any note
            problems.append(Problem(shown, None, f"entry {index + 1} accepts any change ({entry['change']!r})",
                                    "name the change accepted, as the diff's note says it", f"/{index}/change"))
            continue
        entries.append({name: str(value) for name, value in entry.items()})
    if problems:
        raise InputError(problems)
    return entries


def _names_change(pattern: str, note: str) -> bool:
    """Whether an entry's ``change`` names a note: the note itself (copied from the diff: ``[`` and ``]`` in it are
    text), or a shell pattern matching it."""
    import fnmatch  # noqa: PLC0415

    pattern, note = pattern.strip(), note.strip()
    return pattern == note or fnmatch.fnmatchcase(note, pattern)


def accepted_warnings(accepted: list[dict[str, str]], stale: list[dict[str, str]]) -> list[str]:
    """What to say about an allow-list after applying it: entries that accepted nothing, and entries for every row."""
    lines = [f"accepted entry {entry['case']} [{entry['provider']}] ({entry['change']}) matched nothing: the change "
             "it accepted is gone; remove it" for entry in stale]
    lines += [f"accepted entry for every case and provider ({entry['change']}): it accepts that change anywhere"
              for entry in accepted if entry["case"] == "*" and entry["provider"] == "*"]
    return lines


def apply_accepted(changes: list[RowChange], accepted: list[dict[str, str]]) -> list[dict[str, str]]:
    """A regression becomes a change only when every note of its row is a change an entry for that row accepts
    (``change``, a shell pattern of the note): accepting one change of a row accepts nothing else that happens
    there. The accepting entries' reasons come first in the notes. Returns the entries that accepted nothing
    (stale: the change they accepted is gone)."""
    import fnmatch  # noqa: PLC0415

    used: set[int] = set()
    for change in changes:
        case, provider, mode = change.key
        entries = [(index, entry) for index, entry in enumerate(accepted)
                   if fnmatch.fnmatchcase(case, entry["case"]) and fnmatch.fnmatchcase(provider, entry["provider"])
                   and entry.get("mode") in (None, mode)]
        if not entries:
            continue
        reasons: list[str] = []
        open_notes = []
        for note in change.notes:
            # Every note counts, `passed → failed: <the failures>` too: a failure may have no note of its own.
            by = next(((index, entry) for index, entry in entries if _names_change(entry["change"], note)), None)
            if by is None:
                open_notes.append(note)
                continue
            used.add(by[0])
            if by[1]["reason"] not in reasons:
                reasons.append(by[1]["reason"])
        if change.label != "regression":
            continue
        if open_notes:
            change.notes.insert(0, f"not accepted: {'; '.join(note.strip() for note in open_notes)} (the accepted "
                                   f"entries name other changes)")
            continue
        if not reasons:
            continue
        change.label = "change"
        for reason in reversed(reasons):
            change.notes.insert(0, f"accepted: {reason}")
    return [entry for index, entry in enumerate(accepted) if index not in used]
