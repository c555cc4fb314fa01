"""Structure-aware fuzzing of every adapter, and of what the engine does with each result.

Run: ``.venv/bin/python benchmarks/fuzz.py [--inputs N] [--seed S] [--provider ID ...] [--jobs J]``
(default 100,000 inputs per adapter; each input is one ``classify`` and one stream assembly; providers run
in ``--jobs`` processes, default 2). Replay a saved reproducer with ``--replay /tmp/fuzz-failures/<file>.bin``.

Inputs are real fixtures (``tests/mutations.py``) mutated by structure: a body's JSON, and a stream's events
one by one (each event's JSON parsed, mutated, written back — sometimes with bare ``NaN``/``Infinity``,
``1e400``, 400-digit integers, ``"\\ud800"`` escapes or 5,000-deep arrays in the text — and re-framed):
types changed where a field is read, keys dropped or renamed, items and events repeated, hostile JSON inside
string fields (tool-call arguments), long lines, SSE field lines (``retry:`` with 5,000 digits, ``id:`` with
NUL); streams are fed in chunks of 1-4,096 bytes (log-uniform: small chunks are common).

Every result must also survive what the engine does with it: (a) report encoding (``report_safe`` then
``json.dumps(allow_nan=False)`` and UTF-8), (b) a follow-up request (tool results for its calls, or the next
user message after a text answer) through ``build_request``, (c) ``check_correlation`` over the two requests
(which must also find no problem when the turn was ``tool_calls``/``text`` with unique ids, all answered).
An input over 1 s is slow; one over ``--hang`` seconds is interrupted and counted as a hang.

Prints per provider and path the kinds, exceptions per stage, and slow inputs, then each distinct failure
(exception type + innermost frame in providers/ or conformance/) with a reduced reproducer saved under
/tmp/fuzz-failures/. Exits 1 when any failure or slow input was found. Not part of CI's default run.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import multiprocessing
import os
import pstats
import random
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.engine.correlation import check_correlation  # noqa: E402
from conformance.engine.registry import builtin_adapters  # noqa: E402
from conformance.engine.runner import total_usage  # noqa: E402
from conformance.engine.sanitize import report_safe  # noqa: E402
from conformance.kit.adapter import Adapter  # noqa: E402
from conformance.kit.task import ModelTurn, Task, ToolResult, ToolResults, ToolSpec, TranscriptEntry, UserMessage  # noqa: E402
from conformance.kit.types import KINDS, Empty, ModelResponse, Text  # noqa: E402
from tests.mutations import (  # noqa: E402
    HOSTILE_JSON_TEXTS,
    ODD_STRINGS,
    body_fixtures,
    chunked,
    log_uniform,
    mutate_body_text,
    mutate_json,
    mutate_stream_events,
    random_json,
    serialize,
    stream_events,
    stream_fixtures,
)

try:  # what the fixture loader and the loop parse JSON with (depth-bounded), where this tree has it
    from conformance.kit.jsontext import parse_json as load_json
except ImportError:  # pragma: no cover - an older tree
    load_json = json.loads

OUT = Path("/tmp/fuzz-failures")
SLOW_SECONDS = 1.0
MAX_STREAM_BYTES = 1_200_000
STAGES = ("raised", "report", "request", "correlation", "problem")
PATHS = ("classify", "stream")
PROJECT_DIRS = (str(ROOT / "providers") + os.sep, str(ROOT / "conformance") + os.sep)
RETRY_VALUES = ["1", "x", "-3", "1e9", "", "1e400", "-1e400", "NaN", "nan", "inf", "-inf", "Infinity", "9" * 400,
                "9" * 5000, "1" * 20, "\ud800", "0x10", "1_000", " 5 ", "5\x00", "١٢", "Wed, 21 Oct 2015 07:28:00 GMT",
                "Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 +9999"]


class Hang(BaseException):
    """Raised by the alarm inside an input that ran past the hang bound (BaseException: adapters' own
    ``except Exception`` must not swallow it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise Hang


# ---------------------------------------------------------------------------------------------------------------
# Inputs


@dataclasses.dataclass(slots=True)
class Input:
    """One fuzz input: a body for classify/classify_error, or a stream transcript with its chunk size."""

    path: str
    """``classify`` or ``stream``."""
    data: bytes
    """A body's JSON text (or an error's plain text) as UTF-8, or the raw stream bytes."""
    labels: list[str]
    chunk: int = 0
    status: int | None = None
    """Set for an HTTP error: the input goes to ``classify_error``."""
    headers: dict[str, str] | None = None
    body_is_text: bool = False
    """An error body that is plain text, not JSON."""
    number: int = -1

    def meta(self) -> dict[str, Any]:
        return {"path": self.path, "chunk": self.chunk, "status": self.status, "headers": self.headers,
                "body_is_text": self.body_is_text, "labels": self.labels, "number": self.number}


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogatepass")


def _hostile_headers(rng: random.Random) -> dict[str, str]:
    headers = {}
    for name in ("retry-after", "retry-after-ms", "x-should-retry", "x-amzn-errortype"):
        if rng.random() < 0.6:
            if name == "x-should-retry":
                headers[name] = rng.choice(["true", "false", "TRUE", "", "\ud800", "1"])
            elif name == "x-amzn-errortype":
                headers[name] = rng.choice(["ThrottlingException", "ThrottlingException:http://internal.amazon.com/",
                                            "ValidationException", "", "\ud800", ":", "a" * 10_000])
            else:
                headers[name] = rng.choice(RETRY_VALUES)
    return headers


class Generator:
    """Inputs for one provider, each reproducible from (seed, provider, number)."""

    def __init__(self, provider: str, seed: int) -> None:
        self.provider, self.seed = provider, seed
        self.bodies = body_fixtures(provider)
        self.errors = [body for body in self.bodies
                       if isinstance(body, dict) and ({"error", "__type", "Message", "message"} & set(body))]
        self.streams = stream_fixtures(provider)
        self.unparseable = 0
        self.generator_errors = 0
        self.oversized = 0

    def classify_input(self, rng: random.Random, number: int) -> Input:
        for _ in range(4):
            roll = rng.random()
            labels: list[str]
            if roll < 0.07:
                text, labels = serialize(random_json(rng), rng, ensure_ascii=True), ["random-json"]
            elif roll < 0.14:
                value = mutate_json(rng.choice(self.bodies), rng, rng.randint(1, 4))
                text, labels = serialize(value, rng, ensure_ascii=True), ["mutate-json"]
            elif roll < 0.75:
                text, labels = mutate_body_text(rng.choice(self.bodies), rng)
            else:
                status = rng.choice([400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 529])
                headers = _hostile_headers(rng)
                kind = rng.random()
                if kind < 0.15:
                    text = rng.choice(ODD_STRINGS + HOSTILE_JSON_TEXTS)
                    return Input("classify", _encode(text), ["error-text-body"], status=status, headers=headers,
                                 body_is_text=True, number=number)
                if kind < 0.35:
                    text, labels = serialize(random_json(rng), rng, ensure_ascii=True), ["error-random-json"]
                else:
                    text, labels = mutate_body_text(rng.choice(self.errors or self.bodies), rng)
                    labels = ["error-body", *labels]
                item = Input("classify", _encode(text), labels, status=status, headers=headers, number=number)
                if _loads_ok(text):
                    return item
                self.unparseable += 1
                continue
            if _loads_ok(text):
                return Input("classify", _encode(text), labels, number=number)
            self.unparseable += 1  # a body the fixture loader would refuse (too deep): generate another
        return Input("classify", _encode(json.dumps(rng.choice(self.bodies))), ["fixture"], number=number)

    def stream_input(self, rng: random.Random, number: int) -> Input:
        for _ in range(4):  # repeated items inside repeated events can reach 10 MB: keep streams near 1 MB,
            data, labels = mutate_stream_events(rng.choice(self.streams), rng)  # so "slow" means per byte
            if len(data) <= MAX_STREAM_BYTES:
                break
            self.oversized += 1
        else:
            data, labels = data[:MAX_STREAM_BYTES], [*labels, f"cut at {MAX_STREAM_BYTES:,} bytes"]
        chunk = log_uniform(rng, 1, 4096)
        return Input("stream", data, labels, chunk=chunk, number=number)

    def inputs(self, number: int) -> tuple[Input, Input]:
        rng = random.Random(f"{self.seed}-{self.provider}-{number}")
        for attempt in range(3):
            try:
                return self.classify_input(rng, number), self.stream_input(rng, number)
            except RecursionError:  # a mutation too deep for the generator itself: draw again
                self.generator_errors += 1
                rng = random.Random(f"{self.seed}-{self.provider}-{number}-{attempt}")
        return (Input("classify", _encode(json.dumps(self.bodies[0])), ["fixture"], number=number),
                Input("stream", self.streams[0], ["fixture"], chunk=4096, number=number))


def _loads_ok(text: str) -> bool:
    """Whether the fixture loader would read this body (it refuses what the depth-bounded parser refuses)."""
    try:
        load_json(text)
    except (ValueError, RecursionError):
        return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# Running one input through the adapter and the engine's checks


@dataclasses.dataclass(slots=True)
class Failure:
    stage: str
    """``raised`` (classify/stream itself), ``report``, ``request``, ``correlation``, ``problem`` (a correlation
    problem for a well-formed turn whose every call was answered) or ``hang``."""
    error_type: str
    message: str
    frame: str
    """The innermost frame in providers/ or conformance/ (for ``report``: the field that broke encoding)."""
    innermost: str
    """The innermost frame of all (often json's or the C parser's caller)."""
    trace: str

    @property
    def signature(self) -> tuple[str, str, str]:
        return (self.stage, self.error_type, self.frame)


@dataclasses.dataclass(slots=True)
class Outcome:
    kind: str | None
    failures: list[Failure]
    seconds: float
    stage_seconds: dict[str, float]


def _relative(filename: str) -> str:
    try:
        return str(Path(filename).resolve().relative_to(ROOT))
    except ValueError:
        parts = Path(filename).parts
        return "/".join(parts[-2:])


def _failure(stage: str, error: BaseException, frame: str | None = None) -> Failure:
    """The failure record; the traceback is walked by hand (a RecursionError's has a thousand frames)."""
    project = innermost = None
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        innermost = (code.co_filename, tb.tb_lineno)
        if code.co_filename.startswith(PROJECT_DIRS):
            project = innermost
        tb = tb.tb_next
    where = f"{_relative(project[0])}:{project[1]}" if project else "(none in providers/conformance)"
    last = f"{_relative(innermost[0])}:{innermost[1]}" if innermost else "?"
    message = str(error)
    message = ascii(message[:160] + ("…" if len(message) > 160 else ""))[1:-1]
    trace = "".join(traceback.format_exception(type(error), error, error.__traceback__, limit=-8))
    return Failure(stage, "Hang" if isinstance(error, Hang) else type(error).__name__, message,
                   frame or where, last, trace)


def _report_field(document: Any) -> str:
    """The path of the first value in a sanitized report document that does not encode."""
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack.extend((item, f"{path}.{key}") for key, item in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[]") for item in reversed(value))
        else:
            try:
                json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
            except (ValueError, UnicodeError, RecursionError):
                return path or "(root)"
    return "(a key)"


def _encode_report(document: Any) -> None:
    safe = report_safe(document)
    try:
        json.dumps(safe, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeError, RecursionError) as error:
        raise ReportBroken(_report_field(safe)) from error


class ReportBroken(Exception):
    """A sanitized report document that still does not encode; the message names the field."""


class Engine:
    """The adapter plus what the engine does with a result: the report, a follow-up request, correlation."""

    def __init__(self, provider: str, adapter: Adapter, task: Task, hang_seconds: float) -> None:
        self.provider, self.adapter, self.task, self.hang_seconds = provider, adapter, task, hang_seconds
        self.first_request = adapter.build_request(task, [UserMessage(text=task.input)])
        self.follow_ups = 0

    def run(self, item: Input) -> Outcome:
        failures: list[Failure] = []
        stages: dict[str, float] = {}
        kind: str | None = None
        start = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, self.hang_seconds)
        try:
            mark = time.perf_counter()
            response, summary = self._adapt(item)
            stages["adapt"] = time.perf_counter() - mark
            if response is None:
                failures.append(summary)
            else:
                kind = response.kind
                mark = time.perf_counter()
                shown = response
                if isinstance(response, Text):  # as the loop does for a task with an output schema
                    shown = dataclasses.replace(response, parsed=_parse_answer(response.text))
                document = {"turn": shown.to_dict(), "stream": summary.to_dict() if summary else None,
                            "usage": total_usage([response])}
                try:
                    _encode_report(document)
                except Exception as error:  # noqa: BLE001 - collecting them is the point
                    failures.append(_report_failure(error))
                stages["report"] = time.perf_counter() - mark
                failures.extend(self._follow_up(response, stages))
        except Hang as error:
            failures.append(_failure("hang", error))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return Outcome(kind, failures, time.perf_counter() - start, stages)

    def _adapt(self, item: Input) -> tuple[Any, Any]:
        adapter = self.adapter
        try:
            if item.path == "stream":
                assemble = adapter.assemble_stream
                assert assemble is not None
                result = assemble(chunked(item.data, item.chunk))
                return result.response, result.summary
            text = _decode(item.data)
            body = text if item.body_is_text else load_json(text)
            if item.status is not None:
                return adapter.classify_error(item.status, body, item.headers or {}), None
            return adapter.classify_body(body), None
        except Exception as error:  # noqa: BLE001
            return None, _failure("raised", error)

    def _follow_up(self, response: ModelResponse, stages: dict[str, float]) -> list[Failure]:
        task = self.task
        transcript: list[TranscriptEntry] = [UserMessage(text=task.input), ModelTurn(response=response)]
        if response.calls:
            transcript.append(ToolResults(results=tuple(_tool_result(index, call)
                                                        for index, call in enumerate(response.calls))))
        elif response.kind == "text":
            transcript.append(UserMessage(text=task.follow_ups[0]))
        else:
            return []
        mark = time.perf_counter()
        self.follow_ups += 1
        try:
            second = self.adapter.build_request(task, transcript)
        except Exception as error:  # noqa: BLE001
            return [_failure("request", error)]
        finally:
            stages["request"] = time.perf_counter() - mark
        mark = time.perf_counter()
        try:
            correlation = check_correlation(self.adapter, [self.first_request, second],
                                            [response, Empty(raw="fuzz: the next turn")])
        except Exception as error:  # noqa: BLE001
            return [_failure("correlation", error)]
        finally:
            stages["correlation"] = time.perf_counter() - mark
        try:
            _encode_report({"correlation": correlation})
        except Exception as error:  # noqa: BLE001
            return [_report_failure(error)]
        ids = [call.call_id for call in response.calls if not call.synthesized_id]
        if correlation["problems"] and response.kind in ("tool_calls", "text") and len(ids) == len(set(ids)):
            # Every call answered once, the transcript only grown: a problem here is the adapter's or the
            # checker's own doing (e.g. output items that do not compare equal to themselves once re-sent).
            problem = str(correlation["problems"][0])
            return [Failure("problem", "CorrelationProblem", ascii(problem[:160])[1:-1], _problem_kind(problem), "",
                            "\n".join(map(str, correlation["problems"][:5])))]
        return []


def _problem_kind(problem: str) -> str:
    """A correlation problem without its ids, so the same problem dedupes across inputs."""
    for marker in ("static prefix changed", "was rewritten", "were not re-sent", "answers no call", "got no result"):
        if marker in problem:
            return f"correlation: {marker}"
    return "correlation: other"


def _parse_answer(text: str) -> Any:
    try:
        return load_json(text)
    except ValueError:
        return None


def _report_failure(error: Exception) -> Failure:
    if isinstance(error, ReportBroken):
        cause = error.__cause__ or error
        failure = _failure("report", cause, frame=f"field {error}")
        failure.trace = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)[-3:])
        return failure
    return _failure("report", error)


