"""Bedrock HTTP errors: status + ``x-amzn-errortype`` (or body ``__type``) + ``{"message"}`` → kind (§5e)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.http import Wordings, default_error, error_kind, lower_headers, parse_retry_after
from conformance.kit.types import ModelResponse

# Exception name (service model error shapes of bedrock-runtime) → (retryable?, reason).
ERROR_TYPES: dict[str, tuple[bool, str]] = {
    "ThrottlingException": (True, "rate_limit"),
    # A 429 too, but the model is warming up, not the caller over a limit; botocore retries it itself.
    "ModelNotReadyException": (True, "overloaded"),
    "ServiceUnavailableException": (True, "overloaded"),
    "InternalServerException": (True, "server_error"),
    "ModelTimeoutException": (True, "timeout"),
    # Stream-only in the service model; its doc says "Retry your request".
    "ModelStreamErrorException": (True, "server_error"),
    # The model itself failed on this input (HTTP 424, with originalStatusCode); the same input fails again.
    "ModelErrorException": (False, "invalid_request"),
    "ValidationException": (False, "invalid_request"),
    "AccessDeniedException": (False, "auth"),
    # Sent by the AWS front door for an unknown access key; not a Bedrock error shape.
    "UnrecognizedClientException": (False, "auth"),
    "ResourceNotFoundException": (False, "not_found"),
    # A 400 whose doc says "resubmit later", but an account quota does not lift on a retry.
    "ServiceQuotaExceededException": (False, "quota"),
}

# A context overflow is a plain ValidationException; only the message tells
# (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html#API_runtime_Converse_Errors:
# Bedrock's own wording, and Anthropic's "prompt is too long: N tokens > M maximum").
CONTEXT_WINDOW_WORDINGS = Wordings((
    ("input is too long",),
    ("prompt is too long",),
    ("too many input tokens",),
    # Nova: "Input Tokens Exceeded: Number of input tokens exceeds maximum length of …"
    ("input tokens exceeded",),
    ("number of input tokens exceeds maximum length",),
))

# ModelErrorException extras worth keeping beside the kind.
MODEL_ERROR_FIELDS = ("originalStatusCode", "resourceName")

# ModelStreamErrorException extras: what the model itself answered before Bedrock turned it into this frame.
STREAM_ERROR_FIELDS = ("originalStatusCode", "originalMessage")


def classify_error(status: int, body: Any, headers: Mapping[str, str]) -> ModelResponse:
    """HTTP status, Bedrock Converse error body and lower-cased headers → one contract kind."""
    headers = lower_headers(headers)
    error_type = _error_type(headers, body)
    message = _message(body)
    raw = f"http={status}/{error_type}" if error_type else f"http={status}"
    mapped = ERROR_TYPES.get(error_type) if error_type else None
    retryable, reason = mapped if mapped is not None else default_error(status)
    if (error_type == "ValidationException" or error_type is None and status == 400) and _overflows(message):
        retryable, reason = False, "context_window"
    details = {key: body[key] for key in MODEL_ERROR_FIELDS if key in body} if isinstance(body, dict) else {}
    # Bedrock documents no retry-after header; one set by a proxy in front of it is still honoured.
    return error_kind(retryable, raw=raw, reason=reason, http_status=status, retry_after_s=parse_retry_after(headers),
                      message=message, provider_details=details)


def classify_stream_error(event_name: str, payload: Any) -> ModelResponse:
    """An exception frame inside a 200 ConverseStream (§5d), by its event name (``throttlingException``).

    The name is the exception shape's with its first letter lower-cased; one naming nothing known is retryable.
    """
    error_type = event_name[:1].upper() + event_name[1:]
    payload = payload if isinstance(payload, dict) else {}
    message = _message(payload)
    retryable, reason = ERROR_TYPES.get(error_type, (True, "server_error"))
    if error_type == "ValidationException" and _overflows(message):
        retryable, reason = False, "context_window"
    details = {key: payload[key] for key in STREAM_ERROR_FIELDS if key in payload}
    raw = f"stream exception={error_type}"
    # The HTTP status was 200: the status the shape models for the exception was never sent.
    return error_kind(retryable, raw=raw, reason=reason, message=message, provider_details=details)


def _error_type(headers: Mapping[str, str], body: Any) -> str | None:
    """The exception name, read the way botocore's rest-json parser reads it (``parsers.py``).

    The header may read ``ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/`` and
    ``__type`` may read ``com.amazon.coral.service#ThrottlingException``; both reduce to the bare name.
    """
    value: Any = headers.get("x-amzn-errortype")
    if not value and isinstance(body, dict):
        value = body.get("__type") or body.get("code") or body.get("Code")
    if not isinstance(value, str):
        return None
    return value.split(":", 1)[0].rsplit("#", 1)[-1].strip() or None


def _message(body: Any) -> str | None:
    if isinstance(body, dict):
        for key in ("message", "Message"):
            value = body.get(key)
            if isinstance(value, str) and value:
                return value
        return None
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return None


def _overflows(message: str | None) -> bool:
    return CONTEXT_WINDOW_WORDINGS.match(message)


def error_reply(status: int, message: str) -> tuple[dict[str, str], dict[str, Any]]:
    """An error of the replay server's own as a rest-json error: the exception name in ``x-amzn-errortype`` and the
    body's ``message``, which botocore's ``ClientError`` shows ("An error occurred (<name>) …: <message>"). The name
    is none botocore retries (its retry rules name throttling and transient codes, docs/serve.md)."""
    name = "ResourceNotFoundException" if status == 404 else "ValidationException"
    return {"x-amzn-errortype": name}, {"message": message}
