"""``conformance merge``: the reports of shards 1..N of one run joined into the unsharded report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from conformance.commands.options import EXIT_OK
from conformance.engine.sanitize import terminal_safe


def add_parser(commands: Any) -> None:
    """``conformance merge``'s options."""
    merge = commands.add_parser("merge", help="merge the reports of shards 1..N of one run into the unsharded report")
    merge.add_argument("reports", type=Path, nargs="+", help="the shards' report.json files, or folders of them")
    merge.add_argument("--report-dir", type=Path, default=Path("reports"), help="where to write the merged reports")


def run(arguments: argparse.Namespace) -> int:
    """Exit 0 once the merged set is written, whatever its rows say: the shards' own exit codes (and
    ``conformance verify``) tell whether rows failed."""
    from conformance.report.build import render_summary, write_reports
    from conformance.report.merge import merge_reports

    report = merge_reports(arguments.reports, exclude=arguments.report_dir)
    written = write_reports(report, arguments.report_dir)
    print(terminal_safe(render_summary(report)))
    print(terminal_safe("wrote " + ", ".join(str(path) for path in written)))
    return EXIT_OK
