"""``conformance run``: every case against every selected adapter (and stack), the reports written."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from conformance.commands.options import EXIT_FAILED, EXIT_OK, add_case_options, configured
from conformance.engine.sanitize import terminal_safe
from conformance.errors import InputError, Problem


def add_parser(commands: Any) -> None:
    """``conformance run``'s options, in groups."""
    run = commands.add_parser("run", help="run every case against every selected adapter and write the reports")
    lanes = run.add_argument_group("cases and lanes")
    add_case_options(lanes)
    lanes.add_argument("--stack", action="append", default=[], metavar="STACK",
                       help="also run a real client's lane: sdks, gateways, all, a reference stack "
                            "(openai-chat@openai-sdk) or module:object (repeatable; adds to conformance_stacks)")
    lanes.add_argument("--in-process", action="store_true",
                       help="stacks answer through their clients' in-process seams instead of the loopback server")
    selection = run.add_argument_group("selection")
    selection.add_argument("--provider", action="append", help="provider id to run (repeatable; default: all)")
    selection.add_argument("--case", action="append", default=[], metavar="PATTERN",
                           help="run only the cases whose id matches this shell pattern (repeatable), e.g. 'http_*'")
    selection.add_argument("-k", dest="keyword", metavar="EXPRESSION",
                           help="run only the items whose id (case[provider-mode]) matches, as pytest -k: "
                                "'openai and not stream'")
    selection.add_argument("--mode", action="append", choices=("body", "stream"), default=[],
                           help="run only this mode (repeatable; default: every mode the fixtures allow)")
    selection.add_argument("--require-providers", action="append", nargs="?", const="all", default=[], metavar="ID",
                           help="fail (exit 1) when a case that ran has no fixtures for provider ID (repeatable; "
                                "alone or 'all': every selected provider; adds to conformance_require_providers)")
    lanes.add_argument("--retries", action="store_true",
                       help="also run the retry lane: every selected stack's client at its library's default retry "
                            "policy against scripted 429s, overloads, quota and auth errors and a dropped stream "
                            "(docs/retries.md)")
    lanes.add_argument("--mutants", action="store_true",
                       help="also run every lane on the forward-compatibility mutants of the selected cases (an "
                            "unseen stop value, item, event, field, counter: docs/forward.md) and report what held")
    output = run.add_argument_group("output")
    output.add_argument("--report-dir", type=Path,
                        help="where to write the reports (default: the conformance_report setting, else reports)")
    output.add_argument("--prices", type=Path, metavar="FILE",
                        help="the price file of the report's cost figures (default: conformance_prices, else the "
                             "bundled one; docs/cost.md)")
    output.add_argument("--cost-function", metavar="MODULE:FUNCTION",
                        help="your cost function, (api, model, usage, raw_usage) -> USD: its figures are checked "
                             "against the prices (default: conformance_cost_function)")
    output.add_argument("--verbose", "-v", action="store_true",
                        help="print the whole report.md instead of the summary (totals, failures, differing cells)")
    output.add_argument("--jobs", "-j", type=_jobs, default=1, metavar="N",
                        help="run the lanes over N processes (auto: one per core); the reports are the same byte for "
                             "byte as with 1, the default (docs/cli.md)")
    sharding = run.add_argument_group("sharding")
    sharding.add_argument("--shard", metavar="I/N",
                          help="run only shard I of N: whole cases, split evenly by estimated cost; merge the N "
                               "report.json files with `conformance merge` (docs/ci.md, \"Shards\")")


def _jobs(text: str) -> int:
    """``--jobs``: a positive count, or ``auto`` for one process per core."""
    if text == "auto":
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of processes or auto, got {text!r}")
    return int(text)


def run(arguments: argparse.Namespace) -> int:
    """Run the planned items, write the reports, print the summary; exit 1 when a row failed or a required
    provider is missing. Ctrl-C while the items run leaves the previous reports as they were (``Run``)."""
    from conformance.engine.selection import columns, coverage, missing_providers, select_items
    from conformance.engine.shard import parse_shard
    from conformance.report.build import render_markdown, render_summary
    from conformance.report.files import append_step_summary
    from conformance.session import Run

    config = configured(arguments)
    session = Run.configure(config.adapters, config.stacks, config.require_providers, arguments.provider,
                            arguments.in_process)
    session.prices = arguments.prices or config.settings.prices
    session.cost_function = arguments.cost_function or config.settings.cost_function
    cases = session.load(config.roots, max_file_bytes=arguments.max_file_bytes)
    planned = select_items(cases, session.plan, arguments.case, arguments.keyword, arguments.mode)
    items = [item for item in planned if item.mode is not None]
    if items and arguments.shard is not None:
        mine = session.split(parse_shard(arguments.shard), items)
        items = [item for item in items if item.case.id in mine]
    elif not items:
        filtered = arguments.case or arguments.keyword or arguments.mode
        raise InputError([Problem("--case/-k/--mode" if filtered else "--provider", None,
                                  "no case item matches the filters: nothing ran" if filtered else
                                  f"no case has fixtures for {', '.join(sorted(session.adapters))}: nothing ran",
                                  "loosen --case, -k or --mode (`conformance list` shows the case ids)" if filtered
                                  else "record fixtures under providers.<id> in the cases, or pick a provider they "
                                       "have")])
    skipped = {stack.row_id: why for stack in session.stacks if (why := session.skip_reason(stack))}
    for lane, why in skipped.items():
        print(f"skipped stack {lane}: {why}", file=sys.stderr)
    session.execute_all([item for item in items if item.stack is None or item.lane not in skipped], arguments.jobs)
    selection = {name: value for name, value in (("case", arguments.case), ("keyword", arguments.keyword),
                                                 ("mode", arguments.mode), ("provider", arguments.provider)) if value}
    report = session.report(session.fixture_files(cases), selection, provenance=session.fixture_provenance(cases))
    if arguments.mutants:  # the same cases and lanes, each recorded turn changed as a next release would
        chosen = {item.case.id for item in items}
        report["forward"] = session.forward([case for case in cases if case.id in chosen],
                                            {item.lane for item in items if item.lane not in skipped})
        for lane in report["forward"]["no_shape"]:
            print(terminal_safe(f"no mutants for {lane}: its adapter's wire has no Shape (docs/forward.md)"),
                  file=sys.stderr)
    if arguments.retries:  # the stacks that ran, each with its library's own retries on
        from conformance.commands.options import BUNDLED_CASES
        from conformance.engine.cases import load_cases
        from conformance.stacks.retries import run_lanes

        ran = {item.lane for item in items if item.stack is not None and item.lane not in skipped}
        report["retries"] = run_lanes([stack for stack in session.stacks if stack.row_id in ran],
                                      session.adapters, load_cases([BUNDLED_CASES]))
        if not report["retries"]["lanes"]:
            print("no retry lane ran: it runs stacks (add --stack sdks or --stack gateways; docs/retries.md)",
                  file=sys.stderr)
    written = session.write(report, config.report_dir)
    markdown = render_markdown(report)
    print(terminal_safe(markdown if arguments.verbose else render_summary(report)))
    append_step_summary(markdown)
    print(terminal_safe("\n".join(coverage(cases, columns(sorted(session.adapters), items), items))))
    missing = missing_providers(planned, {item.case.id for item in items})
    for problem in missing:
        print(terminal_safe(f"error: {problem}"), file=sys.stderr)
    print(terminal_safe("wrote " + ", ".join(str(path) for path in written)))
    return EXIT_OK if report["summary"]["failed"] == 0 and not missing else EXIT_FAILED
