"""The ``conformance`` command: run, inspect, validate (CONTRACT.md, "Command line")."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.cases import load_cases
from conformance.classify import classify_response
from conformance.errors import InputError, Problem
from conformance.http import lower_headers
from conformance.registry import select_adapters
from conformance.report import build_report, render_markdown, write_reports
from conformance.runner import run_all
from conformance.yamlfile import MAX_FILE_BYTES

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2
BUNDLED_CASES = Path(__file__).resolve().parent.parent / "cases"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage errors exit 2 with one line, as argparse does
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="conformance", description="Offline contract conformance for LLM provider adapters.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="run every case against every selected adapter and write the reports")
    run.add_argument("--cases", action="append", type=Path, help="cases folder (repeatable; default: bundled cases/)")
    run.add_argument("--provider", action="append", help="provider id to run (repeatable; default: all)")
    run.add_argument("--adapter", action="append", help="your own adapter as module:object (repeatable)")
    run.add_argument("--report-dir", type=Path, default=Path("reports"), help="where to write the reports")
    run.add_argument("--max-file-bytes", type=int, default=MAX_FILE_BYTES, help="size limit per case/fixture file")

    inspect = commands.add_parser("inspect", help="classify one recorded response and print it as JSON")
    inspect.add_argument("--provider", required=True, help="provider id")
    inspect.add_argument("--adapter", action="append", help="your own adapter as module:object")
    inspect.add_argument("--status", type=int, default=200, help="HTTP status of the recorded response")
    inspect.add_argument("--header", action="append", default=[], help="a response header as K:V (repeatable)")
    inspect.add_argument("file", type=Path, help="a JSON body or an error body")

    validate = commands.add_parser("validate", help="check case files and the fixtures they name")
    validate.add_argument("--cases", action="append", type=Path, help="cases folder (repeatable)")
    validate.add_argument("--max-file-bytes", type=int, default=MAX_FILE_BYTES, help="size limit per file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    handler = {"run": _run, "inspect": _inspect, "validate": _validate}[arguments.command]
    try:
        return handler(arguments)
    except InputError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted: no report was written", file=sys.stderr)
        return 130


def _run(arguments: argparse.Namespace) -> int:
    adapters = select_adapters(arguments.provider, arguments.adapter)
    cases = load_cases(arguments.cases or [BUNDLED_CASES], max_file_bytes=arguments.max_file_bytes)
    rows = run_all(cases, adapters)
    report = build_report(rows, list(adapters))
    written = write_reports(report, arguments.report_dir)
    markdown = render_markdown(report)
    print(markdown)
    print("wrote " + ", ".join(str(path) for path in written))
    return EXIT_OK if report["summary"]["failed"] == 0 else EXIT_FAILED


def _inspect(arguments: argparse.Namespace) -> int:
    adapters = select_adapters([arguments.provider], arguments.adapter)
    adapter = adapters[arguments.provider]
    shown = str(arguments.file)
    headers: dict[str, str] = {}
    for header in arguments.header:
        name, separator, value = header.partition(":")
        if not separator or not name.strip():
            raise InputError([Problem("--header", None, f"expected K:V, got {header!r}",
                                      "e.g. --header retry-after:2")])
        headers[name.strip()] = value.strip()
    try:
        data = arguments.file.read_bytes()
    except OSError as error:
        raise InputError([Problem(shown, None, f"cannot read: {error.strerror}", "check the path")]) from None
    try:
        body = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError([Problem(shown, None, "not UTF-8", "pass a UTF-8 JSON body")]) from None
    except ValueError as error:
        line = getattr(error, "lineno", None)
        raise InputError([Problem(shown, line, f"not JSON: {getattr(error, 'msg', error)}",
                                  "pass a JSON body exactly as received")]) from None
    result = classify_response(adapter, arguments.status, lower_headers(headers), body)
    print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    return EXIT_OK


def _validate(arguments: argparse.Namespace) -> int:
    cases = load_cases(arguments.cases or [BUNDLED_CASES], max_file_bytes=arguments.max_file_bytes)
    fixtures = sum(len(fixtures.turns) for case in cases for fixtures in case.providers.values())
    print(f"ok: {len(cases)} cases, {fixtures} recorded turns")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
