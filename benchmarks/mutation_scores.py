"""Function-body mutation scores per module, from a finished ``mutmut run`` (``mutants/**/*.meta``).

Run: ``scripts/mutation`` (runs mutmut, then this, then the table mutator). Score = killed / (killed + survived
+ timeout + no tests); mutants that are not checked yet are counted apart. ``--survivors`` lists each
surviving mutant's name, to read with ``mutmut show NAME``. Exits 1 when a module scores under ``--goal``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# mutmut's exit codes (mutmut/stats.py): 1 and 3 a failing test, 0 every test passed, 5 and 33 no test ran the
# function, 36/24/-24/152/255 a time limit, 37 the type checker refused the mutant, None not run yet.
STATUS = {1: "killed", 3: "killed", 37: "killed", 0: "survived", 5: "no tests", 33: "no tests", 36: "timeout",
          24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout", None: "not checked"}


def scores(mutants: Path) -> dict[str, Counter[str]]:
    """Mutant statuses per source file."""
    found: dict[str, Counter[str]] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        found[str(meta.relative_to(mutants))[: -len(".meta")]] = Counter(STATUS.get(code, "suspicious")
                                                                          for code in codes.values())
    return found


def survivors(mutants: Path) -> list[str]:
    """Names of the mutants every test let through."""
    names = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        names += [name for name, code in codes.items() if STATUS.get(code) in ("survived", "no tests")]
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=Path, default=ROOT / "mutants")
    parser.add_argument("--goal", type=float, default=90.0, help="lowest acceptable score per module, in %%")
    parser.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    arguments = parser.parse_args()
    table = scores(arguments.mutants)
    if not table:
        print(f"no mutmut results under {arguments.mutants}: run `mutmut run` first", file=sys.stderr)
        return 2
    print(f"{'module':<46}{'mutants':>8}{'killed':>8}{'survived':>9}{'no tests':>9}{'timeout':>8}{'score':>7}")
    under = 0
    for path, counts in table.items():
        decided = counts["killed"] + counts["survived"] + counts["no tests"] + counts["timeout"]
        score = 100.0 * counts["killed"] / decided if decided else 0.0
        under += score < arguments.goal
        pending = f"  ({counts['not checked']} not checked)" if counts["not checked"] else ""
        print(f"{path:<46}{sum(counts.values()):>8}{counts['killed']:>8}{counts['survived']:>9}"
              f"{counts['no tests']:>9}{counts['timeout']:>8}{score:>6.0f}%{pending}")
    if arguments.survivors:
        print("\n".join(["", "survivors (read one with `mutmut show NAME`):", *survivors(arguments.mutants)]))
    return 1 if under else 0


if __name__ == "__main__":
    sys.exit(main())
