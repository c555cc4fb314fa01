"""The stack lane's cost beside the SDK's own (medians of several repetitions, printed side by side).

Run: ``.venv/bin/python benchmarks/stack_bench.py [--rows N]``. Not a test: the figures depend on the machine.

Every line replays the same two interactions: the two requests a row of the ``normal`` case sends through the openai
SDK on Chat Completions bodies (a tool call, then the answer), so each line makes the same SDK calls.

- the bare SDK, in process (``httpx2.MockTransport`` answering from the replay router): the floor;
- the bare SDK against the loopback replay server: what the socket and HTTP layer add;
- a whole stack row (``openai-chat@openai-sdk``, body mode), in process and through the loopback server: what the
  engine adds (the loop, the checks, the report row) on top of the SDK's two calls;
- the same row as each telemetry lane of Chat Completions (its spans read back), when the telemetry extra is
  installed: the instrumentation installed once for the lane's rows (``conformance run``), and around each row (a
  pytest item); the last column is each line's time beside the in-process stack row's;
- vcrpy replaying the two interactions with one cassette loaded per row, the way pytest-recording wraps each test
  (only when vcrpy is installed: ``pip install vcrpy``; it is not a dependency of the suite);
- pytest-recording itself against the stack lane, each as N pytest tests in a fresh pytest process (one cassette per
  test; one ``run_stack_case`` per test), timed from the end of collection to the end of the session (only when
  pytest-recording is installed; install it in a separate virtualenv: it adds its own ``--record-mode`` option to
  every pytest run).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import shutil
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

import httpx2  # noqa: E402
import openai  # noqa: E402

from conformance.engine.cases import Case, load_cases  # noqa: E402
from conformance.engine.registry import builtin_adapters  # noqa: E402
from conformance.replay.router import Replay  # noqa: E402
from conformance.replay.server import BackgroundServer, session_base  # noqa: E402
from conformance.stacks.runner import run_stack_case  # noqa: E402
from conformance.stacks.stack import builtin_stacks  # noqa: E402
from conformance.stacks.transports import httpx_transport  # noqa: E402

CASE_ID = "normal"
REPEATS = 5


def _rate(label: str, calls: int, work: Callable[[], object]) -> tuple[str, float]:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return label, calls / statistics.median(times)


def _record_cassette(vcr: Any, sent: list[dict[str, Any]], cases: list[Case], path: Path) -> str:
    """Record the row's two interactions once, from the replay server; returns the base URL they were recorded at
    (a cassette matches on host and port, so it is replayed against the same URL, with the server gone)."""
    with BackgroundServer(cases) as server:
        base = f"{session_base(server.base, CASE_ID, 'openai-chat', 'body')}/v1"
        client = openai.OpenAI(base_url=base, api_key="sk-replay", max_retries=0)
        with vcr.use_cassette(str(path), record_mode="all"):
            for request in sent:
                client.chat.completions.create(**request)
    return base


def _vcr_rates(rows: int, sent: list[dict[str, Any]], cases: list[Case]) -> list[tuple[str, float]]:
    try:
        import vcr
    except ImportError:
        print("vcrpy not installed: the cassette lines are left out (pip install vcrpy)")
        return []
    cassette = Path(tempfile.mkdtemp()) / "normal.yaml"
    base = _record_cassette(vcr, sent, cases, cassette)
    player = openai.OpenAI(base_url=base, api_key="sk-replay", max_retries=0)

    def work() -> None:
        for _ in range(rows):
            with vcr.use_cassette(str(cassette), record_mode="none"):
                for request in sent:
                    player.chat.completions.create(**request)

    results = [_rate(f"openai SDK + vcrpy {vcr.__version__}, one cassette per row", rows * len(sent), work)]
    return results + _pytest_rates(rows, sent, cassette, base)


TIMING_CONFTEST = """
import json, os, time
def pytest_collection_finish(session):
    session.config._bench_start = time.perf_counter()
def pytest_sessionfinish(session, exitstatus):
    elapsed = time.perf_counter() - session.config._bench_start
    with open(os.environ["BENCH_OUT"], "w") as out:
        json.dump({"elapsed": elapsed, "status": int(exitstatus)}, out)
"""
RECORDING_TESTS = """
import json, os
import openai, pytest
SENT = json.loads(os.environ["BENCH_SENT"])
CLIENT = openai.OpenAI(base_url=os.environ["BENCH_BASE"], api_key="sk-replay", max_retries=0)
@pytest.mark.vcr
@pytest.mark.parametrize("row", range(int(os.environ["BENCH_ROWS"])))
def test_row(row):
    for request in SENT:
        CLIENT.chat.completions.create(**request)
"""
STACK_TESTS = """
import os
from pathlib import Path
import pytest
from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.stacks.stack import builtin_stacks
from conformance.stacks.runner import run_stack_case
CASE = next(case for case in load_cases([Path(os.environ["BENCH_CASES"])]) if case.id == "normal")
CHAT, STACK = builtin_adapters()["openai-chat"], builtin_stacks()["openai-chat@openai-sdk"]
run_stack_case(CASE, STACK, CHAT, "body", True)  # warm up at collection, as the cassette tests build their client
@pytest.mark.parametrize("row", range(int(os.environ["BENCH_ROWS"])))
def test_row(row):
    result, error, _ = run_stack_case(CASE, STACK, CHAT, "body", True)
    assert error is None and result["passed"]
