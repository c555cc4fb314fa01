"""All pytest glue: every ``case.yaml`` becomes one test item per provider and mode.

Item ids read ``cases/normal/case.yaml::normal[openai-chat-body]``, so ``-k normal`` or
``-k openai-chat`` select as a pytest user expects.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.cases import CASE_FILE, WORLD_FILE, Case, load_cases
from conformance.errors import InputError
from conformance.registry import select_adapters
from conformance.report import build_report, write_reports
from conformance.runner import modes_for, run_case
from conformance.sanitize import terminal_safe

_CASES_KEY = pytest.StashKey[dict[Path, dict[Path, list[Case]]]]()
# Rows are kept as JSON text until the end: thousands of nested dicts alive for the whole session would make
# every garbage-collector pass slower as the run goes on; strings are not tracked by it.
_ROWS_KEY = pytest.StashKey[list[str]]()
_WORKER_ROWS = "conformance_rows"
_IDS_KEY = pytest.StashKey[dict[str, str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options, under ``--conformance-``."""
    group = parser.getgroup("conformance")
    group.addoption("--conformance-adapter", action="append", default=[],
                    help="run the cases against your own adapter too (module:object)")
    group.addoption("--conformance-report", default="reports", metavar="DIR",
                    help="where to write report.json/.md/.html for the case items that ran (default: reports; "
                         "an empty value writes nothing)")
    group.addoption("--conformance-report-partial", action="store_true",
                    help="write the reports even when the session stopped early (Ctrl-C, -x, --maxfail)")


def pytest_configure(config: pytest.Config) -> None:
    """Session-wide storage for loaded cases and report rows."""
    config.stash[_CASES_KEY] = {}
    config.stash[_ROWS_KEY] = []


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Fixture folders beside a case file hold recordings, not tests: do not walk them file by file."""
    if collection_path.is_dir() and (collection_path.parent / CASE_FILE).is_file():
        return True
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """The loaded cases and the items live until the end: move them out of the collector's way, so its
    passes during the run stay as cheap with 5,000 items as with 50."""
    if session.config.stash.get(_CASES_KEY, None):
        gc.freeze()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Each ``case.yaml`` is a collector of one item per provider and mode."""
    if file_path.name == CASE_FILE:
        return CaseFile.from_parent(parent, path=file_path)
    return None


def _cases_root(path: Path) -> Path:
    for folder in path.parents:
        if (folder / WORLD_FILE).is_file():
            return folder
    return path.parent


_ADAPTERS_KEY = pytest.StashKey[dict[str, Any]]()


def _adapters(config: pytest.Config) -> dict[str, Any]:
    if _ADAPTERS_KEY not in config.stash:
        config.stash[_ADAPTERS_KEY] = select_adapters(None, config.getoption("conformance_adapter"))
    return config.stash[_ADAPTERS_KEY]


class CaseFile(pytest.File):
    """A ``case.yaml`` as a pytest collector."""
    def collect(self) -> Iterator[pytest.Item]:
        """One item per provider and mode of each case in this file."""
        root = _cases_root(self.path)
        cache = self.config.stash[_CASES_KEY]
        if root not in cache:
            # One load per cases folder, indexed by file, so each case file's collection is a lookup. Ids seen
            # in folders loaded before are passed on: two folders holding one case id would give two report rows
            # under one key, and the upgrade gate could keep the passing one.
            by_file: dict[Path, list[Case]] = {}
            seen = self.config.stash.setdefault(_IDS_KEY, {})
            for loaded in load_cases([root], known_providers=_adapters(self.config), seen=seen):
                by_file.setdefault(Path(loaded.path).resolve(), []).append(loaded)
            cache[root] = by_file
        adapters = _adapters(self.config)
        for case in cache[root].get(self.path.resolve(), []):
            for provider in sorted(case.providers):
                if provider not in adapters:
                    continue
                for mode in modes_for(case, provider, adapters[provider]):
                    yield CaseItem.from_parent(self, name=f"{case.id}[{provider}-{mode}]", case=case,
                                               provider=provider, mode=mode)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A failure as the case's own message, not a traceback."""
        if isinstance(excinfo.value, InputError):
            return terminal_safe(str(excinfo.value))
        return super().repr_failure(excinfo)


class CaseFailed(Exception):
    """A case × provider × mode did not meet its expectation."""


class CaseItem(pytest.Item):
    """One case × provider × mode as a pytest item."""
    def __init__(self, *, case: Case, provider: str, mode: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case, self.provider, self.mode = case, provider, mode

    def runtest(self) -> None:
        """Run one case × provider × mode and keep its report row."""
        adapters = _adapters(self.config)
        row = run_case(self.case, self.provider, adapters[self.provider], self.mode)
        self.config.stash[_ROWS_KEY].append(json.dumps(row, separators=(",", ":")))
        if not row["passed"]:
            raise CaseFailed("\n".join(row["failures"]))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A failure as the case's own message, not a traceback."""
        if isinstance(excinfo.value, (CaseFailed, InputError)):
            return terminal_safe(f"{self.case.path} [{self.provider}, {self.mode}]\n{excinfo.value}")
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the item lives, for pytest's reports."""
        return self.path, 0, f"case {self.case.id} [{self.provider}, {self.mode}]"


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: take the rows a worker ran (builtins only, as JSON text)."""
    rows = getattr(node, "workeroutput", {}).get(_WORKER_ROWS)
    if rows:
        node.config.stash[_ROWS_KEY].extend(json.loads(rows))  # a list of row texts


def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    """Workers hand their rows over; the controller writes the reports, unless the session stopped early."""
    config = session.config
    rows = config.stash.get(_ROWS_KEY, [])
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        # An xdist worker hands its rows to the controller; only the controller writes files.
        workeroutput[_WORKER_ROWS] = json.dumps(rows)
        return
    directory = config.getoption("conformance_report")
    if not directory or not rows:
        return
    stopped = exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldfail or session.shouldstop
    if stopped and not config.getoption("conformance_report_partial"):
        # A session cut short (Ctrl-C, -x, --maxfail) ran only some rows: a report of them would replace the
        # whole previous one and read as the full matrix.
        _say(config, f"conformance: the session stopped early ({len(rows)} case items ran); the reports in "
                     f"{directory} were left as they were (--conformance-report-partial writes them anyway)")
        return
    parsed = [json.loads(row) for row in rows]
    providers = sorted({row["provider"] for row in parsed})
    try:
        write_reports(build_report(parsed, providers), config.rootpath / directory)
    except InputError as error:
        for problem in error.problems:
            _say(config, terminal_safe(f"conformance: error: {problem}"))
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _say(config: pytest.Config, message: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message)
    else:
        print(message)
