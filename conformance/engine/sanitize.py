"""Wire values made safe for a report: what a fixture can hold that JSON output, UTF-8 or a terminal cannot.

Applied once, where wire values enter the report (``runner.run_case``) and what ``inspect`` prints: lone
surrogates (a ``"\\ud800"`` escape in a fixture) become U+FFFD, non-finite numbers (``NaN``, ``Infinity``,
which Python's JSON reader accepts) become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, and
nesting deeper than ``MAX_DEPTH`` is cut with a marker. The output is then written with ``allow_nan=False``.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_DEPTH = 64
DEEPER = "<nested deeper than 64 levels>"

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls except tab and newline, and DEL: what a terminal would act on (ESC, OSC, CR, BEL, ...).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def report_safe(value: Any, depth: int = 0) -> Any:
    """``value`` (builtins from parsed JSON) with every string valid UTF-8, every number finite JSON."""
    kind = type(value)  # exact types first: a row holds thousands of values, and most are these
    if kind is str:
        return value if value.isascii() else _SURROGATE.sub("\ufffd", value)
    if kind is int or kind is bool or value is None:
        return value
    if kind is dict and depth < MAX_DEPTH:
        return {key if type(key) is str and key.isascii() else safe_text(str(key)): report_safe(item, depth + 1)
                for key, item in value.items()}
    if kind is list and depth < MAX_DEPTH:
        return [report_safe(item, depth + 1) for item in value]
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if depth >= MAX_DEPTH:
        return DEEPER
    if isinstance(value, dict):
        return {safe_text(str(key)): report_safe(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [report_safe(item, depth + 1) for item in value]
    return safe_text(repr(value))


def safe_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD, so it encodes as UTF-8."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def terminal_safe(text: str) -> str:
    """``text`` for a terminal: C0/C1 control characters (ESC, OSC, CR, BEL, ...) shown as ``\\xNN`` escapes;
    tab and newline kept. Also safe as UTF-8."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", safe_text(text))
