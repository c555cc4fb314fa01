"""Telemetry lanes: a stack's rows replayed with a team's OpenTelemetry instrumentation installed, its spans kept in
memory and read back as the GenAI semantic convention's attributes (docs/telemetry.md, "The telemetry lane").

A telemetry lane is a stack lane with an ``Instrumentation`` beside it: ``openai-chat@openai-sdk+openllmetry`` is the
openai SDK stack's rows run while OpenLLMetry's openai instrumentation is installed. Each call the stack's client
makes is one turn; the spans that end during it are the instrumentation's account of that turn. They go to an
in-memory exporter (``opentelemetry.sdk``'s ``InMemorySpanExporter`` behind a ``SimpleSpanProcessor``) and nowhere
else; the instrumentation is installed for the row and removed after it, so no other row runs instrumented. A run
that keeps it (``keeping``: ``conformance run`` runs a lane's rows one after another) installs it once for the lane's
rows and removes it before any other row.

The reading kept in the row (``row["telemetry"]``) is per turn: how many inference spans ended, and their attributes
under the convention's names (``conformance.report.telemetry`` compares them with the wire).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Dialect = Literal["semconv", "openinference"]

Install = Callable[[Any], Callable[[], None]]
"""Given a ``TracerProvider``, install the instrumentation so its spans go to that provider; return what removes it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Instrumentation:
    """A team's instrumentation, as a telemetry lane installs it."""

    id: str
    """Appended to the stack's lane: ``<provider>@<stack>+<id>``."""
    providers: tuple[str, ...]
    """The APIs whose SDK calls it instruments: it gets a lane beside each stack of these."""
    install: Install
    requires: tuple[str, ...]
    """Modules it imports; without them its lanes are skipped with the install hint."""
    packages: tuple[str, ...] = ()
    """The distributions whose versions the report records."""
    dialect: Dialect = "semconv"
    """How its spans name things: ``semconv`` (``gen_ai.*``, the OpenTelemetry GenAI convention) or ``openinference``
    (``llm.*``, Arize's OpenInference convention, read through ``conformance.report.telemetry.OPENINFERENCE``)."""
    patches: tuple[str, ...] = ()
    """The client modules whose classes it wraps: the lane puts every method of their classes back as it was after
    the row, whatever its own uninstall leaves behind (``restore``)."""
    scopes: tuple[str, ...] = ()
    """The instrumentation scope names (prefixes) of its spans; spans of another scope are not its account."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Variables set while it is installed (its switches for recording message content, which carries the tool
    call ids), restored after."""
    accepted: Mapping[str, str] = field(default_factory=dict)
    """Findings the team accepts, as ``Stack.accepted``."""
    description: str = ""
    extra: str = "telemetry"


_LOCK = threading.Lock()


