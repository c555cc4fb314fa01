"""One run of the suite, whichever entry point starts it (docs/layout.md, "One run").

``conformance run`` and the pytest plugin are thin over a ``Run``: it holds the adapters, stacks and required providers
the configuration and flags chose, loads the cases, plans their items (``conformance.engine.plan``), splits them into
shards, runs one item (an adapter's lane or a stack's), keeps its row, and writes the three reports at the end — or
leaves the previous ones in place when the run stopped early. The entry points differ only in what is theirs: the
CLI walks the plan itself and prints its summary; pytest makes one test item per planned item, selects them with
``-k``/``-m``, and runs them one by one.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import multiprocessing
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.engine.cases import Case, base_provider, load_cases
from conformance.engine.fixtures import fixture_files
from conformance.engine.plan import Planned, plan_case
from conformance.engine.provenance import ages, provenance_of
from conformance.engine.registry import select_adapters
from conformance.engine.rows import Mode, Row
from conformance.engine.runner import run_case_with_requests
from conformance.engine.settings import required
from conformance.engine.shard import item_cost, split
from conformance.kit.adapter import Adapter
from conformance.stacks.agent import agent_row
from conformance.stacks.runner import run_stack_case
from conformance.stacks.stack import Stack, select_stacks
from conformance.stacks.telemetry import KEPT, keeping

PARTIAL_HINT = "--conformance-report-partial writes them anyway"
PARSE_BATCH = 1000


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off for a step that makes many objects and no cycles, then as it was before."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@dataclass
class Run:
    """A run: what it runs with, the rows it made, and its report."""

    known: dict[str, Adapter]
    """Every adapter the cases may name (built-ins and the configured ones): cases are loaded against these."""
    adapters: dict[str, Adapter]
    """The adapters whose lanes run (``--provider`` narrows them)."""
    stacks: list[Stack]
    required: list[str]
    """Providers every planned case must have fixtures for: a case without them is planned as not recorded."""
    in_process: bool = False
    """Stacks answer through their clients' in-process seams instead of the loopback server."""
    rows: list[str] = field(default_factory=list)
    """The rows made, as JSON text until the report is written: strings are not walked by the garbage collector."""
    keys: list[tuple[str, str, str]] = field(default_factory=list)
    """Each kept row's case, lane and mode, in the order of ``rows`` (the report groups the rows by case)."""
    ran: set[tuple[str, str]] = field(default_factory=set)
    """The (case, lane) pairs that ran: their fixture files are what the report verified."""
    shard: dict[str, Any] | None = None
    """Shard I of N's record (``conformance.engine.shard.shard_record``), once split."""
    prices: Path | None = None
    """The price file of the report's cost figures (None: the bundled one; ``conformance.report.cost``)."""
    cost_function: str | None = None
    """The team's cost function, ``module:function``, whose figures the report checks against the prices."""

    @classmethod
    def configure(cls, adapters: Sequence[str] = (), stacks: Sequence[str] = (), require: Sequence[str] = (),
                  providers: Sequence[str] | None = None, in_process: bool = False) -> Run:
        """A run from adapter, stack and required-provider specs (settings first, flags after), ``providers`` the
        adapters to run (None: all)."""
        specs = list(dict.fromkeys(adapters))
        known = select_adapters(None, specs)
        selected = select_adapters(list(providers), specs) if providers else known
        return cls(known=known, adapters=selected, stacks=select_stacks(list(dict.fromkeys(stacks))),
                   required=required(list(require), selected), in_process=in_process)

    def load(self, roots: Iterable[Path], max_file_bytes: int | None = None,
             seen: dict[str, str] | None = None) -> list[Case]:
        """The cases under ``roots``, checked against the known adapters; ``seen`` carries case ids across loads."""
        extra: dict[str, Any] = {} if max_file_bytes is None else {"max_file_bytes": max_file_bytes}
        # Parsed YAML and JSON hold no cycles: the collector's passes would only walk the growing heap of cases
        # (at 2,449 cases, about a third of the load, docs/performance.md).
        with collector_paused():
            return load_cases(list(roots), known_providers=self.known, seen=seen, **extra)

    def plan(self, case: Case) -> Iterator[Planned]:
        """The case's items: its lanes in every mode, a not-recorded item per required provider it lacks."""
        return plan_case(case, self.adapters, self.stacks, self.required)

    def split(self, shard: tuple[int, int], items: Sequence[Planned]) -> set[str]:
        """Shard I of N of the planned items: the case ids it runs (whole cases); every shard computes the same
        split from the same plan."""
        planned = [(item.case, item.stack.provider if item.stack is not None else item.lane, item.stack is not None)
                   for item in items]
        code = [*self.adapters.values(), *{id(item.stack): item.stack for item in items if item.stack}.values()]
        mine, self.shard = split(shard, planned, code)
        return mine

    def skip_reason(self, stack: Stack) -> str | None:
        """Why a stack's items cannot run here (its client is not installed, no adapter reads its requests)."""
        why = stack.skip_reason()
        if why:
            return why
        if stack.provider not in self.adapters:
            return f"no adapter reads {stack.provider} requests here (select that provider)"
        return None

    def execute(self, item: Planned) -> tuple[Row, Exception | None, list[dict[str, Any]]]:
        """Run one planned item and keep its row: the row, the adapter's or stack's exception (or None), and the
        requests sent."""
        result = self.run_item(item)
        self.keep(result[0])
        return result

    def run_item(self, item: Planned) -> tuple[Row, Exception | None, list[dict[str, Any]]]:
        """Run one planned item (``execute`` without keeping its row)."""
        assert item.mode is not None, "a not-recorded item has nothing to run"
        if item.stack is None or item.stack.loop is not None:
            KEPT.release()  # no row but a telemetry lane's runs under its instrumentation
        if item.stack is None:
            result = run_case_with_requests(item.case, item.lane, self.adapters[base_provider(item.lane)], item.mode)
        elif item.stack.loop is not None:  # the team's own loop, run whole (conformance.stacks.agent)
            result = agent_row(item.case, item.stack, self.adapters[item.stack.provider])
        else:
            result = run_stack_case(item.case, item.stack, self.adapters[item.stack.provider], item.mode,
                                    self.in_process)
        return result

    def execute_all(self, items: Sequence[Planned], jobs: int = 1) -> None:
        """Run the items and keep their rows in the order of ``items``, whatever order they ran in: lane by lane, each
        lane's rows one after another (a telemetry lane's instrumentation installed once for them,
        ``conformance.stacks.telemetry.keeping``), over ``jobs`` processes when more than one (forked: each starts its
        own replay server). The report is the same byte for byte as a serial run's: its rows, and the findings built
        from them, follow the order they are kept in."""
        lanes: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            lanes.setdefault(item.lane, []).append(index)
        groups = list(lanes.values())
        texts: list[str] = [""] * len(items)
        done: Iterable[list[tuple[int, str]]]
        if jobs <= 1 or len(groups) <= 1:
            done = map(functools.partial(_run_lane_rows, self, items), groups)
        else:
            # The costliest lanes first, so the last to finish are short ones (``item_cost``: turns, stacks x8).
            groups.sort(key=lambda group: -sum(_cost(items[index]) for index in group))
            _FORKED.update(run=self, items=items)
            context = multiprocessing.get_context("fork")
            pool = context.Pool(min(jobs, len(groups)))
            try:
                done = list(pool.imap_unordered(_run_forked_lane, groups))
            finally:
                pool.terminate()
                _FORKED.clear()
        for group in done:
            for index, text in group:
                texts[index] = text
        for text in texts:
            row = json.loads(text)
            self.rows.append(text)
            self.keys.append((row["case"], row["provider"], row["mode"]))
            self.ran.add((row["case"], row["provider"]))

    def keep(self, row: Row) -> None:
        """Keep a row for the report."""
        self.rows.append(json.dumps(row, separators=(",", ":")))
        self.keys.append((row["case"], row["provider"], row["mode"]))
        self.ran.add((row["case"], row["provider"]))

    def fixture_provenance(self, cases: Iterable[Case]) -> dict[str, str]:
        """What is known of the origin of each fixture file the (case, lane) pairs that ran used
        (``conformance.engine.provenance``)."""
        return provenance_of(list(cases), sorted(self.ran))

    def fixture_files(self, cases: Iterable[Case]) -> dict[str, str]:
        """The fixture files behind the (case, lane) pairs that ran."""
        return fixture_files(list(cases), sorted(self.ran))

    def report(self, files: Mapping[str, str], selection: Mapping[str, Any] | None = None,
               rows: Collection[str] | None = None, provenance: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The report of the rows kept (or of ``rows``, JSON texts another process made): its lanes are those of
        the rows. ``provenance``: each fixture file's (``fixture_provenance``), for the age of the recordings."""
        from conformance.report.build import build_report_in_groups  # noqa: PLC0415 - the report layer loads last

        texts = list(self.rows if rows is None else rows)
        keys = self.keys if rows is None and len(self.keys) == len(texts) else keys_of(texts)
        # The report's objects hold no cycles: no collector passes over the thousands of rows while it is built.
        with collector_paused():
            from conformance.report.cost import load_hook, load_prices  # noqa: PLC0415

            report = build_report_in_groups(texts, keys, self.stacks, dict(files), self.shard,
                                            dict(selection or {}) or None, load_prices(self.prices),
                                            load_hook(self.cost_function) if self.cost_function else None)
        recordings = ages(provenance or {})  # how old the recordings behind the rows are, when any has provenance
        if recordings:
            report["measured"]["recordings"] = recordings
        return report

    def forward(self, cases: Sequence[Case], lanes: Collection[str] | None = None) -> dict[str, Any]:
        """The forward-compatibility matrix (``conformance.engine.forward``, docs/forward.md): every mutant of each
        API's recorded turns through every adapter lane and stack (``lanes``: only these), judged by its family's
        rule against the same lane on the recorded case."""
        import tempfile  # noqa: PLC0415 - only a mutant run writes its streams

        from conformance.engine import forward  # noqa: PLC0415

        matrix = forward.Matrix()
        by_id = {case.id: case for case in cases}
        chosen = [(lane, adapter, None) for lane, adapter in sorted(self.adapters.items())] + [
            (stack.row_id, self.adapters[stack.provider], stack) for stack in self.stacks
            if stack.loop is None and stack.provider in self.adapters and self.skip_reason(stack) is None]
        with tempfile.TemporaryDirectory(prefix="conformance-mutants-") as scratch:
            for lane, adapter, stack in chosen:
                if lanes is not None and lane not in lanes:
                    continue
                api = stack.provider if stack is not None else lane
                if adapter.wire is None or adapter.wire.shape is None:
                    matrix.no_shape.append(lane)  # said in the report: no mutant is not a pass
                    continue
                mutants = forward.mutants_for(cases, api, adapter.wire.shape)
                matrix.mutants.setdefault(api, len(mutants))
                matrix.digests.setdefault(api, forward.digest(mutants))
                recorded: dict[tuple[str, str], Row] = {}
                for mutant in mutants:
                    case, mode = by_id[mutant.case], mutant.family.mode
                    if stack is not None and mode == "stream" and not stack.streams:
                        continue
                    changed = forward.mutated_case(case, api, mutant, Path(scratch))
                    if (case.id, mode) not in recorded:
                        recorded[(case.id, mode)] = self._lane_row(case, api, adapter, stack, mode)
                    row = dict(self._lane_row(changed, api, adapter, stack, mode))
                    verdict, read = forward.judge(mutant, dict(recorded[(case.id, mode)]), row)
                    matrix.add(lane, mutant, verdict, read, row)
        return matrix.to_dict()

    def _lane_row(self, case: Case, api: str, adapter: Adapter, stack: Stack | None, mode: Mode) -> Row:
        if stack is None:
            return run_case_with_requests(case, api, adapter, mode)[0]
        return run_stack_case(case, stack, adapter, mode, self.in_process)[0]

    def write(self, report: dict[str, Any], directory: Path) -> list[Path]:
        """Write ``report.json``, ``.md`` and ``.html`` whole, each or none (``conformance.report.files``)."""
        from conformance.report.build import write_reports  # noqa: PLC0415

        return write_reports(report, directory)


def _run_lane_rows(run: Run, items: Sequence[Planned], indices: Sequence[int]) -> list[tuple[int, str]]:
    """One lane's items, in order, as (index, the row as JSON text); the lane's instrumentation kept installed."""
    done: list[tuple[int, str]] = []
    with keeping():
        for index in indices:
            row = run.run_item(items[index])[0]
            done.append((index, json.dumps(row, separators=(",", ":"))))
    return done


def _cost(item: Planned) -> int:
    return item_cost(item.case, item.stack.provider if item.stack is not None else item.lane, item.stack is not None)


_FORKED: dict[str, Any] = {}
"""The run and its items, as a forked worker of ``Run.execute_all`` inherits them (only indices are sent)."""


def _run_forked_lane(indices: Sequence[int]) -> list[tuple[int, str]]:
    return _run_lane_rows(_FORKED["run"], _FORKED["items"], indices)


def keys_of(texts: Sequence[str]) -> list[tuple[str, str, str]]:
    """Each row text's case, lane and mode (rows another process made come without them), parsed a thousand at a
    time as one array each: rows parsed one by one take longer."""
    keys: list[tuple[str, str, str]] = []
    for start in range(0, len(texts), PARSE_BATCH):
        keys += [(row["case"], row["provider"], row["mode"])
                 for row in json.loads("[" + ",".join(texts[start:start + PARSE_BATCH]) + "]")]
    return keys


def stopped_early_message(rows: int, directory: Path | str, hint: str = PARTIAL_HINT) -> str:
    """What a run cut short (Ctrl-C, ``-x``, ``--maxfail``) says: it ran only some rows, and a report of them would
    replace the whole previous one and read as the full matrix, so the previous reports stay."""
    return (f"conformance: the session stopped early ({rows} case items ran); the reports in {directory} were left "
            f"as they were ({hint})")
