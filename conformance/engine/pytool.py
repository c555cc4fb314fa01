"""Python tools: a cases folder names code, and code runs only where the repository's owner allows it.

A ``python`` tool in ``world.yaml`` names a callable (``module:function`` or ``path/to/file.py:function``). Loading
the cases never imports it (``validate``, ``list``, collecting the pytest items, ``serve`` and ``record`` stay free
of the folder's code); it is imported the first time the tool runs, and only when the owner opted in outside the
cases folder, with ``CONFORMANCE_PYTHON_TOOLS=allow`` in the environment (the CI workflow) or
``conformance_python_tools = allow`` in the pytest configuration. A file must lie inside the cases folder, links
resolved (docs/world.md, "Trust").
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from conformance.errors import InputError, Problem

ALLOW_ENV = "CONFORMANCE_PYTHON_TOOLS"
ALLOW_VALUE = "allow"
MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def allowed() -> bool:
    """Whether the owner allowed python tools to run here."""
    return os.environ.get(ALLOW_ENV, "").strip().lower() == ALLOW_VALUE


def python_tool_problem(spec: str, root: Path) -> str | None:
    """Why ``spec`` cannot name a python tool of the cases folder ``root``, or None; nothing is imported."""
    module, separator, attribute = spec.rpartition(":")
    if not separator or not NAME.fullmatch(attribute):
        return f"{spec!r} is not module:function or path/to/file.py:function"
    if module.endswith(".py"):
        path = Path(module)
        if path.is_absolute():
            return f"{module} is an absolute path; a python tool's file lies inside the cases folder"
        try:
            inside = (root / path).resolve().is_relative_to(root.resolve())
        except OSError:
            inside = False
        if not inside:
            return f"{module} is outside the cases folder (links resolved)"
        if not (root / path).is_file():
            return f"no file {module} in the cases folder"
        return None
    if not MODULE.fullmatch(module):
        return f"{module!r} is not a module name"
    return None


class PythonTool:
    """The callable a python tool names, imported on its first call where python tools are allowed."""

    def __init__(self, spec: str, root: Path, shown: str, line: int | None) -> None:
        """``shown`` and ``line``: the world file and the line that name it, for messages."""
        self.spec, self.root, self.shown, self.line = spec, root, shown, line
        self._function: Any = None

    def __call__(self, arguments: dict[str, Any], principal: Any) -> Any:
        """Import (once) and call the team's function."""
        if self._function is None:
            self._function = self._load()
        return self._function(arguments, principal)

    def _load(self) -> Any:
        from conformance.engine.registry import load_object  # noqa: PLC0415 - the registry imports every provider

        if not allowed():
            raise InputError([Problem(self.shown, self.line, f"a case calls the python tool {self.spec}, which runs "
                                      "code from the cases folder, and python tools are not allowed here",
                                      f"allow them where you trust the cases folder: {ALLOW_ENV}={ALLOW_VALUE} in the "
                                      f"environment, or conformance_python_tools = {ALLOW_VALUE} in the pytest "
                                      "configuration (docs/world.md, Trust)")])
        try:
            function = load_object(self.spec, self.root)
        except (ImportError, OSError, AttributeError) as error:
            raise InputError([Problem(self.shown, self.line, f"cannot load the tool's callable {self.spec}: {error}",
                                      "name module:function (importable here) or path/to/file.py:function "
                                      "(relative to the cases folder)")]) from None
        if not callable(function):
            raise InputError([Problem(self.shown, self.line, f"{self.spec} is not callable",
                                      "name a function taking (arguments, principal)")])
        return function
