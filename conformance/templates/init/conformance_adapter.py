"""Your stack as a conformance adapter.

An adapter is one small record (``conformance.kit.adapter.Adapter``): how your code builds a request from the case's
task and transcript, and how it turns a recorded response into the contract's kinds. This one starts as a copy of
the built-in OpenAI Chat Completions adapter under its own id, so the example case runs it from day one. Replace
``build_request``, ``classify_body`` (and ``assemble_stream``, ``read_request``, ``read_history``) with thin calls
into the code your application really uses, then record fixtures for it under ``cases/<case>/app-openai-chat/``.

Run it: ``pytest`` (listed under ``conformance_adapters`` in pyproject.toml) or
``conformance run --cases cases --adapter conformance_adapter.py:ADAPTER``.
"""

import dataclasses

from conformance.providers.openai_chat import ADAPTER as OPENAI_CHAT

ADAPTER = dataclasses.replace(OPENAI_CHAT, id="app-openai-chat")
