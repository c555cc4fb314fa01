"""The ``conformance`` command: run, inspect, diff, validate, list, redact (docs/contract.md, "Command line")."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.commands import gate as gate_command
from conformance.commands import record as record_command
from conformance.commands import serve as serve_command
from conformance.engine.sanitize import report_safe, terminal_safe
from conformance.engine.yamlfile import MAX_FILE_BYTES
from conformance.errors import InputError, Problem

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2
# A body given to `inspect` is read whole; a transcript (--stream) is read in chunks and has no limit.
INSPECT_MAX_BYTES = 64 * 1024 * 1024
BUNDLED_CASES = Path(__file__).resolve().parent / "cases"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage errors exit 2 with one line, as argparse does
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per command of docs/contract.md, "Command line"."""
    parser = _Parser(prog="conformance", description="Offline contract conformance for LLM provider adapters.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="run every case against every selected adapter and write the reports")
    run.add_argument("--cases", action="append", type=Path,
                     help="cases folder (repeatable); replaces the bundled cases unless --with-bundled")
    run.add_argument("--with-bundled", action="store_true", help="run the bundled cases too, beside --cases")
    run.add_argument("--provider", action="append", help="provider id to run (repeatable; default: all)")
    run.add_argument("--adapter", action="append", help="your own adapter as module:object (repeatable)")
    run.add_argument("--report-dir", type=Path, default=Path("reports"), help="where to write the reports")
    run.add_argument("--verbose", "-v", action="store_true",
                     help="print the whole report.md instead of the summary (totals, failures, differing cells)")
    run.add_argument("--max-file-bytes", type=int, default=MAX_FILE_BYTES, help="size limit per case/fixture file")
    run.add_argument("--case", action="append", default=[], metavar="PATTERN",
                     help="run only the cases whose id matches this shell pattern (repeatable), e.g. 'http_*'")
    run.add_argument("-k", dest="keyword", metavar="EXPRESSION",
                     help="run only the items whose id (case[provider-mode]) matches, as pytest -k: "
                          "'openai and not stream'")
    run.add_argument("--mode", action="append", choices=("body", "stream"), default=[],
                     help="run only this mode (repeatable; default: every mode the fixtures allow)")
    run.add_argument("--require-providers", action="store_true",
                     help="fail (exit 1) when a case that ran has no fixtures for a selected provider")
    run.add_argument("--stack", action="append", default=[], metavar="STACK",
                     help="also run a real client's lane: sdks, gateways, all, a reference stack "
                          "(openai-chat@openai-sdk) or module:object (repeatable; docs/stacks.md)")
    run.add_argument("--shard", metavar="I/N",
                     help="run only shard I of N: whole cases, split evenly by estimated cost; merge the N "
                          "report.json files with `conformance merge` (docs/ci.md, \"Shards\")")
    run.add_argument("--in-process", action="store_true",
                     help="stacks answer through their clients' in-process seams instead of the loopback server")

    inspect = commands.add_parser("inspect", help="classify one recorded response and print it as JSON")
    inspect.add_argument("--provider", required=True, help="provider id")
    inspect.add_argument("--adapter", action="append", help="your own adapter as module:object")
    inspect.add_argument("--status", type=int, default=200, help="HTTP status of the recorded response")
    inspect.add_argument("--header", action="append", default=[], help="a response header as K:V (repeatable)")
    inspect.add_argument("--stream", action="store_true", help="read FILE as a raw stream transcript")
    inspect.add_argument("file", type=Path, help="a JSON body, an error body, or a raw stream transcript")

    diff = commands.add_parser("diff", help="compare two reports; exit 1 on any regression (the upgrade gate)")
    diff.add_argument("old", type=Path, help="the report.json before the change (e.g. from the base branch)")
    diff.add_argument("new", type=Path, help="the report.json after the change")
    diff.add_argument("--output", type=Path, help="also write the output to this file (for a PR comment)")
    diff.add_argument("--format", choices=("markdown", "json"), default="markdown",
                      help="markdown (default, for people) or json (for machines)")
    gate_command.add_parser(commands)
    comment = commands.add_parser("comment", help="post the gate's comment.md on the pull request, updated in place")
    comment.add_argument("file", type=Path, help="the comment.md conformance gate wrote")
    merge = commands.add_parser("merge", help="merge the reports of shards 1..N of one run into the unsharded report")
    merge.add_argument("reports", type=Path, nargs="+", help="the shards' report.json files, or folders of them")
    merge.add_argument("--report-dir", type=Path, default=Path("reports"), help="where to write the merged reports")
    verify = commands.add_parser("verify", help="is this combination verified and green? (from report files)")
    verify.add_argument("reports", type=Path, nargs="+", help="report.json files, or folders of them (CI artifacts)")
    verify.add_argument("--require", action="append", default=[], metavar="SPEC",
                        help="a package and version the report must record, e.g. openai>=3.50 (repeatable)")
    verify.add_argument("--fixtures", metavar="SHA256",
                        help="only a report that ran on this fixture set (the digest report.md and verify print, "
                             "or its first characters)")
    verify.add_argument("--allow-failures", action="store_true",
                        help="accept a report whose rows did not all pass (default: it must be green)")
    diff.add_argument("--accept", type=Path, metavar="FILE",
                      help="accepted changes (YAML/JSON list of case, provider, mode, reason): a regression they "
                           "name becomes a change, with its reason")
    diff.add_argument("--fail-on", choices=("regression", "change"), default="regression",
                      help="exit 1 on a regression (default), or on any regression or change")

    listing = commands.add_parser("list", help="list the cases and what each proves")
    listing.add_argument("--cases", action="append", type=Path, help="cases folder (repeatable)")
    listing.add_argument("--with-bundled", action="store_true", help="the bundled cases too, beside --cases")
    listing.add_argument("--markdown", action="store_true", help="print the case table of docs/cases.md")
    listing.add_argument("--adapter", action="append", help="your own adapter as module:object (repeatable)")

    redact_command = commands.add_parser("redact", help="replace secrets and e-mail addresses in fixture files")
    redact_command.add_argument("files", type=Path, nargs="+", help="fixture files to rewrite in place")

    validate = commands.add_parser("validate", help="check case files and the fixtures they name")
    validate.add_argument("--cases", action="append", type=Path, help="cases folder (repeatable)")
    validate.add_argument("--with-bundled", action="store_true", help="the bundled cases too, beside --cases")
    validate.add_argument("--max-file-bytes", type=int, default=MAX_FILE_BYTES, help="size limit per file")
    validate.add_argument("--adapter", action="append", help="your own adapter as module:object (repeatable)")

    init_command = commands.add_parser("init", help="scaffold a repository: cases, an example, an adapter stub, "
                                                    "the pytest ini lines, a CI workflow, the schemas")
    init_command.add_argument("folder", type=Path, nargs="?", default=Path("."),
                              help="the repository to scaffold (default: here)")

    serve_command.add_parser(commands, "cases folder (repeatable); replaces the bundled cases unless --with-bundled")
    record_command.add_parser(commands, "cases folder (repeatable); replaces the bundled cases unless --with-bundled")

    schema = commands.add_parser("schema", help="print the case or world JSON Schema (or where it is installed)")
    schema.add_argument("name", choices=("case", "world"), help="which schema")
    schema.add_argument("--path", action="store_true", help="print the installed file's path instead")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (0, 1, 2, 130 or 143)."""
    from conformance.report.files import Terminated, handle_sigterm_as_interrupt

    arguments = build_parser().parse_args(argv)
    handle_sigterm_as_interrupt()
    handler = {"run": _run, "inspect": _inspect, "diff": _diff, "list": _list, "redact": _redact,
               "validate": _validate, "init": _init, "schema": _schema,
               "serve": _serve, "record": _record, "verify": _verify,
               "merge": _merge, "gate": gate_command.gate, "comment": _comment}[arguments.command]
    try:
        return handler(arguments)
    except InputError as error:
        for problem in error.problems:
            print(terminal_safe(f"error: {problem}"), file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt as interruption:
        print("interrupted: no report was written", file=sys.stderr)
        return 143 if isinstance(interruption, Terminated) else 130


def _serve(arguments: argparse.Namespace) -> int:
    return serve_command.serve(arguments, _roots(arguments))


def _verify(arguments: argparse.Namespace) -> int:
    from conformance.commands.verify import verify as verify_reports

    yes, lines = verify_reports(arguments.reports, arguments.require, green=not arguments.allow_failures,
                                fixtures=arguments.fixtures)
    for line in lines:
        print(terminal_safe(line))
    print("verified: yes" if yes else "verified: no")
    return EXIT_OK if yes else EXIT_FAILED


def _comment(arguments: argparse.Namespace) -> int:
    from conformance.commands.comment import post_comment

    return post_comment(arguments.file)


def _merge(arguments: argparse.Namespace) -> int:
    """Exit 0 once the merged set is written, whatever its rows say: the shards' own exit codes (and
    ``conformance verify``) tell whether rows failed."""
    from conformance.report.build import render_summary, write_reports
    from conformance.report.merge import merge_reports

    report = merge_reports(arguments.reports, exclude=arguments.report_dir)
    written = write_reports(report, arguments.report_dir)
    print(terminal_safe(render_summary(report)))
    print(terminal_safe("wrote " + ", ".join(str(path) for path in written)))
    return EXIT_OK


def _record(arguments: argparse.Namespace) -> int:
    return record_command.record(arguments, _roots(arguments))


def _roots(arguments: argparse.Namespace) -> list[Path]:
    """``--cases`` replaces the bundled cases; ``--with-bundled`` keeps them beside."""
    given = list(arguments.cases or [])
    return [*given, BUNDLED_CASES] if not given or arguments.with_bundled else given


def _run(arguments: argparse.Namespace) -> int:
    from conformance.engine.cases import base_provider, load_cases
    from conformance.engine.fixtures import fixture_files
    from conformance.engine.registry import select_adapters
    from conformance.engine.runner import run_case
    from conformance.engine.selection import columns, coverage, missing_providers, select_items
    from conformance.engine.shard import parse_shard, split
    from conformance.report.build import build_report, render_markdown, render_summary, write_reports
    from conformance.report.files import append_step_summary
    from conformance.stacks.runner import stack_lanes
    from conformance.stacks.stack import select_stacks

    known = select_adapters(None, arguments.adapter)
    adapters = select_adapters(arguments.provider, arguments.adapter)
    cases = load_cases(_roots(arguments), max_file_bytes=arguments.max_file_bytes,
                       known_providers=known)
    items = select_items(cases, adapters, arguments.case, arguments.keyword, arguments.mode)
    stacks = select_stacks(arguments.stack)
    shard_of = parse_shard(arguments.shard) if arguments.shard is not None else None
    shard = None
    if items and shard_of is not None:
        # Every shard sees every selected item, so each computes the same split (conformance.engine.shard).
        mine, shard = split(shard_of, [(item.case, item.provider, False) for item in items]
                            + [(item.case, item.provider, True) for item in items for stack in stacks
                               if stack.provider == item.provider], [*adapters.values(), *stacks])
        items = [item for item in items if item.case.id in mine]
    elif not items:
        filtered = arguments.case or arguments.keyword or arguments.mode
        raise InputError([Problem("--case/-k/--mode" if filtered else "--provider", None,
                                  "no case item matches the filters: nothing ran" if filtered else
                                  f"no case has fixtures for {', '.join(sorted(adapters))}: nothing ran",
                                  "loosen --case, -k or --mode (`conformance list` shows the case ids)" if filtered
                                  else "record fixtures under providers.<id> in the cases, or pick a provider they "
                                       "have")])
    rows = [run_case(item.case, item.provider, adapters[base_provider(item.provider)], item.mode) for item in items]
    stack_rows, lanes = stack_lanes(stacks, items, adapters, arguments.in_process)
    rows += stack_rows
    selection = {name: value for name, value in (("case", arguments.case), ("keyword", arguments.keyword),
                                                 ("mode", arguments.mode), ("provider", arguments.provider)) if value}
    report = build_report(rows, columns(list(adapters), items) + lanes, stacks, fixture_files(cases, rows), shard,
                          selection)
    written = write_reports(report, arguments.report_dir)
    markdown = render_markdown(report)
    print(terminal_safe(markdown if arguments.verbose else render_summary(report)))
    append_step_summary(markdown)
    print(terminal_safe("\n".join(coverage(cases, columns(sorted(adapters), items), items))))
    missing = missing_providers(cases, adapters, items) if arguments.require_providers else []
    for problem in missing:
        print(terminal_safe(f"error: {problem}"), file=sys.stderr)
    print(terminal_safe("wrote " + ", ".join(str(path) for path in written)))
    return EXIT_OK if report["summary"]["failed"] == 0 and not missing else EXIT_FAILED


def _inspect(arguments: argparse.Namespace) -> int:
    from conformance.engine.classify import classify_response
    from conformance.engine.files import read_regular_file, regular_file_problem
    from conformance.engine.registry import select_adapters
    from conformance.kit.http import lower_headers
    from conformance.kit.jsontext import parse_json
    from conformance.kit.sse import read_chunks

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
    if not 100 <= arguments.status <= 599:
        raise InputError([Problem("--status", None, f"{arguments.status} is not an HTTP status",
                                  "pass the recorded status, 100 to 599")])
    if arguments.stream:
        problem = regular_file_problem(arguments.file, shown, sys.maxsize)  # streamed: no size limit
        if problem is not None:
            raise InputError([problem])
        data = b""
    else:
        data = read_regular_file(arguments.file, shown, INSPECT_MAX_BYTES)
    body: Any = None
    is_json = not arguments.stream
    if is_json:
        try:
            body = parse_json(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            is_json = False
            if arguments.status >= 400:
                # An error page need not be JSON (a proxy's HTML, an empty body): classify it by status.
                body = data.decode("utf-8", errors="replace") or None
            # A file that is not one JSON document may be a stream transcript; only then is it readable.
            elif adapter.assemble_stream is None or not _looks_like_stream(data):
                line = getattr(error, "lineno", None)
                message = getattr(error, "msg", error)
                reason = "not UTF-8" if isinstance(error, UnicodeDecodeError) else f"not JSON: {message}"
                fix = "pass a JSON body exactly as received, or a raw stream transcript"
                raise InputError([Problem(shown, line, reason, fix)]) from None
    if is_json or arguments.status >= 400:
        result = classify_response(adapter, arguments.status, lower_headers(headers), body).to_dict()
    else:
        if adapter.assemble_stream is None:
            raise InputError([Problem(shown, None, f"adapter '{adapter.id}' cannot read streams", "pass a JSON body")])
        assembled = adapter.assemble_stream(read_chunks(str(arguments.file)))
        result = assembled.response.to_dict()
        result["stream"] = assembled.summary.to_dict()
    print(terminal_safe(json.dumps(report_safe(result), indent=2, ensure_ascii=False, allow_nan=False)))
    return EXIT_OK


def _looks_like_stream(data: bytes) -> bool:
    """SSE fields, or JSON lines (one event object per line, as decoded binary event streams are stored).

    A JSON body cut short is neither: its first line (``{`` of a pretty-printed body) is not a whole object, so
    it is reported as "not JSON" instead of being read as a broken stream."""
    from conformance.kit.jsontext import parse_json

    stripped = data.lstrip()
    if stripped.startswith((b"data:", b"event:", b":", b"id:", b"retry:")):
        return True
    first, newline, _ = stripped.partition(b"\n")
    if not newline:
        return False
    try:
        return isinstance(parse_json(first.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError):
        return False


def _diff(arguments: argparse.Namespace) -> int:
    from conformance.report.diff import accepted_warnings, apply_accepted, compare, load_accepted, load_document
    from conformance.report.diff import fails as diff_fails
    from conformance.report.diff import render_json as render_diff_json
    from conformance.report.diff import render_markdown as render_diff
    from conformance.report.files import write_atomic

    (old, old_findings), (new, new_findings) = load_document(arguments.old), load_document(arguments.new)
    changes = compare(old, new, old_findings, new_findings)
    if arguments.accept is not None:
        accepted = load_accepted(arguments.accept)
        for line in accepted_warnings(accepted, apply_accepted(changes, accepted)):
            print(terminal_safe(f"note: {arguments.accept}: {line}"), file=sys.stderr)
    render = render_diff_json if arguments.format == "json" else render_diff
    output = render(changes, str(arguments.old), str(arguments.new))
    print(terminal_safe(output) if arguments.format == "markdown" else output, end="")
    if arguments.output:
        write_atomic(arguments.output, output)
    return EXIT_FAILED if diff_fails(changes, arguments.fail_on) else EXIT_OK


def _list(arguments: argparse.Namespace) -> int:
    from conformance.engine.cases import load_cases
    from conformance.engine.registry import select_adapters
    from conformance.report.catalogue import render_catalogue

    cases = load_cases(_roots(arguments), known_providers=select_adapters(None, arguments.adapter))
    if arguments.markdown:
        print(terminal_safe(render_catalogue(cases)), end="")
    else:
        for case in cases:
            print(terminal_safe(f"{case.id:<36} {case.scenario:<22} {case.expect.outcome:<18} "
                                f"{', '.join(sorted(case.providers))}"))
    return EXIT_OK


def _redact(arguments: argparse.Namespace) -> int:
    from conformance.replay.hygiene import redact_file

    for path in arguments.files:
        if redact_file(path):
            print(terminal_safe(f"redacted {path}"))
    return EXIT_OK


def _validate(arguments: argparse.Namespace) -> int:
    from conformance.engine.cases import load_cases
    from conformance.engine.fixtures import shown_path
    from conformance.engine.pytool import PythonTool
    from conformance.engine.registry import select_adapters
    from conformance.engine.runner import run_all
    from conformance.replay.hygiene import hygiene_problems

    roots = _roots(arguments)
    adapters = select_adapters(None, arguments.adapter)
    cases = load_cases(roots, max_file_bytes=arguments.max_file_bytes, known_providers=adapters)
    used = {path.resolve() for case in cases for fixtures in case.providers.values() for turn in fixtures.turns
            for path in (turn.body_path, turn.stream, turn.error_path) if path is not None}
    # The request behind each recorded turn (`conformance record`, docs/record.md) belongs to the provider's turns.
    used |= {path.resolve() for case in cases for provider in case.providers
             for path in (Path(case.path).parent / provider / "requests").glob("turn*.json")}
    # A python tool's file, named by world.yaml (inside the cases folder, conformance.engine.pytool), is the world's.
    used |= {(tool.function.root / tool.function.spec.rpartition(":")[0]).resolve() for case in cases
             for tool in case.world.tools.values() if isinstance(tool.function, PythonTool)
             and tool.function.spec.rpartition(":")[0].endswith(".py")}
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
    if failing:
        print(f"{len(failing)} case item(s) do not meet their expectation ({len(cases)} cases, {fixtures} recorded "
              "turns)", file=sys.stderr)
        return EXIT_FAILED
    print(f"ok: {len(cases)} cases, {fixtures} recorded turns")
    return EXIT_OK


def _init(arguments: argparse.Namespace) -> int:
    from conformance.commands.init import init

    if not arguments.folder.is_dir():
        raise InputError([Problem(str(arguments.folder), None, "not a folder", "create it first, or pass a folder")])
    for line in init(arguments.folder, BUNDLED_CASES):
        print(terminal_safe(line))
    return EXIT_OK


def _schema(arguments: argparse.Namespace) -> int:
    from conformance.commands.init import schema_path, schema_text

    print(schema_path(arguments.name) if arguments.path else schema_text(arguments.name), end="\n" if arguments.path
          else "")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
