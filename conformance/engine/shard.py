"""Splitting the case items across CI jobs (``--shard I/N``), and merging the shards' reports back into one.

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
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from conformance.commands.verify import reports_in
from conformance.errors import InputError, Problem
from conformance.report.build import assemble, fixture_digest, fixture_files
from conformance.report.diff import read_report, row_shape_problem

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
    planned = fixture_files(cases, [{"case": case.id, "provider": provider} for case, provider, _ in items])
    record = shard_record(shard, costs, planned)
    record["plan"]["decides"] = fixture_digest(decisive_files(cases, code))
    return cases_of_shard(costs, shard), record


def decisive_files(cases: Sequence[Any], code: Iterable[Any]) -> dict[str, str]:
    """Beside the fixtures, what decides a row, with the SHA-256 of each file's bytes: each case file, the world
    file of its cases folder and the python tools it names, every module of the suite and its providers, and every
    other module the adapters and stacks that run come from (a team's own)."""
    from conformance.engine.pytool import PythonTool  # noqa: PLC0415 - the cases module imports this one's callers

    files: dict[str, Path] = {}
    for case in cases:
        path = Path(case.path)
        root = next((folder for folder in path.parents if (folder / "world.yaml").is_file()), path.parent.parent)
        files[f"case:{root.name}/{path.relative_to(root).as_posix()}"] = path
        if (root / "world.yaml").is_file():
            files[f"world:{root.name}/world.yaml"] = root / "world.yaml"
        for tool in case.world.tools.values():
            if isinstance(tool.function, PythonTool) and tool.function.spec.rpartition(":")[0].endswith(".py"):
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


def merge_reports(paths: list[Path], exclude: Path | None = None) -> dict[str, Any]:
    """One report from the reports of shards 1 to N of one run: byte for byte what the unsharded run writes.
    InputError, naming the file, for a report that is not a shard's, a missing or repeated shard, shards of
    different runs (another plan: other cases, fixtures or filters; another suite, Python, stacks or N) or shards
    that do not add up to their plan."""
    # The merged report's own folder may lie under the shards' folder: a second merge does not read its output.
    skipped = exclude.resolve() if exclude is not None else None
    found = [path for path in reports_in(paths) if skipped is None or skipped not in path.resolve().parents]
    if not found:
        raise InputError([Problem(", ".join(map(str, paths)), None, "no shard report.json here (beside the merged "
                                  "report's own folder)", "pass the folders the shards wrote their reports to")])
    documents = [(str(path), _read_report(path)) for path in found]
    _check_places(documents)
    plans = {json.dumps(document["shard"].get("plan"), sort_keys=True) for _, document in documents}
    if len(plans) > 1:
        raise InputError([Problem(shown, None, "its plan (the cases, fixtures, case and world files, adapter and "
                                               "stack code of the whole run) differs from another shard's: shards "
                                               "of other commits, or run with other filters",
                                  "run every shard on one commit with the same options", "/shard/plan")
                          for shown, _ in documents])
    plan = documents[0][1]["shard"].get("plan") or {}
    first_shown, first = documents[0]
    reference = {key: value for key, value in first["measured"].items() if key != "fixtures"}
    problems: list[Problem] = []
    files: dict[str, str] = {}
    for shown, document in documents:
        here = {key: value for key, value in document["measured"].items() if key != "fixtures"}
        if here != reference:
            problems.append(Problem(shown, None, f"measured with {_spelled(here)}, while {first_shown} was measured "
                                                 f"with {_spelled(reference)}",
                                    "run every shard with the same suite, Python and stacks", "/measured"))
        for path, digest in document["shard"]["fixture_files"].items():
            if files.setdefault(path, digest) != digest:
                problems.append(Problem(shown, None, f"{path} has other content than in another shard",
                                        "run every shard on the same commit", "/shard/fixture_files"))
    ran = {row["case"] for _, document in documents for row in document["results"]}
    if sorted(ran) != plan.get("cases") or fixture_digest(files) != plan.get("fixtures"):
        missing = sorted(set(plan.get("cases") or ()) - ran)
        problems.append(Problem(", ".join(shown for shown, _ in documents), None,
                                "the shards do not add up to their plan" + (
                                    f": no rows for {', '.join(missing[:5])}" + (" …" if len(missing) > 5 else "")
                                    if missing else ": other cases or fixture files than planned"),
                                "pass the reports of one run's N shards, unmodified", "/shard/plan"))
    if problems:
        raise InputError(problems)
    measured_with = {key: reference[key] for key in ("suite", "python", "stacks", "selection") if key in reference}
    return assemble([row for _, document in documents for row in document["results"]],
                    [provider for _, document in documents for provider in document["providers"]],
                    [finding for _, document in documents for finding in document.get("findings", [])],
                    [cell for _, document in documents for cell in document.get("differs", [])],
                    measured_with, files)


def _check_places(documents: list[tuple[str, dict[str, Any]]]) -> None:
    """Every report is a shard's, all of one N, each of 1..N exactly once."""
    problems: list[Problem] = []
    shards: dict[int, str] = {}
    counts = set()
    for shown, document in documents:
        shard = document["shard"]
        counts.add(shard["of"])
        if shard["index"] in shards:
            problems.append(Problem(shown, None, f"shard {shard['index']}/{shard['of']} is given twice (also "
                                                 f"{shards[shard['index']]})", "pass each shard's report once",
                                    "/shard/index"))
        shards[shard["index"]] = shown
    if problems:
        raise InputError(problems)
    if len(counts) > 1:
        raise InputError([Problem(shown, None, f"shard of {document['shard']['of']}, while others are of another "
                                               f"count ({', '.join(str(count) for count in sorted(counts))})",
                                  "merge the shards of one run, all with the same N", "/shard/of")
                          for shown, document in documents])
    count = counts.pop()
    missing = sorted(set(range(1, count + 1)) - set(shards))
    if missing:
        raise InputError([Problem(", ".join(shown for shown, _ in documents), None,
                                  f"shard(s) {', '.join(f'{index}/{count}' for index in missing)} missing",
                                  "pass every shard's report.json: a merge of some shards would read as the "
                                  "whole matrix")])


def _spelled(measured: Mapping[str, Any]) -> str:
    return json.dumps(measured, sort_keys=True)


def _malformed(shard: dict[str, Any], document: dict[str, Any]) -> str | None:
    """The pointer of the first field merge cannot trust, or None."""
    count, index, files = shard.get("of"), shard.get("index"), shard.get("fixture_files")
    if type(count) is not int or count < 1:
        return "/shard/of"
    if type(index) is not int or not 1 <= index <= count:
        return "/shard/index"
    if not isinstance(files, dict) or not all(isinstance(digest, str) and re.fullmatch("[0-9a-f]{64}", digest)
                                              for digest in files.values()):
        return "/shard/fixture_files"
    if not isinstance(document.get("measured"), dict):
        return "/measured"
    providers = document.get("providers")
    if not isinstance(providers, list) or not all(isinstance(item, str) for item in providers):
        return "/providers"
    return None


def _read_report(path: Path) -> dict[str, Any]:
    """A shard's report, its parts merge relies on checked: InputError, naming the file and field, otherwise."""
    document = read_report(path)
    shown = str(path)
    shard = document.get("shard")
    if not isinstance(shard, dict):
        raise InputError([Problem(shown, None, "not a shard's report (no 'shard' object with index, of and "
                                               "fixture_files)", "pass the report.json of each run with --shard I/N",
                                  "/shard")])
    wrong = _malformed(shard, document)
    if wrong:
        raise InputError([Problem(shown, None, f"{wrong} is missing or malformed", "pass an unmodified shard report",
                                  wrong)])
    problems = [Problem(str(path), None, f"results[{index}] {wrong}", "pass an unmodified report.json",
                        f"/results/{index}")
                for index, row in enumerate(document["results"]) if (wrong := row_shape_problem(row))]
    if problems:
        raise InputError(problems[:20])
    summary: dict[str, Any] = document["summary"] if isinstance(document.get("summary"), dict) else {}
    rows = document["results"]
    counted = {"rows": len(rows), "passed": sum(1 for row in rows if row.get("passed") is True),
               "cases": len({row["case"] for row in rows})}
    if any(summary.get(name) != value for name, value in counted.items()):
        # A row removed (or a verdict edited) by hand leaves the summary the shard wrote behind.
        raise InputError([Problem(shown, None, f"its results ({counted['rows']} rows, {counted['passed']} passed) "
                                               f"do not match its summary ({summary.get('rows')} rows, "
                                               f"{summary.get('passed')} passed): the report was edited",
                                  "pass the report.json each shard wrote, unmodified", "/summary")])
    return document
