"""``conformance diff``: two reports compared row by row, each change labelled; exit 1 on a regression."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from conformance.commands.options import EXIT_FAILED, EXIT_OK
from conformance.engine.sanitize import terminal_safe


def add_parser(commands: Any) -> None:
    """``conformance diff``'s options."""
    diff = commands.add_parser("diff", help="compare two reports; exit 1 on any regression (the upgrade gate)")
    diff.add_argument("old", type=Path, help="the report.json before the change (e.g. from the base branch)")
    diff.add_argument("new", type=Path, help="the report.json after the change")
    diff.add_argument("--output", type=Path, help="also write the output to this file (for a PR comment)")
    diff.add_argument("--format", choices=("markdown", "json"), default="markdown",
                      help="markdown (default, for people) or json (for machines)")
    diff.add_argument("--accept", type=Path, metavar="FILE",
                      help="accepted changes (YAML/JSON list of case, provider, mode, reason): a regression they "
                           "name becomes a change, with its reason")
    diff.add_argument("--fail-on", choices=("regression", "change"), default="regression",
                      help="exit 1 on a regression (default), or on any regression or change")


def run(arguments: argparse.Namespace) -> int:
    """Compare the reports; exit 1 on what ``--fail-on`` names."""
    from conformance.report.diff import (
        accepted_warnings,
        apply_accepted,
        compare,
        forward_changes,
        load_accepted,
        load_document,
        retry_changes,
        versions_moved,
    )
    from conformance.report.diff import fails as diff_fails
    from conformance.report.diff import render_json as render_diff_json
    from conformance.report.diff import render_markdown as render_diff
    from conformance.report.files import write_atomic

    (old, old_findings), (new, new_findings) = load_document(arguments.old), load_document(arguments.new)
    changes = compare(old, new, old_findings, new_findings) + forward_changes(arguments.old, arguments.new) + \
        retry_changes(arguments.old, arguments.new)
    if arguments.accept is not None:
        accepted = load_accepted(arguments.accept)
        for line in accepted_warnings(accepted, apply_accepted(changes, accepted)):
            print(terminal_safe(f"note: {arguments.accept}: {line}"), file=sys.stderr)
    if arguments.format == "json":
        output = render_diff_json(changes, str(arguments.old), str(arguments.new))
    else:
        output = render_diff(changes, str(arguments.old), str(arguments.new),
                             versions_moved(arguments.old, arguments.new))
    print(terminal_safe(output) if arguments.format == "markdown" else output, end="")
    if arguments.output:
        write_atomic(arguments.output, output)
    return EXIT_FAILED if diff_fails(changes, arguments.fail_on) else EXIT_OK
