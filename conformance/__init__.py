"""Offline contract conformance for LLM provider adapters: cases, the bounded loop, reports."""

__version__ = "0.1.0"
