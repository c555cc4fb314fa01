"""All pytest glue: every ``case.yaml`` of an opted-in cases folder becomes one test item per provider and mode.

Installed as a ``pytest11`` entry point, the plugin does nothing until a repository opts in, with
``conformance_cases = ["cases"]`` under ``[tool.pytest.ini_options]`` or ``--conformance-cases DIR``. Item ids read
``cases/normal/case.yaml::normal[openai-chat-body]``, so ``-k normal`` or ``-k openai-chat`` select as a pytest user
expects. Each item checks its case's expectation and its reviewed snapshots: the classification
(``<cases folder>/__snapshots__/<case>/<provider>.json``) and the requests the adapter built, whole
(``<provider>.requests.json`` beside it); ``--snapshot-update`` accepts a change.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import sys
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import _pytest.config
import pytest

from conformance.commands.options import BUNDLED_CASES
from conformance.engine.cases import CASE_FILE, WORLD_FILE, Case
from conformance.engine.plan import Planned
from conformance.engine.pytool import ALLOW_ENV, ALLOW_VALUE
from conformance.engine.sanitize import terminal_safe
from conformance.engine.settings import rooted
from conformance.engine.shard import parse_shard
from conformance.errors import InputError
from conformance.replay.modes import MODES as RECORD_MODES
from conformance.report.snapshot import (
    SNAPSHOT_FOLDER,
    entry_of,
    raw_request_entry,
    request_entry,
)
from conformance.report.syrupy_store import (
    LANES_KEY,
    NODE_IDS_KEY,
    CaseSnapshotExtension,
    RequestSnapshotExtension,
    SyrupyNode,
    cache_selection_check,
    check,
    steady_files,
)
from conformance.session import Run, stopped_early_message
from conformance.stacks.stack import Stack

_ROOTS_KEY = pytest.StashKey[list[Path]]()
_CASES_KEY = pytest.StashKey[dict[Path, dict[Path, list[Case]]]]()
_RUN_KEY = pytest.StashKey[Run]()
_WORKER_ROWS = "conformance_rows"
_WORKER_FILES = "conformance_fixture_files"
_FILES_KEY = pytest.StashKey[dict[str, str]]()
_WORKER_PROVENANCE = "conformance_fixture_provenance"
_PROVENANCE_KEY = pytest.StashKey[dict[str, str]]()
_WORKER_SHARD = "conformance_shard"
_IDS_KEY = pytest.StashKey[dict[str, str]]()
_DESELECTED_KEY = pytest.StashKey[int]()
_ALLOWED_KEY = pytest.StashKey[bool]()
_SHARDING_KEY = pytest.StashKey[bool]()
_FROZEN_KEY = pytest.StashKey[bool]()
_RAN_KEY = pytest.StashKey[int]()
REFREEZE_EVERY = 1000
_UNCHECKED_KEY = pytest.StashKey[bool]()
_SNAPSHOT_ROOTS_KEY = pytest.StashKey[dict[Path, Path]]()
_ON_THE_WAY_KEY = pytest.StashKey[frozenset[Path]]()


class _Thaw:
    """Gives the collector back what collection froze (``pytest_collection_finish``) as the session's very last
    clean-up (``_thaw``: not when the process ends with the session). pytest's own clean-up runs ``gc.collect()`` to
    surface unraisable exceptions; with the cases and items still frozen, that pass skips them (about 3 s at 20,000
    items, docs/performance.md)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        # Clean-ups run last in, first out: registered before any other plugin's, this one runs after them all.
        config.add_cleanup(functools.partial(_thaw, config))


def _thaw(config: pytest.Config) -> None:
    """Gives the frozen objects back to the collector, unless pytest runs as the command line (``pytest``,
    ``python -m pytest``): its process ends as soon as the session returns, and the interpreter's collection at
    shutdown would walk every case, item and row kept only to free memory the process is about to give back (5 s of
    a 20,066-item run, docs/performance.md). Python does not promise ``__del__`` for objects alive at exit
    (the data model's ``object.__del__``); a host that runs ``pytest.main()`` gets its collector as it was."""
    if config.stash.get(_FROZEN_KEY, False):
        config.stash[_FROZEN_KEY] = False
        if not _process_ends_with_session():
            gc.unfreeze()


