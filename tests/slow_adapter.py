"""A test adapter: the built-in Chat adapter, slowed down, so a run can be interrupted part-way."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from conformance.providers.openai_chat import ADAPTER as CHAT


def _slow_classify(body: Any) -> Any:
    started = os.environ.get("SLOW_ADAPTER_STARTED")
    if started:  # tell the test the run is under way (its signal handlers long installed), however loaded the host
        Path(started).touch()
    time.sleep(0.5)
    return CHAT.classify_body(body)


def wait_until_started(marker: Path, seconds: float = 120.0) -> None:
    """For tests: block until a run using this adapter has classified its first body."""
    deadline = time.monotonic() + seconds
    while not marker.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"the run did not start within {seconds} s")
        time.sleep(0.05)


ADAPTER = dataclasses.replace(CHAT, classify_body=_slow_classify)
