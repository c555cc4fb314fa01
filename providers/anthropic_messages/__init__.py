"""Anthropic Messages API (``POST /v1/messages``), JSON bodies and SSE streams."""

import re

from conformance.kit.adapter import Adapter, Credential, Shape, Wire
from conformance.providers.anthropic_messages.acceptance import RULES
from conformance.providers.anthropic_messages.errors import classify_error, error_reply
from conformance.providers.anthropic_messages.reasoning import reasoning_in
from conformance.providers.anthropic_messages.request import build_request, read_history, read_request
from conformance.providers.anthropic_messages.response import classify_body
from conformance.providers.anthropic_messages.stream import assemble_stream
from conformance.providers.anthropic_messages.usage import billing

PLACEHOLDER_KEY = "sk-ant-replay"


def client_environment(root: str) -> dict[str, str]:
    """The anthropic SDK reads ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY``."""
    return {"ANTHROPIC_BASE_URL": root, "ANTHROPIC_API_KEY": PLACEHOLDER_KEY}


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
    # Where a release adds (docs.anthropic.com/en/api/messages, the SDK's Message and stream event types).
    wire=Wire(credential=Credential(env=("ANTHROPIC_API_KEY",), header="x-api-key", placeholder=PLACEHOLDER_KEY),
              shape=Shape(stop="/stop_reason", items="/content", item_type="type", usage="/usage",
                          optional=("/id", "/model", "/stop_sequence"), error_code=("/error/type",),
                          opaque=("/content/*/input",),
                          event_type="type", stream_stop=(("message_delta", "/delta/stop_reason"),),
                          stream_usage=(("message_delta", "/usage"),),
                          # A block streams as content_block_start … content_block_stop, numbered by `index`
                          # (docs.anthropic.com/en/docs/build-with-claude/streaming, "Event types").
                          stream_item=({"type": "content_block_start", "index": "{index}", "content_block": "{item}"},
                                       {"type": "content_block_stop", "index": "{index}"}),
                          stream_index="index",
                          model=("/model", "/message/model"),
                          stream_optional=(("message_start", "/message/id"), ("message_start", "/message/model"),
                                           ("message_delta", "/delta/stop_sequence"))),
              paths=((re.compile(r"/v1/messages"), None),), request_id_header="request-id",
              semconv_provider="anthropic", acceptance=RULES, billing=billing, reasoning=reasoning_in,
              error_reply=error_reply, client_environment=client_environment,
              # The rate-limit counters (docs.anthropic.com/en/api/rate-limits), kept as the vendor sent them.
              kept_headers=frozenset({"anthropic-ratelimit-"})),
)
