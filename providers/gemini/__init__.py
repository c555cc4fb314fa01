"""Google Gemini API (``models/{model}:generateContent``), JSON bodies."""

from conformance.adapter import Adapter
from providers.gemini.errors import classify_error
from providers.gemini.request import build_request, read_request
from providers.gemini.response import classify_body

ADAPTER = Adapter(
    id="gemini",
    build_request=build_request,
    read_request=read_request,
    classify_body=classify_body,
    classify_error=classify_error,
    description="Google Gemini API, POST models/{model}:generateContent",
)
