"""Shared test helpers: reading the adapter fixtures under tests/fixtures/, running a command in process."""

from __future__ import annotations

import contextlib
import copy as copying
import dataclasses
import io
import json
import os
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
# The tests' own task set: a frozen copy of the bundled cases, so that re-recording a bundled fixture fails only its
# case item, its snapshots and its parity test, not every test that needs some cases to run (docs/decisions.md).
CASES = Path(__file__).parent / "frozen_cases"
# `conformance run`'s option for that task set.
OWN = ("--cases", str(CASES))
# The bundled cases themselves, for the few tests that are about them.
BUNDLED = Path(__file__).parent.parent / "cases"


def fixture(provider: str, name: str) -> Any:
    return json.loads((FIXTURES / provider / name).read_text(encoding="utf-8"))


def fixture_names(provider: str, prefix: str) -> list[str]:
    return sorted(path.name for path in (FIXTURES / provider).glob(f"{prefix}*.json"))


@dataclass(frozen=True)
class CliResult:
    """What a command printed and returned, shaped like ``subprocess.CompletedProcess`` for the assertions."""

    returncode: int
    stdout: str
    stderr: str


def cli(*arguments: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> CliResult:
    """Run ``conformance <arguments>`` in this process (``main(argv)`` with captured streams).

    ``env`` entries are set for the call only, and ``GITHUB_STEP_SUMMARY`` is unset unless given, so a test
    run inside GitHub Actions does not write to the job's summary. The SIGTERM handler the command installs is
    put back afterwards. Tests of signals, xdist, imports from the working directory and the installed script
    still start a process."""
    stdout, stderr = io.StringIO(), io.StringIO()
    previous_sigterm = signal.getsignal(signal.SIGTERM)
    previous_cwd = Path.cwd()
    saved = {name: os.environ.get(name) for name in {"GITHUB_STEP_SUMMARY", *(env or {})}}
    os.environ.pop("GITHUB_STEP_SUMMARY", None)
    os.environ.update(env or {})
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = main(list(arguments))
            except SystemExit as exit_:  # argparse's usage errors
                code = exit_.code if isinstance(exit_.code, int) else 2
    finally:
        os.chdir(previous_cwd)
        signal.signal(signal.SIGTERM, previous_sigterm)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return CliResult(code, stdout.getvalue(), stderr.getvalue())


def some_cases(target: Path, *case_ids: str) -> Path:
    """A cases folder at ``target`` holding the world and the named frozen cases (whole folders)."""
    target.mkdir(parents=True)
    shutil.copy(CASES / "world.yaml", target / "world.yaml")
    for case_id in case_ids:
        shutil.copytree(CASES / case_id, target / case_id)
    return target


def copied_cases(target: Path, copies: int, source: Path = CASES) -> Path:
    """A generated task set: ``copies`` copies of every case in ``source``, each under a new id
    (``<id>_<copy>``), with the world beside them; returns the new cases folder. Snapshots are not copied."""
    target.mkdir(parents=True)
    shutil.copy(source / "world.yaml", target / "world.yaml")
    for copy in range(copies):
        for case_file in sorted(source.glob("*/case.yaml")):
            name = f"{case_file.parent.name}_{copy:03d}"
            shutil.copytree(case_file.parent, target / name)
            text = (target / name / "case.yaml").read_text(encoding="utf-8")
            (target / name / "case.yaml").write_text(
                text.replace(f"id: {case_file.parent.name}\n", f"id: {name}\n", 1), encoding="utf-8")
    return target


def changing_requests(adapter: Any, change: Callable[[dict[str, Any]], None] | None) -> Any:
    """``adapter`` whose every built request is changed by ``change`` (on a copy) before it is sent: a deliberately
    broken request builder."""
    if change is None:
        return adapter
    original = adapter.build_request

    def build(task: Any, transcript: Any) -> dict[str, Any]:
        request = copying.deepcopy(original(task, transcript))
        change(request)
        return request
    return dataclasses.replace(adapter, build_request=build)
