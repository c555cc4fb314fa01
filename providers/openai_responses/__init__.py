"""OpenAI Responses API (``POST /v1/responses``), JSON bodies and SSE streams."""

import re

from conformance.kit.adapter import Adapter, Credential, Shape, Wire
from conformance.providers.openai_common.acceptance import RESPONSES_RULES
from conformance.providers.openai_common.errors import classify_error
from conformance.providers.openai_common.wire import KEPT_HEADERS, PLACEHOLDER_KEY, billing, client_environment
from conformance.providers.openai_responses.reasoning import reasoning_in
from conformance.providers.openai_responses.request import build_request, read_history, read_request
from conformance.providers.openai_responses.response import classify_body
from conformance.providers.openai_responses.stream import assemble_stream

ADAPTER = Adapter(
    id="openai-responses",
    build_request=build_request,
    read_request=read_request,
    read_history=read_history,
    classify_body=classify_body,
    classify_error=classify_error,
    assemble_stream=assemble_stream,
    description="OpenAI Responses API, POST /v1/responses",
    # The openai SDK reads its request id from `x-request-id` (openai/_base_client.py); `"stream": true` streams.
    # Where a release adds (platform.openai.com/docs/api-reference/responses/object, the SDK's Response types).
    wire=Wire(reasoning=reasoning_in, credential=Credential(
                  env=("OPENAI_API_KEY",), header="authorization", template="Bearer {}", placeholder=PLACEHOLDER_KEY),
              shape=Shape(stop="/status", items="/output", item_type="type", usage="/usage",
                          optional=("/id", "/model", "/usage", "/created_at"), opaque=("/tools", "/text", "/metadata"),
                          error_code=("/error/code", "/error/type"), event_type="type",
                          event_sequence="sequence_number",
                          stream_stop=(("response.completed", "/response/status"),
                                       ("response.incomplete", "/response/status")),
                          stream_usage=(("response.completed", "/response/usage"),
                                        ("response.incomplete", "/response/usage")),
                          # An item streams as output_item.added … output_item.done, numbered by `output_index`, and
                          # the final response repeats the whole output (openai-python types/responses/
                          # response_output_item_added_event.py, response_completed_event.py).
                          stream_item=({"type": "response.output_item.added", "output_index": "{index}",
                                        "item": "{item}"},
                                       {"type": "response.output_item.done", "output_index": "{index}",
                                        "item": "{item}"}),
                          stream_index="output_index", model=("/model", "/response/model"),
                          stream_final_items=(("response.completed", "/response/output"),
                                              ("response.incomplete", "/response/output")),
                          stream_optional=((None, "/response/id"), (None, "/response/model"),
                                           (None, "/response/created_at"), ("response.completed", "/response/usage"))),
              paths=((re.compile(r"/v1/responses"), None),),
              kept_headers=KEPT_HEADERS, client_environment=client_environment, semconv_provider="openai",
              acceptance=RESPONSES_RULES, billing=billing),
)
