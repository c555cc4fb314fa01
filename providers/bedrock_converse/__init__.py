"""AWS Bedrock Converse (``POST /model/{modelId}/converse``) JSON bodies and ConverseStream, decoded to JSON lines."""

from conformance.adapter import Adapter
from conformance.providers.bedrock_converse.errors import classify_error
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
)
