"""Hostile inputs for the adapters, shared by the Hypothesis tests and benchmarks/fuzz.py.

Everything is driven by a ``random.Random`` so a failure reproduces from its seed.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent.parent
ODD_STRINGS = [
    "", " ", "\u2028", "\u2029", "\x00", "\ud7ff\ue000", "🦜" * 50, "a" * 10_000, "null", "[]", "{", "\\u0000",
    "<script>alert(1)</script>", "ORD-1001", "call_A1", "tool_use", "STOP", "completed", "refusal", "\r\n\r\n",
]
ODD_NUMBERS = [0, -1, 1, 2**63, -(2**63), 10**30, 1.5, -0.0, 1e308, True, False]


def body_fixtures(provider: str) -> list[Any]:
    """Every recorded JSON body of ``provider``: case fixtures and adapter unit fixtures."""
    paths = sorted((ROOT / "cases").glob(f"*/{provider}/*.json"))
    paths += sorted((ROOT / "tests/fixtures" / provider).glob("*.json"))
    return [json.loads(path.read_text(encoding="utf-8")) for path in paths]


def stream_fixtures(provider: str) -> list[bytes]:
    patterns = ("*.sse", "*.jsonl")
    paths = [path for pattern in patterns for path in sorted((ROOT / "cases").glob(f"*/{provider}/{pattern}"))]
    paths += [path for pattern in patterns for path in sorted((ROOT / "tests/fixtures" / provider).glob(pattern))]
    return [path.read_bytes() for path in paths]


def random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.35:
        return rng.choice([None, rng.choice(ODD_NUMBERS), rng.choice(ODD_STRINGS), rng.randint(-5, 5)])
    if roll < 0.65:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["type", "id", "status", "output", "choices", "content", "candidates", "stopReason", "stop_reason",
            "usage", "error", "message", "parts", "finish_reason", "tool_calls", "arguments", "input", "name"]
    return {rng.choice(keys + ODD_STRINGS[:6]): random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def mutate_json(value: Any, rng: random.Random, mutations: int = 3) -> Any:
    """A deep copy of ``value`` with keys dropped, types swapped, strings and numbers made odd."""
    value = copy.deepcopy(value)
    for _ in range(mutations):
        paths = list(_paths(value, ()))
        if not paths:
            return random_json(rng)
        path = rng.choice(paths)
        value = _apply(value, path, rng)
    return value


def _paths(value: Any, prefix: tuple[Any, ...]) -> Any:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


def _apply(root: Any, path: tuple[Any, ...], rng: random.Random) -> Any:
    if not path:
        return random_json(rng)
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    current = parent[key]
    operation = rng.randrange(6)
    if operation == 0 and isinstance(parent, dict):
        del parent[key]
    elif operation == 1:
        parent[key] = rng.choice([None, [], {}, "", 0, True, [current], {"value": current}])
    elif operation == 2:
        parent[key] = rng.choice(ODD_STRINGS)
    elif operation == 3:
        parent[key] = rng.choice(ODD_NUMBERS)
    elif operation == 4 and isinstance(parent, list):
        parent.insert(rng.randrange(len(parent) + 1), copy.deepcopy(current))
    else:
        parent[key] = random_json(rng)
    return root


def mutate_stream(data: bytes, rng: random.Random) -> bytes:
    """A transcript truncated, with events duplicated, dropped or reordered, or its framing bent."""
    separator = b"\n\n" if b"\n\n" in data else b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n"
    events = data.split(separator)
    operation = rng.randrange(9)
    if operation == 0 and events:
        events = events[: rng.randrange(len(events) + 1)]  # cut at an event boundary
    elif operation == 1 and events:
        index = rng.randrange(len(events))
        events.insert(index, events[index])  # duplicated
    elif operation == 2 and len(events) > 2:
        del events[rng.randrange(1, len(events) - 1)]  # spliced out
    elif operation == 3 and len(events) > 1:
        first, second = rng.sample(range(len(events)), 2)
        events[first], events[second] = events[second], events[first]  # reordered
    elif operation == 4:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")  # lone CR line ends
    elif operation == 5:
        return data.replace(b"data: ", b"data:")  # no space after the colon
    elif operation == 6 and events:
        events.insert(rng.randrange(len(events) + 1), b"")  # an empty event
    elif operation == 7:
        return data[: rng.randrange(len(data) + 1)]  # cut anywhere, even mid-line
    elif events:
        index = rng.randrange(len(events))
        events[index] = rng.choice([b"data: " + json.dumps(random_json(rng)).encode(), b"data: {", b"event: x",
                                    b": ping", b"data: [DONE]", json.dumps(random_json(rng)).encode()])
    return separator.join(events)
