"""A turn answered on one built-in API and continued on another (docs/contract.md, "Switching vendors"): its
``output_items`` are the first API's wire, which the second refuses, and its reasoning (signatures, encrypted
content) is the first vendor's alone. Each built-in request builder rebuilds such a turn from its text and calls and
drops the reasoning; a turn from an API it does not know (a team's own) goes back as it came."""

from __future__ import annotations

from conformance.kit.task import ModelTurn

BUILTIN_APIS = frozenset({"openai-responses", "openai-chat", "anthropic-messages", "gemini", "bedrock-converse"})


def answered_elsewhere(entry: ModelTurn, api: str) -> bool:
    """Whether ``entry`` was answered on another built-in API than ``api``."""
    return entry.api is not None and entry.api != api and entry.api in BUILTIN_APIS


def turn_text(entry: ModelTurn) -> str | None:
    """The text the model wrote in ``entry`` (beside its calls, or as its answer), or None."""
    text = getattr(entry.response, "text", None)
    return text if isinstance(text, str) and text else None
