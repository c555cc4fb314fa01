"""The ``conformance`` command line: it builds the parser from each command's module (``conformance.commands``) and
runs the one asked for (docs/cli.md). A command's module imports what the command uses only when it runs, so
``conformance --help`` reads the parsers alone."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from conformance.commands.options import EXIT_INPUT, EXIT_OK
from conformance.engine.sanitize import terminal_safe
from conformance.errors import InputError

COMMANDS: dict[str, tuple[str, str, str]] = {
    # name: (module in conformance.commands, its parser function, its entry point)
    "run": ("run", "add_parser", "run"),
    "inspect": ("inspect", "add_parser", "run"),
    "diff": ("diff", "add_parser", "run"),
    "gate": ("gate", "add_parser", "run"),
    "affected": ("affected", "add_parser", "run"),
    "comment": ("comment", "add_parser", "run"),
    "merge": ("merge", "add_parser", "run"),
    "verify": ("verify", "add_parser", "run"),
    "list": ("listing", "add_parser", "run"),
    "redact": ("redact", "add_parser", "run"),
    "validate": ("validate", "add_parser", "run"),
    "init": ("init", "add_parser", "run"),
    "serve": ("serve", "add_parser", "run"),
    "record": ("record", "add_parser", "run"),
    "promote": ("record", "add_promote_parser", "promote"),
    "probe": ("probe", "add_parser", "run"),
    "drift": ("drift", "add_parser", "run"),
    "export": ("export", "add_parser", "run"),
    "schema": ("schema", "add_parser", "run"),
}
"""Every command, in the order ``--help`` lists them."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage errors exit 2 with one line, as argparse does
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _module(name: str) -> Any:
    return importlib.import_module(f"conformance.commands.{COMMANDS[name][0]}")


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per module of ``conformance.commands``."""
    parser = _Parser(prog="conformance", description="Offline contract conformance for LLM provider adapters.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (_, add, _) in COMMANDS.items():
        getattr(_module(name), add)(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (0, 1, 2, 130 or 143)."""
    arguments = build_parser().parse_args(argv)  # --help and usage errors exit here, with the parsers alone loaded
    from conformance.report.files import Terminated, handle_sigterm_as_interrupt

    handle_sigterm_as_interrupt()
    handler: Callable[[argparse.Namespace], int] = getattr(_module(arguments.command), COMMANDS[arguments.command][2])
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


if __name__ == "__main__":
    raise SystemExit(main())
