"""A failed Responses response, whichever way it arrived (a ``status: failed`` body, a background-mode poll, the
``response.failed`` event or a stream ``error`` event), by its ``error.code``
(openai.types.responses.ResponseError; docs/contract.md, "Failed responses")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.types import ModelResponse
from conformance.kit.verdict import Content, Failed, resolve

# error.code of a `status: failed` response (a body, a background-mode poll, the `response.failed` event or a
# stream `error` event) → (kind, reason). A code not listed is a failure all the same: fatal_error / other,
# the code kept in `raw` (docs/contract.md, "Failed responses").
FAILED_CODES: dict[str, Failed] = {
    "server_error": Failed(retryable=True, reason="server_error"),
    "rate_limit_exceeded": Failed(retryable=True, reason="rate_limit"),
    "vector_store_timeout": Failed(retryable=True, reason="timeout"),
    # Billing, not a rate: the live API fails a background or streamed response with this code.
    "insufficient_quota": Failed(retryable=False, reason="quota"),
    "billing_hard_limit_reached": Failed(retryable=False, reason="quota"),
    "context_length_exceeded": Failed(retryable=False, reason="context_window"),
    "invalid_prompt": Failed(retryable=False, reason="invalid_request"),
    "bio_policy": Failed(retryable=False, reason="policy"),
    "misalignment_policy_violation": Failed(retryable=False, reason="policy"),
    "data_residency_mismatch": Failed(retryable=False, reason="invalid_request"),
    "invalid_image": Failed(retryable=False, reason="invalid_request"),
    "invalid_image_format": Failed(retryable=False, reason="invalid_request"),
    "invalid_base64_image": Failed(retryable=False, reason="invalid_request"),
    "invalid_image_url": Failed(retryable=False, reason="invalid_request"),
    "image_too_large": Failed(retryable=False, reason="invalid_request"),
    "image_too_small": Failed(retryable=False, reason="invalid_request"),
    "image_parse_error": Failed(retryable=False, reason="invalid_request"),
    "image_content_policy_violation": Failed(retryable=False, reason="policy"),
    "invalid_image_mode": Failed(retryable=False, reason="invalid_request"),
    "image_file_too_large": Failed(retryable=False, reason="invalid_request"),
    "unsupported_image_media_type": Failed(retryable=False, reason="invalid_request"),
    "empty_image_file": Failed(retryable=False, reason="invalid_request"),
    "failed_to_download_image": Failed(retryable=False, reason="invalid_request"),
    "image_file_not_found": Failed(retryable=False, reason="invalid_request"),
}

# No code at all: retryable, like a stream that failed without one. A code the table does not name is still a
# failure the server declared: fatal, never retried blindly.
NO_CODE = Failed(retryable=True, reason="server_error")
UNKNOWN_CODE = Failed(retryable=False, reason="other")


def classify_failure(code: str | None, error: Any, raw: str, common: Mapping[str, Any]) -> ModelResponse:
    """A failed response by its ``error.code``: FAILED_CODES, then the no-code and unknown-code rules."""
    message = error.get("message") if isinstance(error, dict) and isinstance(error.get("message"), str) else None
    verdict = FAILED_CODES.get(code, UNKNOWN_CODE) if code else NO_CODE
    misalignment = error.get("misalignment") if isinstance(error, dict) else None
    details = {}
    if isinstance(misalignment, dict) and isinstance(misalignment.get("error_type"), str):
        details["misalignment_error_type"] = misalignment["error_type"]
    return resolve(verdict, raw, Content(), {**common, "provider_details": details}, message=message)
