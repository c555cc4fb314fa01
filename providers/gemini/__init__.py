"""Google Gemini API (``models/{model}:generateContent``), JSON bodies and ``streamGenerateContent`` SSE streams."""

import re

from conformance.kit.adapter import Adapter, Credential, Shape, Wire
from conformance.providers.gemini.acceptance import RULES
from conformance.providers.gemini.errors import classify_error, error_reply
from conformance.providers.gemini.reasoning import reasoning_in
from conformance.providers.gemini.request import build_request, read_history, read_request
from conformance.providers.gemini.response import classify_body
from conformance.providers.gemini.stream import assemble_stream

PLACEHOLDER_KEY = "replay"


def client_environment(root: str) -> dict[str, str]:
    """google-genai reads ``GOOGLE_GEMINI_BASE_URL``, ``GOOGLE_GENAI_API_VERSION`` and ``GEMINI_API_KEY``."""
    return {"GOOGLE_GEMINI_BASE_URL": root, "GOOGLE_GENAI_API_VERSION": "v1beta", "GEMINI_API_KEY": PLACEHOLDER_KEY}


ADAPTER = Adapter(
    id="gemini",
    build_request=build_request,
    read_request=read_request,
    read_history=read_history,
    classify_body=classify_body,
    classify_error=classify_error,
    assemble_stream=assemble_stream,
    description="Google Gemini API, POST models/{model}:generateContent (and :streamGenerateContent?alt=sse)",
    # The method in the path decides the stream; google-genai reads no request id header (an id is sent anyway).
    # Where a release adds (ai.google.dev/api/generate-content, google-genai's GenerateContentResponse): a part is an
    # object whose one data member names it.
    wire=Wire(reasoning=reasoning_in, credential=Credential(
                  env=("GOOGLE_API_KEY", "GEMINI_API_KEY"), header="x-goog-api-key", placeholder=PLACEHOLDER_KEY),
              shape=Shape(stop="/candidates/0/finishReason", items="/candidates/0/content/parts",
                          usage="/usageMetadata",
                          optional=("/responseId", "/modelVersion"), error_code=("/error/status",),
                          opaque=("/candidates/*/content/parts/*/functionCall/args",),
                          stream_stop=((None, "/candidates/0/finishReason"),),
                          stream_usage=((None, "/usageMetadata"),),
                          # Each chunk is a GenerateContentResponse: a new part comes in a chunk's parts.
                          stream_item=({"candidates": [{"content": {"role": "model", "parts": ["{item}"]},
                                                        "index": 0}]},),
                          stream_envelope=("usageMetadata", "modelVersion", "responseId"),
                          stream_optional=((None, "/responseId"), (None, "/modelVersion")), model=("/modelVersion",)),
              paths=((re.compile(r"/v1(?:beta|alpha)?/models/[^/:]+:generateContent"), False),
                     (re.compile(r"/v1(?:beta|alpha)?/models/[^/:]+:streamGenerateContent"), True)),
              error_reply=error_reply, client_environment=client_environment, semconv_provider="gcp.gemini",
              acceptance=RULES),
)
