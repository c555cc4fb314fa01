"""Merging the shards' reports back into one (``conformance merge``): byte for byte the report an unsharded run
writes (docs/ci.md, "Shards"); the split itself is ``conformance.engine.shard``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.engine import forward
from conformance.engine.fixtures import fixture_digest
from conformance.engine.provenance import merged_ages
from conformance.engine.rows import status_of
from conformance.errors import InputError, Problem
from conformance.report.build import assemble
from conformance.report.diff import read_report, row_shape_problem
from conformance.report.verification import reports_in


def merge_reports(paths: list[Path], exclude: Path | None = None) -> dict[str, Any]:
    """One report from the reports of shards 1 to N of one run: byte for byte what the unsharded run writes.
    InputError, naming the file, for a report that is not a shard's, a missing or repeated shard, shards of
    different runs (another plan: other cases, fixtures or filters; another suite, Python, stacks or N) or shards
    that do not add up to their plan."""
    # The merged report's own folder may lie under the shards' folder: a second merge does not read its output.
    skipped = exclude.resolve() if exclude is not None else None
    found = [path for path in reports_in(paths) if skipped is None or skipped not in path.resolve().parents]
    if not found:
        raise InputError([Problem(", ".join(map(str, paths)), None, "no shard report.json here (beside the merged "
                                  "report's own folder)", "pass the folders the shards wrote their reports to")])
    documents = [(str(path), _read_report(path)) for path in found]
    _check_places(documents)
    plans = {json.dumps(document["shard"].get("plan"), sort_keys=True) for _, document in documents}
    if len(plans) > 1:
        raise InputError([Problem(shown, None, "its plan (the cases, fixtures, case and world files, adapter and "
                                               "stack code of the whole run) differs from another shard's: shards "
                                               "of other commits, or run with other filters",
                                  "run every shard on one commit with the same options", "/shard/plan")
                          for shown, _ in documents])
    plan = documents[0][1]["shard"].get("plan") or {}
    first_shown, first = documents[0]
    # Each shard measured the age of its own recordings: the merge measures all of them again, below.
    reference = {key: value for key, value in first["measured"].items() if key not in ("fixtures", "recordings")}
    problems: list[Problem] = []
    files: dict[str, str] = {}
    for shown, document in documents:
        here = {key: value for key, value in document["measured"].items() if key not in ("fixtures", "recordings")}
        if here != reference:
            problems.append(Problem(shown, None, f"measured with {_spelled(here)}, while {first_shown} was measured "
                                                 f"with {_spelled(reference)}",
                                    "run every shard with the same suite, Python and stacks", "/measured"))
        for path, digest in document["shard"]["fixture_files"].items():
            if files.setdefault(path, digest) != digest:
                problems.append(Problem(shown, None, f"{path} has other content than in another shard",
                                        "run every shard on the same commit", "/shard/fixture_files"))
    ran = {row["case"] for _, document in documents for row in document["results"]}
    if sorted(ran) != plan.get("cases") or fixture_digest(files) != plan.get("fixtures"):
        missing = sorted(set(plan.get("cases") or ()) - ran)
        problems.append(Problem(", ".join(shown for shown, _ in documents), None,
                                "the shards do not add up to their plan" + (
                                    f": no rows for {', '.join(missing[:5])}" + (" …" if len(missing) > 5 else "")
                                    if missing else ": other cases or fixture files than planned"),
                                "pass the reports of one run's N shards, unmodified", "/shard/plan"))
    if problems:
        raise InputError(problems)
    measured_with = {key: reference[key] for key in ("suite", "python", "stacks", "prices", "selection")
                     if key in reference}
    merged = assemble([row for _, document in documents for row in document["results"]],
                      [provider for _, document in documents for provider in document["providers"]],
                      [finding for _, document in documents for finding in document.get("findings", [])],
                      [cell for _, document in documents for cell in document.get("differs", [])],
                      measured_with, files)
    # As the unsharded run measures them (conformance.session.Run.report): the shards' cases, so files, are apart.
    recordings = merged_ages(document["measured"].get("recordings") or {} for _, document in documents)
    if recordings:
        merged["measured"]["recordings"] = recordings
    section = forward.merged([document.get("forward") for _, document in documents])
    if section is not None:  # each shard ran the mutants of its own cases
        merged["forward"] = section
    retries = next((document["retries"] for _, document in documents if isinstance(document.get("retries"), dict)),
                   None)
    if retries is not None:  # the retry lane's scripts are the bundled ones, whatever the shard: one shard's
        merged["retries"] = retries
    return merged


def _check_places(documents: list[tuple[str, dict[str, Any]]]) -> None:
    """Every report is a shard's, all of one N, each of 1..N exactly once."""
    problems: list[Problem] = []
    shards: dict[int, str] = {}
    counts = set()
    for shown, document in documents:
        shard = document["shard"]
        counts.add(shard["of"])
        if shard["index"] in shards:
            problems.append(Problem(shown, None, f"shard {shard['index']}/{shard['of']} is given twice (also "
                                                 f"{shards[shard['index']]})", "pass each shard's report once",
                                    "/shard/index"))
        shards[shard["index"]] = shown
    if problems:
        raise InputError(problems)
    if len(counts) > 1:
        raise InputError([Problem(shown, None, f"shard of {document['shard']['of']}, while others are of another "
                                               f"count ({', '.join(str(count) for count in sorted(counts))})",
                                  "merge the shards of one run, all with the same N", "/shard/of")
                          for shown, document in documents])
    count = counts.pop()
    missing = sorted(set(range(1, count + 1)) - set(shards))
    if missing:
        raise InputError([Problem(", ".join(shown for shown, _ in documents), None,
                                  f"shard(s) {', '.join(f'{index}/{count}' for index in missing)} missing",
                                  "pass every shard's report.json: a merge of some shards would read as the "
                                  "whole matrix")])


