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


# --- Structure-aware mutations (benchmarks/fuzz.py) ------------------------------------------------------------
#
# A mutated value may hold placeholder strings standing for raw JSON tokens that Python objects cannot spell
# or ``json.dumps`` cannot write (``NaN`` as a bare token, ``1e400``, 400-digit integers, ``"\ud800"`` escapes,
# 5,000-deep arrays); ``serialize`` writes them into the text. Each mutation returns labels naming what it did,
# so a failure or a slow input can be grouped by strategy.

RAW_TOKENS: dict[str, str] = {
    "nan": "NaN",
    "inf": "Infinity",
    "-inf": "-Infinity",
    "1e400": "1e400",
    "-1e400": "-1e400",
    "int400": "1" + "0" * 400,
    "-int400": "-" + "9" * 400,
    "int4000": "7" * 4000,  # under the 4,300-digit conversion limit: parses, but float() of it overflows
    "int5000": "3" * 5000,  # over it: json.loads raises ValueError
    "surrogate": '"\\ud800"',
    "low-surrogate": '"x\\udfffy"',
    "reversed-pair": '"\\udc00\\ud800"',
    "deep-array": "[" * 5000 + "]" * 5000,
    "deep-object": '{"a":' * 5000 + "0" + "}" * 5000,
    "deep-typed": '{"type":[' * 2500 + "null" + "]}" * 2500,
    "deep-900": "[" * 900 + "]" * 900,
    "deep-200": '{"x":[' * 100 + "1" + "]}" * 100,
    "deep-120": '{"x":[' * 60 + "1" + "]}" * 60,
}
# Raw tokens a JSON body fixture can hold: the fixture loader refuses text json.loads cannot read and JSON
# nested deeper than conformance.kit.jsontext.MAX_DEPTH (128), so no deeper body ever reaches an adapter.
BODY_TOKENS = [name for name in RAW_TOKENS
               if name not in ("int5000", "deep-array", "deep-object", "deep-typed", "deep-900", "deep-200")]
# JSON texts for string fields that hold JSON (tool-call arguments, partial_json, ...).
HOSTILE_JSON_TEXTS = [
    "[" * 5000 + "]" * 5000,
    '{"order_id":' + "[" * 5000 + "]" * 5000 + "}",
    '{"a":' * 5000 + "0" + "}" * 5000,
    "NaN",
    '{"order_id": NaN}',
    '{"order_id": "ORD-1001", "n": Infinity, "m": -Infinity}',
    '{"order_id": 1e400}',
    '{"order_id": "\\ud800"}',
    '{"order_id": "ORD-1001", "\\udfff": 1}',
    '{"order_id": ' + "1" * 400 + "}",
    '{"order_id": ' + "1" * 5000 + "}",
    '{"order_id": "ORD-1001"' + ', "order_id": "ORD-2001"' * 3 + "}",
    '{"order_id": ' + "[" * 900 + "]" * 900 + "}",
    "",
    "{",
    "[]",
    "null",
]
INTERESTING_KEYS = frozenset({
    "type", "id", "name", "arguments", "partial_json", "input", "args", "text", "delta", "index", "status",
    "finish_reason", "stop_reason", "stopReason", "finishReason", "role", "content", "parts", "output", "choices",
    "candidates", "tool_calls", "toolUse", "toolUseId", "functionCall", "call_id", "usage", "usageMetadata",
    "error", "message", "content_block", "contentBlockIndex", "item", "output_index", "response", "code",
})
# Lines a server-sent event may carry besides ``data:`` (what the SSE reader parses itself), and odd JSON lines.
SSE_FIELD_LINES = [
    b"retry: " + b"9" * 5000, b"retry: " + b"9" * 30, b"retry: -1", b"retry: 1e3", b"id: \x00", b"id: \xed\xa0\x80",
    b"id: " + b"i" * 10_000, b"event: \xed\xa0\x80", b"event: ", b"event:" + b"e" * 10_000, b"event: message_stop",
    b"event: error", b"event: response.completed", b"data", b"data:", b": " + b"c" * 10_000, b"\xff\xfe\x00",
    b"DATA: {}", b"data:\t{}", b"\x1b]0;x\x07",
]
JSONL_LINES = [b"", b" ", b"\r", b"\xff\xfe", b"null", b"[]", b"{}", b'{"": {}}', b"NaN", b"[" * 5000, b'"\\ud800"',
               b'{"messageStop": {"stopReason": NaN}}', b"\x00"]
