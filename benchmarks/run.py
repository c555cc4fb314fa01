"""The suite's cost, measured side by side with its alternatives, in one run (medians of several repetitions).

Run: ``.venv/bin/python benchmarks/run.py [--quick]``. Prints a table of ratios and writes it to
``reports/benchmark.json``. Not a test: the figures depend on the machine. ``--quick`` uses fewer
repetitions and only the 1,000-item task set. ``--phases 5000`` prints, instead, where one run's time goes
(start-up, collection, the items, the session's end) beside the bare test's, per item, then what the engine alone
costs on the same task set outside pytest, and so the lowest ratio its checks leave room for.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from deepdiff import DeepDiff  # noqa: E402

from conformance.engine.cases import load_cases  # noqa: E402
from conformance.engine.classify import classify_response  # noqa: E402
from conformance.engine.registry import builtin_adapters  # noqa: E402
from conformance.engine.runner import modes_for, run_all  # noqa: E402
from conformance.engine.schemas import validator  # noqa: E402
from conformance.report.build import build_report  # noqa: E402
from conformance.report.diff import compare  # noqa: E402
from tests.helpers import copied_cases  # noqa: E402

CASES = ROOT / "cases"


def median(work: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def items_per_copy() -> int:
    adapters = builtin_adapters()
    return sum(len(modes_for(case, provider, adapters[provider]))
               for case in load_cases([CASES]) for provider in case.providers if provider in adapters)


def synthetic_cases(folder: Path, items: int) -> int:
    """Copies of the bundled cases, renamed, until they hold at least ``items`` case × provider × mode items."""
    per_copy = items_per_copy()
    copies = -(-items // per_copy)
    copied_cases(folder / "cases", copies)
    return copies * per_copy


def child_environment(*first_on_path: str) -> dict[str, str]:
    """The environment of a timed child process: bytecode written, as a team's CI and laptop do. Under
    ``PYTHONDONTWRITEBYTECODE`` pytest rewrites every installed pytest plugin's modules at each start (at 5,080
    items here: the bare test 4.4 s with bytecode written, 6.0 s without), which would move both sides' fixed cost
    and so every ratio. ``first_on_path``: folders put first on ``PYTHONPATH``."""
    environment = dict(os.environ)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    if first_on_path:
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [*first_on_path, os.environ.get("PYTHONPATH")]))
    return environment


def pytest_seconds(arguments: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments],
                               cwd=cwd, capture_output=True, text=True, check=False, env=child_environment())
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise SystemExit(f"pytest failed: {completed.stdout[-2000:]}{completed.stderr[-2000:]}")
    return elapsed


def both_sides(work: Path, items: int) -> int:
    """In ``work``: the synthetic cases with their snapshots reviewed (written once, before any timing) and a bare
    parametrized test of as many items (``bare/``); the number of case items."""
    actual = synthetic_cases(work, items)
    bare = work / "bare"
    bare.mkdir()
    (bare / "test_bare.py").write_text(
        f"import pytest\n\n\n@pytest.mark.parametrize('item', range({actual}))\n"
        "def test_item(item):\n    assert item >= 0\n")
    pytest_seconds(plugin(work, "report", "--snapshot-update"), work)
    return actual


def phase_seconds(arguments: list[str], cwd: Path) -> dict[str, float]:
    """One pytest process's phases (``benchmarks/phase_timer.py``); "start-up and exit" is its wall time less the
    rest: the interpreter, imports and plugins before pytest configures, and the interpreter's exit after."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "phases.json"
        environment = {**child_environment(str(ROOT)), "PHASE_TIMES": str(target)}
        start = time.perf_counter()
        completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                                    "benchmarks.phase_timer", *arguments], cwd=cwd, capture_output=True, text=True,
                                   check=False, env=environment)
        elapsed = time.perf_counter() - start
        if completed.returncode != 0:
            raise SystemExit(f"pytest failed: {completed.stdout[-2000:]}{completed.stderr[-2000:]}")
        phases = json.loads(target.read_text())
    inside = phases.pop("inside pytest")
    return {"start-up and exit": elapsed - inside, **phases, "total": elapsed}


