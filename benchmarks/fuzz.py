"""Fuzzing every adapter: generated JSON bodies, mutated real bodies, error bodies and mutated transcripts.

Run: ``.venv/bin/python benchmarks/fuzz.py [--inputs N] [--seed S]`` (default 100,000 inputs per adapter for
``classify`` and as many for stream assembly). Prints the count per resulting kind and the number of
exceptions, which must be 0; exits 1 otherwise and prints the seed and input of the first failure. Not part
of CI's default run: it takes minutes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.registry import builtin_adapters  # noqa: E402
from tests.mutations import body_fixtures, mutate_json, mutate_stream, random_json, stream_fixtures  # noqa: E402


def fuzz(provider: str, inputs: int, seed: int) -> dict[str, object]:
    adapter = builtin_adapters()[provider]
    assemble = adapter.assemble_stream
    assert assemble is not None
    rng = random.Random(f"{seed}-{provider}")
    bodies, streams = body_fixtures(provider), stream_fixtures(provider)
    classify_kinds: Counter[str] = Counter()
    stream_kinds: Counter[str] = Counter()
    exceptions: list[str] = []
    for number in range(inputs):
        roll = rng.random()
        try:
            if roll < 0.25:
                result = adapter.classify_body(random_json(rng))
            elif roll < 0.85:
                result = adapter.classify_body(mutate_json(rng.choice(bodies), rng, rng.randint(1, 4)))
            else:
                headers = {"retry-after": rng.choice(["1", "x", "-3", "1e9", ""]), "x-amzn-errortype": "Throttling"}
                status = rng.choice([400, 401, 402, 403, 404, 408, 409, 413, 429, 500, 503, 529])
                result = adapter.classify_error(status, random_json(rng), headers)
            classify_kinds[result.kind] += 1
        except Exception:  # noqa: BLE001 - counting them is the point
            exceptions.append(f"classify #{number}: {traceback.format_exc(limit=3)}")
        data = rng.choice(streams)
        for _ in range(rng.randint(1, 3)):
            data = mutate_stream(data, rng)
        try:
            chunk = rng.randint(1, 8192)
            assembled = assemble([data[index:index + chunk] for index in range(0, len(data), chunk)])
            stream_kinds[assembled.response.kind] += 1
        except Exception:  # noqa: BLE001
            exceptions.append(f"stream #{number}: {traceback.format_exc(limit=3)}")
    return {"classify": dict(classify_kinds), "stream": dict(stream_kinds), "exceptions": exceptions}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=20261129)
    arguments = parser.parse_args()
    kinds = ["text", "tool_calls", "refusal", "incomplete", "retryable_error", "fatal_error", "invalid_tool_call",
             "unsupported", "empty"]
    results = {}
    count = f"{arguments.inputs:,}"
    print(f"{count} classify inputs and {count} stream inputs per adapter, seed {arguments.seed}")
    header = f"{'provider':<20}{'path':<10}" + "".join(f"{kind[:12]:>13}" for kind in kinds)
    header += f"{'exceptions':>12}{'s':>7}"
    print(header)
    failed = 0
    for provider in sorted(builtin_adapters()):
        start = time.perf_counter()
        result = fuzz(provider, arguments.inputs, arguments.seed)
        elapsed = time.perf_counter() - start
        results[provider] = {**result, "exceptions": len(result["exceptions"]), "seconds": round(elapsed, 1)}
        for path in ("classify", "stream"):
            counts = result[path]
            assert isinstance(counts, dict)
            errors = sum(1 for line in result["exceptions"] if str(line).startswith(path))  # type: ignore[union-attr]
            print(f"{provider:<20}{path:<10}" + "".join(f"{counts.get(kind, 0):>13,}" for kind in kinds)
                  + f"{errors:>12}{elapsed if path == 'stream' else 0:>7.0f}")
        if result["exceptions"]:
            failed += 1
            print(result["exceptions"][0])  # type: ignore[index]
    out = Path("reports") / "fuzz.json"
    out.parent.mkdir(exist_ok=True)
    document = {"inputs": arguments.inputs, "seed": arguments.seed, "results": results}
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
