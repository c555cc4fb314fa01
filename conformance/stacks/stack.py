"""Stacks: a team's real client code as a lane of the matrix (docs/stacks.md).

A stack is what a production adapter looks like: given the neutral task, the transcript and an ``Endpoint`` (a
replay session's base URL), it makes the real call through a real client — an official SDK, a gateway — and maps
what the client returns (or raises) to one contract kind. The replay server keeps every request the client sent, so
correlation and the request checks run on what the real client sent, read by the raw adapter of the same API.

A stack's rows are named ``<provider>@<stack>`` (e.g. ``openai-chat@openai-sdk``): the report compares them side
by side with the raw adapters, column by column.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from conformance.engine.cases import Expectation
from conformance.errors import InputError, Problem
from conformance.kit.task import Task, TranscriptEntry
from conformance.kit.types import ModelResponse
from conformance.kit.waiver import Waiver


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """Where a stack's client sends its requests: one replay session."""

    base_url: str
    """The session root, ``http://127.0.0.1:<port>/s/<case>/<provider>/<mode>``; each SDK adds its own path (the
    openai SDK wants ``<base_url>/v1``; anthropic, google-genai and boto3 take it as it is)."""
    stream: bool
    """Whether this row calls the streaming API."""
    replay: Any = None
    """In process: the ``conformance.replay.router.Replay`` to answer from through the client's own seam
    (``conformance.stacks.transports``), with no socket; None: the loopback server at ``base_url``."""
    retries: bool = False
    """True: the client keeps its library's default retry policy, as a team that configures none gets it (the retry
    lane, docs/retries.md); False: retries off, so that every request the client sends is one the case answers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Stack:
    """A real client's lane, registered under a stack id."""

    id: str
    """The stack id, e.g. ``openai-sdk``; its rows are ``<provider>@<id>``."""
    provider: str
    """The API it speaks, whose fixtures it replays and whose raw adapter reads its requests."""
    call: Callable[[Task, Sequence[TranscriptEntry], Endpoint], ModelResponse | Awaitable[ModelResponse]]
    """Make one real call for the next turn and map the result (or the client's exception) to one kind. An async
    function is awaited, each call in an event loop of its own (build the async client inside it)."""
    in_process: bool = True
    """Whether the stack can answer through its client's own seam (``Endpoint.replay``); when False its rows use
    the loopback server even under ``--in-process`` (a gateway whose HTTP layer has no seam the suite reaches)."""
    requires: tuple[str, ...] = ()
    """Modules the stack imports (its SDK); without them its rows are skipped with a one-line reason."""
    extra: str = "stacks"
    """The extra of this package that installs ``requires``, named in the skip reason (``pip install
    'llm-conformance[stacks]'``)."""
    packages: tuple[str, ...] = ()
    """The distributions whose versions the report records for this stack (default: ``requires`` spelled as
    distribution names, ``google.genai`` → ``google-genai``)."""
    description: str = ""
    differences: Mapping[tuple[str, str], Expectation] = field(default_factory=dict)
    """Where the client honestly differs from the raw adapter, by (case id, mode): the expectation the stack's row
    must meet instead, its ``why`` stating the evidence. Shown as an override in the report, never a silent pass."""
    streams: bool = True
    """False for code that never streams: the stack has no stream rows (none is planned), rather than stream rows
    that would pass for code that never streams or fail for a feature it does not have."""
    waivers: tuple[Waiver, ...] = ()
    """What does not apply to this stack's rows, each with its reason (``conformance.kit.waiver``): a feature the
    application does not offer, an exception it lets its caller handle. Waived rows are reported as waived."""
    cases: tuple[str, ...] = ("*",)
    """Shell patterns on the case ids the stack runs (default: every case with fixtures for its provider)."""
    loop: Callable[[Any], str] | None = None
    """The team's own agent loop, when the stack runs it whole instead of one call per turn: given an
    ``AgentSession``, it returns the final answer text (``conformance.stacks.agent.agent_stack``, docs/glue.md)."""
    telemetry: Any = None
    """The instrumentation a telemetry lane runs the stack's rows with (``conformance.stacks.telemetry``); None for
    the stack alone."""
    accepted: Mapping[str, str] = field(default_factory=dict)
    """Findings (``conformance.report.findings``) the team accepts, each with its reason: keyed by field
    (``response_id``, ``usage.reasoning_tokens``, ...) for every case, or ``field@case`` for one. A finding not
    accepted here that appears after an upgrade is a regression in ``conformance diff``."""

    variant: str | None = None
    """The recorded model variant of ``provider`` this copy of the stack replays (``openai-chat~deepseek-v4``'s
    ``deepseek-v4``), set by the plan for each variant a case has; None for the provider's own fixtures."""

    @property
    def fixtures(self) -> str:
        """The fixture set it replays: ``provider``, or its variant (``openai-chat~deepseek-v4``)."""
        return self.provider if self.variant is None else f"{self.provider}~{self.variant}"

    @property
    def row_id(self) -> str:
        """The report's provider column for this stack: ``<provider>@<id>`` (``<provider>~<variant>@<id>``)."""
        return f"{self.fixtures}@{self.id}"

    def versions(self) -> dict[str, str | None]:
        """Each of ``packages`` with its installed version (None when it is not installed)."""
        out: dict[str, str | None] = {}
        for name in self.packages or tuple(module.replace(".", "-") for module in self.requires):
            try:
                out[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                out[name] = None
        return out

    def skip_reason(self) -> str | None:
        """Why the stack's rows cannot run here (its modules are missing, with the install hint), or None."""
        missing = self.missing()
        return f"{', '.join(missing)} not installed (pip install 'llm-conformance[{self.extra}]')" if missing else None

    def missing(self) -> list[str]:
        """The required modules that are not installed."""
        return [module for module in self.requires if not _importable(module)]


def _importable(module: str) -> bool:
    """Whether ``module`` can be imported here; a missing parent package (``opentelemetry`` for
    ``opentelemetry.instrumentation.openai``) counts as missing, not as an error."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


ClientT = TypeVar("ClientT")
_CLIENTS: dict[tuple[Any, str, bool, bool], Any] = {}


DROPPED = frozenset({"APIConnectionError", "RemoteProtocolError", "ReadError", "ProtocolError", "IncompleteRead",
                     "ClientPayloadError", "ResponseStreamingError"})
"""The exception classes, by name, in which the SDKs and their HTTP libraries (httpx, urllib3, aiohttp, botocore)
say that the connection was lost in the middle of an answer."""


def dropped(error: BaseException) -> ModelResponse | None:
    """A connection lost in the middle of an answer, as the retryable interruption it is (docs/retries.md); None for
    any other exception, which the stack lets through."""
    from conformance.kit.types import RetryableError  # noqa: PLC0415

    if isinstance(error, ConnectionError) or {cls.__name__ for cls in type(error).__mro__} & DROPPED:
        return RetryableError(raw=f"connection dropped: {type(error).__name__}", reason="interrupted")
    return None


def retry_options(endpoint: Endpoint, off: dict[str, Any]) -> dict[str, Any]:
    """``off`` (the client options that turn its retries off), or none where the endpoint keeps the library's default
    retries (``Endpoint.retries``)."""
    return {} if endpoint.retries else off


def client_for(endpoint: Endpoint, build: Callable[[Endpoint], ClientT]) -> ClientT:
    """The client ``build(endpoint)`` made for this session, built on its first call and kept, as production code
    keeps its client (building an SDK client costs more than one call). Keyed by what the builder does — its code
    and the values it closes over, so a lambda written inside the stack's call is the same builder on every call —,
    the session's base URL and the seam (loopback or in process)."""
    key = (_builder_key(build), endpoint.base_url, endpoint.replay is not None, endpoint.retries)
    client = _CLIENTS.get(key)
    if client is None or not _still_loaded(type(client)):
        client = _CLIENTS[key] = build(endpoint)
    return client


def _still_loaded(cls: type) -> bool:
    """Whether ``cls`` is still the class its module holds under its name: a host that runs pytest more than once in
    one process (``pytester``'s in-process runs) removes the modules a session imported, and the SDK imported again
    makes new classes, which a client kept from the session before is not an instance of."""
    found: Any = sys.modules.get(cls.__module__)
    if found is None or "<locals>" in cls.__qualname__:  # a class made inside a function: its module is all to check
        return found is not None
    for name in cls.__qualname__.split("."):
        found = getattr(found, name, None)
    return found is cls


class _Same:
    """An unhashable value in a builder's key, compared by identity (and kept alive by the key, so its id is never
    reused by another object while the client is cached)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return _Same(value)
    return value


def _builder_key(build: Callable[..., Any]) -> Any:
    """A function's code, with the values of its closure and defaults (by identity when they are unhashable): a lambda
    made anew per call is one builder. Anything else that builds (a class, a callable object) is its own key."""
    code = getattr(build, "__code__", None)
    if code is None:
        return build
    closure = tuple(_hashable(cell.cell_contents) for cell in getattr(build, "__closure__", None) or ())
    defaults = tuple(_hashable(value) for value in getattr(build, "__defaults__", None) or ())
    return code, closure, defaults


BUILTIN_STACKS: dict[str, str] = {
    "openai-chat@openai-sdk": "conformance.stacks.sdk.openai_chat:STACK",
    "anthropic-messages@anthropic-sdk": "conformance.stacks.sdk.anthropic_messages:STACK",
    "bedrock-converse@boto3": "conformance.stacks.sdk.bedrock_converse:STACK",
    "gemini@google-genai": "conformance.stacks.sdk.gemini:STACK",
    "openai-responses@openai-sdk": "conformance.stacks.sdk.openai_responses:STACK",
}
GATEWAY_STACKS: dict[str, str] = {
    "openai-chat@litellm": "conformance.stacks.gateways.litellm:OPENAI_CHAT",
    "openai-responses@litellm": "conformance.stacks.gateways.litellm:OPENAI_RESPONSES",
    "anthropic-messages@litellm": "conformance.stacks.gateways.litellm:ANTHROPIC_MESSAGES",
    "gemini@litellm": "conformance.stacks.gateways.litellm:GEMINI",
    "bedrock-converse@litellm": "conformance.stacks.gateways.litellm:BEDROCK_CONVERSE",
    "openai-chat@langchain": "conformance.stacks.gateways.langchain:OPENAI_CHAT",
    "openai-responses@langchain": "conformance.stacks.gateways.langchain:OPENAI_RESPONSES",
    "anthropic-messages@langchain": "conformance.stacks.gateways.langchain:ANTHROPIC_MESSAGES",
    "gemini@langchain": "conformance.stacks.gateways.langchain:GEMINI",
    "bedrock-converse@langchain": "conformance.stacks.gateways.langchain:BEDROCK_CONVERSE",
    "openai-chat@pydantic-ai": "conformance.stacks.gateways.pydantic_ai:OPENAI_CHAT",
    "openai-responses@pydantic-ai": "conformance.stacks.gateways.pydantic_ai:OPENAI_RESPONSES",
    "anthropic-messages@pydantic-ai": "conformance.stacks.gateways.pydantic_ai:ANTHROPIC_MESSAGES",
    "gemini@pydantic-ai": "conformance.stacks.gateways.pydantic_ai:GEMINI",
    "bedrock-converse@pydantic-ai": "conformance.stacks.gateways.pydantic_ai:BEDROCK_CONVERSE",
}


def load_stack(spec: str) -> Stack:
    """The Stack record named by ``module:object`` or ``path/to/file.py:object`` (imported as adapters are)."""
    from conformance.engine.registry import load_object_spec  # noqa: PLC0415 - registry imports adapters, not stacks

    stack = load_object_spec(spec, "--stack")
    if not isinstance(stack, Stack):
        raise InputError([Problem(spec, None, f"is a {type(stack).__name__}, not a conformance.stacks.stack.Stack",
                                  "point --stack at a Stack(...) record")])
    return stack


def builtin_stacks() -> dict[str, Stack]:
    """The reference SDK stacks shipped with the suite, by row id."""
    return {row_id: load_stack(spec) for row_id, spec in BUILTIN_STACKS.items()}


def gateway_stacks() -> dict[str, Stack]:
    """The reference gateway stacks (LiteLLM, LangChain, pydantic-ai), by row id (docs/gateways.md)."""
    return {row_id: load_stack(spec) for row_id, spec in GATEWAY_STACKS.items()}


def telemetry_stacks() -> dict[str, Stack]:
    """The reference SDK stacks, each with every shipped instrumentation of its API (docs/telemetry.md)."""
    from conformance.stacks.telemetry import telemetry_lanes  # noqa: PLC0415 - the lane's module loads on use

    return telemetry_lanes(builtin_stacks())


GROUPS = ("all", "sdks", "gateways", "telemetry")


def select_stacks(specs: Sequence[str] | None) -> list[Stack]:
    """``--stack`` values: ``sdks`` (the reference SDK stacks), ``gateways`` (the reference gateway stacks),
    ``all`` (both), ``telemetry`` (the SDK stacks' telemetry lanes), a reference stack's or telemetry lane's row id
    (``openai-chat@openai-sdk+openllmetry``), or ``module:object``."""
    builtin = {**BUILTIN_STACKS, **GATEWAY_STACKS}
    chosen: dict[str, Stack] = {}
    for spec in specs or []:
        if spec == "telemetry":
            chosen.update(telemetry_stacks())
        elif spec in GROUPS:
            if spec != "gateways":
                chosen.update(builtin_stacks())
            if spec != "sdks":
                chosen.update(gateway_stacks())
        elif spec in builtin:
            chosen[spec] = load_stack(builtin[spec])
        elif "+" in spec and spec in (lanes := telemetry_stacks()):
            chosen[spec] = lanes[spec]
        elif ":" in spec:
            stack = load_stack(spec)
            chosen[stack.row_id] = stack
        else:
            raise InputError([Problem("--stack", None, f"unknown stack {spec!r}",
                                      f"use all, sdks, gateways, telemetry, one of {', '.join(sorted(builtin))}, "
                                      "a telemetry lane (e.g. openai-chat@openai-sdk+openllmetry) or module:object")])
    return list(chosen.values())