def _tool_result(index: int, call: Any) -> ToolResult:
    """What the world would answer (conformance/engine/world.py): the record, or an error naming the key sent."""
    arguments = call.parsed_arguments or {}
    key = arguments.get("order_id", arguments.get("invoice_id")) if hasattr(arguments, "get") else None
    if index % 2 and isinstance(key, str):
        return ToolResult(call=call, output={"error": "not_found", "message": f"no such record: {key}"}, is_error=True)
    return ToolResult(call=call, output={"order_id": key if isinstance(key, str) else "ORD-1001", "status": "shipped"})


ORDER_ID = {"type": "string", "pattern": "^ORD-[0-9]{4}$", "description": "The order id, e.g. ORD-1001."}


def fuzz_task() -> Task:
    """The ``normal`` case's task with the world's two tools and one follow-up question, written out here so a
    run never depends on the cases folder (which may be mid-edit) and a reproducer replays the same way."""
    get_order = ToolSpec(name="get_order", description="Look up one order of the signed-in customer by its order id.",
                         parameters={"type": "object", "properties": {"order_id": ORDER_ID}, "required": ["order_id"],
                                     "additionalProperties": False})
    refund = ToolSpec(name="refund_order", description="Refund one order of the signed-in customer in full.",
                      parameters={"type": "object",
                                  "properties": {"order_id": ORDER_ID, "reason": {"type": "string"}},
                                  "required": ["order_id", "reason"], "additionalProperties": False})
    return Task(instructions="You are the support assistant of an online shop. Answer questions about the "
                             "signed-in customer's orders using the tools. State the order id and its status "
                             "exactly as the tool returns them. Never act on another customer's data.",
                input="What is the status of my order ORD-1001?", tools=(get_order, refund),
                max_output_tokens=512, follow_ups=("And ORD-1002?",))