_PLACEHOLDER = "\x00RAW:{}\x00"


def raw_token(name: str) -> str:
    """A placeholder for ``RAW_TOKENS[name]``, written as the bare token by ``serialize``."""
    return _PLACEHOLDER.format(name)


def serialize(value: Any, rng: random.Random, ensure_ascii: bool | None = None) -> str:
    """``value`` as JSON text, placeholders replaced by their raw tokens; NaN/inf floats written bare.

    Without ``ensure_ascii`` given, half the texts hold non-ASCII (and lone surrogates) raw."""
    if ensure_ascii is None:
        ensure_ascii = rng.random() < 0.5
    separators = (",", ":") if rng.random() < 0.5 else (", ", ": ")
    text = json.dumps(value, ensure_ascii=ensure_ascii, separators=separators, allow_nan=True)
    if "RAW:" in text:
        for name, token in RAW_TOKENS.items():
            text = text.replace(json.dumps(raw_token(name)), token)
    return text


def hostile_value(current: Any, rng: random.Random, tokens: list[str] | None = None) -> tuple[Any, str]:
    """A value of another type or a hostile scalar to put where ``current`` was, and its label."""
    roll = rng.random()
    if roll < 0.3:
        name = rng.choice(tokens or list(RAW_TOKENS))
        return raw_token(name), f"token:{name}"
    if roll < 0.45:
        return rng.choice([float("nan"), float("inf"), float("-inf"), 10**400, -(10**400), 1e308, -0.0]), "number"
    if roll < 0.55:
        return rng.choice(["\ud800", "a\udc00b", "\udfff" * 3, "\ud83e", "\x00\x1b[31m", "\u2028"]), "surrogate-str"
    # A type change: whatever ``current`` is, something of another type.
    choices: list[Any] = [[current], {"type": current}, [], {}, None, True, 0, -1, 2.5, "", "text_delta",
                          [["text_delta"]], {"type": ["text"]}, [None, None]]
    others = [choice for choice in choices if type(choice) is not type(current)]
    return copy.deepcopy(rng.choice(others or choices)), "type-swap"


def _weighted_paths(value: Any, rng: random.Random) -> tuple[Any, ...] | None:
    paths = list(_paths(value, ()))
    if not paths:
        return None
    interesting = [path for path in paths if path and path[-1] in INTERESTING_KEYS]
    if interesting and rng.random() < 0.6:
        return rng.choice(interesting)
    return rng.choice(paths)


def _renamed(key: str, siblings: list[Any], rng: random.Random) -> str:
    snake = "".join(f"_{char.lower()}" if char.isupper() else char for char in key)
    parts = key.split("_")
    camel = parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])
    options = [key.upper(), key + "_", key[:-1], " " + key, snake, camel, "", "\ud800", key + "\u200b"]
    options += [str(sibling) for sibling in siblings if sibling != key]
    return rng.choice([option for option in options if option != key] or ["renamed"])


def _mutate_inner_json(current: str, rng: random.Random, tokens: list[str] | None) -> tuple[str, list[str] | None]:
    """The JSON inside a string field mutated and written back with its labels, or hostile JSON text (labels
    ``None``) when it does not parse."""
    try:
        inner = json.loads(current)
    except (ValueError, RecursionError):
        inner = None
    if inner is None:
        return rng.choice(HOSTILE_JSON_TEXTS), None
    try:
        inner, inner_labels = mutate_structure(inner, rng, rng.randint(1, 2), tokens=tokens)
        text = serialize(inner, rng)
    except RecursionError:  # JSON text an earlier mutation made 900 deep: too deep to copy
        text, inner_labels = current, ["too-deep"]
    return text, inner_labels


