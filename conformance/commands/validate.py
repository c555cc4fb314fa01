"""``conformance validate``: the case files, the fixtures they name and their hygiene, then a replay of every case."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from conformance.commands.options import EXIT_FAILED, EXIT_OK, add_case_options, configured
from conformance.engine.sanitize import terminal_safe
from conformance.errors import InputError


def add_parser(commands: Any) -> None:
    """``conformance validate``'s options."""
    validate = commands.add_parser("validate", help="check case files and the fixtures they name")
    add_case_options(validate)
    validate.add_argument("--max-age", type=_days, metavar="DAYS",
                          help="fail on recordings older than this, by their provenance (default: the "
                               "conformance_max_age_days setting; none: no limit)")


def _days(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days (0 or more)")
    return int(text)


def run(arguments: argparse.Namespace) -> int:
    """Check the cases, their fixtures and their hygiene, then replay every case; exit 1 when one fails."""
    from conformance.engine.cases import load_cases
    from conformance.engine.fixtures import shown_path
    from conformance.engine.pytool import PythonTool
    from conformance.engine.registry import select_adapters
    from conformance.engine.runner import run_all
    from conformance.engine.world import CallableTool
    from conformance.replay.hygiene import hygiene_problems

    config = configured(arguments)
    roots = config.roots
    adapters = select_adapters(None, config.adapters)
    cases = load_cases(roots, max_file_bytes=arguments.max_file_bytes, known_providers=adapters)
    used = {path.resolve() for case in cases for fixtures in case.providers.values() for turn in fixtures.turns
            for path in (turn.body_path, turn.stream, turn.error_path) if path is not None}
    # The request behind each recorded turn (`conformance record`, docs/record.md) belongs to the provider's turns.
    used |= {path.resolve() for case in cases for provider in case.providers
             for path in (Path(case.path).parent / provider / "requests").glob("turn*.json")}
    # A python tool's file, named by world.yaml (inside the cases folder, conformance.engine.pytool), is the world's.
    used |= {(tool.function.root / tool.function.spec.rpartition(":")[0]).resolve() for case in cases
             for tool in case.world.tools.values() if isinstance(tool, CallableTool) and isinstance(tool.function,
             PythonTool) and tool.function.spec.rpartition(":")[0].endswith(".py")}
    problems = [problem for root in roots for problem in hygiene_problems(root, used, shown_path, adapters)]
    if problems:
        raise InputError(problems)
    # Replaying every case finds what only the loop can: a turn the loop needs that was never recorded, and an
    # expectation the recordings do not meet.
    failing = [row for row in run_all(cases, adapters) if not row["passed"]]
    for row in failing:
        for failure in row["failures"]:
            print(terminal_safe(f"{row['case']} [{row['provider']}, {row['mode']}]: {failure}"), file=sys.stderr)
    fixtures = sum(len(fixtures.turns) for case in cases for fixtures in case.providers.values())
    max_age = arguments.max_age if arguments.max_age is not None else config.settings.max_age_days
    old = _too_old(used, max_age) if max_age is not None else []
    if failing or old:
        if failing:
            print(f"{len(failing)} case item(s) do not meet their expectation ({len(cases)} cases, {fixtures} "
                  "recorded turns)", file=sys.stderr)
        return EXIT_FAILED
    print(f"ok: {len(cases)} cases, {fixtures} recorded turns")
    return EXIT_OK


def _too_old(used: set[Path], max_age: int) -> list[str]:
    """Print and return each recording older than ``max_age`` days, by its provenance (docs/record.md)."""
    from conformance.engine.fixtures import shown_path
    from conformance.engine.provenance import file_provenance, too_old

    turns = [path for path in sorted(used) if path.name.startswith("turn")]
    old = too_old([str(path) for path in turns], max_age)
    for path, days, when in old:
        said = f"recorded {days} days ago ({when})" if days >= 0 else f"recorded in the future ({when})"
        print(terminal_safe(f"error: {shown_path(Path(path))}: {said}, older than the {max_age}-day limit. Fix: "
                            "record it again (conformance record --record-mode all), or raise the limit"
                            if days >= 0 else f"error: {shown_path(Path(path))}: {said}. Fix: correct the clock "
                            "it was recorded with, and record it again"), file=sys.stderr)
    unknown = [path for path in turns if file_provenance(path) == ""]
    if unknown:  # no sidecar says when these were recorded: their age cannot be checked (docs/record.md)
        print(terminal_safe(f"warning: {len(unknown)} recording(s) have no provenance, so no age: "
                            f"{shown_path(unknown[0])}" + (" …" if len(unknown) > 1 else "") +
                            ". Record them again, or mark hand-written fixtures in a provenance.json"),
              file=sys.stderr)
    if old:
        print(f"{len(old)} recording(s) older than {max_age} days or dated in the future", file=sys.stderr)
    return [path for path, _, _ in old]
