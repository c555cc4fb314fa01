"""Loading cases and building the report run with the garbage collector paused, and give it back as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import conformance.session as session
from conformance.errors import InputError
from conformance.session import Run
from tests.helpers import CASES


@pytest.fixture
def collecting() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _collector_seen_by(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[bool]:
    """Whether the collector was on at each call of ``module.name`` from now on (the function still runs)."""
    seen: list[bool] = []
    original = getattr(module, name)

    def watched(*arguments: Any, **options: Any) -> Any:
        seen.append(gc.isenabled())
        return original(*arguments, **options)

    monkeypatch.setattr(module, name, watched)
    return seen


def test_cases_load_with_the_collector_paused_and_get_it_back(collecting: None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _collector_seen_by(monkeypatch, session, "load_cases")
    cases = Run.configure().load([CASES])
    assert cases and seen == [False] and gc.isenabled()
    gc.disable()  # a host that had it off keeps it off
    Run.configure().load([CASES])
    assert not gc.isenabled()


def test_a_load_that_fails_gives_the_collector_back(collecting: None, tmp_path: Path) -> None:
    (tmp_path / "world.yaml").write_text("not: [a world\n")
    with pytest.raises(InputError):
        Run.configure().load([tmp_path])
    assert gc.isenabled()


def test_the_report_is_built_with_the_collector_paused(collecting: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.report.build as build

    seen = _collector_seen_by(monkeypatch, build, "build_report_in_groups")
    run = Run.configure()
    run.report({}, {})
    assert seen == [False] and gc.isenabled()
