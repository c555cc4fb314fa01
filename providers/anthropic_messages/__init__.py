"""Anthropic Messages API (``POST /v1/messages``), JSON bodies and SSE streams."""

import re

from conformance.kit.adapter import Adapter, Credential, Wire
from conformance.providers.anthropic_messages.errors import classify_error, error_reply
from conformance.providers.anthropic_messages.request import build_request, read_history, read_request
from conformance.providers.anthropic_messages.response import classify_body
from conformance.providers.anthropic_messages.stream import assemble_stream

ADAPTER = Adapter(
    id="anthropic-messages",
    build_request=build_request,
    read_request=read_request,
    read_history=read_history,
    classify_body=classify_body,
    classify_error=classify_error,
    assemble_stream=assemble_stream,
    description="Anthropic Messages API, POST /v1/messages",
    # The anthropic SDK reads its request id from `request-id` (anthropic/_base_client.py); `"stream": true` streams.
    wire=Wire(credential=Credential(env=("ANTHROPIC_API_KEY",), header="x-api-key", placeholder="sk-ant-replay"),
              paths=((re.compile(r"/v1/messages"), None),), request_id_header="request-id",
              error_reply=error_reply),
)