def _process_ends_with_session() -> bool:
    """True when pytest's command-line entry is on the stack (the ``pytest`` script and ``python -m pytest`` call
    ``_pytest.config._console_main`` from pytest 9.1, ``console_main`` before): the process exits when it returns."""
    entries = {getattr(_pytest.config, name).__code__ for name in ("console_main", "_console_main")
               if callable(getattr(_pytest.config, name, None))}
    frame: types.FrameType | None = sys._getframe()
    while frame is not None:
        if frame.f_code in entries:
            return True
        frame = frame.f_back
    return False


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """The plugin's options (``--conformance-*``) and ini settings (``conformance_*``)."""
    pluginmanager.register(_Thaw(), "conformance-thaw")
    group = parser.getgroup("conformance")
    group.addoption("--conformance-cases", action="append", default=[], metavar="DIR",
                    help="collect the cases in DIR (a folder with world.yaml); adds to the conformance_cases ini")
    group.addoption("--conformance-adapter", action="append", default=[],
                    help="run the cases against your own adapter too (module:object or path/to/file.py:object)")
    group.addoption("--conformance-stack", action="append", default=[], metavar="STACK",
                    help="also run a real client's lane: all, a reference stack's row id or module:object "
                         "(docs/stacks.md); adds to the conformance_stacks ini")
    group.addoption("--conformance-report", default=None, metavar="DIR",
                    help="where to write report.json/.md/.html for the case items that ran (default: the "
                         "conformance_report ini, else reports; an empty value writes nothing)")
    group.addoption("--conformance-mutants", action="store_true",
                    help="also run the lanes that ran on the forward-compatibility mutants of the cases that ran, and "
                         "add the 'Survives the next release' matrix to the reports (docs/forward.md)")
    group.addoption("--conformance-report-partial", action="store_true",
                    help="write the reports even when the session stopped early (Ctrl-C, -x, --maxfail)")
    group.addoption("--conformance-require-providers", action="append", default=[], metavar="ID",
                    help="fail every case that has no fixtures for provider ID ('all': every loaded adapter)")
    group.addoption("--conformance-upstream", action="append", default=[], metavar="PROVIDER=URL",
                    help="record mode: where a provider's requests go (docs/record.md)")
    # Not `--record-mode`: pytest-recording registers that name (with `rewrite` too) and fails to load beside a
    # plugin that registered it first.
    group.addoption("--conformance-record-mode", choices=RECORD_MODES, default="none",
                    help="none (default): replay only; once, new_episodes, all: record the cases' turns for "
                         "each --conformance-upstream provider before collecting (docs/record.md)")
    group.addoption("--conformance-shard", default=None, metavar="I/N",
                    help="run only shard I of N of the case items (whole cases, split evenly by estimated cost); "
                         "`conformance merge` joins the N reports (docs/ci.md, \"Shards\")")
    parser.addini("conformance_cases", type="paths", default=[],
                  help="cases folders to collect (each holds world.yaml); nothing is collected without it")
    parser.addini("conformance_adapters", type="linelist", default=[],
                  help="your adapters, as module:object or path/to/file.py:object")
    parser.addini("conformance_stacks", type="linelist", default=[],
                  help="stacks to run beside the adapters: all, a reference stack's row id, or module:object")
    parser.addini("conformance_report", default="reports", help="report folder, relative to the rootdir")
    parser.addini("conformance_require_providers", type="linelist", default=[],
                  help="provider ids every case must have fixtures for ('all': every loaded adapter)")
    parser.addini("conformance_python_tools", default="",
                  help="allow: let python tools named in world.yaml run (they run code from the cases folder)")
    parser.addini("conformance_max_age_days", default="",
                  help="conformance validate fails on recordings older than this many days (docs/record.md)")
    parser.addini("conformance_prices", default="",
                  help="the price file of the report's cost figures, relative to the rootdir (default: the bundled "
                       "one; docs/cost.md)")
    parser.addini("conformance_cost_function", default="",
                  help="your cost function, module:function (api, model, usage, raw_usage) -> USD, checked against "
                       "the prices")
    parser.addini("conformance_bundled", default="",
                  help="a folder of this repository: the bundled cases run through your adapters and stacks too, "
                       "their snapshots kept there (<folder>/__snapshots__/)")
    parser.addini("conformance_snapshots", type="bool", default=True,
                  help="check each case item against its reviewed snapshot (default true)")


