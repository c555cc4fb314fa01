"""OpenAI HTTP errors (Responses and Chat share them): status + ``{"error": {code, type, message}}`` → kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.http import Wordings, default_error, error_kind, parse_retry_after
from conformance.kit.types import InvalidToolCall, ModelResponse, Refusal
from conformance.kit.values import nonempty_string_or_none

# error.code / error.type → (retryable?, reason). A 429 with insufficient_quota is billing, not a rate
# limit (langchain-ai/langchainjs#1929); context_length_exceeded is a 400 (platform.openai.com/docs/guides/error-codes).
ERROR_CODES: dict[str, tuple[bool, str]] = {
    "insufficient_quota": (False, "quota"),
    "billing_hard_limit_reached": (False, "quota"),
    "context_length_exceeded": (False, "context_window"),
    "too_many_prompt_tokens": (False, "context_window"),  # Perplexity's 400
    "rate_limit_exceeded": (True, "rate_limit"),
    "invalid_api_key": (False, "auth"),
    "invalid_prompt": (False, "policy"),
    "model_not_found": (False, "not_found"),
    "server_error": (True, "server_error"),
}

# Compatible servers that reject the model's own malformed tool call with an error (Groq's 400
# `tool_use_failed`, its generation in `failed_generation`): the model's output is what is wrong, so it is an
# invalid_tool_call, not an invalid request of the client's (docs/contract.md, "Errors inside a stream").
MALFORMED_CALL_CODES = frozenset({"tool_use_failed"})

# Error `type` → the HTTP status it comes with, for an error that arrives without one (a stream frame): OpenAI's
# type names, and the exception-class names vLLM and LiteLLM-based servers put there.
ERROR_TYPE_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "server_error": 500,
    "api_error": 500,
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "RateLimitError": 429,
    "InternalServerError": 500,
    "ServiceUnavailableError": 503,
}

# Compatible servers that deliver a moderation block as an HTTP error (DashScope, docs/contract.md, "OpenAI-compatible
# servers").
FILTER_CODES = frozenset({"data_inspection_failed"})

# A 400 that says the prompt overflows the context window without the dedicated code (docs/contract.md,
# "OpenAI-compatible servers").
CONTEXT_WINDOW_WORDINGS = Wordings((
    ("maximum context length",),  # OpenAI's own wording, sent by DeepSeek and others without the code
    ("context_length_exceeded",),
    ("exceeded max context length",),  # Ollama (and Ollama Cloud)
))

# A 400 that says the key is wrong, from servers that send no code for it (xAI answers a bad key with a 400 whose
# `error` is a plain string).
AUTH_WORDINGS = Wordings((
    ("incorrect api key",),
    ("invalid api key",),
))


def classify_error(status: int, body: Any, headers: Mapping[str, str]) -> ModelResponse:
    """HTTP status, OpenAI error body and lower-cased headers → one contract kind."""
    error = body.get("error") if isinstance(body, dict) else None
    # xAI sends `{"code": "<a sentence>", "error": "<the message>"}`: the string is the message.
    message = error.strip()[:500] if isinstance(error, str) and error.strip() else None
    error = error if isinstance(error, dict) else {}
    code = nonempty_string_or_none(error.get("code"))
    error_type = nonempty_string_or_none(error.get("type"))
    message = nonempty_string_or_none(error.get("message")) or message \
        or (body.strip()[:500] if isinstance(body, str) else None)
    label = code or error_type
    raw = f"http={status}/{label}" if label else f"http={status}"

    signal = _model_signal(code, error_type, error, raw, message)
    if signal is not None:
        return signal
    retryable, reason = _decide(status, code, error_type, message, headers)
    return error_kind(retryable, raw=raw, reason=reason, http_status=status, retry_after_s=parse_retry_after(headers),
                      message=message)


def classify_stream_error(error: Any) -> ModelResponse:
    """An error frame inside a 200 Chat stream (``{"error": {...}}``, e.g. Groq's ``event: error``).

    A frame that carries a ``status_code``, a known ``type`` or a known ``code`` is classified as the HTTP error
    body of that status would be; only a frame with nothing to go on is a retryable ``server_error``.
    """
    if isinstance(error, str):
        error = {"message": error}  # `{"error": "…"}`: a bare message, nothing else to go on
    error = error if isinstance(error, dict) else {}
    code = nonempty_string_or_none(error.get("code"))
    error_type = nonempty_string_or_none(error.get("type"))
    message = nonempty_string_or_none(error.get("message"))
    # The status travels as `status_code` (Groq) or as an integer `code` (OpenRouter, vLLM).
    status = next((value for value in (error.get("status_code"), error.get("code")) if _is_status(value)), None)
    label = code or error_type or (str(status) if status is not None else None)
    raw = f"stream error={label}" if label else "stream error"
    signal = _model_signal(code, error_type, error, raw, message)
    if signal is not None:
        return signal
    details = {"status_code": status} if status is not None else {}
    if status is None and error_type in ERROR_TYPE_STATUS:
        status = ERROR_TYPE_STATUS[error_type]
    if status is None and code not in ERROR_CODES and error_type not in ERROR_CODES:
        return error_kind(True, raw=raw, reason="server_error", message=message)
    retryable, reason = _decide(status or 500, code, error_type, message, {})
    return error_kind(retryable, raw=raw, reason=reason, message=message, provider_details=details)


def _model_signal(code: str | None, error_type: str | None, error: Mapping[str, Any], raw: str,
                  message: str | None) -> ModelResponse | None:
    """An error that reports what the model produced rather than a fault: a filter block or a malformed call."""
    if code in FILTER_CODES or error_type in FILTER_CODES:
        return Refusal(raw=raw, source="filter", text=message)
    if code in MALFORMED_CALL_CODES:
        generation = nonempty_string_or_none(error.get("failed_generation"))
        details = {"failed_generation": generation} if generation else {}
        return InvalidToolCall(raw=raw, detail=message or f"the server rejected the model's tool call ({code})",
                               provider_details=details)
    return None


def _decide(
    status: int, code: str | None, error_type: str | None, message: str | None, headers: Mapping[str, str]
) -> tuple[bool, str]:
    for value in (code, error_type):
        if value in ERROR_CODES:
            return ERROR_CODES[value]
    if status == 400 and CONTEXT_WINDOW_WORDINGS.match(message):
        return False, "context_window"
    if status == 400 and AUTH_WORDINGS.match(message):
        return False, "auth"
    retryable, reason = default_error(status)
    # The SDKs let the server overrule their status rule with x-should-retry (platform.openai.com/docs/guides/error-
    # codes).
    should_retry = headers.get("x-should-retry")
    if should_retry == "true":
        retryable = True
    elif should_retry == "false":
        retryable = False
    return retryable, reason


def _is_status(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599
