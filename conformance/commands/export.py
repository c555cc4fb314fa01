"""``conformance export REPORT``: a report's rows as OpenTelemetry GenAI semantic-convention records, one JSON object
per line (``conformance.report.semconv``; docs/telemetry.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from conformance.commands.options import EXIT_OK


def add_parser(commands: Any) -> None:
    """``conformance export``'s arguments."""
    parser = commands.add_parser("export", help="a report's rows as OpenTelemetry gen_ai.* records (JSON lines)")
    parser.add_argument("report", type=Path, help="a report.json written by conformance run")
    parser.add_argument("--output", type=Path, metavar="FILE",
                        help="write the records to FILE (written whole, or not at all); default: standard output")


def run(arguments: argparse.Namespace) -> int:
    """Print or write the records; exit 0, 2 on a report that does not read."""
    from conformance.engine.registry import builtin_adapters
    from conformance.report.diff import read_report
    from conformance.report.files import write_atomic
    from conformance.report.semconv import to_jsonl

    names = {provider: adapter.wire.semconv_provider for provider, adapter in builtin_adapters().items()
             if adapter.wire is not None and adapter.wire.semconv_provider is not None}
    text = to_jsonl(read_report(arguments.report), names)
    if arguments.output is None:
        sys.stdout.write(text)
    else:
        write_atomic(arguments.output, text)
        print(f"wrote {text.count(chr(10))} record(s) to {arguments.output}")
    return EXIT_OK