def pytest_configure(config: pytest.Config) -> None:
    """Opted in or not; when in, the cases folders join the collection unless explicit paths were given."""
    if str(config.getini("conformance_python_tools")).strip().lower() == ALLOW_VALUE and ALLOW_ENV not in os.environ:
        os.environ[ALLOW_ENV] = ALLOW_VALUE  # the owner's configuration allows python tools; undone at unconfigure
        config.stash[_ALLOWED_KEY] = True
    roots = [Path(path).resolve() for path in config.getini("conformance_cases")]
    explicit = [Path(path).resolve() for path in config.getoption("conformance_cases")]
    bundled_snapshots = str(config.getini("conformance_bundled")).strip()
    bundled = [BUNDLED_CASES.resolve()] if bundled_snapshots else []
    config.stash[_ROOTS_KEY] = list(dict.fromkeys(roots + explicit + bundled))
    # The bundled cases' snapshots are the team's to review: kept in its repository, never beside the installed cases.
    config.stash[_SNAPSHOT_ROOTS_KEY] = {root: config.rootpath / bundled_snapshots for root in bundled}
    top = config.rootpath.resolve()
    config.stash[_ON_THE_WAY_KEY] = frozenset(
        folder for root in bundled if top in root.parents for folder in (root, *root.parents) if _within(folder, top))
    if not config.stash[_ROOTS_KEY]:
        return
    config.stash[_CASES_KEY] = {}
    if config.pluginmanager.has_plugin("syrupy"):
        cache_selection_check()
    _record_before_collecting(config)
    default_args = config.args_source != pytest.Config.ArgsSource.ARGS
    for root in (config.stash[_ROOTS_KEY] if default_args else explicit):
        if not any(_within(root, Path(arg).resolve()) for arg in config.args):
            config.args.append(str(root))
    for root in bundled:
        # Named on its own even under a folder that is collected: an installed package sits in a virtual
        # environment, which pytest does not walk into (norecursedirs); pytest collects a file once.
        if not any(_within(Path(arg).resolve(), root) for arg in config.args):
            config.args.append(str(root))


def _record_before_collecting(config: pytest.Config) -> None:
    """``--conformance-record-mode`` other than ``none``: record each case's turns for every
    ``--conformance-upstream`` provider (``conformance record``), so the session collects what was just recorded.
    Only the controlling process records: pytest-xdist workers collect what it wrote."""
    mode = config.getoption("conformance_record_mode")
    if mode == "none" or hasattr(config, "workerinput"):
        return
    from conformance.commands.record import record_cases, upstreams_from  # noqa: PLC0415 - only when recording

    try:
        upstreams = upstreams_from(config.getoption("conformance_upstream"))
        if not upstreams:
            raise pytest.UsageError(f"--conformance-record-mode {mode} needs --conformance-upstream PROVIDER=URL")
        cases = _run(config).load(_roots(config))
        for provider in upstreams:
            for line in record_cases(cases, provider, upstreams, mode):
                print(line)
    except InputError as error:
        raise pytest.UsageError(str(error)) from None


def _shard(config: pytest.Config) -> tuple[int, int] | None:
    text = config.getoption("conformance_shard", None)
    if text is None:
        return None
    try:
        return parse_shard(text, "--conformance-shard")
    except InputError as error:
        raise pytest.UsageError(str(error)) from None


