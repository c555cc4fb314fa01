"""``conformance drift OLD NEW``: what a new set of recordings carries that the previous one never had — key paths,
stop values, item and event types, usage counters, and counters gone — with whether the adapter reads each, and the
turns whose classification moved (docs/record.md, "Drift")."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from conformance.commands.options import EXIT_OK


def add_parser(commands: Any) -> None:
    """``conformance drift``'s arguments."""
    parser = commands.add_parser("drift", help="what new recordings carry that the previous ones never had (new key "
                                               "paths, stop values, item and event types, counters)")
    parser.add_argument("old", type=Path, help="the previous cases folder (e.g. a checkout of the base branch)")
    parser.add_argument("new", type=Path, help="the new cases folder")
    parser.add_argument("--provider", action="append", metavar="ID", help="only this provider (repeatable)")
    parser.add_argument("--adapter", action="append", default=[], metavar="SPEC",
                        help="an adapter of your own the cases name (module:object or path.py:object)")


def run(arguments: argparse.Namespace) -> int:
    """Print the drift, provider by provider; exit 0 (drift is to review, not a failure), 2 on unreadable cases."""
    from conformance.engine.cases import load_cases
    from conformance.engine.drift import drift, moved_rows
    from conformance.engine.registry import select_adapters
    from conformance.engine.sanitize import terminal_safe

    adapters = select_adapters(arguments.provider, arguments.adapter)
    known = select_adapters(None, arguments.adapter)
    old = load_cases([arguments.old], known_providers=known)
    new = load_cases([arguments.new], known_providers=known)
    total = 0
    for provider, adapter in sorted(adapters.items()):
        found = drift(old, new, provider, adapter)
        moved = moved_rows(old, new, provider, adapter)
        total += len(found)
        for entry in found:
            print(terminal_safe(entry.line()))
        for line in moved:
            print(terminal_safe(f"moved: {line}"))
    print(f"{total} new thing(s) in {arguments.new} that {arguments.old} never had")
    return EXIT_OK
