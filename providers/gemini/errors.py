"""Gemini HTTP errors: status + Google RPC body ``{"error": {code, message, status, details}}`` → kind.

Some gateways wrap the body in a one-element JSON array; the SDK unwraps it, so does this module (§4e).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from conformance.kit.http import Wordings, default_error, error_kind, parse_duration, parse_retry_after
from conformance.kit.types import ModelResponse, RetryableError
from conformance.kit.values import nonempty_string_or_none

# error.status (google.rpc.Code name) → (retryable?, reason); ai.google.dev/gemini-api/docs/troubleshooting;
# ai.google.dev/gemini-api/docs/rate-limits. Statuses not named
# here (FAILED_PRECONDITION, CANCELLED, ...) fall back to the HTTP status defaults.
RPC_STATUSES: dict[str, tuple[bool, str]] = {
    "RESOURCE_EXHAUSTED": (True, "rate_limit"),
    "INVALID_ARGUMENT": (False, "invalid_request"),
    "UNAUTHENTICATED": (False, "auth"),
    "PERMISSION_DENIED": (False, "auth"),
    "NOT_FOUND": (False, "not_found"),
    "INTERNAL": (True, "server_error"),
    "UNAVAILABLE": (True, "overloaded"),  # "The model is overloaded"
    "DEADLINE_EXCEEDED": (True, "timeout"),
}

# google.rpc.ErrorInfo `reason` → (retryable?, reason). An invalid Gemini API key comes as 400
# INVALID_ARGUMENT "API key not valid", not as a 401: only ErrorInfo.reason says it is an auth problem.
ERROR_INFO_REASONS: dict[str, tuple[bool, str]] = {
    "API_KEY_INVALID": (False, "auth"),
}

# "The input token count (N) exceeds the maximum number of tokens allowed (M)." (google-gemini/gemini-cli#4231)
CONTEXT_WINDOW_WORDINGS = Wordings((("input token count", "exceeds the maximum number of tokens"),))

# A per-day quota is 429 RESOURCE_EXHAUSTED like a per-minute rate limit, but retrying will not help until
# the quota resets (ai.google.dev/gemini-api/docs/rate-limits), and its body often carries a RetryInfo anyway. The rule:
# it is a
# daily quota when any google.rpc.QuotaFailure violation names a per-day quota in `quotaId`/`quotaMetric`
# (e.g. "GenerateRequestsPerDayPerProjectPerModel-FreeTier"), or when the message says "per day"/"daily".
# Quota ids are CamelCase, so they are compared lower-cased with `_` and `-` removed; the message is
# matched on whole words, so "paper day" is not a quota.
PER_DAY_QUOTA = "perday"
PER_DAY_MESSAGE = re.compile(r"\bper[\s_-]?day\b|\bdaily\b", re.IGNORECASE)

RETRY_INFO_TYPE = "google.rpc.RetryInfo"
ERROR_INFO_TYPE = "google.rpc.ErrorInfo"
QUOTA_FAILURE_TYPE = "google.rpc.QuotaFailure"


def classify_error(status: int, body: Any, headers: Mapping[str, str]) -> ModelResponse:
    """HTTP status, Gemini error body and lower-cased headers → one contract kind."""
    error = _unwrap(body)
    rpc_status = nonempty_string_or_none(error.get("status"))
    message = nonempty_string_or_none(error.get("message")) or (body.strip()[:500] if isinstance(body, str) else None)
    details = error.get("details")
    details = [entry for entry in details if isinstance(entry, dict)] if isinstance(details, list) else []
    raw = f"http={status}/{rpc_status}" if rpc_status else f"http={status}"

    retryable, reason = _decide(status, rpc_status, message, details)
    retry_after = _retry_delay(details)
    return error_kind(retryable, raw=raw, reason=reason, http_status=status, message=message,
                      retry_after_s=retry_after if retry_after is not None else parse_retry_after(headers))


def classify_stream_error(frame: Any) -> ModelResponse:
    """An ``{"error": {...}}`` frame inside a 200 stream
    (ai.google.dev/api/generate-content#method:-models.streamgeneratecontent): the same tables as an HTTP error,
    with ``error.code`` standing in for the status. An error that names no code and no known status is a
    retryable server_error; the transport status was 200, so ``http_status`` stays None."""
    error = _unwrap(frame)
    code = error.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    rpc_status = nonempty_string_or_none(error.get("status"))
    message = nonempty_string_or_none(error.get("message"))
    details = error.get("details")
    details = [entry for entry in details if isinstance(entry, dict)] if isinstance(details, list) else []
    named = "/".join(str(value) for value in (code, rpc_status) if value is not None)
    raw = f"stream error={named}" if named else "stream error"
    if code is None and rpc_status not in RPC_STATUSES:
        return RetryableError(raw=raw, reason="server_error", message=message)
    retryable, reason = _decide(code or 0, rpc_status, message, details)
    return error_kind(retryable, raw=raw, reason=reason, retry_after_s=_retry_delay(details), message=message)


def _unwrap(body: Any) -> Mapping[str, Any]:
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _decide(status: int, rpc_status: str | None, message: str | None,
            details: list[Mapping[str, Any]]) -> tuple[bool, str]:
    if (status == 429 or rpc_status == "RESOURCE_EXHAUSTED") and _is_daily_quota(message, details):
        return False, "quota"
    if (status == 400 or rpc_status == "INVALID_ARGUMENT") and CONTEXT_WINDOW_WORDINGS.match(message):
        return False, "context_window"
    for entry in details:
        info_reason = entry.get("reason") if _has_type(entry, ERROR_INFO_TYPE) else None
        if isinstance(info_reason, str) and info_reason in ERROR_INFO_REASONS:
            return ERROR_INFO_REASONS[info_reason]
    if rpc_status in RPC_STATUSES:
        return RPC_STATUSES[rpc_status]
    return default_error(status)


def _is_daily_quota(message: str | None, details: list[Mapping[str, Any]]) -> bool:
    if message and PER_DAY_MESSAGE.search(message):
        return True
    for entry in details:
        violations = entry.get("violations") if _has_type(entry, QUOTA_FAILURE_TYPE) else None
        for violation in violations if isinstance(violations, list) else []:
            if not isinstance(violation, dict):
                continue
            names = (nonempty_string_or_none(violation.get(key)) or "" for key in ("quotaId", "quotaMetric"))
            if any(PER_DAY_QUOTA in _squash(name) for name in names):
                return True
    return False


def _retry_delay(details: list[Mapping[str, Any]]) -> float | None:
    for entry in details:
        if _has_type(entry, RETRY_INFO_TYPE):
            delay = parse_duration(entry.get("retryDelay"))
            if delay is not None:
                return delay
    return None


def _has_type(entry: Mapping[str, Any], type_name: str) -> bool:
    type_url = entry.get("@type")
    return isinstance(type_url, str) and type_url.endswith(type_name)


def _squash(text: str) -> str:
    return text.lower().replace("_", "").replace("-", "")



def error_reply(status: int, message: str) -> tuple[dict[str, str], dict[str, Any]]:
    """An error of the replay server's own as a google.rpc.Status (``{"error": {code, message, status}}``,
    ai.google.dev/api/generate-content), which google-genai's ``APIError`` shows with its message."""
    rpc_status = "NOT_FOUND" if status == 404 else "FAILED_PRECONDITION"
    return {}, {"error": {"code": status, "message": message, "status": rpc_status}}