@pytest.hookimpl(trylast=True)  # after -k and -m: every shard plans over what the selection kept
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--conformance-shard I/N``: keep the case items of the cases shard I runs (``conformance.engine.shard``); other
    tests are left alone."""
    shard = _shard(config)
    if shard is None:
        return
    ours = [item for item in items if isinstance(item, (CaseItem, NotRecorded))]
    if not ours:
        return
    mine = _run(config).split(shard, [item.planned for item in ours])
    dropped = [item for item in ours if item.case.id not in mine]
    if dropped:
        config.stash[_SHARDING_KEY] = True
        config.hook.pytest_deselected(items=dropped)
        config.stash[_SHARDING_KEY] = False
        gone = set(map(id, dropped))
        items[:] = [item for item in items if id(item) not in gone]


def _selection(config: pytest.Config) -> dict[str, Any]:
    """What narrowed the case items, as ``conformance run`` records its own filters: ``-k``, ``-m``, paths or node
    ids inside a cases folder (``pytest cases/normal``), and case items deselected (``--deselect``, ``--lf``)."""
    roots = config.stash.get(_ROOTS_KEY, [])
    narrower = sorted(str(arg) for arg in config.args
                      if any(_within(Path(str(arg).split("::", 1)[0]).resolve(), root) and
                             (Path(str(arg).split("::", 1)[0]).resolve() != root or "::" in str(arg))
                             for root in roots))
    selection = {name: value for name, value in (("keyword", config.getoption("keyword", "")),
                                                 ("markers", config.getoption("markexpr", "")),
                                                 ("paths", narrower)) if value}
    deselected = config.stash.get(_DESELECTED_KEY, 0)
    if deselected:
        selection["deselected"] = deselected
    return selection


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Case items dropped by ``--deselect``, ``--lf`` or another plugin: the report covers less than the cases."""
    ours = [item for item in items if isinstance(item, (CaseItem, NotRecorded))]
    if ours:
        config = ours[0].config
        if not config.stash.get(_SHARDING_KEY, False):  # a shard's own split is recorded as the shard
            config.stash[_DESELECTED_KEY] = config.stash.get(_DESELECTED_KEY, 0) + len(ours)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave the host process as it was found (the collector's frozen objects: ``_Thaw``, after pytest's clean-up)."""
    if config.stash.get(_ALLOWED_KEY, False):
        os.environ.pop(ALLOW_ENV, None)
    if _roots(config):
        steady_files(False)


def _roots(config: pytest.Config) -> list[Path]:
    return config.stash.get(_ROOTS_KEY, [])


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _root_of(path: Path, config: pytest.Config) -> Path | None:
    return next((root for root in _roots(config) if _within(path.resolve(), root)), None)


def _under_a_root(path: Path, roots: list[Path]) -> bool:
    """``_root_of`` is not None, for a folder of pytest's walk: the walk's absolute path read as text first (a
    resolve per folder is a system call per part of the path, thousands of them in a large task set), resolved when
    the text does not say."""
    text = str(path)
    if any(text == str(root) or text.startswith(f"{root}{os.sep}") for root in roots):
        return True
    resolved = path.resolve()
    return any(_within(resolved, root) for root in roots)


@pytest.hookimpl(tryfirst=True)  # before pytest's own norecursedirs check
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Fixture folders beside a case file and the snapshot folder hold data, not tests: do not walk them. The
    bundled cases installed in a virtual environment inside the repository (``.venv/…/conformance/cases``) are
    reached through folders pytest does not walk into (``norecursedirs``, and pytest collects a path inside another
    argument through that argument): the folders on the way there are walked, and nothing else beside them."""
    on_the_way = config.stash.get(_ON_THE_WAY_KEY, frozenset())
    roots = _roots(config)
    if not (on_the_way or roots) or not collection_path.is_dir():
        return None
    if on_the_way:
        resolved = collection_path.resolve()
        if resolved in on_the_way:
            return False
        if resolved.parent in on_the_way and resolved.parent != config.rootpath.resolve() and not any(
                _within(resolved, root) for root in config.stash[_SNAPSHOT_ROOTS_KEY]):
            return True
    if not roots or not _under_a_root(collection_path, roots):
        return None
    if collection_path.name == SNAPSHOT_FOLDER or (collection_path.parent / CASE_FILE).is_file():
        return True
    return None


@pytest.hookimpl(trylast=True)  # after syrupy's own sessionstart made its session (config._syrupy)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Case items join syrupy's session as their ``SyrupyNode`` (syrupy keeps ``pytest.Function`` items only), where
    syrupy records its own: collected (before ``-k``/``-m``) and selected (after). A session that writes no snapshot
    reads each snapshot file once (``steady_files``)."""
    if _roots(session.config):
        option = session.config.option
        steady_files(not (getattr(option, "update_snapshots", False) or
                          getattr(option, "update_new_snapshots_only", False)))
    syrupy = getattr(session.config, "_syrupy", None)
    if syrupy is None or not _roots(session.config):
        return
    keep = syrupy.filter_valid_items

    def filter_valid_items(items: Iterable[pytest.Item]) -> Iterator[Any]:
        for item in items:
            if isinstance(item, CaseItem):
                yield item.syrupy_node
            else:
                yield from keep([item])

    syrupy.filter_valid_items = filter_valid_items


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A case item's outcome goes to its own session's syrupy: syrupy's own hook writes to the last session made in
    the process (a pytester run inside a test session replaces it)."""
    report = yield
    syrupy = getattr(item.config, "_syrupy", None)
    if isinstance(item, CaseItem) and syrupy is not None and report.when != "teardown":
        syrupy.ran_item(report.nodeid, report.outcome)
    return report


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """A case item whose adapter raised before the snapshot check is, for syrupy, a skipped test: its reviewed
    snapshots are neither used nor unused, so ``--snapshot-update`` does not delete them."""
    syrupy = getattr(item.config, "_syrupy", None)
    if syrupy is None or not item.stash.get(_UNCHECKED_KEY, False) or item.nodeid not in syrupy._selected_items:
        return
    from syrupy.session import ItemStatus  # noqa: PLC0415 - only for an adapter that raised

    syrupy._selected_items[item.nodeid] = ItemStatus.SKIPPED


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """After a case item's setup, call and teardown: ``_refreeze``."""
    try:
        return (yield)
    finally:
        if isinstance(item, CaseItem):
            _refreeze(item.config)


