"""The suite's cost at scale, this tree beside an earlier one, in one run: docs/performance.md's table.

Run: ``.venv/bin/python benchmarks/table.py [--before DIR] [--sizes 1000,5000,20000] [--pairs 3] [--update]
[--stacks]``. ``DIR`` is a checkout of an earlier commit (``git worktree add ../before <commit>``); both trees run
on this virtualenv's packages, each with its own code first on ``PYTHONPATH``. Not a test: the figures depend on
the machine. Every figure is a whole process, timed A B A B … (this tree, the earlier one, the bare test) so that a
machine that slows down slows every side alike; each cell is the median of the pairs, and a ratio is the median of
the pair-by-pair ratios. Peak memory is each process's own maximum resident set (``wait4``).

Measured, per tree:

- the case items of a task set of N items (copies of the bundled catalogue, snapshots reviewed before timing) in one
  serial pytest process, against a bare parametrized test of as many items: seconds, ratio, peak RSS;
- the engine alone on the 5,000-item set (no pytest, no snapshot: ``benchmarks/run.py --phases``' engine), and the
  lowest ratio it leaves (bare + engine) / bare;
- ``--update``: ``pytest --snapshot-update`` on the largest set with no snapshot yet: seconds, peak RSS;
- ``--stacks``: ``conformance run --stack all`` over the bundled cases (every installed SDK, gateway and telemetry
  lane): seconds, rows;
- ``conformance --help``: seconds, and the modules it imports.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.run import ENGINE_CODE, child_environment, items_per_copy  # noqa: E402
from tests.helpers import copied_cases  # noqa: E402

BARE = "import pytest\n\n\n@pytest.mark.parametrize('item', range({n}))\ndef test_item(item):\n    assert item >= 0\n"


def measured(command: list[str], cwd: Path, tree: Path | None, ok: tuple[int, ...] = (0,)) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB and standard output of one process; ``tree`` first on its ``PYTHONPATH``; an
    exit code outside ``ok`` stops the benchmark. ``python -m`` and ``-c`` put ``cwd`` first on ``sys.path``: a
    command that runs a tree's own checkout runs in it."""
    environment = child_environment(*([str(tree)] if tree is not None else []))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, env=environment)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace")
        if process.returncode not in ok:
            raise SystemExit(f"{' '.join(command)} failed ({process.returncode}) in {cwd}:\n{text[-3000:]}"
                             f"{err.read().decode(errors='replace')[-3000:]}")
    return elapsed, usage.ru_maxrss / 1024, text


def pytest_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *arguments]


def task_set(folder: Path, items: int) -> int:
    """``folder/cases``: whole copies of the catalogue holding at least ``items`` items; ``folder/bare``: the bare
    test of as many items. Returns the item count."""
    per_copy = items_per_copy()
    copies = -(-items // per_copy)
    copied_cases(folder / "cases", copies)
    (folder / "bare").mkdir()
    (folder / "bare" / "test_bare.py").write_text(BARE.format(n=copies * per_copy))
    return copies * per_copy


def trees(before: Path | None) -> list[tuple[str, Path]]:
    return [("now", ROOT), *([("before", before)] if before is not None else [])]


def median_of(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def items_rows(sides: list[tuple[str, Path]], sizes: list[int], pairs: int, scratch: Path) -> list[list[str]]:
    rows = []
    for size in sizes:
        folder = scratch / f"set{size}"
        count = task_set(folder, size)
        plugin = ["--conformance-cases=cases", "cases"]
        measured(pytest_command(*plugin, "--conformance-report=", "--snapshot-update"), folder, ROOT)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in [*sides, ("bare", ROOT)]}
        for _ in range(pairs):
            seconds, rss, _ = measured(pytest_command("bare"), folder, ROOT)
            runs["bare"].append({"s": seconds, "rss": rss})
            for name, tree in sides:
                seconds, rss, _ = measured(pytest_command(*plugin, f"--conformance-report={folder / name}"), folder,
                                           tree)
                runs[name].append({"s": seconds, "rss": rss, "ratio": seconds / runs["bare"][-1]["s"]})
        if len(sides) > 1:
            same = all((folder / "now" / name).read_bytes() == (folder / "before" / name).read_bytes()
                       for name in ("report.json", "report.md", "report.html"))
            print(f"  {count:,} items: reports byte-identical between the trees: {same}", flush=True)
        rows.append([f"pytest case items vs bare, {count:,} items",
                     *(f"{median_of(runs[name], 'ratio'):.2f}x ({median_of(runs[name], 's'):.1f} s)"
                       for name, _ in sides), f"bare {median_of(runs['bare'], 's'):.1f} s"])
        rows.append([f"peak RSS, {count:,} items", *(f"{median_of(runs[name], 'rss'):.0f} MiB" for name, _ in sides),
                     f"bare {median_of(runs['bare'], 'rss'):.0f} MiB"])
        if size == 5000 or size == sizes[-1] and 5000 not in sizes:
            engine: dict[str, list[float]] = {name: [] for name, _ in sides}
            for _ in range(pairs):
                for name, tree in sides:
                    seconds, _, _ = measured([sys.executable, "-c", ENGINE_CODE, str(folder / "cases"),
                                              str(folder / f"engine-{name}")], folder, tree)
                    engine[name].append(seconds)
            bare = median_of(runs["bare"], "s")
            rows.append([f"engine alone, {count:,} items: floor (bare + engine) / bare",
                         *(f"{(bare + statistics.median(engine[name])) / bare:.2f}x" for name, _ in sides), ""])
        rows.extend(update_rows(sides, folder, count) if size == sizes[-1] and UPDATE else [])
        shutil.rmtree(folder)
    return rows


def update_rows(sides: list[tuple[str, Path]], folder: Path, count: int) -> list[list[str]]:
    """``--snapshot-update`` on the set with its snapshots removed first, once per tree."""
    cells = []
    for _, tree in sides:
        shutil.rmtree(folder / "cases" / "__snapshots__", ignore_errors=True)
        seconds, rss, _ = measured(pytest_command("--conformance-cases=cases", "cases", "--conformance-report=",
                                                  "--snapshot-update"), folder, tree)
        cells.append(f"{seconds:.1f} s, {rss:.0f} MiB")
    return [[f"--snapshot-update on a fresh {count:,}-item set", *cells, ""]]


def help_rows(sides: list[tuple[str, Path]], pairs: int) -> list[list[str]]:
    times: dict[str, list[float]] = {name: [] for name, _ in sides}
    modules: dict[str, int] = {}
    probe = ("import sys, runpy; sys.argv = ['conformance', '--help']\n"
             "try:\n    runpy.run_module('conformance', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(len(sys.modules), file=sys.stderr)")
    for _ in range(max(pairs, 5)):
        for name, tree in sides:
            seconds, _, _ = measured([sys.executable, "-m", "conformance", "--help"], tree, tree)
            times[name].append(seconds)
    for name, tree in sides:
        environment = {**os.environ, "PYTHONPATH": str(tree)}
        completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment,
                                   check=True, cwd=tree)
        modules[name] = int(completed.stderr.strip().splitlines()[-1])
    return [["conformance --help", *(f"{statistics.median(times[name]):.3f} s, {modules[name]} modules"
                                     for name, _ in sides), ""]]


