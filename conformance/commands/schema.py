"""``conformance schema``: the case or world JSON Schema, or where it is installed."""

from __future__ import annotations

import argparse
from typing import Any

from conformance.commands.options import EXIT_OK


def add_parser(commands: Any) -> None:
    """``conformance schema``'s options."""
    schema = commands.add_parser("schema", help="print the case or world JSON Schema (or where it is installed)")
    schema.add_argument("name", choices=("case", "world"), help="which schema")
    schema.add_argument("--path", action="store_true", help="print the installed file's path instead")


def run(arguments: argparse.Namespace) -> int:
    """Print the schema or its path."""
    from conformance.commands.init import schema_path, schema_text

    print(schema_path(arguments.name) if arguments.path else schema_text(arguments.name), end="\n" if arguments.path
          else "")
    return EXIT_OK
