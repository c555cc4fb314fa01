"""``conformance list``: the cases and what each proves."""

from __future__ import annotations

import argparse
from typing import Any

from conformance.commands.options import EXIT_OK, add_case_options, configured
from conformance.engine.sanitize import terminal_safe


def add_parser(commands: Any) -> None:
    """``conformance list``'s options."""
    listing = commands.add_parser("list", help="list the cases and what each proves")
    add_case_options(listing, size=False)
    listing.add_argument("--markdown", action="store_true", help="print the case table of docs/cases.md")
    listing.add_argument("--providers", action="store_true",
                         help="list the adapters and stacks (built-in and configured), each with what it is, "
                              "instead of the cases")


def run(arguments: argparse.Namespace) -> int:
    """Print one line per case (or the catalogue's table)."""
    from conformance.engine.cases import load_cases
    from conformance.engine.registry import select_adapters
    from conformance.report.catalogue import render_catalogue

    config = configured(arguments)
    if arguments.providers:
        for adapter in select_adapters(None, config.adapters).values():
            print(terminal_safe(f"{adapter.id:<24} {adapter.description}"))
        from conformance.stacks.stack import select_stacks

        for stack in select_stacks(["all", *config.stacks]):
            why = stack.skip_reason()
            print(terminal_safe(f"{stack.row_id:<36} {stack.description}" + (f" (cannot run: {why})" if why else "")))
        return EXIT_OK
    cases = load_cases(config.roots, known_providers=select_adapters(None, config.adapters))
    if arguments.markdown:
        print(terminal_safe(render_catalogue(cases)), end="")
    else:
        for case in cases:
            print(terminal_safe(f"{case.id:<36} {case.scenario:<22} {case.expect.outcome:<18} "
                                f"{', '.join(sorted(case.providers))}"))
    return EXIT_OK
