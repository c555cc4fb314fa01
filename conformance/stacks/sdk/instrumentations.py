"""The instrumentations the suite ships telemetry lanes for (docs/telemetry.md): each the record of how a team installs
it on the SDK it instruments (``conformance.stacks.telemetry.Instrumentation``)."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from conformance.stacks.telemetry import Install, Instrumentation


def _instrumentor(module: str, name: str, **options: Any) -> Install:
    """An ``opentelemetry.instrumentation.instrumentor.BaseInstrumentor`` subclass, installed on the given provider
    (``instrument(tracer_provider=...)``) and removed by its ``uninstrument()``."""

    def install(provider: Any) -> Callable[[], None]:
        instrumentor = getattr(importlib.import_module(module), name)()
        instrumentor.instrument(tracer_provider=provider, **options)
        return instrumentor.uninstrument  # type: ignore[no-any-return]

    return install


OPENAI_PATCHES = ("openai._client", "openai._base_client", "openai.resources.chat", "openai.resources.responses",
                  "openai.resources.completions", "openai.resources.embeddings")
ANTHROPIC_PATCHES = ("anthropic._client", "anthropic._base_client", "anthropic.resources.messages",
                     "anthropic.resources.beta.messages", "anthropic.resources.completions")
BOTOCORE_PATCHES = ("botocore.client", "botocore.session")
GENAI_PATCHES = ("google.genai.models", "google.genai._api_client")
"""The modules each instrumentation of that SDK wraps methods in (read from their ``wrap_function_wrapper``
calls)."""

_GENAI_CONTENT = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
                  "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
"""opentelemetry-util-genai's switches (its README): message content, where the tool call ids are, goes on the
span; the latest experimental GenAI attributes are written."""

OTEL_OPENAI = Instrumentation(
    id="otel", providers=("openai-chat", "openai-responses"),
    patches=OPENAI_PATCHES, scopes=("opentelemetry.util.genai", "opentelemetry.instrumentation.openai_v2"),
    install=_instrumentor("opentelemetry.instrumentation.openai_v2", "OpenAIInstrumentor"),
    requires=("opentelemetry.instrumentation.openai_v2",),
    packages=("opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai"),
    environment=_GENAI_CONTENT,
    description="OpenTelemetry's own openai instrumentation (opentelemetry-python-contrib, openai-v2)")

OTEL_GOOGLE_GENAI = Instrumentation(
    id="otel", providers=("gemini",),
    # It declares google-genai<3 and instruments nothing outside that range unless told to skip the check; a team
    # on google-genai 3 that wants its spans passes skip_dep_check, as this lane does (docs/telemetry.md).
    patches=GENAI_PATCHES, scopes=("opentelemetry.util.genai", "opentelemetry.instrumentation.google_genai"),
    install=_instrumentor("opentelemetry.instrumentation.google_genai", "GoogleGenAiSdkInstrumentor",
                          skip_dep_check=True),
    requires=("opentelemetry.instrumentation.google_genai",),
    packages=("opentelemetry-instrumentation-google-genai", "opentelemetry-util-genai"),
    environment=_GENAI_CONTENT,
    description="OpenTelemetry's own google-genai instrumentation (opentelemetry-python-contrib)")

_TRACELOOP = {"TRACELOOP_TRACE_CONTENT": "true"}
"""OpenLLMetry's switch for message content (on by default; set so a team's environment does not change the lane)."""

OPENLLMETRY_OPENAI = Instrumentation(
    id="openllmetry", providers=("openai-chat", "openai-responses"),
    patches=OPENAI_PATCHES, scopes=("opentelemetry.instrumentation.openai",),
    install=_instrumentor("opentelemetry.instrumentation.openai", "OpenAIInstrumentor"),
    requires=("opentelemetry.instrumentation.openai",), packages=("opentelemetry-instrumentation-openai",),
    environment=_TRACELOOP, description="OpenLLMetry's openai instrumentation (traceloop/openllmetry)")

OPENLLMETRY_ANTHROPIC = Instrumentation(
    id="openllmetry", providers=("anthropic-messages",),
    patches=ANTHROPIC_PATCHES, scopes=("opentelemetry.instrumentation.anthropic",),
    install=_instrumentor("opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor"),
    requires=("opentelemetry.instrumentation.anthropic",), packages=("opentelemetry-instrumentation-anthropic",),
    environment=_TRACELOOP, description="OpenLLMetry's anthropic instrumentation (traceloop/openllmetry)")

OPENLLMETRY_BEDROCK = Instrumentation(
    id="openllmetry", providers=("bedrock-converse",),
    patches=BOTOCORE_PATCHES, scopes=("opentelemetry.instrumentation.bedrock",),
    install=_instrumentor("opentelemetry.instrumentation.bedrock", "BedrockInstrumentor"),
    requires=("opentelemetry.instrumentation.bedrock",), packages=("opentelemetry-instrumentation-bedrock",),
    environment=_TRACELOOP, description="OpenLLMetry's bedrock instrumentation (traceloop/openllmetry)")

OPENINFERENCE_OPENAI = Instrumentation(
    id="openinference", providers=("openai-chat", "openai-responses"),
    patches=OPENAI_PATCHES, scopes=("openinference.instrumentation.openai",),
    install=_instrumentor("openinference.instrumentation.openai", "OpenAIInstrumentor"),
    requires=("openinference.instrumentation.openai",), packages=("openinference-instrumentation-openai",),
    dialect="openinference", description="OpenInference's openai instrumentation (Arize-ai/openinference)")

OPENINFERENCE_ANTHROPIC = Instrumentation(
    id="openinference", providers=("anthropic-messages",),
    patches=ANTHROPIC_PATCHES, scopes=("openinference.instrumentation.anthropic",),
    install=_instrumentor("openinference.instrumentation.anthropic", "AnthropicInstrumentor"),
    requires=("openinference.instrumentation.anthropic",), packages=("openinference-instrumentation-anthropic",),
    dialect="openinference", description="OpenInference's anthropic instrumentation (Arize-ai/openinference)")

BUILTIN: tuple[Instrumentation, ...] = (OTEL_OPENAI, OTEL_GOOGLE_GENAI, OPENLLMETRY_OPENAI, OPENLLMETRY_ANTHROPIC,
                                        OPENLLMETRY_BEDROCK, OPENINFERENCE_OPENAI, OPENINFERENCE_ANTHROPIC)


@functools.cache
def _logfire(provider: Any) -> Any:
    """A local Logfire instance (``logfire.configure(local=True)``: the global tracer provider is left alone) that
    sends nothing and writes nothing to the console, its spans handed to the lane's provider."""
    import logfire  # noqa: PLC0415 - the telemetry extra
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor  # noqa: PLC0415

    class ToLane(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            provider._active_span_processor.on_end(span)

    return logfire.configure(local=True, send_to_logfire=False, console=False, inspect_arguments=False,
                             additional_span_processors=[ToLane()])


def _logfire_install(method: str) -> Install:
    """``Logfire.instrument_openai()`` / ``instrument_anthropic()`` on every client of the SDK; leaving the context
    manager it returns removes it."""

    def install(provider: Any) -> Callable[[], None]:
        undo = getattr(_logfire(provider), method)()
        undo.__enter__()
        return lambda: undo.__exit__(None, None, None)

    return install


_LOGFIRE_AS_DEPLOYED = {"PYTEST_CURRENT_TEST": ""}
"""Logfire re-raises its own internal errors whenever ``PYTEST_CURRENT_TEST`` is set (``log_internal_error``, for
its own test suite); deployed, it logs them and lets the call go on. The lane runs it as deployed, under pytest
too."""

LOGFIRE_OPENAI = Instrumentation(
    id="logfire", providers=("openai-chat", "openai-responses"),
    patches=OPENAI_PATCHES, scopes=("logfire.openai",), install=_logfire_install("instrument_openai"),
    requires=("logfire",), packages=("logfire",), environment=_LOGFIRE_AS_DEPLOYED,
    description="Logfire's openai instrumentation (pydantic/logfire)")

LOGFIRE_ANTHROPIC = Instrumentation(
    id="logfire", providers=("anthropic-messages",),
    patches=ANTHROPIC_PATCHES, scopes=("logfire.anthropic",), install=_logfire_install("instrument_anthropic"),
    requires=("logfire",), packages=("logfire",), environment=_LOGFIRE_AS_DEPLOYED,
    description="Logfire's anthropic instrumentation (pydantic/logfire)")

BUILTIN = (*BUILTIN, LOGFIRE_OPENAI, LOGFIRE_ANTHROPIC)
