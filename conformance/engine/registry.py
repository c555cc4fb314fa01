"""Provider ids → adapters: the built-in ones, and a user's own given as ``module:object``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from conformance.errors import InputError, Problem
from conformance.kit.adapter import Adapter

BUILTIN: dict[str, str] = {
    "openai-responses": "conformance.providers.openai_responses:ADAPTER",
    "openai-chat": "conformance.providers.openai_chat:ADAPTER",
    "anthropic-messages": "conformance.providers.anthropic_messages:ADAPTER",
    "gemini": "conformance.providers.gemini:ADAPTER",
    "bedrock-converse": "conformance.providers.bedrock_converse:ADAPTER",
}

STUB_WIRE = "openai-chat"
"""The built-in API the adapter stub ``conformance init`` writes speaks: its example fixtures are copied for the
stub."""


def load_adapter(spec: str) -> Adapter:
    """The Adapter record named by ``module:object`` (e.g. ``myapp.llm:CONFORMANCE_ADAPTER``) or by
    ``path/to/file.py:object``."""
    adapter = load_object_spec(spec, "--adapter")
    if not isinstance(adapter, Adapter):
        raise InputError([Problem(spec, None, f"{spec.rpartition(':')[2]} is not a conformance.kit.adapter.Adapter",
                                  "export an Adapter record (see docs/adapters.md)")])
    return adapter


def load_object_spec(spec: str, flag: str) -> Any:
    """The object named by ``module:object`` or ``path/to/file.py:object`` on the command line (``flag`` names the
    option in messages).

    Nothing is added to ``sys.path``: a module is imported only if the environment already makes it importable
    (installed, or ``PYTHONPATH`` set by the user), and a file only when named. Running the command inside an
    untrusted checkout therefore never imports code from it by accident."""
    module_name, _, attribute = spec.rpartition(":")
    if not module_name or not attribute:
        raise InputError([Problem(spec, None, "expected module:object or path/to/file.py:object",
                                  f"e.g. {flag} myapp.adapters:ADAPTER")])
    try:
        module = _import_file(module_name) if module_name.endswith(".py") else importlib.import_module(module_name)
    except (ImportError, OSError) as error:
        fix = (f"install the module, set PYTHONPATH to its folder, or name the file: {flag} path/to/file.py:"
               f"{attribute}")
        raise InputError([Problem(spec, None, f"cannot import {module_name}: {error}", fix)]) from None
    if not hasattr(module, attribute):
        raise InputError([Problem(spec, None, f"{module_name} has no {attribute}",
                                  f"name an object the module defines: {flag} {module_name}:NAME")])
    return getattr(module, attribute)


def load_object(spec: str, base: Path | None = None) -> Any:
    """The object named by ``module:name`` or ``path/to/file.py:name`` (a relative file is found from ``base``).
    Raises ImportError, OSError or AttributeError with a message that says which."""
    module_name, _, attribute = spec.rpartition(":")
    if module_name.endswith(".py") and base is not None and not Path(module_name).is_absolute():
        module_name = str(base / module_name)
    module = _import_file(module_name) if module_name.endswith(".py") else importlib.import_module(module_name)
    if not hasattr(module, attribute):
        raise AttributeError(f"{module_name} has no {attribute}")
    return getattr(module, attribute)


def _import_file(path: str) -> ModuleType:
    """A module from an explicitly named file, under a private name so it cannot shadow an installed one."""
    file = Path(path).resolve()
    name = f"_conformance_user_adapter_{abs(hash(str(file)))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def builtin_adapters() -> dict[str, Adapter]:
    """The five built-in adapters by provider id."""
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
