"""A test adapter: the built-in Chat adapter, slowed down, so a run can be interrupted part-way."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from conformance.providers.openai_chat import ADAPTER as CHAT


def _slow_classify(body: Any) -> Any:
    time.sleep(0.5)
    return CHAT.classify_body(body)


ADAPTER = dataclasses.replace(CHAT, classify_body=_slow_classify)