class Capture:
    """The spans that ended while an instrumentation was installed, in memory."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415 - the telemetry extra, loaded on use
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: PLC0415
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: PLC0415

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def take(self) -> list[Any]:
        """The spans that ended since the last take."""
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        return spans


@functools.cache
def _capture() -> Capture:
    return Capture()


@contextlib.contextmanager
def installed(instrumentation: Instrumentation) -> Iterator[Capture]:
    """The instrumentation installed for the block, its spans going to this process's in-memory capture, removed
    after it; one at a time in a process (one a lane keeps installed is removed first, ``Kept``). Whatever happens
    (an install that fails, an uninstall that raises), the client classes are put back as they were and the
    variables restored. The capture's provider is made once and never shut down: an instrumentation may keep the
    tracer it was first given across uninstall and install."""
    KEPT.release()
    with _installed(instrumentation) as capture:
        yield capture


@contextlib.contextmanager
def _installed(instrumentation: Instrumentation) -> Iterator[Capture]:
    with _LOCK:
        saved = {name: os.environ.get(name) for name in instrumentation.environment}
        before: Snapshot = []
        capture: Capture | None = None
        try:
            os.environ.update(instrumentation.environment)
            capture = _capture()
            capture.take()
            before = snapshot(instrumentation.patches)
            remove = instrumentation.install(capture.provider)
            try:
                yield capture
            finally:
                remove()
        finally:
            restore(before)
            if capture is not None:
                capture.take()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


class Kept:
    """The instrumentation a run keeps installed across the rows of its telemetry lanes, as a team installs it once
    per process: installed on a lane's first row, removed when a row of anything else runs (another instrumentation's
    lane, a stack alone) or the run's ``keeping`` block ends. Outside that block every row installs and removes its
    own (``installed``)."""

    def __init__(self) -> None:
        self.depth = 0
        """How many ``keeping`` blocks are open: rows keep their instrumentation installed only inside one."""
        self.instrumentation: Instrumentation | None = None
        self.capture: Capture | None = None
        self.installs = 0
        """How many times an instrumentation was installed for kept rows in this process."""
        self._exit = contextlib.ExitStack()

    def capture_for(self, instrumentation: Instrumentation) -> Capture:
        """The capture of ``instrumentation``, installed now unless it already is; an install that raises is not
        kept (the next row tries again, and fails with its own error)."""
        if self.instrumentation is not instrumentation or self.capture is None:
            self.release()
            exit_stack = contextlib.ExitStack()
            self.capture = exit_stack.enter_context(_installed(instrumentation))
            self.instrumentation, self._exit = instrumentation, exit_stack
            self.installs += 1
        return self.capture

    def release(self) -> None:
        """Remove the kept instrumentation (its uninstall, the classes and variables put back), if one is."""
        exit_stack, self._exit = self._exit, contextlib.ExitStack()
        self.instrumentation = self.capture = None
        exit_stack.close()


KEPT = Kept()


@contextlib.contextmanager
def keeping() -> Iterator[Kept]:
    """Inside the block, a telemetry lane's instrumentation stays installed from its first row to the last of a run
    of its rows (``Kept``); removed when the block ends."""
    KEPT.depth += 1
    try:
        yield KEPT
    finally:
        KEPT.depth -= 1
        if KEPT.depth == 0:
            KEPT.release()


Snapshot = list[tuple[type, dict[str, Any]]]


def snapshot(prefixes: tuple[str, ...]) -> Snapshot:
    """Every class defined in the loaded modules named by ``prefixes`` (a module or its submodules), with its own
    attributes as they are now."""
    seen: set[str] = set()
    for prefix in prefixes:
        _load(prefix, seen)
    taken: Snapshot = []
    for name, module in list(sys.modules.items()):
        if module is None or not any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name:
                taken.append((value, dict(vars(value))))
    return taken


def _load(name: str, seen: set[str]) -> None:
    """Import ``name`` and every name it exports, submodules too: an SDK that loads its submodules on first access
    (the openai SDK's lazy ``__getattr__``) would otherwise have classes the snapshot never saw."""
    if name in seen:
        return
    seen.add(name)
    try:
        module = importlib.import_module(name)
    except ImportError:
        return
    for attribute in dir(module):
        with contextlib.suppress(Exception):
            value = getattr(module, attribute)
            if isinstance(value, types.ModuleType) and value.__name__.startswith(name + "."):
                _load(value.__name__, seen)


def restore(taken: Snapshot) -> None:
    """Put each class's attributes back as the snapshot has them: an instrumentation whose uninstall leaves a
    wrapper in place (opentelemetry-instrumentation-openai-v2 2.4b0 keeps its Responses wrappers, so each install
    adds a span per call) does not carry it into the next row."""
    for owner, attributes in taken:
        now = vars(owner)
        for key in [key for key in now if key not in attributes]:
            with contextlib.suppress(AttributeError, TypeError):
                delattr(owner, key)
        for key, value in attributes.items():
            if now.get(key) is not value:
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(owner, key, value)


def span_record(span: Any) -> dict[str, Any]:
    """A finished span as builtins: name, instrumentation scope, status and its attributes (tuples as lists)."""
    attributes = {key: list(value) if isinstance(value, tuple) else value
                  for key, value in (span.attributes or {}).items()}
    return {"name": span.name, "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
            "error": span.status.status_code.name == "ERROR", "attributes": attributes}


def with_telemetry(stack: Any, instrumentation: Instrumentation) -> Any:
    """The telemetry lane of ``stack``: its rows, named ``<provider>@<stack>+<instrumentation>``, run with the
    instrumentation installed. The stack's declared differences, waivers and accepted findings still hold (the
    client is the same); the instrumentation's accepted findings are added."""
    return dataclasses.replace(
        stack, id=f"{stack.id}{PLUS}{instrumentation.id}", telemetry=instrumentation,
        requires=(*stack.requires, "opentelemetry.sdk.trace", *instrumentation.requires),
        packages=(*(stack.packages or tuple(module.replace(".", "-") for module in stack.requires)),
                  *instrumentation.packages),
        accepted={**stack.accepted, **instrumentation.accepted}, extra=instrumentation.extra,
        description=f"{stack.description} with {instrumentation.description}".strip())


PLUS = "+"
"""Between a stack's id and its instrumentation's in a telemetry lane's name."""


def telemetry_lanes(stacks: Mapping[str, Any]) -> dict[str, Any]:
    """A telemetry lane for each built-in instrumentation (``conformance.stacks.sdk.instrumentations``) beside each
    stack of an API it instruments, by row id."""
    from conformance.stacks.sdk.instrumentations import BUILTIN  # noqa: PLC0415 - the records name the vendors

    lanes: dict[str, Any] = {}
    for stack in stacks.values():
        for instrumentation in BUILTIN:
            if stack.provider in instrumentation.providers:
                lane = with_telemetry(stack, instrumentation)
                lanes[lane.row_id] = lane
    return lanes
