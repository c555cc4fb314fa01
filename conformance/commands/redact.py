"""``conformance redact``: secrets and e-mail addresses replaced in fixture files, in place."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from conformance.commands.options import EXIT_OK
from conformance.engine.sanitize import terminal_safe


def add_parser(commands: Any) -> None:
    """``conformance redact``'s options."""
    redact_command = commands.add_parser("redact", help="replace secrets and e-mail addresses in fixture files")
    redact_command.add_argument("files", type=Path, nargs="+", help="fixture files to rewrite in place")


def run(arguments: argparse.Namespace) -> int:
    """Rewrite each file with its secrets replaced; name each file changed."""
    from conformance.replay.hygiene import redact_file

    for path in arguments.files:
        if redact_file(path):
            print(terminal_safe(f"redacted {path}"))
    return EXIT_OK
