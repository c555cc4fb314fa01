"""What an adapter is: the neutral task, the transcript it replays, and the record of its pure functions.

An adapter never does I/O. The engine hands it a task and a transcript and gets a wire request back;
it hands it a status, headers and a body (or a stream) and gets one contract kind back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.stream import StreamResult
from conformance.types import ModelResponse, ToolCall


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool offered to the model, in neutral form."""

    name: str
    """The tool name the model must use."""
    description: str
    """What the tool does, for the model."""
    parameters: Mapping[str, Any]
    """The JSON Schema of the tool's arguments."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """The neutral task every vendor receives."""

    instructions: str
    """The system/developer instructions (part of the static prefix)."""
    input: str
    """The first user message."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools offered, in a fixed order (part of the static prefix)."""
    output_schema: Mapping[str, Any] | None = None
    """A JSON Schema the final answer must satisfy, or None for free text."""
    output_schema_name: str = "answer"
    """The name some vendors require beside an output schema."""
    max_output_tokens: int = 1024
    """The output token cap sent to the vendor."""
    tool_choice: str = "auto"
    """``auto``, ``none``, ``required`` or ``tool`` (then ``tool_name`` names the forced tool)."""
    tool_name: str | None = None
    """The forced tool when ``tool_choice`` is ``tool``."""
    follow_ups: tuple[str, ...] = ()
    """Further user messages, each sent after the previous answer (a multi-turn conversation)."""
    model: str = "model-under-test"
    """The model name written into requests; fixtures decide what answered."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """A user turn in the transcript."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelTurn:
    """A model response in the transcript; its ``output_items`` are re-sent verbatim."""

    response: ModelResponse


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The result of one executed (or refused) call, echoing the call's id."""

    call: ToolCall
    """The call this result answers."""
    output: Mapping[str, Any]
    """The result object sent back to the model."""
    is_error: bool = False
    """True when the call was refused or failed (denied, unknown tool, bad arguments)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResults:
    """All results answering one model turn, sent together."""

    results: tuple[ToolResult, ...]


TranscriptEntry = UserMessage | ModelTurn | ToolResults


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestParts:
    """An adapter's reading of one of its own requests, for the correlation checks."""

    prefix: Any
    """The static prefix (instructions, tools, tool choice, output schema): must not change."""
    history: Sequence[Any]
    """The conversation entries, in order: must only grow at the end."""
    results: Sequence[tuple[str | None, str | None]]
    """Every tool result in the history, in order, as (echoed call id or None, tool name or None)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Adapter:
    """One vendor API's pure functions, registered under a provider id."""

    id: str
    """The provider id, e.g. ``openai-responses``."""
    build_request: Callable[[Task, Sequence[TranscriptEntry]], dict[str, Any]]
    """Neutral task + transcript → the wire request body."""
    read_request: Callable[[Mapping[str, Any]], RequestParts]
    """A wire request this adapter built → its prefix, history and echoed call ids."""
    classify_body: Callable[[Any], ModelResponse]
    """A successful (HTTP 2xx) JSON body → one contract kind."""
    classify_error: Callable[[int, Any, Mapping[str, str]], ModelResponse]
    """HTTP status, error body (JSON, text or None) and lower-cased headers → one contract kind."""
    assemble_stream: Callable[[Iterable[bytes]], StreamResult] | None = None
    """A raw stream transcript, as byte chunks → the same kind a body gives, plus a stream summary."""
    description: str = ""
    """One line for listings: the API the adapter speaks."""


def request_history(request: Any, key: str) -> list[Any]:
    """The conversation list under ``key`` of a wire request, or [] when the request holds none."""
    history = request.get(key) if isinstance(request, Mapping) else None
    return list(history) if isinstance(history, list) else []


def request_prefix(request: Any, key: str) -> dict[str, Any]:
    """Everything of a wire request but its conversation list: the part that must never change."""
    return {name: value for name, value in request.items() if name != key} if isinstance(request, Mapping) else {}
