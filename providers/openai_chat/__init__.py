"""OpenAI Chat Completions (``POST /v1/chat/completions``) and compatible servers: JSON bodies and SSE."""

import re

from conformance.kit.adapter import Adapter, Credential, Shape, Wire
from conformance.providers.openai_chat.request import build_request, read_history, read_request
from conformance.providers.openai_chat.response import classify_body
from conformance.providers.openai_chat.stream import assemble_stream
from conformance.providers.openai_common.acceptance import CHAT_RULES
from conformance.providers.openai_common.errors import classify_error
from conformance.providers.openai_common.wire import KEPT_HEADERS, PLACEHOLDER_KEY, billing, client_environment

ADAPTER = Adapter(
    id="openai-chat",
    build_request=build_request,
    read_request=read_request,
    read_history=read_history,
    classify_body=classify_body,
    classify_error=classify_error,
    assemble_stream=assemble_stream,
    description="OpenAI Chat Completions and compatible servers, POST /v1/chat/completions",
    # The openai SDK reads its request id from `x-request-id` (openai/_base_client.py); `"stream": true` streams.
    # Where a release adds (platform.openai.com/docs/api-reference/chat/object, the SDK's ChatCompletion types).
    wire=Wire(credential=Credential(
                  env=("OPENAI_API_KEY",), header="authorization", template="Bearer {}", placeholder=PLACEHOLDER_KEY),
              shape=Shape(stop="/choices/0/finish_reason", items="/choices/0/message/tool_calls", item_type="type",
                          usage="/usage", optional=("/id", "/model", "/usage", "/system_fingerprint",
                                                    "/service_tier"),
                          error_code=("/error/code", "/error/type"),
                          stream_stop=((None, "/choices/0/finish_reason"),), stream_usage=((None, "/usage"),),
                          # A chunk's delta carries a tool call as {index, id, type, function} (ChoiceDeltaToolCall,
                          # openai-python types/chat/chat_completion_chunk.py): an unseen type comes the same way.
                          stream_item=({"choices": [{"index": 0, "delta": {"tool_calls": [
                              {"{item}": True, "index": "{index}"}]}, "logprobs": None, "finish_reason": None}]},),
                          stream_index="index",
                          # Fragments are tied to their call by `index` alone (`id` comes on the first only), so a
                          # server may interleave parallel calls or put several in one chunk (ChoiceDeltaToolCall).
                          stream_calls="/choices/0/delta/tool_calls",
                          stream_envelope=("id", "object", "created", "model", "system_fingerprint", "service_tier"),
                          model=("/model",),
                          stream_optional=((None, "/id"), (None, "/model"), (None, "/system_fingerprint"),
                                           (None, "/service_tier"))),
              paths=((re.compile(r"/v1/chat/completions"), None),),
              kept_headers=KEPT_HEADERS, client_environment=client_environment, semconv_provider="openai",
              acceptance=CHAT_RULES, billing=billing),
)