def mutate_structure(value: Any, rng: random.Random, mutations: int = 2, *,
                     tokens: list[str] | None = None) -> tuple[Any, list[str]]:
    """A deep copy of ``value`` mutated structurally: a type changed where a field is read, a key dropped or
    renamed, a list item repeated or dropped, a hostile leaf (raw NaN/surrogate/huge/deep token), or the JSON
    inside a string field (tool-call arguments) replaced by hostile JSON text. Returns the value and labels."""
    value = copy.deepcopy(value)
    labels: list[str] = []
    for _ in range(mutations):
        path = _weighted_paths(value, rng)
        if not path:
            replacement, label = hostile_value(value, rng, tokens)
            return replacement, [*labels, f"root:{label}"]
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        current = parent[key]
        where = ".".join(str(step) if isinstance(step, str) else "[]" for step in path)
        operation = rng.randrange(9)
        if operation == 0 and isinstance(parent, dict):
            del parent[key]
            labels.append(f"drop-key@{where}")
        elif operation == 1 and isinstance(parent, dict) and isinstance(key, str):
            new_key = _renamed(key, list(parent), rng)
            parent[new_key] = parent.pop(key)
            labels.append(f"rename-key@{where}")
        elif operation == 2 and isinstance(parent, list):
            times = rng.choice([1, 1, 2, 5, 50, rng.randint(100, 2000)])
            index = rng.randrange(len(parent) + 1)
            parent[index:index] = [copy.deepcopy(current) for _ in range(times)]
            labels.append(f"repeat-item x{times}@{where}")
        elif operation == 3 and isinstance(parent, list):
            del parent[key]
            labels.append(f"drop-item@{where}")
        elif operation == 4 and isinstance(current, str):
            parent[key] = rng.choice(HOSTILE_JSON_TEXTS)
            labels.append(f"json-in-string@{where}")
        elif operation == 5 and isinstance(current, str) and current[:1] in ("{", "["):
            parent[key], inner_labels = _mutate_inner_json(current, rng, tokens)
            labels.append(f"json-in-string@{where}" if inner_labels is None
                          else f"mutate-inner-json@{where}:" + ",".join(inner_labels))
        elif operation == 6 and isinstance(current, list | dict) and rng.random() < 0.5:
            parent[key] = type(current)()
            labels.append(f"emptied@{where}")
        else:
            parent[key], label = hostile_value(current, rng, tokens)
            labels.append(f"{label}@{where}")
    return value, labels


def mutate_body_text(body: Any, rng: random.Random) -> tuple[str, list[str]]:
    """A real body mutated structurally and written as JSON text, raw tokens included. A lone surrogate is
    always written as a ``\\ud800`` escape: a UTF-8 fixture file cannot hold it raw."""
    value, labels = mutate_structure(body, rng, rng.randint(1, 4), tokens=BODY_TOKENS)
    text = serialize(value, rng)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = serialize(value, rng, ensure_ascii=True)
    return text, labels


def log_uniform(rng: random.Random, low: int, high: int) -> int:
    """An integer in [low, high], small ones as likely per doubling as large ones."""
    return max(low, min(high, int(2 ** rng.uniform(low.bit_length() - 1, high.bit_length()))))


def _longest_string_path(value: Any) -> tuple[Any, ...] | None:
    best: tuple[int, tuple[Any, ...] | None] = (-1, None)
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str) and path and len(node) > best[0]:
            best = (len(node), path)
        elif isinstance(node, dict):
            stack.extend((child, (*path, key)) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, (*path, index)) for index, child in enumerate(node))
    return best[1]


def stream_events(data: bytes) -> tuple[bytes, list[bytes], bool]:
    """A transcript split into events: (separator, events, is JSON lines)."""
    jsonl = not data.lstrip().startswith((b"data:", b"event:", b":", b"id:", b"retry:"))
    if jsonl:
        return b"\n", data.split(b"\n"), True
    separator = b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n"
    return separator, data.split(separator), False


def _event_payload(event: bytes, jsonl: bool) -> tuple[list[bytes], int, bytes] | None:
    """An event's other lines, where its data went, and its JSON payload; None when it carries none."""
    if jsonl:
        return ([], 0, event) if event.strip() else None
    lines = event.replace(b"\r\n", b"\n").split(b"\n")
    data = [line for line in lines if line.startswith(b"data:")]
    if not data:
        return None
    others = [line for line in lines if not line.startswith(b"data:")]
    where = next(index for index, line in enumerate(lines) if line.startswith(b"data:"))
    payload = b"\n".join(line[6:] if line.startswith(b"data: ") else line[5:] for line in data)
    return others, min(where, len(others)), payload


def _reframe(others: list[bytes], where: int, payload: bytes, jsonl: bool, crlf: bool) -> bytes:
    if jsonl:
        return payload
    lines = [*others[:where], b"data: " + payload, *others[where:]]
    return (b"\r\n" if crlf else b"\n").join(lines)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")  # a raw lone surrogate becomes invalid UTF-8 bytes


