"""One recorded response → one contract kind, through an adapter: HTTP status first, then the body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.adapter import Adapter
from conformance.kit.types import ModelResponse


def classify_response(adapter: Adapter, status: int, headers: Mapping[str, str], body: Any) -> ModelResponse:
    """One recorded response → its kind: an HTTP error through ``classify_error``, else the body."""
    if status >= 400:
        return adapter.classify_error(status, body, headers)
    return adapter.classify_body(body)