def _refreeze(config: pytest.Config) -> None:
    """Every ``REFREEZE_EVERY`` case items of a session that froze its cases (``pytest_collection_finish``), what the
    run keeps alive (syrupy keeps each assertion and its data until the session's end) joins the frozen objects, after
    a collection that frees what is garbage by then (it walks only what is not frozen yet): the collector's full passes
    during the run then walk only what the last items made, not everything the run has kept so far (at 20,066 items,
    4.7 s → 1.5 s of full passes; peak memory the same; docs/performance.md). Given back with the rest by ``_Thaw``.
    It runs after the item's teardown, so only what outlives the item is frozen."""
    if not config.stash.get(_FROZEN_KEY, False):
        return
    count = config.stash[_RAN_KEY] = config.stash.get(_RAN_KEY, 0) + 1
    if count % REFREEZE_EVERY == 0:
        gc.collect()
        gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    """The loaded cases and the items live until the end: move them out of the collector's way, so its
    passes during the run stay as cheap with 5,000 items as with 50. Undone by ``_Thaw``; left alone when the
    host process had frozen objects already (``gc.unfreeze`` cannot give back only ours). Syrupy learns the lanes
    this session runs, and whether node ids picked single items out of a cases folder."""
    config = session.config
    if _roots(config):
        config.stash[LANES_KEY] = frozenset(stack.row_id for stack in _run(config).stacks)
        roots = _roots(config)
        config.stash[NODE_IDS_KEY] = any(
            "::" in str(arg) and any(_within(Path(str(arg).split("::", 1)[0]).resolve(), root) for root in roots)
            for arg in config.args)
    if session.config.stash.get(_CASES_KEY, None) and gc.get_freeze_count() == 0:
        gc.freeze()
        session.config.stash[_FROZEN_KEY] = True


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Each ``case.yaml`` under an opted-in cases folder is a collector of one item per provider and mode."""
    if file_path.name == CASE_FILE and _root_of(file_path, parent.config) is not None:
        return CaseFile.from_parent(parent, path=file_path)
    return None


def _cases_root(path: Path) -> Path:
    for folder in path.parents:
        if (folder / WORLD_FILE).is_file():
            return folder
    return path.parent


def _run(config: pytest.Config) -> Run:
    """The session's run (``conformance.session``), made on first use from the ini settings and the options. A file
    named in the ini is relative to the rootdir (where the ini lives), as the ini's paths are."""
    if _RUN_KEY not in config.stash:
        config.stash[_RUN_KEY] = Run.configure(
            adapters=[*(rooted(spec, config.rootpath) for spec in config.getini("conformance_adapters")),
                      *config.getoption("conformance_adapter")],
            stacks=[*(rooted(spec, config.rootpath) for spec in config.getini("conformance_stacks")),
                    *config.getoption("conformance_stack")],
            require=[*config.getini("conformance_require_providers"),
                     *config.getoption("conformance_require_providers")])
        prices, cost_function = config.getini("conformance_prices").strip(), \
            config.getini("conformance_cost_function").strip()
        config.stash[_RUN_KEY].prices = config.rootpath / prices if prices else None
        config.stash[_RUN_KEY].cost_function = cost_function or None
    return config.stash[_RUN_KEY]


