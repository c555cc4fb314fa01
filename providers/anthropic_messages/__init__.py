"""Anthropic Messages API (``POST /v1/messages``), JSON bodies."""

from conformance.adapter import Adapter
from providers.anthropic_messages.errors import classify_error
from providers.anthropic_messages.request import build_request, read_request
from providers.anthropic_messages.response import classify_body

ADAPTER = Adapter(
    id="anthropic-messages",
    build_request=build_request,
    read_request=read_request,
    classify_body=classify_body,
    classify_error=classify_error,
    description="Anthropic Messages API, POST /v1/messages",
)
