"""``conformance verify``: is this combination verified and green? Answered from report files alone (a folder of CI
artifacts), no server: each report records what it verified (docs/ci.md, "Verification record")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.engine.files import read_regular_file
from conformance.errors import InputError, Problem
from conformance.kit.jsontext import parse_json

# A report of 20,000 rows is about 60 MB.
MAX_REPORT_BYTES = 512 * 1024 * 1024


def reports_in(paths: Sequence[Path]) -> list[Path]:
    """The report.json files named, or found under the folders named, sorted. Under a folder, the copies a report
    folder keeps of its sets (``.current/``, ``.sets/``: ``conformance.report.files``) are not counted again."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(file for file in path.rglob("report.json")
                            if not any(part.startswith(".") for part in file.relative_to(path).parts[:-1]))
        elif path.is_file():
            found.append(path)
        else:
            raise InputError([Problem(str(path), None, "no such file or folder", "pass report.json files or folders")])
    if not found:
        raise InputError([Problem(", ".join(map(str, paths)), None, "no report.json here",
                                  "pass the folder conformance run (or the pytest plugin) wrote its reports to")])
    return found


def versions_of(report: dict[str, Any]) -> dict[str, str]:
    """Every package version a report records: the suite (``conformance``), ``python``, each stack's packages."""
    measured = report.get("measured") or {}
    versions = {"conformance": str(measured.get("suite")), "python": str(measured.get("python"))}
    for packages in (measured.get("stacks") or {}).values():
        versions.update({name.lower(): str(version) for name, version in packages.items() if version})
    return versions


def check(report: dict[str, Any], requirements: Sequence[str], green: bool, fixtures: str | None = None) -> list[str]:
    """Why a report does not verify the requirements (``openai>=3.50``, ``litellm==1.110.2``, ``python>=3.11``,
    a bare name: any version), and, with ``green``, that all its rows passed; [] when it does. A filtered run
    (``measured.selection``) covers part of the task set, and verifies nothing; with ``fixtures``, a report that ran
    on another fixture set does not either."""
    from packaging.requirements import InvalidRequirement, Requirement

    versions = versions_of(report)
    reasons = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement as error:
            raise InputError([Problem("--require", None, f"{text!r} is not a requirement ({error})",
                                      "write e.g. openai>=3.50 or litellm==1.110.2")]) from None
        version = versions.get(requirement.name.lower())
        if version is None:
            reasons.append(f"{requirement.name} is not in it")
        elif not requirement.specifier.contains(version, prereleases=True):
            reasons.append(f"{requirement.name} {version} does not satisfy {requirement.specifier}")
    measured: dict[str, Any] = report["measured"] if isinstance(report.get("measured"), dict) else {}
    selection = measured.get("selection")
    # The task set narrowed (cases, -k, modes, markers) is part of it; the providers narrowed are the combination.
    narrowed = {name: value for name, value in selection.items() if name != "provider"} \
        if isinstance(selection, dict) else ({"selection": selection} if selection else {})
    if narrowed:
        spelled = ", ".join(f"{name} {_listed(value)}" for name, value in sorted(narrowed.items()))
        reasons.append(f"a filtered run ({spelled}): it covers part of the task set only")
    digest = str((measured.get("fixtures") or {}).get("sha256", ""))
    if fixtures is not None and not re.fullmatch(r"[0-9a-f]{8,64}", fixtures.strip().lower()):
        raise InputError([Problem("--fixtures", None, f"{fixtures!r} is not a fixture digest",
                                  "give at least 8 hex characters of the sha256 verify and report.md print")])
    if fixtures and not digest.startswith(fixtures.strip().lower()):
        reasons.append(f"it ran on fixtures {digest[:12] or '(none recorded)'}, not {fixtures.strip()[:12]}")
    shard = report.get("shard")
    if isinstance(shard, dict):  # one shard's rows are not the run's: another shard may have failed
        reasons.append(f"a shard's report ({shard.get('index')} of {shard.get('of')}): merge the shards first "
                       "(conformance merge)")
    summary = report.get("summary") or {}
    if green and summary.get("failed", 1) != 0:
        reasons.append(f"{summary.get('failed', '?')} of {summary.get('rows', '?')} rows failed")
    return reasons


def verify(paths: Sequence[Path], requirements: Sequence[str], green: bool = True,
           fixtures: str | None = None) -> tuple[bool, list[str]]:
    """(yes or no, one line per report saying why). Yes when at least one report verifies every requirement
    (and passed whole, with ``green``)."""
    lines, yes = [], False
    for path in reports_in(paths):
        try:
            # A regular file only (a FIFO would wait forever), and JSON within the depth bound.
            report = parse_json(read_regular_file(path, str(path), MAX_REPORT_BYTES).decode("utf-8"))
        except InputError as error:
            lines.append(f"{path}: unreadable ({error.problems[0].message})")
            continue
        except ValueError as error:
            lines.append(f"{path}: unreadable ({error})")
            continue
        if not isinstance(report, dict):
            lines.append(f"{path}: not a conformance report")
            continue
        reasons = check(report, requirements, green, fixtures)
        recorded = (report.get("measured") or {}).get("fixtures") or {}
        what = (f"conformance {versions_of(report)['conformance']}, {report.get('summary', {}).get('rows', '?')} rows, "
                f"fixtures {str(recorded.get('sha256', '?'))[:12]}")
        if reasons:
            lines.append(f"no  {path} ({what}): " + "; ".join(reasons))
        else:
            yes = True
            shown = ", ".join(f"{name} {versions_of(report).get(name.lower(), '')}" for name in
                              (_name(text) for text in requirements))
            lines.append(f"yes {path} ({what})" + (f": {shown}" if shown else "") + (", all rows passed" if green
                                                                                    else ""))
    return yes, lines


def _listed(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _name(text: str) -> str:
    from packaging.requirements import Requirement

    return Requirement(text).name
