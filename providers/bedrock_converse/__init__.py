"""AWS Bedrock Converse (``POST /model/{modelId}/converse``) JSON bodies and ConverseStream, decoded to JSON lines."""

import re

from conformance.kit.adapter import Adapter, Shape, Wire
from conformance.providers.bedrock_converse.acceptance import RULES
from conformance.providers.bedrock_converse.errors import classify_error, error_reply
from conformance.providers.bedrock_converse.eventstream import EVENTSTREAM, decode_jsonl, encode_stream
from conformance.providers.bedrock_converse.reasoning import reasoning_in
from conformance.providers.bedrock_converse.request import build_request, read_history, read_request
from conformance.providers.bedrock_converse.response import classify_body
from conformance.providers.bedrock_converse.signing import resign
from conformance.providers.bedrock_converse.stream import assemble_stream


def client_environment(root: str) -> dict[str, str]:
    """boto3 reads ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, fake credentials and region, no instance metadata lookup
    (``AWS_EC2_METADATA_DISABLED``) and one attempt (``AWS_MAX_ATTEMPTS``)."""
    return {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": root, "AWS_ACCESS_KEY_ID": "replay", "AWS_SECRET_ACCESS_KEY": "replay",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "AWS_MAX_ATTEMPTS": "1"}


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
    # Where a release adds (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html, botocore's
    # service model): a content block is a union, an object whose one member names it; so is a stream event.
    wire=Wire(reasoning=reasoning_in, shape=Shape(stop="/stopReason", items="/output/message/content", usage="/usage",
                          optional=("/metrics",), unions=("/output",), event_type="member",
                          error_header="x-amzn-errortype",
                          opaque=("/output/message/content/*/toolUse/input",),
                          stream_stop=(("messageStop", "/stopReason"),), stream_usage=(("metadata", "/usage"),),
                          # A new block kind arrives as a new member of contentBlockDelta's `delta` union, as
                          # reasoningContent and citation did (ContentBlockDeltaEvent, Bedrock API reference).
                          stream_item=({"contentBlockDelta": {"contentBlockIndex": "{index}", "delta": "{item}"}},
                                       {"contentBlockStop": {"contentBlockIndex": "{index}"}}),
                          stream_index="contentBlockIndex", stream_optional=(("metadata", "/metrics"),)),
              paths=((re.compile(r"/model/[^/]+/converse"), False),
                     (re.compile(r"/model/[^/]+/converse-stream"), True)),
              request_id_header="x-amzn-RequestId", semconv_provider="aws.bedrock", acceptance=RULES,
              stream_content_type=EVENTSTREAM, encode_stream=encode_stream,
              error_reply=error_reply, decode_stream=decode_jsonl, resign=resign,
              client_environment=client_environment,
              # botocore reads the error's type from `x-amzn-ErrorType` when the body has none (botocore/parsers.py).
              kept_headers=frozenset({"x-amzn-errortype"})),
)
