"""``conformance serve``, the command: load the cases, print where and how to point clients, serve, then say what
each session's client did (docs/serve.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.replay.server import ReplayServer


def add_parser(commands: Any) -> None:
    """The ``serve`` subcommand's arguments."""
    from conformance.commands.options import add_case_options

    serve = commands.add_parser("serve", help="replay the recorded turns to real clients over the vendor HTTP APIs "
                                              "(127.0.0.1 only)")
    add_case_options(serve, size=False)
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: any free port)")
    serve.add_argument("--max-seconds", type=float, default=600.0, help="stop after this long (default 600)")
    serve.add_argument("--max-requests", type=int, help="stop after answering this many requests")
    serve.add_argument("--report-dir", type=Path,
                       help="when it stops, write serve.json here: what each session's client sent and how it fared")


def run(arguments: argparse.Namespace) -> int:
    """Run the server until its bounds; exit 1 when a client asked for a turn that was not recorded."""
    # Imported when the command runs: `conformance --help` reads only the parsers.
    from conformance.commands.options import configured
    from conformance.engine.cases import load_cases
    from conformance.engine.registry import select_adapters
    from conformance.replay.server import client_environment, run_server, session_records
    from conformance.report.files import write_atomic

    config = configured(arguments)
    adapters = select_adapters(None, config.adapters)
    cases = load_cases(config.roots, known_providers=adapters)

    def ready(server: ReplayServer) -> None:
        bound = f"{arguments.max_seconds:g} s" + (f" or {arguments.max_requests} requests"
                                                  if arguments.max_requests else "")
        print(f"conformance serve: listening on {server.base} (stops after {bound}); {len(cases)} case(s)")
        print(f"a session is one case × provider × mode: {server.base}/s/<case>/<provider>/<body|stream>")
        print("point a client at one, e.g. (bash):")
        for name, value in client_environment(server.base).items():
            print(f"  export {name}={value}")
        sys.stdout.flush()

    replay = run_server(cases, arguments.port, arguments.max_seconds, arguments.max_requests, ready, adapters)
    records = session_records(replay, adapters)
    if arguments.report_dir is not None:
        arguments.report_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(arguments.report_dir / "serve.json",
                     json.dumps({"sessions": records}, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    unmatched = sum(len(record["unmatched"]) for record in records)
    failed = sum(1 for record in records for request in record["requests"] if request["problems"])
    if replay.stopped_by is not None:
        print(f"conformance serve: stopped by {replay.stopped_by}")
    print(f"conformance serve: {len(records)} session(s), {sum(len(r['turns_served']) for r in records)} turn(s) "
          f"served, {unmatched} request(s) no turn answered, {failed} request(s) failing the request checks")
    return 1 if unmatched or failed else 0