def _event_json(events: list[bytes], index: int, jsonl: bool, crlf: bool, rng: random.Random) -> str | None:
    """Event ``index``'s JSON parsed, mutated structurally and written back (raw tokens included)."""
    others, where, payload = _event_payload(events[index], jsonl) or ([], 0, b"")
    try:
        value = json.loads(payload)
        value, inner = mutate_structure(value, rng, rng.randint(1, 3))
        events[index] = _reframe(others, where, _encode(serialize(value, rng)), jsonl, crlf)
    except (ValueError, RecursionError):  # an event an earlier mutation made too deep to parse, copy or walk
        return None
    return "event-json:" + ",".join(inner)


def _repeat_event(events: list[bytes], index: int, jsonl: bool, crlf: bool, rng: random.Random) -> str | None:
    times = rng.choice([2, 10, 100, rng.randint(200, 3000)])
    times = max(1, min(times, 1_000_000 // (len(events[index]) + 2)))  # the stream stays near 1 MB
    events[index:index] = [events[index]] * times
    return f"repeat-event x{times}"


def _event_is_token(events: list[bytes], index: int, jsonl: bool, crlf: bool, rng: random.Random) -> str | None:
    others, where, _ = _event_payload(events[index], jsonl) or ([], 0, b"")
    name = rng.choice(["deep-array", "deep-object", "deep-typed", "nan", "int5000", "surrogate"])
    events[index] = _reframe(others, where, RAW_TOKENS[name].encode(), jsonl, crlf)
    return f"event-is-token:{name}"


def _long_line(events: list[bytes], index: int, jsonl: bool, crlf: bool, rng: random.Random) -> str | None:
    """The event's longest string stretched to 4 KB-128 KB (or a padding field added): one long line."""
    others, where, payload = _event_payload(events[index], jsonl) or ([], 0, b"")
    length = log_uniform(rng, 4096, 131_072)
    try:
        value = json.loads(payload)
        path = _longest_string_path(value)
        if path is None:
            if not isinstance(value, dict):
                return None
            value["padding"] = "a" * length
        else:
            parent = value
            for step in path[:-1]:
                parent = parent[step]
            piece = parent[path[-1]] or "a"
            parent[path[-1]] = (piece * (length // len(piece) + 1))[:length]
        events[index] = _reframe(others, where, _encode(serialize(value, rng)), jsonl, crlf)
    except (ValueError, RecursionError):
        return None
    return f"long-line {length}"


def _field_line(events: list[bytes], index: int, jsonl: bool, crlf: bool, rng: random.Random) -> str | None:
    """An SSE field line the reader parses itself (``retry:`` with 5,000 digits, ``id:`` with NUL, ...), or an
    odd line between JSON lines."""
    line = rng.choice(JSONL_LINES if jsonl else SSE_FIELD_LINES)
    if jsonl:
        events.insert(index, line)
    else:
        lines = events[index].split(b"\n")
        lines.insert(rng.randrange(len(lines) + 1), line)
        events[index] = b"\n".join(lines)
    return f"field-line:{line[:12]!r}"


_EVENT_OPERATIONS = [(0.63, _event_json), (0.68, _repeat_event), (0.71, _event_is_token), (0.716, _long_line),
                     (0.75, _field_line)]


def mutate_stream_events(data: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """A transcript mutated event by event: each chosen event's JSON parsed, mutated structurally and written
    back (raw tokens included), events repeated or replaced by a raw token, a string stretched into a long
    line, an SSE field line added, or a sequence mutation from ``mutate_stream``. Returns bytes and labels."""
    separator, events, jsonl = stream_events(data)
    labels: list[str] = []
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        operation = next((function for bound, function in _EVENT_OPERATIONS if roll < bound), None)
        carrying = [index for index, event in enumerate(events) if _event_payload(event, jsonl) is not None]
        if operation is not None and carrying:
            index = rng.randrange(len(events)) if operation is _field_line else rng.choice(carrying)
            label = operation(events, index, jsonl, separator == b"\r\n\r\n", rng)
            if label:
                labels.append(label)
            continue
        before = separator.join(events)
        after = mutate_stream(before, rng)
        if after != before:
            labels.append("sequence")
        separator, events, jsonl = stream_events(after)
    return separator.join(events), labels


def chunked(data: bytes, size: int) -> Any:
    """``data`` as byte chunks of ``size`` (a generator: a million one-byte chunks are never held at once)."""
    return (data[index:index + size] for index in range(0, len(data), size))
