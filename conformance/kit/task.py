"""The neutral task and the transcript an adapter replays: what the loop hands every adapter, whatever the vendor
(docs/adapters.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from conformance.kit.types import ModelResponse, ToolCall

ToolChoice = Literal["auto", "none", "required", "tool"]
"""The neutral tool choices of ``Task.tool_choice``."""


TOOL_CHOICES: tuple[ToolChoice, ...] = get_args(ToolChoice)


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
    tool_choice: ToolChoice = "auto"
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
    """A model response in the transcript; its ``output_items`` are re-sent verbatim to the API that answered."""

    response: ModelResponse
    api: str | None = None
    """The API the turn was answered on (``anthropic-messages``); None: the API the next request goes to. A turn
    answered on another built-in API is rebuilt from its text and calls (``conformance.providers.switch``)."""



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


FORCING_CHOICES: tuple[ToolChoice, ...] = ("required", "tool")
"""Tool choices that make the model call a tool; a loop sends them until it has."""


def task_for_turn(task: Task, transcript: Sequence[TranscriptEntry]) -> Task:
    """The task as the loop sends it after ``transcript``.

    A forcing tool choice (``required``, or ``tool`` with ``tool_name``) holds until the model has called a tool
    since the last user message; once the results of that call go back, the request carries ``auto``. With the
    forced choice kept, the model would have to call a tool again and could never answer; loops reset it (the OpenAI
    Agents SDK's ``reset_tool_choice``). docs/contract.md, "Requests".
    """
    if task.tool_choice not in FORCING_CHOICES or not called_since_user(
            "results" if isinstance(entry, ToolResults) else "user" if isinstance(entry, UserMessage) else "model"
            for entry in transcript):
        return task
    return dataclasses.replace(task, tool_choice="auto", tool_name=None)


def called_since_user(roles: Iterable[str]) -> bool:
    """True when, in a conversation given by its entries' roles (``user``, ``model``, ``results``), tool results
    follow the last user message."""
    called = False
    for role in roles:
        if role == "user":
            called = False
        elif role == "results":
            called = True
    return called
