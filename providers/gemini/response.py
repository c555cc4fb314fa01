"""A ``generateContent`` JSON body → one contract kind (google.genai.types.Part;
ai.google.dev/gemini-api/docs/function-calling; docs/contract.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.calls import call_from_object
from conformance.kit.types import ModelResponse, Refusal, Unsupported
from conformance.kit.values import string_or_none
from conformance.kit.verdict import (
    ANSWER,
    Content,
    Failed,
    MalformedCall,
    NotUsable,
    Refused,
    Truncated,
    Verdict,
    resolve,
)
from conformance.providers.gemini.usage import normalize_usage

# candidates[0].finishReason (google-genai `FinishReason`) → verdict. ANSWER means the parts decide: Gemini ends
# function calls with STOP too, there is no tool_use value.
FINISH_REASONS: dict[str, Verdict] = {
    "STOP": ANSWER,
    "MAX_TOKENS": Truncated("max_tokens"),
    # The per-request token limit was hit but generation can resume with candidates[].continuationToken.
    "CONTINUATION": Truncated("continuation"),
    # Safety and policy filters (docs/contract.md: a filter is a refusal with source `filter`).
    "SAFETY": Refused("filter"),
    "PROHIBITED_CONTENT": Refused("filter"),
    "BLOCKLIST": Refused("filter"),
    "SPII": Refused("filter"),
    "IMAGE_SAFETY": Refused("filter"),
    "IMAGE_PROHIBITED_CONTENT": Refused("filter"),
    "MODEL_ARMOR": Refused("filter"),  # Vertex only
    "ESCALATION": Refused("filter"),  # Gemini API only: an escalation rule filtered the output
    # The recitation check stopped output that quotes a source too closely. docs/contract.md lets us pick
    # refusal or incomplete; this adapter fixes it as a filter refusal, like the other output filters.
    "RECITATION": Refused("filter"),
    "IMAGE_RECITATION": Refused("filter"),
    # The vendor's own tool-call verdicts (docs/contract.md: invalid_tool_call). UNEXPECTED_TOOL_CALL is its
    # unknown-tool signal: a call to an undeclared function, or while function calling is off.
    "UNEXPECTED_TOOL_CALL": MalformedCall(undeclared_tool=True),
    "MALFORMED_FUNCTION_CALL": MalformedCall(),
    # The server-side tool loop stopped before an answer (server tools only).
    "TOO_MANY_TOOL_CALLS": Truncated("other"),
    # The request dropped a thought signature: a client history bug, the same request fails again.
    "MISSING_THOUGHT_SIGNATURE": Failed(retryable=False, reason="invalid_request"),
    "MALFORMED_RESPONSE": Failed(retryable=True, reason="server_error"),
    # The account is limited for prohibited-use violations (Gemini API only).
    "PUP_LIMITED_DISABLED": Failed(retryable=False, reason="policy"),
    # Known values that name no usable outcome for a text/tool suite: kept unsupported, never guessed.
    "LANGUAGE": NotUsable(),
    "OTHER": NotUsable(),
    "IMAGE_OTHER": NotUsable(),
    "NO_IMAGE": NotUsable(),
    "FINISH_REASON_UNSPECIFIED": NotUsable(),
}

# promptFeedback.blockReason (google-genai `BlockedReason`). With a block there are no candidates: the
# prompt itself was filtered, so every value, known or not, is a filter refusal; the raw value is kept.
BLOCK_REASONS = (
    "BLOCKED_REASON_UNSPECIFIED",
    "SAFETY",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "IMAGE_SAFETY",
    "MODEL_ARMOR",  # Vertex only
    "JAILBREAK",  # Vertex only
)

# Part payloads that are not a kind by themselves: code the server ran and its result, and server-side
# tool invocations (toolConfig.includeServerSideToolInvocations). They stay in the replayed content.
IGNORED_PAYLOADS = frozenset({"executableCode", "codeExecutionResult", "toolCall", "toolResponse"})

# Part keys that only describe a part (a part has one payload and optional metadata, google.genai.types.Part;
# ai.google.dev/gemini-api/docs/function-calling).
# A part holding only a thoughtSignature is metadata as well.
PART_METADATA = frozenset(
    {
        "thought",
        "thoughtSignature",
        "videoMetadata",
        "mediaResolution",
        "partMetadata",
        "audioTranscription",
        "mediaProcessing",
        "speechMetadata",
        "documentMetadata",
        "spreadsheetMetadata",
        "audioMetadata",
    }
)

# Known payloads this suite cannot use as an answer: media output, and a client-side input echoed back.
UNUSABLE_PAYLOADS: dict[str, str] = {
    "inlineData": "inlineData (media output the suite does not read)",
    "fileData": "fileData (media output the suite does not read)",
    "functionResponse": "functionResponse (a client input, not model output)",
}


def classify_body(body: Any) -> ModelResponse:
    """A successful (HTTP 2xx) Gemini body → one contract kind."""
    if not isinstance(body, dict):
        return Unsupported(raw=f"body={type(body).__name__}", raw_type=f"body of type {type(body).__name__}")
    common: dict[str, Any] = {
        "response_id": string_or_none(body.get("responseId")),
        "model": string_or_none(body.get("modelVersion")),
        "usage": normalize_usage(body.get("usageMetadata")),
    }
    candidates = body.get("candidates")
    if not isinstance(candidates, list) or not candidates:
        return without_candidates(body.get("promptFeedback"), common)
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        return Unsupported(raw="candidates[0]", raw_type="candidates[0] is not an object", **common)
    content = candidate.get("content")
    common["output_items"] = (content,) if isinstance(content, dict) else ()
    finish_message = string_or_none(candidate.get("finishMessage"))
    details: dict[str, Any] = {"finish_message": finish_message} if finish_message else {}
    # CONTINUATION: the token the next request sends to resume the answer; without it there is nothing to continue.
    token = string_or_none(candidate.get("continuationToken"))
    if token:
        details["continuation_token"] = token
    if details:
        common["provider_details"] = details
    finish = candidate.get("finishReason")
    raw = f"finishReason={finish}"
    verdict = FINISH_REASONS.get(finish) if isinstance(finish, str) else None
    if verdict is None or isinstance(verdict, NotUsable):
        return Unsupported(raw=raw, raw_type=raw, **common)
    detail = finish_message or f"Gemini stopped with {raw}"
    return resolve(verdict, raw, _scan_parts(content), common, message=finish_message, detail=detail)


def without_candidates(feedback: Any, common: dict[str, Any]) -> ModelResponse:
    """A body without a candidate: a blocked prompt (``promptFeedback.blockReason``) is a filter refusal; anything
    else is not understood."""
    feedback = feedback if isinstance(feedback, dict) else {}
    block = feedback.get("blockReason")
    if isinstance(block, str) and block:
        message = string_or_none(feedback.get("blockReasonMessage"))
        details = {"block_reason_message": message} if message else {}
        return Refusal(raw=f"promptFeedback.blockReason={block}", source="filter", provider_details=details, **common)
    return Unsupported(raw="candidates", raw_type="a body without candidates[0] or promptFeedback.blockReason",
                       **common)


class _Scan(Content):
    """What the candidate's parts hold; an empty text is no text (a part may carry only a thought signature)."""

    @property
    def text(self) -> str | None:
        return "".join(self.texts) or None