# ---------------------------------------------------------------------------------------------------------------
# Reducing and saving reproducers


def _reduce(engine: Engine, item: Input, signature: tuple[str, str, str], budget_s: float = 20.0) -> Input:
    """A smaller input with the same failure signature: events removed (streams), keys and items (bodies)."""
    deadline = time.perf_counter() + budget_s

    def fails(candidate: Input) -> bool:
        if time.perf_counter() > deadline:
            return False
        return any(failure.signature == signature for failure in engine.run(candidate).failures)

    if item.path == "stream":
        return _reduce_stream(item, fails, deadline)
    if item.body_is_text:
        return item
    return _reduce_body(item, fails, deadline)


def _reduce_stream(item: Input, fails: Callable[[Input], bool], deadline: float) -> Input:
    whole = dataclasses.replace(item, chunk=max(len(item.data), 1))
    if fails(whole):
        item = whole
    separator, events, _ = stream_events(item.data)
    index = len(events) - 1
    while index >= 0 and time.perf_counter() < deadline:
        trial = events[:index] + events[index + 1:]
        candidate = dataclasses.replace(item, data=separator.join(trial))
        if trial and fails(candidate):
            events, item = trial, candidate
        index -= 1
    if item.chunk >= len(item.data):
        item = dataclasses.replace(item, chunk=max(len(item.data), 1))
    return item


