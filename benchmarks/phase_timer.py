"""A pytest plugin that times a session's phases, for ``benchmarks/run.py --phases`` (not part of the suite).

Loaded with ``-p benchmarks.phase_timer``; writes the wall time of each phase, in seconds, as JSON to the file named
by ``PHASE_TIMES``: collection (the files read and the items made), the items (every item's setup, call and
teardown, with every plugin's hooks around them) and the session's end (every plugin's ``pytest_sessionfinish``:
syrupy's snapshot report, the suite's reports). What happens before ``pytest_configure`` (the interpreter, imports,
plugin loading) is the caller's wall time less these.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from pathlib import Path

import pytest

_MARKS: dict[str, float] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _MARKS["configured"] = time.perf_counter()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    _MARKS["collecting"] = time.perf_counter()
    try:
        return (yield)
    finally:
        _MARKS["collected"] = time.perf_counter()


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    _MARKS["running"] = time.perf_counter()
    try:
        return (yield)
    finally:
        _MARKS["ran"] = time.perf_counter()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    _MARKS["finishing"] = time.perf_counter()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    end = time.perf_counter()
    target = os.environ.get("PHASE_TIMES")
    if not target:
        return
    phases = {
        "configure": _MARKS["collecting"] - _MARKS["configured"],
        "collection": _MARKS["collected"] - _MARKS["collecting"],
        "items": _MARKS["ran"] - _MARKS["running"],
        "session end": end - _MARKS["finishing"],
        "inside pytest": end - _MARKS["configured"],
    }
    Path(target).write_text(json.dumps(phases), encoding="utf-8")
