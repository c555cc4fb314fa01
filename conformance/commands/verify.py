"""``conformance verify``: is this combination verified and green? Answered from report files alone."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from conformance.commands.options import EXIT_FAILED, EXIT_OK
from conformance.engine.sanitize import terminal_safe


def add_parser(commands: Any) -> None:
    """``conformance verify``'s options."""
    verify = commands.add_parser("verify", help="is this combination verified and green? (from report files)")
    verify.add_argument("reports", type=Path, nargs="+", help="report.json files, or folders of them (CI artifacts)")
    verify.add_argument("--require", action="append", default=[], metavar="SPEC",
                        help="a package and version the report must record, e.g. openai>=3.50 (repeatable)")
    verify.add_argument("--fixtures", metavar="SHA256",
                        help="only a report that ran on this fixture set (the digest report.md and verify print, "
                             "or its first characters)")
    verify.add_argument("--allow-failures", action="store_true",
                        help="accept a report whose rows did not all pass (default: it must be green)")


def run(arguments: argparse.Namespace) -> int:
    """Print why the reports verify the combination or not; exit 1 when they do not."""
    from conformance.report.verification import verify as verify_reports

    yes, lines = verify_reports(arguments.reports, arguments.require, green=not arguments.allow_failures,
                                fixtures=arguments.fixtures)
    for line in lines:
        print(terminal_safe(line))
    print("verified: yes" if yes else "verified: no")
    return EXIT_OK if yes else EXIT_FAILED
