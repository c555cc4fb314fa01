"""AWS Bedrock Converse (``POST /model/{modelId}/converse``) JSON bodies and ConverseStream, decoded to JSON lines."""

import re

from conformance.kit.adapter import Adapter, Wire
from conformance.providers.bedrock_converse.errors import classify_error, error_reply
from conformance.providers.bedrock_converse.eventstream import EVENTSTREAM, encode_stream
from conformance.providers.bedrock_converse.request import build_request, read_history, read_request
from conformance.providers.bedrock_converse.response import classify_body
from conformance.providers.bedrock_converse.stream import assemble_stream

ADAPTER = Adapter(
    id="bedrock-converse",
    build_request=build_request,
    read_request=read_request,
    read_history=read_history,
    classify_body=classify_body,
    classify_error=classify_error,
    assemble_stream=assemble_stream,
    description="AWS Bedrock Converse, POST /model/{modelId}/converse and /converse-stream",
    # The path decides the stream; botocore reads `x-amzn-RequestId`, and parses ConverseStream from the binary event
    # stream (botocore/eventstream.py), which the stored `.jsonl` is re-encoded into.
    wire=Wire(paths=((re.compile(r"/model/[^/]+/converse"), False),
                     (re.compile(r"/model/[^/]+/converse-stream"), True)),
              request_id_header="x-amzn-RequestId", stream_content_type=EVENTSTREAM, encode_stream=encode_stream,
              error_reply=error_reply),
)
