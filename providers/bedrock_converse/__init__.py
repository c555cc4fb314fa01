"""AWS Bedrock Converse (``POST /model/{modelId}/converse``), JSON bodies; ConverseStream is not covered yet."""

from conformance.adapter import Adapter
from providers.bedrock_converse.errors import classify_error
from providers.bedrock_converse.request import build_request, read_request
from providers.bedrock_converse.response import classify_body

ADAPTER = Adapter(
    id="bedrock-converse",
    build_request=build_request,
    read_request=read_request,
    classify_body=classify_body,
    classify_error=classify_error,
    description="AWS Bedrock Converse, POST /model/{modelId}/converse",
)
