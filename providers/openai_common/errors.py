"""OpenAI HTTP errors (Responses and Chat share them): status + ``{"error": {code, type, message}}`` → kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.http import default_error, error_kind, parse_retry_after
from conformance.types import ModelResponse, Refusal

# error.code / error.type → (retryable?, reason). A 429 with insufficient_quota is billing, not a rate
# limit (langchain-ai/langchainjs#1929); context_length_exceeded is a 400 (wire-formats §1e).
ERROR_CODES: dict[str, tuple[bool, str]] = {
    "insufficient_quota": (False, "quota"),
    "billing_hard_limit_reached": (False, "quota"),
    "context_length_exceeded": (False, "context_window"),
    "rate_limit_exceeded": (True, "rate_limit"),
    "invalid_api_key": (False, "auth"),
    "invalid_prompt": (False, "policy"),
    "model_not_found": (False, "not_found"),
    "server_error": (True, "server_error"),
}

# Compatible servers that deliver a moderation block as an HTTP error (DashScope, wire-formats §2f).
FILTER_CODES = frozenset({"data_inspection_failed"})

# DeepSeek and others send the OpenAI wording for a context overflow without the dedicated code.
CONTEXT_WINDOW_PHRASES = ("maximum context length", "context_length_exceeded")


def classify_error(status: int, body: Any, headers: Mapping[str, str]) -> ModelResponse:
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    code = _string(error.get("code"))
    error_type = _string(error.get("type"))
    message = _string(error.get("message")) or (body.strip()[:500] if isinstance(body, str) else None)
    label = code or error_type
    raw = f"http={status}/{label}" if label else f"http={status}"

    if code in FILTER_CODES or error_type in FILTER_CODES:
        return Refusal(raw=raw, source="filter", text=message)
    retryable, reason = _decide(status, code, error_type, message, headers)
    return error_kind(retryable, raw=raw, reason=reason, http_status=status, retry_after_s=parse_retry_after(headers),
                      message=message)


def classify_stream_error(error: Any) -> ModelResponse:
    """An error that arrived inside a 200 stream (a Responses ``error`` event, a Chat ``{"error"}`` chunk).

    Its code decides when the code is known; a stream error that names nothing is retryable.
    """
    error = error if isinstance(error, dict) else {}
    code = _string(error.get("code")) or _string(error.get("type"))
    message = _string(error.get("message"))
    raw = f"stream error={code}" if code else "stream error"
    if code in FILTER_CODES:
        return Refusal(raw=raw, source="filter", text=message)
    retryable, reason = ERROR_CODES.get(code or "", (True, "server_error"))
    return error_kind(retryable, raw=raw, reason=reason, message=message)


def _decide(
    status: int, code: str | None, error_type: str | None, message: str | None, headers: Mapping[str, str]
) -> tuple[bool, str]:
    for value in (code, error_type):
        if value in ERROR_CODES:
            return ERROR_CODES[value]
    if status == 400 and message and any(phrase in message.lower() for phrase in CONTEXT_WINDOW_PHRASES):
        return False, "context_window"
    retryable, reason = default_error(status)
    # The SDKs let the server overrule their status rule with x-should-retry (wire-formats §1e).
    should_retry = headers.get("x-should-retry")
    if should_retry == "true":
        retryable = True
    elif should_retry == "false":
        retryable = False
    return retryable, reason


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
