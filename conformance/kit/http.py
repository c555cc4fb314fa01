"""HTTP facts shared by every vendor: status classes and the retry-after headers.

Vendor tables refine these defaults (a 429 can be a quota, a 400 can be a context overflow); the
defaults only decide what a vendor leaves unsaid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.kit.types import FatalError, ModelResponse, RetryableError

# (retryable?, reason) by HTTP status; the common SDK retry rule is 408, 409, 429 and >= 500.
STATUS_DEFAULTS: dict[int, tuple[bool, str]] = {
    400: (False, "invalid_request"),
    401: (False, "auth"),
    402: (False, "quota"),
    403: (False, "auth"),
    404: (False, "not_found"),
    408: (True, "timeout"),
    409: (True, "conflict"),
    413: (False, "invalid_request"),
    422: (False, "invalid_request"),
    429: (True, "rate_limit"),
    500: (True, "server_error"),
    502: (True, "server_error"),
    503: (True, "overloaded"),
    504: (True, "timeout"),
    529: (True, "overloaded"),
}


@dataclass(frozen=True, slots=True)
class Wordings:
    """The ways one API family words an error that carries no code for it (a context overflow, a bad key).

    Each wording is one or more phrases; a message matches when, lower-cased, it contains every phrase of any one
    wording. Each family keeps its table in its ``errors`` module, one line per wording seen on the wire.
    """

    wordings: tuple[tuple[str, ...], ...]

    def match(self, message: str | None) -> bool:
        """True when ``message`` says one of the wordings."""
        if not message:
            return False
        lowered = message.lower()
        return any(all(phrase in lowered for phrase in wording) for wording in self.wordings)


def default_error(status: int) -> tuple[bool, str]:
    """(retryable?, reason) for a status no vendor table names."""
    if status in STATUS_DEFAULTS:
        return STATUS_DEFAULTS[status]
    if status >= 500:
        return True, "server_error"
    return False, "invalid_request"


def error_kind(retryable: bool, *, raw: str, reason: str, http_status: int | None = None,
               retry_after_s: float | None = None, message: str | None = None,
               provider_details: Mapping[str, Any] | None = None) -> ModelResponse:
    """An error as the contract kind its retryability decides (the retry delay only matters if retryable)."""
    details = dict(provider_details or {})
    if retryable:
        return RetryableError(raw=raw, reason=reason, http_status=http_status, retry_after_s=retry_after_s,
                              message=message, provider_details=details)
    return FatalError(raw=raw, reason=reason, http_status=http_status, message=message, provider_details=details)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (delta-seconds form).

    An HTTP-date ``retry-after`` needs a clock to turn into a delay; adapters have none, so it is
    left as None (the raw header stays in the fixture).
    """
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        value = _as_non_negative_float(milliseconds)
        if value is not None:
            return value / 1000.0
    return _as_non_negative_float(headers.get("retry-after"))


def parse_duration(value: object) -> float | None:
    """A protobuf-style duration string such as ``27s`` or ``1.5s`` → seconds."""
    if isinstance(value, str) and value.endswith("s"):
        return _as_non_negative_float(value[:-1])
    return None


def _as_non_negative_float(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    if number != number or number < 0 or number == float("inf"):
        return None
    return number


def lower_headers(headers: Mapping[str, object] | None) -> dict[str, str]:
    """Header names lower-cased (HTTP names are case-insensitive), values as strings."""
    return {str(name).lower(): str(value) for name, value in (headers or {}).items()}
