"""Which case × provider × mode items a command runs (``--case``, ``-k``, ``--mode``), and the coverage matrix that
says which case × provider pairs have no recording."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from conformance.engine.cases import Case, base_provider
from conformance.engine.plan import Planned
from conformance.errors import InputError, Problem


def select_items(cases: Sequence[Case], plan: Callable[[Case], Iterable[Planned]],
                 case_patterns: Collection[str] = (), keyword: str | None = None,
                 modes: Collection[str] = ()) -> list[Planned]:
    """Every item ``plan`` gives a case (``conformance.session.Run.plan``) that the filters keep, sorted as the report
    sorts rows. ``case_patterns`` are shell patterns on the case id (``http_*``); ``keyword`` is a pytest expression
    of substrings of the item id (``openai and not stream``); ``modes`` keeps only those modes (a not-recorded item,
    which has none, is kept whatever the modes)."""
    matches = _keyword_matcher(keyword) if keyword else None
    items = []
    for case in cases:
        if case_patterns and not any(fnmatch.fnmatchcase(case.id, pattern) for pattern in case_patterns):
            continue
        for item in plan(case):
            if (not modes or item.mode is None or item.mode in modes) and (matches is None or matches(item.name)):
                items.append(item)
    return sorted(items, key=lambda item: (item.case.id, item.lane, item.mode or ""))


def columns(providers: Sequence[str], items: Sequence[Planned]) -> list[str]:
    """The report's provider columns: each provider, then its model variants that ran, beside it."""
    variants = sorted({item.lane for item in items if item.stack is None and item.lane not in providers})
    out: list[str] = []
    for provider in providers:
        out.append(provider)
        out += [variant for variant in variants if base_provider(variant) == provider]
    return out


def coverage(cases: Sequence[Case], providers: Sequence[str], items: Sequence[Planned]) -> list[str]:
    """The case × provider matrix as text lines: the modes that ran, ``not recorded``, or ``-`` (filtered out)."""
    ran: dict[tuple[str, str], list[str]] = {}
    for item in items:
        if item.stack is None and item.mode is not None:
            ran.setdefault((item.case.id, item.lane), []).append(item.mode)
    shown = [case for case in cases if any((case.id, provider) in ran for provider in providers)]
    if not shown:
        return []
    width = max(len("coverage"), *(len(case.id) for case in shown)) + 2
    cells = {(case.id, provider): "+".join(ran[case.id, provider]) if (case.id, provider) in ran
             else "not recorded" if provider not in case.providers else "-"
             for case in shown for provider in providers}
    widths = {provider: max(len(provider), *(len(cells[case.id, provider]) for case in shown)) + 2
              for provider in providers}
    lines = ["coverage".ljust(width) + "".join(provider.ljust(widths[provider]) for provider in providers)]
    lines += [case.id.ljust(width) + "".join(cells[case.id, provider].ljust(widths[provider])
                                             for provider in providers) for case in shown]
    return [line.rstrip() for line in lines]


def missing_providers(planned: Sequence[Planned], ran: Collection[str]) -> list[Problem]:
    """A problem per not-recorded item (a required provider the case has no fixtures for) of a case that ran."""
    return [Problem(item.case.path, None, f"case {item.case.id} has no fixtures for {item.lane}",
                    f"record {item.lane}/turn1.json beside the case file and list '{item.lane}: {{}}' under "
                    "providers:, or run without --require-providers")
            for item in planned if item.mode is None and item.case.id in ran]


def _keyword_matcher(expression: str) -> Callable[[str], bool]:
    """``-k``, as pytest reads it (its own expression parser, ``_pytest.mark.expression``): words are substrings of
    the item id, case-insensitive; ``and``, ``or``, ``not`` and parentheses combine them."""
    from _pytest.mark import expression as pytest_expression  # noqa: PLC0415 - only for a -k filter

    errors = tuple(error for error in (SyntaxError, getattr(pytest_expression, "ParseError", None)) if error)
    try:
        compiled = pytest_expression.Expression.compile(expression)
    except errors as error:
        raise InputError([Problem("-k", None, f"{getattr(error, 'msg', error)} in {expression!r}",
                                  "write words joined by and/or/not, e.g. -k 'openai and not stream'")]) from None

    def matches(name: str) -> bool:
        def word(text: str, /, **arguments: Any) -> bool:
            if arguments:
                raise InputError([Problem("-k", None, f"{text}(...) takes no arguments in {expression!r}",
                                          "write words joined by and/or/not, e.g. -k 'openai and not stream'")])
            return text.casefold() in name.casefold()

        return bool(compiled.evaluate(word))

    return matches