LITELLM_ID = re.compile(rb"chatcmpl-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""The response id LiteLLM makes up per call when the vendor's answer has none it keeps: masked before comparing."""


def stack_rows(sides: list[tuple[str, Path]], scratch: Path) -> list[list[str]]:
    """``conformance run --stack all``, serial on each tree and with ``--jobs 2`` on this one; exit 1 is a run with
    failing rows (the gateways' findings), not a failed benchmark."""
    cells, reports = [], {}
    for name, tree, jobs in [*((name, tree, []) for name, tree in sides), ("now-jobs", ROOT, ["--jobs", "2"])]:
        out = scratch / f"stacks-{name}"
        seconds, rss, _ = measured([sys.executable, "-m", "conformance", "run", "--stack", "all", *jobs,
                                    "--report-dir", str(out)], tree, tree, ok=(0, 1))
        rows = json.loads((out / "report.json").read_text())["summary"]["rows"]
        cells.append(f"{seconds:.1f} s, {rows} rows, {rss:.0f} MiB")
        reports[name] = [LITELLM_ID.sub(b"chatcmpl-<id>", (out / file).read_bytes())
                         for file in ("report.json", "report.md", "report.html")]
    for name in reports:
        if name != "now":
            print(f"  --stack all, reports of {name} and now equal with LiteLLM's ids masked: "
                  f"{reports[name] == reports['now']}", flush=True)
    return [["conformance run --stack all (serial; --jobs 2)", *cells[:len(sides)], f"--jobs 2: {cells[-1]}"]]


UPDATE = False


def main() -> int:
    global UPDATE  # noqa: PLW0603 - one flag read by the size loop
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="a checkout of the earlier tree to measure beside this one")
    parser.add_argument("--sizes", default="1000,5000,20000", help="task-set sizes (default 1000,5000,20000)")
    parser.add_argument("--pairs", type=int, default=3, help="interleaved runs of each side (default 3)")
    parser.add_argument("--update", action="store_true", help="also --snapshot-update on the largest fresh set")
    parser.add_argument("--stacks", action="store_true", help="also conformance run --stack all (minutes)")
    arguments = parser.parse_args()
    UPDATE = arguments.update
    sides = trees(arguments.before.resolve() if arguments.before else None)
    sizes = [int(size) for size in arguments.sizes.split(",") if size]
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="conformance-table-") as folder:
        for measure in (lambda: help_rows(sides, arguments.pairs),
                        lambda: items_rows(sides, sizes, arguments.pairs, Path(folder)),
                        *([lambda: stack_rows(sides, Path(folder))] if arguments.stacks else [])):
            for row in measure():  # each figure shown as it is measured, and the table again at the end
                print("  " + " | ".join(row), flush=True)
                rows.append(row)
    header = ["what", *(name for name, _ in sides), "beside"]
    widths = [max(len(row[index]) for row in [header, *rows]) for index in range(len(header))]
    for row in [header, ["-" * width for width in widths], *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