"""


def _pytest_rates(rows: int, sent: list[dict[str, Any]], cassette: Path, base: str) -> list[tuple[str, float]]:
    """pytest-recording and the stack lane as pytest tests, each in a fresh pytest process (medians of 3)."""
    if importlib.util.find_spec("pytest_recording") is None:
        print("pytest-recording not installed: its line is left out (pip install pytest-recording, in a separate "
              "virtualenv)")
        return []
    folder = Path(tempfile.mkdtemp())
    (folder / "conftest.py").write_text(TIMING_CONFTEST)
    (folder / "test_recording.py").write_text(RECORDING_TESTS)
    (folder / "test_stack.py").write_text(STACK_TESTS)
    for row in range(rows):  # pytest-recording's default: cassettes/<module>/<test id>.yaml, one per test
        target = folder / "cassettes" / "test_recording" / f"test_row[{row}].yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cassette, target)
    env = {**os.environ, "BENCH_SENT": json.dumps(sent), "BENCH_BASE": base, "BENCH_ROWS": str(rows),
           "BENCH_CASES": str(ROOT / "cases"), "PYTHONPATH": str(ROOT)}

    def timed(module: str, *options: str) -> float:
        times: list[float] = []
        for _ in range(3):
            env["BENCH_OUT"] = str(folder / "out.json")
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                            "--rootdir", str(folder), module, *options], cwd=folder, env=env, check=False,
                           stdout=subprocess.DEVNULL)
            out = json.loads((folder / "out.json").read_text())
            if out["status"] != 0:
                raise SystemExit(f"{module} failed under pytest (exit {out['status']}): run it in {folder} to see why")
            times.append(float(out["elapsed"]))
        return rows * len(sent) / statistics.median(times)

    version = importlib.metadata.version("pytest-recording")
    return [(f"pytest-recording {version}: one test per row, one cassette per test", timed("test_recording.py",
                                                                                          "--record-mode=none")),
            ("stack lane as pytest tests: one test per row, in process", timed("test_stack.py"))]


def _telemetry_rates(rows: int, calls: int, case: Case, chat: Any) -> list[tuple[str, float]]:
    """The same stack row as a telemetry lane (docs/telemetry.md), its spans kept in memory and read back (only when
    the telemetry extra is installed): with the instrumentation installed once for the lane's rows, as ``conformance
    run`` runs them (``keeping``), and installed and removed around each row, as one pytest item runs."""
    from conformance.stacks.stack import select_stacks
    from conformance.stacks.telemetry import keeping

    lanes = [lane for lane in select_stacks(["telemetry"]) if lane.provider == "openai-chat"]
    if any(lane.skip_reason() for lane in lanes):
        print("the telemetry extra is not installed: its lines are left out (pip install 'llm-conformance[telemetry]')")
        return []

    def kept(lane: Any) -> None:
        with keeping():
            for _ in range(rows):
                run_stack_case(case, lane, chat, "body", True)

    results = []
    for lane in sorted(lanes, key=lambda lane: lane.row_id):
        results.append(_rate(f"telemetry lane {lane.row_id}, in process", calls, lambda lane=lane: kept(lane)))
        results.append(_rate("  the same, installed and removed per row", calls,
                             lambda lane=lane: [run_stack_case(case, lane, chat, "body", True) for _ in range(rows)]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100, help="rows per repetition, two SDK calls each (default 100)")
    rows = parser.parse_args().rows
    cases = load_cases([ROOT / "cases"])
    case = next(case for case in cases if case.id == CASE_ID)
    chat = builtin_adapters()["openai-chat"]
    stack = builtin_stacks()["openai-chat@openai-sdk"]
    _, error, sent = run_stack_case(case, stack, chat, "body", True)  # the two requests a row sends
    assert error is None and len(sent) == 2, (error, sent)
    calls = rows * len(sent)

    def bare(base: str, http_client: httpx2.Client | None, replay: Replay) -> Callable[[], None]:
        # One client, as production code keeps one; the session is reset so every row starts at turn 1.
        client = openai.OpenAI(base_url=f"{base}/s/{CASE_ID}/openai-chat@bench/body/v1", api_key="sk-replay",
                               max_retries=0, http_client=http_client)

        def work() -> None:
            for _ in range(rows):
                replay.reset(CASE_ID, "openai-chat@bench", "body")
                for request in sent:
                    client.chat.completions.create(**request)
        return work

    replay = Replay(cases)
    in_process = httpx2.Client(transport=httpx_transport(replay))
    results = [_rate("openai SDK, in process (MockTransport)", calls, bare("http://127.0.0.1", in_process, replay))]
    with BackgroundServer(cases) as server:
        results.append(_rate("openai SDK, loopback server", calls, bare(server.base, None, server.replay)))
    results.append(_rate("stack row openai-chat@openai-sdk, in process", calls,
                         lambda: [run_stack_case(case, stack, chat, "body", True) for _ in range(rows)]))
    results.append(_rate("stack row openai-chat@openai-sdk, loopback", calls,
                         lambda: [run_stack_case(case, stack, chat, "body") for _ in range(rows)]))
    results += _telemetry_rates(rows, calls, case, chat)
    results += _vcr_rates(rows, sent, cases)
    floor, row = results[0][1], results[2][1]
    print(f"{'path (two SDK calls per row)':66} {'calls/s':>9} {'× floor':>8} {'× stack row':>12}")
    for label, rate in results:
        print(f"{label:66} {rate:9.0f} {floor / rate:8.2f} {row / rate:12.2f}")


if __name__ == "__main__":
    main()
