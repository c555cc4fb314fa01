"""The adapter kit: what an adapter author codes against (docs/adapters.md).

An adapter is an ``Adapter`` record of pure functions: it builds a wire request from the neutral ``Task`` and
transcript, and reads a vendor's status, headers and body (or stream) into one contract kind
(``conformance.kit.types``).
Everything here is importable from ``conformance.kit``; the modules are ``adapter`` (the record, ``Wire``, the
readings of a request), ``task`` (the task and transcript), ``types`` (the kinds), ``verdict`` (stop value and content
→ kind), ``calls``, ``http``, ``usage``, ``stream``, ``sse``, ``jsontext`` and ``values`` (the shared readers).
"""

from conformance.kit.adapter import (
    SSE_CONTENT_TYPE,
    TOOL_CHOICE_SLOT,
    Adapter,
    Credential,
    RequestParts,
    Rule,
    SentEntry,
    SentPrefix,
    SentResult,
    SentTool,
    Shape,
    Signer,
    Wire,
    merged,
    request_history,
    request_prefix,
    result_pairs,
)
from conformance.kit.glue import Turn, response, turns
from conformance.kit.task import (
    FORCING_CHOICES,
    TOOL_CHOICES,
    ModelTurn,
    Task,
    ToolChoice,
    ToolResult,
    ToolResults,
    ToolSpec,
    TranscriptEntry,
    UserMessage,
    called_since_user,
    task_for_turn,
)
from conformance.kit.types import (
    KINDS,
    OUTCOMES,
    USAGE_FIELDS,
    Empty,
    FatalError,
    Incomplete,
    InvalidToolCall,
    Kind,
    ModelResponse,
    Outcome,
    Refusal,
    RetryableError,
    Text,
    ToolCall,
    ToolCalls,
    Unsupported,
    Usage,
)
from conformance.kit.values import (
    ENCRYPTED,
    REASONING_TEXT,
    SIGNATURE,
    description_of,
    int_or_none,
    list_or_empty,
    nonempty_string_or_none,
    reasoning_piece,
    schema_nodes,
    string_or_none,
    strings_in,
    text_of,
)
from conformance.kit.waiver import Waiver, apply_waivers

__all__ = [
    "ENCRYPTED", "REASONING_TEXT", "SIGNATURE", "reasoning_piece", "strings_in",
    "FORCING_CHOICES", "KINDS", "OUTCOMES", "SSE_CONTENT_TYPE", "TOOL_CHOICES", "TOOL_CHOICE_SLOT", "USAGE_FIELDS",
    "Adapter", "Credential", "Rule", "Empty", "FatalError", "Incomplete", "InvalidToolCall", "Kind", "ModelResponse",
    "ModelTurn", "Outcome", "Refusal", "RequestParts", "RetryableError", "SentEntry", "SentPrefix", "SentResult",
    "SentTool", "Shape", "Signer", "Task", "Text", "ToolCall", "ToolCalls", "ToolChoice", "ToolResult", "ToolResults",
    "ToolSpec", "TranscriptEntry", "Turn", "Unsupported", "Usage", "UserMessage", "Waiver", "Wire", "apply_waivers",
    "called_since_user", "description_of", "int_or_none", "list_or_empty", "merged", "nonempty_string_or_none",
    "request_history", "request_prefix", "response", "result_pairs", "schema_nodes", "string_or_none",
    "task_for_turn", "text_of", "turns",
]