class CaseFile(pytest.File):
    """A ``case.yaml`` as a pytest collector."""

    def collect(self) -> Iterator[pytest.Item]:
        """One item per provider and mode of each case in this file, plus one failing item per required
        provider the case has no fixtures for."""
        root = _cases_root(self.path)
        cache = self.config.stash[_CASES_KEY]
        if root not in cache:
            # One load per cases folder, indexed by file, so each case file's collection is a lookup. Ids seen
            # in folders loaded before are passed on: two folders holding one case id would give two report rows
            # under one key, and the upgrade gate could keep the passing one.
            by_file: dict[Path, list[Case]] = {}
            seen = self.config.stash.setdefault(_IDS_KEY, {})
            for loaded in _run(self.config).load([root], seen=seen):
                by_file.setdefault(Path(loaded.path).resolve(), []).append(loaded)
            cache[root] = by_file
        run = _run(self.config)
        snapshots = self.config.stash[_SNAPSHOT_ROOTS_KEY].get(root, root)
        for case in cache[root].get(self.path.resolve(), []):
            for item in run.plan(case):
                kind = NotRecorded if item.mode is None else CaseItem if item.stack is None else StackItem
                yield kind.from_parent(self, name=item.name, planned=item, root=snapshots)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A failure as the case's own message, not a traceback."""
        if isinstance(excinfo.value, InputError):
            return terminal_safe(str(excinfo.value))
        return super().repr_failure(excinfo)


class CaseFailed(Exception):
    """A case × provider × mode did not meet its expectation, or its classification left the snapshot."""


