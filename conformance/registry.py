"""Provider ids → adapters: the built-in ones, and a user's own given as ``module:object``."""

from __future__ import annotations

import importlib
import os
import sys

from conformance.adapter import Adapter
from conformance.errors import InputError, Problem

BUILTIN: dict[str, str] = {
    "openai-responses": "providers.openai_responses:ADAPTER",
    "openai-chat": "providers.openai_chat:ADAPTER",
    "anthropic-messages": "providers.anthropic_messages:ADAPTER",
    "gemini": "providers.gemini:ADAPTER",
    "bedrock-converse": "providers.bedrock_converse:ADAPTER",
}


def load_adapter(spec: str) -> Adapter:
    """The Adapter record named by ``module:object`` (e.g. ``myapp.llm:CONFORMANCE_ADAPTER``)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise InputError([Problem(spec, None, "expected module:object", "e.g. --adapter myapp.adapters:ADAPTER")])
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: the user's adapter usually lives where they run
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        fix = "make the module importable (install it, run from its folder, or set PYTHONPATH)"
        raise InputError([Problem(spec, None, f"cannot import {module_name}: {error}", fix)]) from None
    adapter = getattr(module, attribute, None)
    if not isinstance(adapter, Adapter):
        raise InputError([Problem(spec, None, f"{attribute} is not a conformance.adapter.Adapter",
                                  "export an Adapter record (see README, 'Adding an adapter')")])
    return adapter


def builtin_adapters() -> dict[str, Adapter]:
    return {provider: load_adapter(spec) for provider, spec in BUILTIN.items()}


def select_adapters(provider_ids: list[str] | None, extra: list[str] | None = None) -> dict[str, Adapter]:
    """The built-ins plus user adapters, narrowed to ``provider_ids`` when given."""
    adapters = builtin_adapters()
    for spec in extra or []:
        adapter = load_adapter(spec)
        adapters[adapter.id] = adapter
    if provider_ids:
        unknown = [provider for provider in provider_ids if provider not in adapters]
        if unknown:
            raise InputError([Problem("--provider", None, f"unknown provider id(s): {', '.join(unknown)}",
                                      f"use one of: {', '.join(sorted(adapters))}, or add --adapter module:object")])
        adapters = {provider: adapters[provider] for provider in provider_ids}
    return adapters
