"""The internal types every adapter maps a vendor response to (docs/contract.md, "Kinds").

Business code depends on these, never on a wire format. Each kind is a small frozen dataclass with a
``kind`` tag; wire JSON stays plain dicts at the edge and only travels here as opaque ``output_items``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args

# The contract's vocabularies, defined once. The case schema (conformance/schema/case.schema.json) and
# docs/contract.md list the same words; tests/test_vocabulary.py keeps the copies equal.

UsageField = Literal[
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "total_tokens",
]
USAGE_FIELDS: tuple[UsageField, ...] = get_args(UsageField)

Kind = Literal[
    "text",
    "tool_calls",
    "refusal",
    "incomplete",
    "retryable_error",
    "fatal_error",
    "invalid_tool_call",
    "unsupported",
    "empty",
]
KINDS: tuple[Kind, ...] = get_args(Kind)

# What the business got from a whole loop: its own outcomes, or a terminal kind as itself.
LoopOutcome = Literal[
    "answer_ready",
    "unverified_answer",
    "schema_invalid",
    "permission_denied",
    "unknown_tool",
    "invalid_arguments",
    "duplicate_call_id",
    "budget_exhausted",
]
Outcome = LoopOutcome | Literal[
    "refusal", "incomplete", "retryable_error", "fatal_error", "invalid_tool_call", "unsupported", "empty"
]
OUTCOMES: tuple[str, ...] = (*get_args(LoopOutcome), *(kind for kind in KINDS if kind not in ("text", "tool_calls")))

# The reason a refusal carries.
RefusalSource = Literal["model", "filter"]
# Why generation stopped short.
IncompleteReason = Literal["max_tokens", "context_window", "pause_turn", "continuation", "other"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token usage in one accounting for every vendor; a count the vendor does not report is None."""

    input_tokens: int | None = None
    """All prompt tokens, cache reads and writes included."""
    cached_input_tokens: int | None = None
    """Prompt tokens read from the vendor's prompt cache."""
    cache_write_tokens: int | None = None
    """Prompt tokens written to the vendor's prompt cache."""
    output_tokens: int | None = None
    """All generated tokens, reasoning included."""
    reasoning_tokens: int | None = None
    """Generated tokens spent on reasoning/thinking."""
    total_tokens: int | None = None
    """Input plus output, as the vendor reports it (or computed where it reports none)."""
    raw: Mapping[str, Any] | None = None
    """The vendor's own usage object, unchanged."""

    def normalized(self) -> dict[str, int | None]:
        """The six normalized counts by field name."""
        return {name: getattr(self, name) for name in USAGE_FIELDS}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One candidate tool call; the executor decides whether it runs."""

    call_id: str
    """The vendor's correlation id (or a synthesized one, see ``synthesized_id``)."""
    name: str
    """The tool name the model asked for."""
    arguments: str
    """The arguments exactly as sent: a JSON string (objects are serialized compactly)."""
    parsed_arguments: Mapping[str, Any] | None = None
    """The arguments as a JSON object, or None when they are not one."""
    synthesized_id: bool = False
    """True when the vendor sent no id and the adapter made one up."""

    def to_dict(self) -> dict[str, Any]:
        """The value as builtins, for the report and ``inspect``."""
        return {
            "call_id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "synthesized_id": self.synthesized_id,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """What one vendor response means; subclasses are the contract kinds."""

    kind: ClassVar[Kind]
    raw: str
    """The raw vendor value that decided the kind, e.g. ``finish_reason=length``."""
    response_id: str | None = None
    """The vendor's response id, when it sent one."""
    model: str | None = None
    """The model the vendor says answered."""
    usage: Usage | None = None
    """Normalized usage; None when unknown (e.g. an HTTP error or an interrupted stream)."""
    output_items: tuple[Any, ...] = ()
    """The vendor's assistant history entries exactly as received; the next request re-sends them."""
    provider_details: Mapping[str, Any] = field(default_factory=dict)
    """Vendor extras worth keeping (e.g. a refusal category); never used for classification."""

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls this response carries (none for most kinds)."""
        return ()

    def extras(self) -> dict[str, Any]:
        """The kind's own fields, for the report and ``inspect``."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """The value as builtins, for the report and ``inspect``."""
        usage = self.usage
        result: dict[str, Any] = {
            "kind": self.kind,
            "raw": self.raw,
            "calls": [call.to_dict() for call in self.calls],
            "text": getattr(self, "text", None),
            "usage": usage.normalized() if usage else None,
            "raw_usage": dict(usage.raw) if usage and usage.raw is not None else None,
            "response_id": self.response_id,
            "model": self.model,
        }
        result.update(self.extras())
        if self.provider_details:
            result["provider_details"] = dict(self.provider_details)
        return result


@dataclass(frozen=True, slots=True, kw_only=True)
class Text(ModelResponse):
    """A candidate final answer."""

    kind: ClassVar[Kind] = "text"
    text: str
    """The answer text (reasoning/thought text excluded)."""
    parsed: Any = None
    """The answer parsed as JSON when the task requested an output schema."""

    def extras(self) -> dict[str, Any]:
        """The kind's own fields, for the report and ``inspect``."""
        return {"parsed": self.parsed} if self.parsed is not None else {}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCalls(ModelResponse):
    """One or more candidate tool calls."""

    kind: ClassVar[Kind] = "tool_calls"
    tool_calls: tuple[ToolCall, ...]
    """The calls, in the order the vendor sent them."""
    text: str | None = None
    """Any text the model wrote beside the calls."""

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls this response carries (none for most kinds)."""
        return self.tool_calls


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal(ModelResponse):
    """The vendor declined to answer."""

    kind: ClassVar[Kind] = "refusal"
    source: RefusalSource
    """``model`` (an explicit refusal signal) or ``filter`` (a safety/policy filter)."""
    text: str | None = None
    """Refusal text, if any."""

    def extras(self) -> dict[str, Any]:
        """The kind's own fields, for the report and ``inspect``."""
        return {"source": self.source}


@dataclass(frozen=True, slots=True, kw_only=True)
class Incomplete(ModelResponse):
    """Generation stopped before a usable answer."""

    kind: ClassVar[Kind] = "incomplete"
    reason: IncompleteReason
    """``max_tokens``, ``context_window``, ``pause_turn``, ``continuation`` or ``other``."""
    text: str | None = None
    """Partial text, never a final answer."""

    def extras(self) -> dict[str, Any]:
        """The kind's own fields, for the report and ``inspect``."""
        return {"reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryableError(ModelResponse):
    """The same request may succeed later."""

    kind: ClassVar[Kind] = "retryable_error"
    reason: str
    """``rate_limit``, ``overloaded``, ``server_error``, ``timeout``, ``interrupted``, ..."""
    http_status: int | None = None
    """The HTTP status, when the error came as one."""
    retry_after_s: float | None = None
    """The delay the vendor asked for, in seconds, when it gave one."""
    message: str | None = None
    """The vendor's error message."""
    text: str | None = None
    """Text a broken stream delivered before it broke: partial, never a final answer."""

    def extras(self) -> dict[str, Any]:
        """The kind's own fields, for the report and ``inspect``."""
        return {
            "reason": self.reason,
            "http_status": self.http_status,
            "retry_after_s": self.retry_after_s,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class FatalError(ModelResponse):
    """Retrying the same request will not help."""

    kind: ClassVar[Kind] = "fatal_error"
    reason: str
    """``context_window``, ``quota``, ``auth``, ``invalid_request``, ``policy``, ``not_found``, ..."""
    http_status: int | None = None
    """The HTTP status, when the error came as one."""
    message: str | None = None
    """The vendor's error message."""

    def extras(self) -> dict[str, Any]:
        """The kind's own fields, for the report and ``inspect``."""
        return {"reason": self.reason, "http_status": self.http_status, "message": self.message}


@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidToolCall(ModelResponse):
    """A tool call that cannot be executed as sent."""

    kind: ClassVar[Kind] = "invalid_tool_call"
    detail: str
    """What is wrong with it."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The calls as sent, when there were any."""
    undeclared_tool: bool = False
    """True when the vendor itself says the model called a tool that was not declared."""

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls this response carries (none for most kinds)."""
        return self.tool_calls

    def extras(self) -> dict[str, Any]:
        """The kind's own fields, for the report and ``inspect``."""
        return {"detail": self.detail, "undeclared_tool": self.undeclared_tool}


@dataclass(frozen=True, slots=True, kw_only=True)
class Unsupported(ModelResponse):
    """A shape the adapter does not know; never guessed into another kind."""

    kind: ClassVar[Kind] = "unsupported"
    raw_type: str
    """The unknown thing, by name (an item type, a status, a stop value)."""

    def extras(self) -> dict[str, Any]:
        """The kind's own fields, for the report and ``inspect``."""
        return {"raw_type": self.raw_type}


@dataclass(frozen=True, slots=True, kw_only=True)
class Empty(ModelResponse):
    """Completed, but nothing usable came back."""

    kind: ClassVar[Kind] = "empty"