def _scan_parts(content: Any) -> _Scan:
    scan = _Scan()
    # A blocked or exhausted candidate may carry no content, or `{"role": "model"}` with no parts.
    parts = content.get("parts") if isinstance(content, dict) else None
    if parts is None:
        return scan
    if not isinstance(parts, list):
        scan.mark_unknown("content.parts is not a list", "content.parts")
        return scan
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            scan.mark_unknown(f"parts[{index}] is not an object", f"parts[{index}]")
            continue
        for key in part:
            if key in PART_METADATA or key in IGNORED_PAYLOADS:
                continue
            if key == "text":
                _scan_text(part, index, scan)
            elif key == "functionCall":
                _scan_call(part["functionCall"], index, scan)
            else:
                scan.mark_unknown(UNUSABLE_PAYLOADS.get(key) or str(key), f"parts[{index}].{key}")
    return scan


def _scan_text(part: Mapping[str, Any], index: int, scan: _Scan) -> None:
    text = part["text"]
    if not isinstance(text, str):
        scan.mark_unknown(f"text of type {type(text).__name__}", f"parts[{index}].text")
    elif part.get("thought") is not True:
        # A `thought: true` text part is a thought summary: reasoning, never the answer (google.genai.types.Part;
        # ai.google.dev/gemini-api/docs/function-calling).
        scan.texts.append(text)


def _scan_call(function_call: Any, index: int, scan: _Scan) -> None:
    if not isinstance(function_call, dict):
        scan.mark_unknown("functionCall is not an object", f"parts[{index}].functionCall")
        return
    name = function_call.get("name")
    call_id = function_call.get("id")
    # An absent `args` is taken as no arguments: proto3 JSON leaves out an unset message field.
    arguments = function_call.get("args", {})
    position = len(scan.calls)
    if call_id is None or call_id == "":
        # Gemini 1.x/2.x often send no id (google.genai.types.Part; ai.google.dev/gemini-api/docs/function-calling):
        # made up from the body alone, so classifying
        # the same body twice gives the same id, and flagged so results are matched by name and order.
        synthesized = f"{name if isinstance(name, str) else ''}#{position}"
        scan.calls.append(call_from_object(synthesized, name, arguments, synthesized_id=True))
    else:
        scan.calls.append(call_from_object(call_id, name, arguments))
