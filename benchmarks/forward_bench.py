"""The forward-compatibility lane's cost beside the run it extends (medians of several repetitions, side by side).

Run: ``.venv/bin/python benchmarks/forward_bench.py [--repeat N] [--stack sdks]``. Not a test: the figures depend on
the machine (docs/forward.md, "Cost").

Each line is one ``Run`` in this process over the bundled cases and the five raw adapters (and the stacks given):

- the run's own items (``Run.execute`` for every planned item);
- the mutants alone (``Run.forward``: each mutant, and each lane's recorded case once for its rule);
- the run with ``--mutants``: the sum of the two.

It prints the items each makes, the median seconds, milliseconds per item and the ratio to the plain run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance import BUNDLED_CASES  # noqa: E402
from conformance.session import Run  # noqa: E402


def _median(function: Callable[[], int], repeat: int) -> tuple[int, float]:
    times, items = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        items = function()
        times.append(time.perf_counter() - start)
    return items, statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--stack", action="append", default=[], help="stacks to add (e.g. sdks)")
    arguments = parser.parse_args()

    def plain() -> int:
        run = Run.configure(stacks=arguments.stack)
        items = [item for case in run.load([BUNDLED_CASES]) for item in run.plan(case) if item.mode is not None]
        for item in items:
            run.execute(item)
        return len(items)

    def mutants() -> int:
        run = Run.configure(stacks=arguments.stack)
        section = run.forward(run.load([BUNDLED_CASES]))
        return sum(sum(cell.values()) for cells in section["lanes"].values() for cell in cells.values())

    lines = [("run", *_median(plain, arguments.repeat)), ("mutants", *_median(mutants, arguments.repeat))]
    lines.append(("run --mutants", lines[0][1] + lines[1][1], lines[0][2] + lines[1][2]))
    base = lines[0][2]
    print(f"{'':16} {'items':>7} {'seconds':>9} {'ms/item':>8} {'× run':>6}")
    for name, items, seconds in lines:
        print(f"{name:16} {items:>7} {seconds:>9.2f} {1000 * seconds / items:>8.2f} {seconds / base:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
