"""What the commands share: the exit codes, the case options (one meaning in every command), and the configuration
they read (``conformance.engine.settings``) with their flags over it."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from conformance import BUNDLED_CASES as BUNDLED_CASES  # where the commands have always read it
from conformance.engine.files import MAX_FILE_BYTES

if TYPE_CHECKING:  # the settings module loads when a command reads the configuration, not for --help
    from conformance.engine.settings import Settings

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2
"""The bundled cases, installed as package data (``conformance/cases``)."""
CASES_HELP = ("cases folder (repeatable); replaces the configured cases (conformance_cases), or the bundled ones, "
              "unless --with-bundled")


def add_case_options(parser: Any, size: bool = True) -> None:
    """``--cases``, ``--with-bundled``, ``--adapter``, ``--no-config`` (and ``--max-file-bytes``): the same flags with
    the same meaning in every command that loads cases."""
    parser.add_argument("--cases", action="append", type=Path, help=CASES_HELP)
    parser.add_argument("--with-bundled", action="store_true", help="the bundled cases too, beside the others")
    parser.add_argument("--adapter", action="append", default=[],
                        help="your own adapter as module:object or path/to/file.py:object (repeatable; adds to "
                             "conformance_adapters)")
    parser.add_argument("--no-config", action="store_true",
                        help="read no configuration file (the conformance_* settings of pytest's ini or pyproject)")
    if size:
        parser.add_argument("--max-file-bytes", type=int, default=MAX_FILE_BYTES,
                            help="size limit per case/fixture file")


class Configured(NamedTuple):
    """A command's configuration: the repository's settings with the command's flags over them."""

    settings: Settings
    roots: list[Path]
    adapters: list[str]
    stacks: list[str]
    require_providers: list[str]
    report_dir: Path


def configured(arguments: argparse.Namespace) -> Configured:
    """The settings of the repository the command runs in (none with ``--no-config``), the flags added to them:
    ``--cases`` replaces the configured cases, ``--adapter``, ``--stack`` and ``--require-providers`` add to theirs,
    ``--report-dir`` replaces the report folder. The configuration's ``pythonpath`` goes first on ``sys.path`` and its
    ``conformance_python_tools = allow`` lets python tools run, as under pytest."""
    from conformance.engine.settings import Settings, read_settings

    settings = Settings() if getattr(arguments, "no_config", False) else read_settings(Path.cwd())
    for folder in reversed(settings.pythonpath):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    if settings.python_tools:
        from conformance.engine.pytool import ALLOW_ENV, ALLOW_VALUE

        os.environ.setdefault(ALLOW_ENV, ALLOW_VALUE)
    given = list(getattr(arguments, "cases", None) or [])
    base = given or list(settings.cases)
    with_bundled = getattr(arguments, "with_bundled", False) or (settings.bundled is not None and not given)
    roots = [*base, BUNDLED_CASES] if not base or with_bundled else base
    report = getattr(arguments, "report_dir", None) or settings.report or Path("reports")
    stack = getattr(arguments, "stack", None)
    stacks = [stack] if isinstance(stack, str) else list(stack or [])
    return Configured(
        settings=settings, roots=list(dict.fromkeys(roots)),
        adapters=list(dict.fromkeys([*settings.adapters, *(getattr(arguments, "adapter", None) or [])])),
        stacks=list(dict.fromkeys([*settings.stacks, *stacks])),
        require_providers=[*settings.require_providers, *(getattr(arguments, "require_providers", None) or [])],
        report_dir=report)
