"""Run a program with this test session's network guard (conftest.py, ``guard_loopback``): a server the tests start in
a process of its own — a gateway's proxy — may reach loopback and nothing else, as the tests themselves.

``python tests/e2e/loopback_only.py MODULE:FUNCTION ARG...`` installs the guard, sets ``sys.argv`` to the arguments
and calls the function (a console script's entry point)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
    import conftest

    conftest.guard_loopback()
    # uvloop resolves and connects in libuv, past the guard's socket functions: the program runs on asyncio's loop,
    # whose sockets are Python's (uvicorn and LiteLLM pick uvloop whenever it imports).
    sys.modules["uvloop"] = None  # type: ignore[assignment]
    module, _, function = sys.argv[1].partition(":")
    sys.argv = [module, *sys.argv[2:]]
    raise SystemExit(getattr(importlib.import_module(module), function)())