def _spelled(measured: Mapping[str, Any]) -> str:
    return json.dumps(measured, sort_keys=True)


def _malformed(shard: dict[str, Any], document: dict[str, Any]) -> str | None:
    """The pointer of the first field merge cannot trust, or None."""
    count, index, files = shard.get("of"), shard.get("index"), shard.get("fixture_files")
    if type(count) is not int or count < 1:
        return "/shard/of"
    if type(index) is not int or not 1 <= index <= count:
        return "/shard/index"
    if not isinstance(files, dict) or not all(isinstance(digest, str) and re.fullmatch("[0-9a-f]{64}", digest)
                                              for digest in files.values()):
        return "/shard/fixture_files"
    if not isinstance(document.get("measured"), dict):
        return "/measured"
    providers = document.get("providers")
    if not isinstance(providers, list) or not all(isinstance(item, str) for item in providers):
        return "/providers"
    return None


def _read_report(path: Path) -> dict[str, Any]:
    """A shard's report, its parts merge relies on checked: InputError, naming the file and field, otherwise."""
    document = read_report(path)
    shown = str(path)
    shard = document.get("shard")
    if not isinstance(shard, dict):
        raise InputError([Problem(shown, None, "not a shard's report (no 'shard' object with index, of and "
                                               "fixture_files)", "pass the report.json of each run with --shard I/N",
                                  "/shard")])
    wrong = _malformed(shard, document)
    if wrong:
        raise InputError([Problem(shown, None, f"{wrong} is missing or malformed", "pass an unmodified shard report",
                                  wrong)])
    problems = [Problem(str(path), None, f"results[{index}] {wrong}", "pass an unmodified report.json",
                        f"/results/{index}")
                for index, row in enumerate(document["results"]) if (wrong := row_shape_problem(row))]
    if problems:
        raise InputError(problems[:20])
    summary: dict[str, Any] = document["summary"] if isinstance(document.get("summary"), dict) else {}
    rows = document["results"]
    counted = {"rows": len(rows), "passed": sum(1 for row in rows if row.get("passed") is True),
               "cases": len({row["case"] for row in rows})}
    if any(status_of(row) == "waived" for row in rows) or "waived" in summary:
        counted["waived"] = sum(1 for row in rows if status_of(row) == "waived")
    if any(summary.get(name) != value for name, value in counted.items()):
        # A row removed (or a verdict edited) by hand leaves the summary the shard wrote behind.
        raise InputError([Problem(shown, None, f"its results ({counted['rows']} rows, {counted['passed']} passed) "
                                               f"do not match its summary ({summary.get('rows')} rows, "
                                               f"{summary.get('passed')} passed): the report was edited",
                                  "pass the report.json each shard wrote, unmodified", "/summary")])
    return document
