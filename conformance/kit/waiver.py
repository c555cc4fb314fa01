"""Waivers: what does not apply to a team's adapter or stack, each with its reason (docs/stacks.md, "Waivers").

An application may offer no structured output, never force a tool, or let an SDK's rate-limit exception reach its
caller on purpose. Its rows for those cases are not failures of its code, and not passes either: a waiver names the
cases (shell patterns on the case id), optionally the modes, the failures it covers (substrings of the failure
messages; none: all of them) or the exception types that are the expected outcome (``raises``), and why. A row all of
whose failures are waived is reported as **waived**, never as passed; a failure no waiver covers still fails it, and
``conformance diff`` shows a new or changed waiver on a failing row as a change to review, and a passing row that
becomes waived as a regression.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Waiver:
    """One thing that does not apply, and why."""

    why: str
    """The reason, shown in the report beside every row it waives (required: a waiver without one is refused)."""
    cases: tuple[str, ...] = ("*",)
    """Shell patterns on case ids (``structured_output_*``); the default, every case, needs ``failures`` or
    ``raises`` to say what is waived (a waiver of everything is refused)."""
    modes: tuple[str, ...] = ()
    """``body``, ``stream``; none: both."""
    failures: tuple[str, ...] = ()
    """Substrings of the failure messages waived (``"output schema is not in the vendor's structured-output
    slot"``); none: every failure of the rows it matches. An exception the code under test raised is waived only by
    ``raises``: a waiver of failures never hides a crash."""
    raises: tuple[str, ...] = ()
    """Exception class names (``RateLimitError``, or ``openai.RateLimitError``) that are this code's expected
    outcome: such an exception waives the row instead of failing it, whatever the case expected."""

    def __post_init__(self) -> None:
        if not isinstance(self.why, str) or not self.why.strip():
            raise ValueError("a waiver needs its reason: Waiver(why='the app offers no structured output', ...)")
        for name in ("cases", "modes", "failures", "raises"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(item, str) and item for item in value):
                raise ValueError(f"Waiver.{name} is a tuple of non-empty strings, e.g. {name}=('...',)")
        if not self.failures and not self.raises and all(set(pattern) <= {"*"} for pattern in self.cases):
            raise ValueError("a waiver that names no case, failure or exception waives every row: say what it "
                             "covers, e.g. Waiver(why=..., cases=('structured_output_*',))")
        unknown = [mode for mode in self.modes if mode not in ("body", "stream")]
        if unknown:
            raise ValueError(f"Waiver.modes: {unknown[0]!r} is neither body nor stream")

    def covers(self, case_id: str, mode: str) -> bool:
        """Whether the waiver speaks of this case and mode."""
        return (not self.modes or mode in self.modes) and any(
            fnmatch.fnmatchcase(case_id, pattern) for pattern in self.cases)

    def covers_failure(self, failure: str) -> bool:
        """Whether a failure message is one this waiver waives."""
        return not self.failures or any(part in failure for part in self.failures)

    def covers_error(self, error: BaseException) -> bool:
        """Whether an exception is one this waiver names (by class name, with or without its module, along its
        class hierarchy)."""
        names = {name for cls in type(error).__mro__ for name in (cls.__name__, f"{cls.__module__}.{cls.__name__}")}
        return any(name in names for name in self.raises)


def apply_waivers(waivers: Sequence[Waiver], case_id: str, mode: str, failures: Sequence[str],
                  error: BaseException | None = None) -> tuple[list[str], dict[str, Any] | None]:
    """The failures no waiver covers, and the row's waiver record (``{"why": [...], "failures": [...]}``) when a
    waiver covered something; an ``error`` a waiver names waives the whole row."""
    applicable = [waiver for waiver in waivers if waiver.covers(case_id, mode)]
    if not applicable:
        return list(failures), None
    if error is not None:
        named = [waiver for waiver in applicable if waiver.raises and waiver.covers_error(error)]
        if named:
            return [], {"why": sorted({waiver.why for waiver in named}), "failures": list(failures)}
        return list(failures), None
    kept: list[str] = []
    waived: list[str] = []
    reasons: set[str] = set()
    for failure in failures:
        covering = [waiver for waiver in applicable if not waiver.raises and waiver.covers_failure(failure)]
        if covering:
            waived.append(failure)
            reasons.update(waiver.why for waiver in covering)
        else:
            kept.append(failure)
    if not waived:
        return kept, None
    return kept, {"why": sorted(reasons), "failures": waived}
