"""Splitting the case items across CI jobs (``--shard I/N``), (merging their reports: ``conformance.report.merge``).

A shard takes whole cases: every provider, mode and stack row of a case runs in the same shard. The report's
cross-row parts — which cells differ from most vendors (per case and mode), a stack's findings (beside its vendor's
raw row) — are then complete in each shard, and the merged report is byte for byte the one an unsharded run writes
(docs/ci.md, "Shards").

Cases go to shards by estimated cost, largest first, each to the shard with the least cost so far (ties: the
lower shard), so the split is the same on every machine and even within one case's cost. A case's cost is the
sum over its items of the recorded turns the item replays, plus one; a stack row counts ``STACK_WEIGHT`` times
a raw row, as a real client's lane costs several times more per turn (docs/performance.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from conformance.engine.fixtures import fixture_digest, fixture_files
from conformance.errors import InputError, Problem

STACK_WEIGHT = 8
_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str, where: str = "--shard") -> tuple[int, int]:
    """``I/N`` as (I, N), 1 ≤ I ≤ N; InputError naming ``where`` otherwise."""
    match = _SPEC.match(text or "")
    if match is None or not 1 <= int(match[1]) <= int(match[2]):
        raise InputError([Problem(where, None, f"expected I/N with 1 <= I <= N, got {text!r}",
                                  "e.g. --shard 2/4 runs the second of four shards")])
    return int(match[1]), int(match[2])


def item_cost(case: Any, provider: str, stack: bool = False) -> int:
    """One item's estimated cost: the recorded turns it replays, plus one; a stack row ``STACK_WEIGHT`` times."""
    fixtures = case.providers.get(provider)
    cost = 1 + (len(fixtures.turns) if fixtures is not None else 0)
    return cost * STACK_WEIGHT if stack else cost


def assign(costs: Mapping[str, int], shards: int) -> dict[str, int]:
    """Each case id (key of ``costs``) to its shard, 1 to ``shards``: largest cost first, to the least loaded
    shard, ties to the lower shard; the same input gives the same split everywhere."""
    loads = [(0, index) for index in range(1, shards + 1)]
    heapq.heapify(loads)
    placed: dict[str, int] = {}
    for case_id in sorted(costs, key=lambda key: (-costs[key], key)):
        load, index = heapq.heappop(loads)
        placed[case_id] = index
        heapq.heappush(loads, (load + costs[case_id], index))
    return placed


def cases_of_shard(costs: Mapping[str, int], shard: tuple[int, int]) -> set[str]:
    """The case ids shard ``I`` of ``N`` runs."""
    index, count = shard
    return {case_id for case_id, placed in assign(costs, count).items() if placed == index}


def shard_record(shard: tuple[int, int], costs: Mapping[str, int], planned_files: dict[str, str]) -> dict[str, Any]:
    """What a shard's report records of the whole run it is part of: its place (``index`` of ``of``) and the plan
    every shard computed alike — every case id and the fixture set of every selected item — so that ``merge``
    can refuse shards of another commit or other filters, and a missing case."""
    return {"index": shard[0], "of": shard[1],
            "plan": {"cases": sorted(costs), "fixtures": fixture_digest(planned_files)}}


def split(shard: tuple[int, int], items: Sequence[tuple[Any, str, bool]],
          code: Iterable[Any] = ()) -> tuple[set[str], dict[str, Any]]:
    """From every selected item (case, provider, is-stack), as every shard sees them: the case ids shard I runs and
    its report's record (``shard_record``). ``conformance run --shard`` and ``--conformance-shard`` both split here.
    The plan covers everything that decides a row: the fixture files, each case's ``case.yaml`` and its
    ``world.yaml``, and the source of every module of ``code`` (the adapters and stacks that run)."""
    costs = add_costs({}, items)
    cases = list({case.id: case for case, _, _ in items}.values())
    planned = fixture_files(cases, [(case.id, provider) for case, provider, _ in items])
    record = shard_record(shard, costs, planned)
    record["plan"]["decides"] = fixture_digest(decisive_files(cases, code))
    return cases_of_shard(costs, shard), record


def decisive_files(cases: Sequence[Any], code: Iterable[Any]) -> dict[str, str]:
    """Beside the fixtures, what decides a row, with the SHA-256 of each file's bytes: each case file, the world
    file of its cases folder and the python tools it names, every module of the suite and its providers, and every
    other module the adapters and stacks that run come from (a team's own)."""
    from conformance.engine.pytool import PythonTool  # noqa: PLC0415 - the cases module imports this one's callers
    from conformance.engine.world import CallableTool  # noqa: PLC0415

    files: dict[str, Path] = {}
    for case in cases:
        path = Path(case.path)
        root = next((folder for folder in path.parents if (folder / "world.yaml").is_file()), path.parent.parent)
        files[f"case:{root.name}/{path.relative_to(root).as_posix()}"] = path
        if (root / "world.yaml").is_file():
            files[f"world:{root.name}/world.yaml"] = root / "world.yaml"
        for tool in case.world.tools.values():
            if isinstance(tool, CallableTool) and isinstance(tool.function, PythonTool) \
                    and tool.function.spec.rpartition(":")[0].endswith(".py"):
                source = tool.function.root / tool.function.spec.rpartition(":")[0]
                files[f"tool:{root.name}/{tool.function.spec.rpartition(':')[0]}"] = source
    suite = Path(__file__).resolve().parent.parent
    for package, folder in (("conformance", suite), ("providers", (suite / "providers").resolve())):
        for source in sorted(folder.rglob("*.py")):
            if source.resolve().is_relative_to(folder):  # the link to the providers is counted as providers
                files[f"code:{package}/{source.relative_to(folder).as_posix()}"] = source
    for module in sorted({name for item in code for name in _modules_of(item)}):
        if module.split(".", 1)[0] in ("conformance", "providers"):
            continue
        location = getattr(sys.modules.get(module), "__file__", None)
        if isinstance(location, str) and Path(location).is_file():
            files[f"code:{module}"] = Path(location)
    return {shown: hashlib.sha256(path.read_bytes()).hexdigest() for shown, path in files.items() if path.is_file()}


def _modules_of(item: Any) -> set[str]:
    """The modules an adapter record's functions or a stack's class and call come from."""
    names = {type(item).__module__}
    for value in ([getattr(item, field.name) for field in dataclasses.fields(item)]
                  if dataclasses.is_dataclass(item) else [getattr(item, "call", None)]):
        module = getattr(value, "__module__", None)
        if callable(value) and isinstance(module, str):
            names.add(module)
    return {name for name in names if not name.startswith(("builtins", "dataclasses"))}


def add_costs(costs: dict[str, int], items: Iterable[tuple[Any, str, bool]]) -> dict[str, int]:
    """Sum ``item_cost`` of (case, provider, is-stack) items into ``costs`` by case id; returns ``costs``."""
    for case, provider, stack in items:
        costs[case.id] = costs.get(case.id, 0) + item_cost(case, provider, stack)
    return costs
