"""The stack lane's cost beside the SDK's own (medians of several repetitions, printed side by side).

Run: ``.venv/bin/python benchmarks/stack_bench.py [--calls N]``. Not a test: the figures depend on the machine.

Measured, all with the openai SDK on Chat Completions bodies of the ``normal`` case (two turns):

- the bare SDK, in process (``httpx2.MockTransport`` answering from the replay router): the floor;
- the bare SDK against the loopback replay server: what the socket and HTTP layer add;
- a whole stack row (``openai-chat@openai-sdk``, body mode), in process and through the loopback server: what the
  engine adds (the loop, the checks, the report row) on top of the SDK's two calls;
- vcrpy replaying the same first turn with one cassette loaded per call, the shape pytest-recording gives each
  test (only when vcrpy is installed: ``pip install vcrpy``; it is not a dependency of the suite).
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

import httpx2  # noqa: E402
import openai  # noqa: E402

from conformance.adapter import UserMessage  # noqa: E402
from conformance.cases import Case, load_cases  # noqa: E402
from conformance.registry import builtin_adapters  # noqa: E402
from conformance.replay import Replay  # noqa: E402
from conformance.serve import BackgroundServer, session_base  # noqa: E402
from conformance.stack import builtin_stacks  # noqa: E402
from conformance.stack_runner import run_stack_case  # noqa: E402
from conformance.transports import httpx_transport  # noqa: E402

CASE_ID = "normal"
REPEATS = 5


def _rate(label: str, calls: int, work: Callable[[], None]) -> tuple[str, float]:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return label, calls / statistics.median(times)


def _vcr_rates(calls: int, request: dict[str, object], cases: list[Case]) -> list[tuple[str, float]]:
    try:
        import vcr  # noqa: PLC0415
    except ImportError:
        print("vcrpy not installed: the cassette line is left out (pip install vcrpy)")
        return []
    import tempfile  # noqa: PLC0415

    cassette = Path(tempfile.mkdtemp()) / "normal.yaml"
    with BackgroundServer(cases) as server:  # record turn 1 once, from the replay server
        client = openai.OpenAI(base_url=f"{session_base(server.base, CASE_ID, 'openai-chat', 'body')}/v1",
                               api_key="sk-replay", max_retries=0)
        with vcr.use_cassette(str(cassette), record_mode="all"):
            client.chat.completions.create(**request)
        base = server.base  # the cassette matches on host and port: replay against the same URL, server gone
    player = openai.OpenAI(base_url=f"{session_base(base, CASE_ID, 'openai-chat', 'body')}/v1", api_key="sk-replay",
                           max_retries=0)

    def work() -> None:
        for _ in range(calls):
            with vcr.use_cassette(str(cassette), record_mode="none", allow_playback_repeats=True):
                player.chat.completions.create(**request)

    return [_rate("openai SDK + vcrpy, one cassette per call (pytest-recording)", calls, work)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="SDK calls per repetition (default 200)")
    calls = parser.parse_args().calls
    cases = load_cases([ROOT / "cases"])
    case = next(case for case in cases if case.id == CASE_ID)
    chat = builtin_adapters()["openai-chat"]
    request = chat.build_request(case.task, [UserMessage(text=case.task.input)])

    def bare(base: str, http_client: httpx2.Client | None, replay: Replay) -> Callable[[], None]:
        # One client, as production code keeps one; the session is reset so every call gets turn 1.
        client = openai.OpenAI(base_url=f"{base}/s/{CASE_ID}/openai-chat@bench/body/v1", api_key="sk-replay",
                               max_retries=0, http_client=http_client)

        def work() -> None:
            for _ in range(calls):
                replay.reset(CASE_ID, "openai-chat@bench", "body")
                client.chat.completions.create(**request)
        return work

    replay = Replay(cases)
    in_process = httpx2.Client(transport=httpx_transport(replay))
    stack = builtin_stacks()["openai-chat@openai-sdk"]
    results = [_rate("openai SDK, in process (MockTransport)", calls, bare("http://127.0.0.1", in_process, replay))]
    with BackgroundServer(cases) as server:
        results.append(_rate("openai SDK, loopback server", calls, bare(server.base, None, server.replay)))
    rows = max(1, calls // 2)  # two SDK calls per row of the normal case
    results.append(_rate("stack row openai-chat@openai-sdk (2 calls each), in process", rows * 2,
                         lambda: [run_stack_case(case, stack, chat, "body", True) for _ in range(rows)]))
    results.append(_rate("stack row openai-chat@openai-sdk (2 calls each), loopback", rows * 2,
                         lambda: [run_stack_case(case, stack, chat, "body") for _ in range(rows)]))
    results += _vcr_rates(calls, request, cases)
    floor = results[0][1]
    print(f"{'path':60} {'calls/s':>9} {'× floor':>8}")
    for label, rate in results:
        print(f"{label:60} {rate:9.0f} {floor / rate:8.2f}")


if __name__ == "__main__":
    main()
