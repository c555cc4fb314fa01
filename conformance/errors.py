"""Errors in the suite's own input (case files, fixtures, options): each says where, what, and how to fix."""

from __future__ import annotations

from typing import NamedTuple


class Problem(NamedTuple):
    """One thing wrong with the input, located as precisely as the input allows (a named tuple: every command
    imports it, ``conformance --help`` too, and a dataclass would load ``inspect`` with it)."""

    file: str
    """The file, as the user named it (relative where possible)."""
    line: int | None
    """1-based line, when known."""
    message: str
    """What is wrong and what was expected."""
    fix: str = ""
    """How to fix it."""
    pointer: str = ""
    """The JSON pointer inside the document, when it applies."""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        at = f" (at {self.pointer})" if self.pointer else ""
        fix = f" Fix: {self.fix}" if self.fix else ""
        return f"{where}: {self.message}{at}.{fix}"


class InputError(Exception):
    """The suite's input is wrong; carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(problem) for problem in problems))
        self.problems = problems
