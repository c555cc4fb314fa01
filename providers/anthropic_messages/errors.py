"""Anthropic HTTP errors: status + ``{"type": "error", "error": {type, message, details?}}`` → kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.http import Wordings, default_error, error_kind, parse_retry_after
from conformance.kit.types import ModelResponse

# error.type → (retryable?, reason) (docs.anthropic.com/en/api/errors). 529 overloaded_error is retryable; 402
# billing_error is a quota problem that no retry fixes.
ERROR_TYPES: dict[str, tuple[bool, str]] = {
    "invalid_request_error": (False, "invalid_request"),
    "authentication_error": (False, "auth"),
    "permission_error": (False, "auth"),
    "billing_error": (False, "quota"),
    "not_found_error": (False, "not_found"),
    "request_too_large": (False, "invalid_request"),
    "rate_limit_error": (True, "rate_limit"),
    "timeout_error": (True, "timeout"),
    "api_error": (True, "server_error"),
    "overloaded_error": (True, "overloaded"),
    "conflict_error": (True, "conflict"),
}

# error.details.error_code values on a 429 that mean a spend limit, not a rate: retrying cannot help.
QUOTA_ERROR_CODES = frozenset({"contract_spend_limit_reached", "enforced_spend_limit_reached"})

# There is no dedicated code for a context overflow; the message says it (anthropics/claude-code#12186).
CONTEXT_WINDOW_WORDINGS = Wordings((("prompt is too long",), ("exceed context limit",)))


def classify_error(status: int, body: Any, headers: Mapping[str, str]) -> ModelResponse:
    """HTTP status, Anthropic Messages error body and lower-cased headers → one contract kind."""
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    error_type = error.get("type") if isinstance(error.get("type"), str) else None
    message = error.get("message") if isinstance(error.get("message"), str) else None
    if message is None and isinstance(body, str):
        message = body.strip()[:500]
    details = error.get("details")
    error_code = details.get("error_code") if isinstance(details, dict) else None
    error_code = error_code if isinstance(error_code, str) else None
    raw = f"http={status}/{error_type}" if error_type else f"http={status}"
    if error_type in ERROR_TYPES:
        retryable, reason = ERROR_TYPES[error_type]
    else:
        retryable, reason = default_error(status)
    if error_code in QUOTA_ERROR_CODES:
        # The detail code overrules the 429's type, so it is the value that decided: raw names it.
        retryable, reason, raw = False, "quota", f"{raw}/{error_code}"
    if status in (400, 413) and CONTEXT_WINDOW_WORDINGS.match(message):
        retryable, reason = False, "context_window"
    provider_details = {"error_code": error_code} if error_code else {}
    return error_kind(retryable, raw=raw, reason=reason, http_status=status, retry_after_s=parse_retry_after(headers),
                      message=message, provider_details=provider_details)


def classify_stream_error(event: Any) -> ModelResponse:
    """An ``event: error`` inside a 200 stream (docs.anthropic.com/en/docs/build-with-claude/streaming): its
    ``error.type`` decides, through the same
    table as HTTP errors; a stream error that names nothing known is retryable ``server_error``."""
    error = event.get("error") if isinstance(event, dict) else None
    error = error if isinstance(error, dict) else {}
    error_type = error.get("type") if isinstance(error.get("type"), str) and error.get("type") else None
    message = error.get("message") if isinstance(error.get("message"), str) else None
    details = error.get("details")
    error_code = details.get("error_code") if isinstance(details, dict) else None
    error_code = error_code if isinstance(error_code, str) else None
    raw = f"stream error={error_type}" if error_type else "stream error"
    retryable, reason = ERROR_TYPES.get(error_type or "", (True, "server_error"))
    if error_code in QUOTA_ERROR_CODES:
        retryable, reason, raw = False, "quota", f"{raw}/{error_code}"
    provider_details = {"error_code": error_code} if error_code else {}
    return error_kind(retryable, raw=raw, reason=reason, message=message, provider_details=provider_details)


def error_reply(status: int, message: str) -> tuple[dict[str, str], dict[str, Any]]:
    """An error of the replay server's own in the Messages error shape (docs.anthropic.com/en/api/errors), which the
    SDK shows with its message."""
    error_type = "not_found_error" if status == 404 else "invalid_request_error"
    return {}, {"type": "error", "error": {"type": error_type, "message": message}}