def phases(items: int, repeats: int) -> None:
    """Where the time of a run of ``items`` case items goes, phase by phase, beside a bare parametrized test of as
    many items (medians of ``repeats`` runs each); then the engine's own work on the same task set outside pytest, and
    the lowest ratio the checks leave room for."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        actual = both_sides(work, items)
        ours = [phase_seconds(plugin(work, "report"), work) for _ in range(repeats)]
        theirs = [phase_seconds(["bare"], work) for _ in range(repeats)]
        engine = [engine_seconds(work) for _ in range(repeats)]
    print(f"{actual:,} items, medians of {repeats} serial runs each\n")
    print(f"{'phase':<18}{'case items':>12}{'bare test':>12}{'extra per item':>16}")
    for name in ours[0]:
        mine = statistics.median(run[name] for run in ours)
        other = statistics.median(run[name] for run in theirs)
        print(f"{name:<18}{mine:>11.2f}s{other:>11.2f}s{(mine - other) / actual * 1000:>13.2f} ms")
    bare = statistics.median(run["total"] for run in theirs)
    total = statistics.median(run["total"] for run in ours) / bare
    print(f"\nratio of the totals: {total:.2f}x")
    print("\nthe engine alone on the same task set, outside pytest (no snapshots, no pytest):")
    for name in engine[0]:
        seconds = statistics.median(run[name] for run in engine)
        print(f"{name:<18}{seconds:>11.2f}s{seconds / actual * 1000:>24.2f} ms per item")
    floor = (bare + statistics.median(run["total"] for run in engine)) / bare
    print(f"\nlowest ratio with these checks, were pytest's item and the snapshots free: {floor:.2f}x")


ENGINE_CODE = """
import json, sys, time
from pathlib import Path
from conformance.session import Run
run = Run.configure()
start = time.perf_counter()
cases = run.load([Path(sys.argv[1])])
loaded = time.perf_counter()
for case in cases:
    for item in run.plan(case):
        run.execute(item)
ran = time.perf_counter()
run.write(run.report(run.fixture_files(cases), {}), Path(sys.argv[2]))
end = time.perf_counter()
print(json.dumps({"cases loaded": loaded - start, "items run": ran - loaded, "reports": end - ran,
                  "total": end - start}))
"""
"""The engine alone: ``python -c ENGINE_CODE CASES REPORT_DIR`` prints its phases as one JSON line."""


def engine_seconds(work: Path) -> dict[str, float]:
    """The engine's own work on ``work/cases`` in a fresh interpreter, as a pytest session does it but with no pytest
    and no snapshot: the cases loaded (YAML, schemas, fixtures), every planned item run (replay, classification, the
    tool loop, correlation, the request checks, the row kept), the three reports built and written."""
    environment = child_environment(str(ROOT))
    completed = subprocess.run([sys.executable, "-c", ENGINE_CODE, str(work / "cases"), str(work / "engine-report")],
                               capture_output=True, text=True, check=False, env=environment)
    if completed.returncode != 0:
        raise SystemExit(f"the engine run failed: {completed.stderr[-2000:]}")
    timings: dict[str, float] = json.loads(completed.stdout.splitlines()[-1])
    return timings


def plugin(work: Path, report: str, *extra: str) -> list[str]:
    return ["--conformance-cases=cases", "cases", f"--conformance-report={work / report}", *extra]


def suite_overhead(items: int, repeats: int, results: dict[str, Any]) -> None:
    """The case items against a bare parametrized test of as many items, both serial, in fresh pytest processes;
    the items check their reviewed snapshots (written once before timing), as a team's suite does."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        actual = both_sides(work, items)
        ours = statistics.median(pytest_seconds(plugin(work, "report"), work) for _ in range(repeats))
        baseline = statistics.median(pytest_seconds(["bare"], work) for _ in range(repeats))
        results[f"suite_overhead_{items}"] = {"items": actual, "ours_s": ours, "bare_s": baseline,
                                              "ratio": ours / baseline, "goal": "<= 1.3"}
        if items == 5000:
            parallel = statistics.median(pytest_seconds(plugin(work, "report-n2", "-n", "2"), work)
                                         for _ in range(repeats))
            identical = (work / "report/report.json").read_bytes() == (work / "report-n2/report.json").read_bytes()
            results["xdist_5000"] = {"items": actual, "serial_s": ours, "n2_s": parallel,
                                     "speedup": ours / parallel, "reports_identical": identical}
        if items == 20000:
            shards = [pytest_seconds(plugin(work, f"shard{index}", f"--conformance-shard={index}/4"), work)
                      for index in (1, 2, 3, 4)]
            merged = subprocess.run([sys.executable, "-m", "conformance", "merge",
                                     *(str(work / f"shard{index}") for index in (1, 2, 3, 4)),
                                     "--report-dir", str(work / "merged")], capture_output=True, check=False)
            identical = merged.returncode == 0 and all(
                (work / "report" / name).read_bytes() == (work / "merged" / name).read_bytes()
                for name in ("report.json", "report.md", "report.html"))
            rows = [json.loads((work / f"shard{index}/report.json").read_text())["summary"]["rows"]
                    for index in (1, 2, 3, 4)]
            results["shards_20000"] = {"items": actual, "serial_s": ours, "slowest_shard_s": max(shards),
                                       "speedup": ours / max(shards), "shard_s": shards, "shard_rows": rows,
                                       "merged_identical": identical}