class CaseItem(pytest.Item):
    """One case × provider × mode as a pytest item."""

    def __init__(self, *, planned: Planned, root: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        assert planned.mode is not None, "a case item runs in a mode"
        self.planned, self.root = planned, root
        self.case, self.provider, self.mode = planned.case, planned.lane, planned.mode
        self.syrupy_node = SyrupyNode(self)

    def runtest(self) -> None:
        """Run one case × provider × mode, keep its report row, then check the expectation and the snapshot.

        An exception from the adapter is raised as it was, so ``--tb`` and ``--pdb`` show the adapter's code."""
        self._skip_unrunnable()
        row, error, requests = _run(self.config).execute(self.planned)
        if error is not None:
            self.stash[_UNCHECKED_KEY] = True  # its snapshots were not checked: kept, as a skipped test's
            detail = row["error"]
            assert detail is not None  # a row the adapter broke records where
            error.add_note(f"conformance: case {self.case.id} [{self.provider}, {self.mode}], turn {detail['turn']} "
                           f"({detail['phase']})" + (f", fixture {detail['fixture']}" if detail["fixture"] else ""))
            raise error
        messages = list(row["failures"])
        if self.config.getini("conformance_snapshots"):
            shown = functools.partial(_shown_path, config=self.config)
            messages += check(self, CaseSnapshotExtension, entry_of(row), "classification", shown)
            messages += check(self, RequestSnapshotExtension, lambda: request_entry(requests), "request", shown,
                              raw=raw_request_entry(requests))
        if messages:
            raise CaseFailed("\n".join(messages))
        if row.get("waived"):  # every failure waived: reported as waived, never as passed
            waived = row["waived"]
            pytest.skip(f"waived: {'; '.join(waived['why'])} ({'; '.join(waived['failures'])})")

    def _skip_unrunnable(self) -> None:
        """An adapter's item always runs."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """An expectation or snapshot failure as the case's own message, in full whatever ``-q``/``-v`` say; an
        adapter's exception as pytest shows any exception."""
        if isinstance(excinfo.value, (CaseFailed, InputError)):
            return terminal_safe(f"{self.case.path} [{self.provider}, {self.mode}]\n{excinfo.value}")
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the item lives, for pytest's reports."""
        return self.path, 0, f"case {self.case.id} [{self.provider}, {self.mode}]"


class StackItem(CaseItem):
    """One case × stack × mode: the stack's real client against a replay of the case (docs/stacks.md). ``provider``
    is the row id (``<provider>@<stack>``), which names its snapshots."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stack: Stack = self.planned.stack

    def _skip_unrunnable(self) -> None:
        """A stack whose client is not installed, or whose requests no adapter reads, skips its items."""
        why = _run(self.config).skip_reason(self.stack)
        if why:
            pytest.skip(f"stack {self.stack.row_id}: {why}")


class NotRecorded(pytest.Item):
    """A case with no fixtures for a provider the run requires: fails, naming the folder to record."""

    def __init__(self, *, planned: Planned, root: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.planned, self.root = planned, root
        self.case, self.provider = planned.case, planned.lane

    def runtest(self) -> None:
        """Always fails: the provider is required and not recorded."""
        folder = Path(self.case.path).parent / self.provider
        raise CaseFailed(f"no fixtures for required provider {self.provider}: record {folder}/turn1.json (and "
                         f"add '{self.provider}: {{}}' under providers:), or drop it from "
                         "conformance_require_providers")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """The missing recording in one line."""
        if isinstance(excinfo.value, CaseFailed):
            return terminal_safe(f"{self.case.path} [{self.provider}]\n{excinfo.value}")
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the item lives, for pytest's reports."""
        return self.path, 0, f"case {self.case.id} [{self.provider}] not recorded"


def _shown_path(path: Path, config: pytest.Config) -> str:
    try:
        return str(path.relative_to(config.rootpath))
    except ValueError:
        return str(path)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: take the rows a worker ran (builtins only, as JSON text)."""
    output = getattr(node, "workeroutput", {})
    if _CASES_KEY not in node.config.stash:
        return
    run = _run(node.config)
    rows = output.get(_WORKER_ROWS)
    if rows:
        run.rows.extend(json.loads(rows))  # a list of row texts
        node.config.stash.setdefault(_FILES_KEY, {}).update(json.loads(output.get(_WORKER_FILES, "{}")))
        node.config.stash.setdefault(_PROVENANCE_KEY, {}).update(json.loads(output.get(_WORKER_PROVENANCE, "{}")))
    if output.get(_WORKER_SHARD):
        run.shard = json.loads(output[_WORKER_SHARD])  # every worker plans alike


def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    """Workers hand their rows over; the controller writes the reports, unless the session stopped early."""
    config = session.config
    if _CASES_KEY not in config.stash:
        return
    run = _run(config)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        # An xdist worker hands its rows, and the fixture files they ran on, to the controller; only the controller
        # writes files.
        workeroutput[_WORKER_ROWS] = json.dumps(run.rows)
        workeroutput[_WORKER_FILES] = json.dumps(run.fixture_files(_collected(config)))
        workeroutput[_WORKER_PROVENANCE] = json.dumps(run.fixture_provenance(_collected(config)))
        if run.shard is not None:
            workeroutput[_WORKER_SHARD] = json.dumps(run.shard)
        return
    option = config.getoption("conformance_report")
    directory = config.getini("conformance_report") if option is None else option
    if run.shard is not None and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        # A shard left without cases while others have some is not a failure: its report is empty. A selection
        # with no case item at all keeps pytest's own exit code.
        session.exitstatus = pytest.ExitCode.OK
    if not directory or (not run.rows and run.shard is None):
        return
    stopped = exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldfail or session.shouldstop
    if stopped and not config.getoption("conformance_report_partial"):
        _say(config, stopped_early_message(len(run.rows), directory))
        return
    # The controller of an xdist session collected nothing: its workers sent the fixture files with the rows.
    files = config.stash[_FILES_KEY] if _FILES_KEY in config.stash else run.fixture_files(_collected(config))
    provenance = config.stash[_PROVENANCE_KEY] if _PROVENANCE_KEY in config.stash else run.fixture_provenance(
        _collected(config))
    try:
        report = run.report(files, _selection(config), provenance=provenance)
        if config.getoption("conformance_mutants"):
            report["forward"] = _forward(config, run)
        run.write(report, config.rootpath / directory)
    except InputError as error:
        for problem in error.problems:
            _say(config, terminal_safe(f"conformance: error: {problem}"))
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _forward(config: pytest.Config, run: Run) -> dict[str, Any]:
    """The forward-compatibility matrix of the cases and lanes that ran (``Run.forward``); the controller of an
    xdist session, which collected nothing, loads the cases again."""
    rows = [json.loads(text) for text in run.rows]
    ran = {row["case"] for row in rows}
    roots: list[Path] = config.stash[_ROOTS_KEY]
    cases = _collected(config) or run.load(roots)
    return run.forward([case for case in cases if case.id in ran], {row["provider"] for row in rows})


def _collected(config: pytest.Config) -> list[Case]:
    """The cases this process collected."""
    return [case for by_file in config.stash.get(_CASES_KEY, {}).values() for loaded in by_file.values()
            for case in loaded]


def _say(config: pytest.Config, message: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message)
    else:
        print(message)
