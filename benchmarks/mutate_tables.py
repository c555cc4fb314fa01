"""Table mutation testing: does some test fail when one row of a vendor table is wrong?

Run: ``.venv/bin/python benchmarks/mutate_tables.py [--jobs 2] [--only MODULE] [--timeout 120]``.

The adapters' vendor knowledge lives in module-level tables (stop reasons, finish reasons, error types and
codes). For every row this makes three mutants — the row deleted, its verdict or kind changed, its reason or
retryable flag changed — applies each inside a fresh pytest process (``benchmarks/mutation_plugin.py`` edits the
table in place before any test runs) and runs only the tests of that module's adapter, stopping at the first
failure. A mutant is killed when some test fails. Prints the score per table and every surviving mutant; exits 1
when any mutant survives. Function bodies are not mutated here (mutmut does that); see docs/hardening.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (module, table, the tests that own that adapter's behaviour).
TARGETS: list[tuple[str, str, list[str]]] = [
    ("conformance.providers.anthropic_messages.response", "STOP_REASONS", ["tests/test_anthropic_messages.py"]),
    ("conformance.providers.anthropic_messages.errors", "ERROR_TYPES", ["tests/test_anthropic_messages.py"]),
    ("conformance.providers.openai_chat.response", "FINISH_REASONS", ["tests/test_openai_chat.py"]),
    ("conformance.providers.openai_common.errors", "ERROR_CODES",
     ["tests/test_openai_chat.py", "tests/test_openai_responses.py"]),
    ("conformance.providers.openai_responses.response", "INCOMPLETE_REASONS", ["tests/test_openai_responses.py"]),
    ("conformance.providers.openai_responses.failures", "FAILED_CODES",
     ["tests/test_openai_responses.py", "tests/test_live_wire.py"]),
    ("conformance.providers.gemini.response", "FINISH_REASONS", ["tests/test_gemini.py"]),
    ("conformance.providers.gemini.errors", "RPC_STATUSES", ["tests/test_gemini.py"]),
    ("conformance.providers.bedrock_converse.response", "STOP_REASONS", ["tests/test_bedrock_converse.py"]),
    ("conformance.providers.bedrock_converse.errors", "ERROR_TYPES", ["tests/test_bedrock_converse.py"]),
]


def mutants(module: str, table: str) -> list[dict[str, Any]]:
    """Three mutants per row, described as plain data for the plugin."""
    rows = getattr(importlib.import_module(module), table)
    found: list[dict[str, Any]] = []
    for key, value in rows.items():
        base = {"module": module, "table": table, "key": key}
        found.append({**base, "action": "delete"})
        found.extend({**base, "action": "set", "value": replacement} for replacement in _replacements(value, rows))
    return found


def _replacements(value: Any, rows: dict[str, Any]) -> list[str]:
    """Python expressions (evaluated in the table's module) for a wrong kind and a wrong reason or flag."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool):
        reasons = sorted({reason for _, reason in rows.values() if reason != value[1]}) or ["other"]
        return [repr((not value[0], value[1])), repr((value[0], reasons[0]))]
    name = type(value).__name__
    wrong_kind = {"ContentDecides": "Truncated('other')", "Truncated": "ANSWER", "Refused": "ANSWER",
                  "Failed": "ANSWER", "MalformedCall": "ANSWER", "NotUsable": "ANSWER"}[name]
    wrong_detail = {
        "ContentDecides": f"ContentDecides(calls_required={not getattr(value, 'calls_required', False)})",
        "Truncated": "Truncated('other')" if getattr(value, "reason", "") != "other" else "Truncated('max_tokens')",
        "Refused": "Refused('model')" if getattr(value, "source", "") == "filter" else "Refused('filter')",
        "Failed": f"Failed(retryable={not getattr(value, 'retryable', False)}, "
                  f"reason={getattr(value, 'reason', '')!r})",
        "MalformedCall": f"MalformedCall(undeclared_tool={not getattr(value, 'undeclared_tool', False)})",
        "NotUsable": "Refused('filter')",
    }[name]
    return [wrong_kind, wrong_detail]


def run_mutant(mutant: dict[str, Any], tests: list[str], timeout: float) -> str:
    """``killed`` (a test failed), ``survived``, ``timeout``, or ``error`` (the mutant could not be applied)."""
    env = {**os.environ, "CONFORMANCE_MUTANT": json.dumps(mutant)}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "benchmarks.mutation_plugin", "-p", "no:cacheprovider",
               "-p", "no:randomly", *tests]
    try:
        completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "timeout"
    return {0: "survived", 1: "killed"}.get(completed.returncode, "error")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", help="only tables of modules whose name contains this")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant")
    arguments = parser.parse_args()
    survivors: list[str] = []
    totals = [0, 0]
    for module, table, tests in TARGETS:
        if arguments.only and arguments.only not in module:
            continue
        batch = mutants(module, table)
        with ThreadPoolExecutor(max_workers=arguments.jobs) as pool:
            verdicts = list(pool.map(lambda mutant: run_mutant(mutant, tests, arguments.timeout), batch))  # noqa: B023
        killed = sum(verdict == "killed" for verdict in verdicts)
        totals[0] += killed
        totals[1] += len(batch)
        print(f"{module}.{table}: {killed}/{len(batch)} killed ({killed / len(batch):.0%})", flush=True)
        survivors += [f"  {mutant['table']}[{mutant['key']!r}] {mutant['action']} {mutant.get('value', '')}: {verdict}"
                      for mutant, verdict in zip(batch, verdicts, strict=True) if verdict != "killed"]
    print(f"total: {totals[0]}/{totals[1]} killed ({totals[0] / max(totals[1], 1):.0%})")
    print("\n".join(survivors) if survivors else "no surviving mutant")
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