def _reduce_body(item: Input, fails: Callable[[Input], bool], deadline: float) -> Input:
    value = json.loads(_decode(item.data))
    changed = True
    while changed and time.perf_counter() < deadline:
        changed = False
        for path in _container_paths(value):
            parent = value
            for step in path:
                parent = parent[step]
            keys = list(parent) if isinstance(parent, dict) else list(range(len(parent)))
            for key in reversed(keys):
                trial = _without(value, path, key)
                try:
                    text = json.dumps(trial, ensure_ascii=True, allow_nan=True)
                except (ValueError, RecursionError):
                    continue
                candidate = dataclasses.replace(item, data=text.encode())
                if fails(candidate):
                    value, item, changed = trial, candidate, True
                    break
            if changed or time.perf_counter() > deadline:
                break
    return item


def _container_paths(value: Any) -> list[tuple[Any, ...]]:
    paths: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack and len(paths) < 400:
        node, path = stack.pop()
        if isinstance(node, dict | list) and node:
            paths.append(path)
            children = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((child, (*path, key)) for key, child in children)
    return paths


def _without(value: Any, path: tuple[Any, ...], key: Any) -> Any:
    if not path:
        if isinstance(value, dict):
            return {name: item for name, item in value.items() if name != key}
        return value[:key] + value[key + 1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _without(value[path[0]], path[1:], key)
    return copy


def _save(provider: str, number: int, item: Input, extra: dict[str, Any]) -> str:
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"{provider}-{number}.bin"
    target.write_bytes(item.data)
    meta = {"provider": provider, **item.meta(), "bytes": len(item.data), **extra}
    target.with_suffix(".json").write_text(json.dumps(meta, ensure_ascii=True, indent=1) + "\n")
    return str(target)


def _hot_frame(engine: Engine, item: Input) -> tuple[str, str]:
    """The innermost function in providers/ or conformance/ holding half the time or more of a slow input,
    and how much it held."""
    profile = cProfile.Profile()
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    try:
        profile.runcall(engine.run, item)
    finally:
        signal.signal(signal.SIGALRM, _on_alarm)
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = max((row[3] for row in stats.values()), default=0.0)
    rows = [(cumulative, f"{_relative(filename)}:{line} {name}")
            for (filename, line, name), (_, _, _, cumulative, _) in stats.items()
            if filename.startswith(PROJECT_DIRS) and cumulative >= total / 2]
    if not rows:
        return "(none in providers/conformance)", f"{total:.2f} s profiled"
    cumulative, where = min(rows)
    return where, f"{cumulative:.2f} of {total:.2f} s profiled"


def _category(labels: list[str]) -> str:
    joined = " ".join(labels)
    for category in ("long-line", "repeat-event", "repeat-item", "deep", "int", "1e400"):
        if category in joined:
            return category
    return "other"


def _failure_rows(engine: Engine, provider: str, distinct: dict[tuple[str, str, str, str], dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    """One row per distinct failure, its input reduced and saved as a reproducer."""
    failures = []
    for saved, ((path, stage, error_type, frame), record) in enumerate(sorted(distinct.items()), start=1):
        failure: Failure = record["failure"]
        item = record["input"]
        reduced = item if stage == "hang" else _reduce(engine, item, failure.signature)
        target = _save(provider, saved, reduced, {"stage": stage, "error": error_type, "frame": frame,
                                                  "message": failure.message})
        failures.append({"path": path, "stage": stage, "error": error_type, "message": failure.message,
                         "frame": frame, "innermost": failure.innermost, "count": record["count"],
                         "labels": item.labels[:4], "reproducer": target, "chunk": reduced.chunk,
                         "bytes": len(reduced.data), "original_bytes": len(item.data), "status": reduced.status,
                         "headers": reduced.headers, "trace": failure.trace})
    return failures


def _slow_rows(engine: Engine, provider: str, slow: dict[tuple[str, str, str], dict[str, Any]], first: int
               ) -> list[dict[str, Any]]:
    """Slow input groups merged by their hot function, the slowest input of each saved as a reproducer."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for (path, stage, category), record in sorted(slow.items()):
        where, detail = _hot_frame(engine, record["input"])
        row = merged.setdefault((path, where), {"path": path, "hot": where, "count": 0, "max_s": 0.0,
                                                "stages": set(), "categories": set()})
        row["count"] += record["count"]
        row["stages"].add(stage)
        row["categories"].add(category)
        if record["max"] > row["max_s"]:
            row.update(max_s=round(record["max"], 2), input=record["input"], detail=detail)
    slow_rows = []
    for saved, row in enumerate(merged.values(), start=first + 1):
        item = row.pop("input")
        row["reproducer"] = _save(provider, saved, item, {"stage": "slow", "seconds": row["max_s"],
                                                          "hot": row["hot"]})
        row.update(stages=sorted(row["stages"]), categories=sorted(row["categories"]), chunk=item.chunk,
                   bytes=len(item.data), labels=item.labels[:3])
        slow_rows.append(row)
    return slow_rows


def fuzz(provider: str, inputs: int, seed: int, hang_seconds: float = 10.0,
         progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    signal.signal(signal.SIGALRM, _on_alarm)
    for old in OUT.glob(f"{provider}-*"):
        old.unlink()
    engine = Engine(provider, builtin_adapters()[provider], fuzz_task(), hang_seconds)
    generator = Generator(provider, seed)
    kinds: dict[str, Counter[str]] = {path: Counter() for path in PATHS}
    stage_counts: dict[str, Counter[str]] = {path: Counter() for path in PATHS}
    follow_ups: Counter[str] = Counter()
    distinct: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    slow: dict[tuple[str, str, str], dict[str, Any]] = {}
    slow_counts: Counter[str] = Counter()
    start = time.perf_counter()
    for number in range(inputs):
        for item in generator.inputs(number):
            before = engine.follow_ups
            outcome = engine.run(item)
            follow_ups[item.path] += engine.follow_ups - before
            if outcome.kind:
                kinds[item.path][outcome.kind] += 1
            for failure in outcome.failures:
                stage_counts[item.path][failure.stage] += 1
                record = distinct.setdefault((item.path, *failure.signature),
                                             {"count": 0, "failure": failure, "input": item})
                record["count"] += 1
            if outcome.seconds > SLOW_SECONDS:
                slow_counts[item.path] += 1
                if any(failure.stage == "hang" for failure in outcome.failures):
                    continue  # listed with the failures, by where the alarm found it
                stage = max(outcome.stage_seconds, key=outcome.stage_seconds.__getitem__)
                group = (item.path, stage, _category(item.labels))
                record = slow.setdefault(group, {"count": 0, "input": item, "max": 0.0})
                record["count"] += 1
                if outcome.seconds > record["max"]:
                    record.update(max=outcome.seconds, input=item)
        if progress and number and number % 5000 == 0:
            progress(f"{provider}: {number:,} inputs, {time.perf_counter() - start:.0f} s, "
                     f"{len(distinct)} distinct failures, {sum(slow_counts.values())} slow")
    elapsed = time.perf_counter() - start
    failures = _failure_rows(engine, provider, distinct)
    slow_rows = _slow_rows(engine, provider, slow, first=len(failures))
    return {
        "provider": provider,
        "inputs": inputs,
        "seconds": round(elapsed, 1),
        "kinds": {path: dict(counter) for path, counter in kinds.items()},
        "stages": {path: dict(counter) for path, counter in stage_counts.items()},
        "follow_ups": dict(follow_ups),
        "slow": dict(slow_counts),
        "failures": failures,
        "slow_inputs": slow_rows,
        "unparseable_regenerated": generator.unparseable,
        "generator_errors": generator.generator_errors,
        "oversized_regenerated": generator.oversized,
    }


def _worker(arguments: tuple[str, int, int, float, str]) -> dict[str, Any]:
    global OUT  # noqa: PLW0603 - the worker process's output folder, set once
    provider, inputs, seed, hang, out = arguments
    OUT = Path(out)
    try:
        return fuzz(provider, inputs, seed, hang, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except Exception as error:  # noqa: BLE001 - one provider's setup failing must not lose the others' results
        return {"provider": provider, "setup_error": f"{type(error).__name__}: {str(error)[:300]}"}


# ---------------------------------------------------------------------------------------------------------------
# Printing


def _print_results(results: list[dict[str, Any]], inputs: int, seed: int, wall: float) -> int:
    short = {"retryable_error": "retryable", "fatal_error": "fatal", "invalid_tool_call": "invalid",
             "unsupported": "unsupp", "tool_calls": "tools", "incomplete": "incompl"}
    print(f"\n{inputs:,} structure-aware inputs per adapter (one classify + one stream each), seed {seed}, "
          f"wall {wall:.0f} s, tree {_tree()}")
    header = f"{'provider':<19}{'path':<9}" + "".join(f"{short.get(kind, kind):>9}" for kind in KINDS)
    header += "".join(f"{name:>8}" for name in ("followup", "raised", "report", "request", "correl", "problem",
                                                "hang", "slow"))
    print(header + f"{'s':>6}")
    total_failures = 0
    for result in [row for row in results if "setup_error" in row]:
        total_failures += 1
        print(f"{result['provider']}: not fuzzed, setup failed: {result['setup_error']}")
    results = [row for row in results if "setup_error" not in row]
    for result in sorted(results, key=lambda row: row["provider"]):
        for path in PATHS:
            kinds = result["kinds"][path]
            stages = result["stages"][path]
            line = f"{result['provider']:<19}{path:<9}" + "".join(f"{kinds.get(kind, 0):>9,}" for kind in KINDS)
            line += f"{result['follow_ups'].get(path, 0):>8,}"
            line += "".join(f"{stages.get(stage, 0):>8,}" for stage in (*STAGES, "hang"))
            line += f"{result['slow'].get(path, 0):>8,}{result['seconds'] if path == 'stream' else 0:>6.0f}"
            print(line)
    for result in sorted(results, key=lambda row: row["provider"]):
        if not result["failures"] and not result["slow_inputs"]:
            continue
        print(f"\n== {result['provider']}: {len(result['failures'])} distinct failure(s), "
              f"{len(result['slow_inputs'])} slow group(s)")
        for failure in result["failures"]:
            total_failures += 1
            how = f"chunk {failure['chunk']}" if failure["path"] == "stream" else (
                f"classify_error status {failure['status']}, headers {ascii(failure['headers'])[:120]}"
                if failure["status"] is not None else "classify_body")
            print(f"- {failure['path']}/{failure['stage']}: {failure['error']}: {failure['message']}")
            print(f"    at {failure['frame']} (innermost {failure['innermost']}); x{failure['count']:,}; "
                  f"labels {ascii(failure['labels'])[:160]}")
            print(f"    reproducer {failure['reproducer']} ({failure['bytes']:,} of {failure['original_bytes']:,} "
                  f"bytes, {how})")
        for row in result["slow_inputs"]:
            total_failures += 1
            rate = row["bytes"] / row["max_s"] / 1e6
            print(f"- {row['path']}/slow (> {SLOW_SECONDS:.0f} s): x{row['count']:,}, max {row['max_s']} s "
                  f"({rate:.2f} MB/s), "
                  f"hot {row['hot']} ({row['detail']}); stage {'/'.join(row['stages'])}, "
                  f"inputs {'/'.join(row['categories'])}")
            print(f"    reproducer {row['reproducer']} ({row['bytes']:,} bytes, chunk {row['chunk']}); "
                  f"labels {ascii(row['labels'])[:160]}")
    return total_failures


def _tree() -> str:
    """The commit the adapters were fuzzed at, and whether the working tree had changes."""
    try:
        import subprocess

        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "providers", "conformance"], cwd=ROOT,
                               capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "?"
    return f"{head}{' + uncommitted changes in providers/conformance' if dirty else ''}"


def replay(path: str, hang: float) -> int:
    meta = json.loads(Path(path).with_suffix(".json").read_text())
    provider = meta["provider"]
    signal.signal(signal.SIGALRM, _on_alarm)
    engine = Engine(provider, builtin_adapters()[provider], fuzz_task(), hang)
    item = Input(meta["path"], Path(path).read_bytes(), meta["labels"], chunk=meta["chunk"], status=meta["status"],
                 headers=meta["headers"], body_is_text=meta["body_is_text"], number=meta["number"])
    outcome = engine.run(item)
    print(f"{provider} {item.path}: kind {outcome.kind}, {outcome.seconds:.3f} s, stages {outcome.stage_seconds}")
    for failure in outcome.failures:
        print(f"{failure.stage}: {failure.error_type} at {failure.frame}\n{failure.trace}")
    return 1 if outcome.failures or outcome.seconds > SLOW_SECONDS else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--provider", action="append", help="fuzz only this provider (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="processes, one provider each at a time")
    parser.add_argument("--hang", type=float, default=10.0, help="seconds after which an input is interrupted")
    parser.add_argument("--replay", help="re-run one saved reproducer (/tmp/fuzz-failures/<provider>-<n>.bin)")
    parser.add_argument("--out", default=str(OUT), help="where reproducers go (<provider>-<n>.bin, .json beside)")
    parser.add_argument("--json", default=str(Path("reports") / "fuzz.json"), help="where to write the results")
    arguments = parser.parse_args()
    if arguments.replay:
        return replay(arguments.replay, arguments.hang)
    providers = arguments.provider or sorted(builtin_adapters())
    start = time.perf_counter()
    jobs = [(provider, arguments.inputs, arguments.seed, arguments.hang, arguments.out) for provider in providers]
    if arguments.jobs > 1 and len(jobs) > 1:
        with multiprocessing.get_context("fork").Pool(min(arguments.jobs, len(jobs))) as pool:
            results = list(pool.imap_unordered(_worker, jobs))
    else:
        results = [_worker(job) for job in jobs]
    wall = time.perf_counter() - start
    found = _print_results(results, arguments.inputs, arguments.seed, wall)
    out = Path(arguments.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {"inputs": arguments.inputs, "seed": arguments.seed, "wall_seconds": round(wall, 1),
                "results": {result["provider"]: result for result in results}}
    out.write_text(json.dumps(document, indent=1, ensure_ascii=True, default=str) + "\n")
    print(f"\nwrote {out}; {found} distinct failure(s) and slow group(s)")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