def bodies(provider: str) -> list[bytes]:
    found = []
    for case in load_cases([CASES]):
        fixtures = case.providers.get(provider)
        kinds = case.expectation_for(provider).turns or ()
        for index, turn in enumerate(fixtures.turns if fixtures else ()):
            if turn.status < 400 and turn.has_body and not (index < len(kinds) and kinds[index] == "unsupported"):
                found.append(json.dumps(turn.body).encode())
    for path in sorted((ROOT / "tests/fixtures" / provider).glob("body-*.json")):
        found.append(path.read_bytes())
    return found


def sdk_parsers() -> dict[str, Callable[[Any], object]]:
    from anthropic.types import Message
    from google.genai.types import GenerateContentResponse
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

    return {"openai-responses": Response.model_validate, "openai-chat": ChatCompletion.model_validate,
            "anthropic-messages": Message.model_validate, "gemini": GenerateContentResponse.model_validate}


def classification(repeats: int, results: dict[str, Any]) -> None:
    import warnings

    warnings.simplefilter("ignore")  # google-genai warns on open enum values
    adapters = builtin_adapters()
    for provider, parse in sdk_parsers().items():
        data = bodies(provider)
        rounds = max(1, 2000 // len(data))

        def ours(adapter: Any = adapters[provider], data: list[bytes] = data, rounds: int = rounds) -> None:
            for _ in range(rounds):
                for raw in data:
                    classify_response(adapter, 200, {}, json.loads(raw))

        def sdk(parse: Callable[[Any], object] = parse, data: list[bytes] = data, rounds: int = rounds) -> None:
            for _ in range(rounds):
                for raw in data:
                    parse(json.loads(raw))

        mine, theirs = median(ours, repeats), median(sdk, repeats)
        results[f"classify_{provider}"] = {"bodies": len(data) * rounds, "ours_s": mine, "sdk_s": theirs,
                                           "ratio": theirs / mine, "goal": ">= 8"}


def case_loading(repeats: int, results: dict[str, Any]) -> None:
    import jsonschema

    texts = [path.read_text(encoding="utf-8") for path in sorted(CASES.glob("*/case.yaml"))]
    c_loader = getattr(yaml, "CSafeLoader", None)
    fast = median(lambda: [yaml.load(text, Loader=c_loader) for text in texts], repeats) if c_loader else None
    slow = median(lambda: [yaml.load(text, Loader=yaml.SafeLoader) for text in texts], repeats)
    documents = [yaml.load(text, Loader=yaml.SafeLoader) for text in texts]
    compiled = validator("case.schema.json")
    schema = compiled.schema
    once = median(lambda: [list(compiled.iter_errors(document)) for document in documents], repeats)
    each = median(lambda: [jsonschema.validate(document, schema) for document in documents], repeats)
    results["yaml_load"] = {"files": len(texts), "libyaml_s": fast, "pure_python_s": slow,
                            "ratio": slow / fast if fast else None}
    results["schema_validation"] = {"documents": len(documents), "compiled_once_s": once,
                                    "validate_each_call_s": each, "ratio": each / once}


def report_diff(repeats: int, results: dict[str, Any]) -> None:
    adapters = builtin_adapters()
    rows = run_all(load_cases([CASES]), adapters)
    grown = []
    copy = 0
    while len(grown) < 2000:
        for row in rows:
            if len(grown) < 2000:
                grown.append({**json.loads(json.dumps(row)), "case": f"{row['case']}_{copy:03d}"})
        copy += 1
    old = build_report(grown, list(adapters))
    new = json.loads(json.dumps(old))
    changed_keys = set()
    for index in range(0, 2000, 100):  # 20 changed rows
        row = new["results"][index]
        row["usage"]["output_tokens"] = (row["usage"]["output_tokens"] or 0) + 1
        changed_keys.add((row["case"], row["provider"], row["mode"]))
    old_rows = {(row["case"], row["provider"], row["mode"]): row for row in old["results"]}
    new_rows = {(row["case"], row["provider"], row["mode"]): row for row in new["results"]}
    keyed = median(lambda: compare(old_rows, new_rows), repeats)
    whole = median(lambda: DeepDiff(old, new), max(1, repeats // 2))
    ours = {change.key for change in compare(old_rows, new_rows)}
    theirs = set()
    for path in DeepDiff(old, new).affected_paths:
        index = int(path.split("['results'][", 1)[1].split("]", 1)[0])
        row = old["results"][index]
        theirs.add((row["case"], row["provider"], row["mode"]))
    results["report_diff"] = {"rows": 2000, "changed": len(changed_keys), "keyed_s": keyed, "deepdiff_s": whole,
                              "ratio": whole / keyed, "same_findings": ours == theirs == changed_keys, "goal": ">= 20"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, 1,000 items only")
    parser.add_argument("--phases", type=int, metavar="ITEMS",
                        help="only time the phases of one run of ITEMS case items against the bare test, and print "
                             "them (nothing written)")
    parser.add_argument("--repeats", type=int, default=3, help="with --phases: runs of each side (default 3)")
    arguments = parser.parse_args()
    if arguments.phases:
        phases(arguments.phases, arguments.repeats)
        return 0
    repeats = 3 if arguments.quick else 5
    results: dict[str, Any] = {}
    case_loading(repeats * 4, results)
    classification(repeats, results)
    report_diff(repeats, results)
    for items in ((1000,) if arguments.quick else (1000, 5000, 20000)):
        suite_overhead(items, 3 if items < 5000 else 2, results)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"machine: {machine}\n")
    print(f"{'measure':<34}{'ours':>12}{'alternative':>14}{'ratio':>10}  goal / note")
    rows = [
        ("YAML load (libyaml vs pure Python)", "yaml_load", "libyaml_s", "pure_python_s", "ratio", ""),
        ("schema: compiled once vs per call", "schema_validation", "compiled_once_s", "validate_each_call_s", "ratio",
         ""),
    ]
    rows += [(f"classify vs SDK: {provider}", f"classify_{provider}", "ours_s", "sdk_s", "ratio", ">= 8x")
             for provider in sdk_parsers()]
    rows += [("report diff vs whole DeepDiff", "report_diff", "keyed_s", "deepdiff_s", "ratio", ">= 20x")]
    for items in (1000, 5000, 20000):
        rows.append((f"pytest, {items:,} items vs bare", f"suite_overhead_{items}", "ours_s", "bare_s", "ratio",
                     "<= 1.3x (ratio = ours/bare)"))
    rows.append(("pytest -n 2 vs serial (5,000)", "xdist_5000", "n2_s", "serial_s", "speedup", "speedup"))
    rows.append(("4 shards vs serial (20,000)", "shards_20000", "slowest_shard_s", "serial_s", "speedup",
                 "speedup (slowest shard)"))
    for title, key, ours, other, ratio, goal in rows:
        if key not in results:
            continue
        entry = results[key]
        note = goal
        if key == "report_diff":
            note += f", same findings: {entry['same_findings']}"
        if key == "xdist_5000":
            note += f", reports identical: {entry['reports_identical']}"
        if key == "shards_20000":
            note += (f", rows per shard {entry['shard_rows']}, merged report identical: "
                     f"{entry['merged_identical']}")
        print(f"{title:<34}{entry[ours]:>11.3f}s{entry[other]:>13.3f}s{entry[ratio]:>9.1f}x  {note}")
    out = ROOT / "reports" / "benchmark.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
