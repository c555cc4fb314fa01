"""A Responses JSON body → one contract kind (openai.types.responses.Response;
platform.openai.com/docs/api-reference/responses/object; docs/contract.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.calls import call_from_json_string
from conformance.kit.types import FatalError, ModelResponse, Unsupported
from conformance.kit.values import string_or_none
from conformance.kit.verdict import ANSWER, Content, Refused, Truncated, Verdict, decides_alone, resolve
from conformance.providers.openai_responses.failures import FAILED_CODES, classify_failure
from conformance.providers.openai_responses.usage import normalize_usage

__all__ = ["CALL_ITEMS", "FAILED_CODES", "INCOMPLETE_REASONS", "classify_body", "classify_failure"]

# incomplete_details.reason (openai.types.responses.response.IncompleteDetails) → verdict. `max_messages` is
# undocumented and `steered` only happens over WebSocket; both are truncations we cannot resume from here.
INCOMPLETE_REASONS: dict[str, Verdict] = {
    "max_output_tokens": Truncated("max_tokens"),
    "content_filter": Refused("filter"),
    "max_messages": Truncated("other"),
    "steered": Truncated("other"),
}


# Output items that are client tool calls.
CALL_ITEMS = frozenset({"function_call", "custom_tool_call"})

# A call item and the item that carries its result, matched on `call_id` (an MCP approval on
# `approval_request_id`). When both are in one response the server ran the call (a hosted container's
# `shell_call` + `shell_call_output`): the pair is transcript, not a call for the client.
OUTPUT_ITEM_OF: dict[str, str] = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "tool_search_call": "tool_search_output",
    "mcp_approval_request": "mcp_approval_response",
}

CALL_ITEM_OF = {output: call for call, output in OUTPUT_ITEM_OF.items()}

# message.phase (gpt-5.x-codex): `commentary` is a preamble before tool calls or the answer, never the
# answer itself; `final_answer` (or no phase) is the answer.
MESSAGE_PHASES: dict[str, str] = {"final_answer": "answer", "commentary": "commentary"}

# Items kept in the transcript but not a kind by themselves: reasoning, compaction, programmatic tool
# calling, hosted tools the server already ran, and echoed outputs.
IGNORED_ITEMS = frozenset(
    {
        "reasoning",
        "compaction",
        "program",
        "program_output",
        "additional_tools",
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "tool_search_output",
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "mcp_approval_response",
    }
)

# Built-in tools the client would have to run; this suite runs function tools only, so they are not
# supported (a `tool_search_call` is one only when its execution is "client").
CLIENT_BUILTIN_ITEMS = frozenset(
    {"computer_call", "local_shell_call", "shell_call", "apply_patch_call", "mcp_approval_request"}
)


def classify_body(body: Any) -> ModelResponse:
    """A successful (HTTP 2xx) Responses body → one contract kind."""
    if not isinstance(body, dict):
        return Unsupported(raw=f"body={type(body).__name__}", raw_type=f"body of type {type(body).__name__}")
    common: dict[str, Any] = {
        "response_id": string_or_none(body.get("id")),
        "model": string_or_none(body.get("model")),
        "usage": normalize_usage(body.get("usage")),
    }
    output = body.get("output")
    items = tuple(output) if isinstance(output, list) else ()
    common["output_items"] = items
    status = body.get("status")

    if status == "failed":
        return _failed(body.get("error"), common)
    if status == "cancelled":
        return FatalError(raw="status=cancelled", reason="cancelled", **common)
    if status not in ("completed", "incomplete"):
        # queued / in_progress only come from background mode, which the suite does not poll.
        return Unsupported(raw=f"status={status}", raw_type=f"status={status}", **common)
    scan = _scan_items(items)
    if scan.commentary:
        common["provider_details"] = {"commentary": "\n\n".join(scan.commentary)}
    if status == "completed":
        if not isinstance(output, list):
            return Unsupported(raw="output", raw_type="output is not a list", **common)
        return resolve(ANSWER, "status=completed", scan, common)
    details = body.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    raw = f"status=incomplete/{reason}"
    verdict = INCOMPLETE_REASONS.get(reason) if isinstance(reason, str) else None
    if verdict is None and scan.refusal is None:
        return Unsupported(raw=raw, raw_type=f"incomplete_details.reason={reason}", **common)
    if not isinstance(output, list) and (verdict is None or not decides_alone(verdict)):
        # An incomplete reason that decides alone (max_output_tokens, content_filter) is read before the output.
        return Unsupported(raw="output", raw_type="output is not a list", **common)
    return resolve(verdict or ANSWER, raw, scan, common)


class _Scan(Content):
    """What the output items hold; commentary (a message with phase ``commentary``) is kept apart."""

    def __init__(self) -> None:
        super().__init__()
        self.commentary: list[str] = []


def _scan_items(items: tuple[Any, ...]) -> _Scan:
    scan = _Scan()
    answered = _answered_calls(items)
    for index, item in enumerate(items):
        item_type = item.get("type") if isinstance(item, dict) else None
        where = f"output[{index}].type={item_type}"
        if not isinstance(item, dict) or not isinstance(item_type, str):
            scan.mark_unknown(f"output[{index}] without a type", f"output[{index}]")
        elif item_type == "message":
            _scan_message(item, index, scan)
        elif item_type in OUTPUT_ITEM_OF and (item_type, _call_key(item)) in answered:
            continue  # its output is in this response: the server ran it
        elif item_type in CALL_ITEMS:
            arguments = item.get("arguments") if item_type == "function_call" else item.get("input")
            scan.calls.append(call_from_json_string(item.get("call_id"), item.get("name"), arguments))
        elif item_type == "tool_search_call" and item.get("execution") != "client" or item_type in IGNORED_ITEMS:
            continue
        elif item_type in CLIENT_BUILTIN_ITEMS or item_type == "tool_search_call":
            scan.mark_unknown(f"{item_type} (a built-in tool the client must run)", where)
        else:
            scan.mark_unknown(item_type, where)
    return scan


def _call_key(item: Mapping[str, Any]) -> str | None:
    """The id a call item and its output item share (None when it has none)."""
    item_type = item.get("type")
    name = "call_id"
    if item_type == "mcp_approval_request":
        name = "id"
    elif item_type == "mcp_approval_response":
        name = "approval_request_id"
    key = item.get(name)
    return key if isinstance(key, str) and key else None


def _answered_calls(items: tuple[Any, ...]) -> set[tuple[str, Any]]:
    """(call item type, id) of every call whose output item is in the same response."""
    return {
        (CALL_ITEM_OF[item["type"]], _call_key(item))
        for item in items
        if isinstance(item, dict) and isinstance(item.get("type"), str) and item["type"] in CALL_ITEM_OF
        and _call_key(item)
    }


def _scan_message(item: Mapping[str, Any], index: int, scan: _Scan) -> None:
    content = item.get("content")
    if not isinstance(content, list):
        scan.mark_unknown("message without a content list", f"output[{index}].content")
        return
    phase = item.get("phase")
    role = MESSAGE_PHASES.get(phase, "") if isinstance(phase, str) else "answer" if phase is None else ""
    if not role:
        scan.mark_unknown(f"message phase {phase}", f"output[{index}].phase={phase}")
        return
    texts = scan.texts if role == "answer" else scan.commentary
    for part_index, part in enumerate(content):
        part_type = part.get("type") if isinstance(part, dict) else None
        where = f"output[{index}].content[{part_index}].type={part_type}"
        if part_type == "output_text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part_type == "refusal" and scan.refusal is None:
            refusal = part.get("refusal")
            scan.mark_refusal(refusal if isinstance(refusal, str) else "", where)
        else:
            scan.mark_unknown(f"content part {part_type}", where)


def _failed(error: Any, common: dict[str, Any]) -> ModelResponse:
    code = error.get("code") if isinstance(error, dict) else None
    return classify_failure(code if isinstance(code, str) else None, error, f"status=failed/{code}", common)
