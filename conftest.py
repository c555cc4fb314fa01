"""Test-session setup. The conformance plugin itself is an installed pytest11 entry point (pyproject.toml) that
collects cases/ because ``conformance_cases`` names it; pytester drives the plugin's own tests; a guard keeps
every test on loopback."""

import os
import socket
import sys
from typing import Any

pytest_plugins = ["pytester"]

# The tests start hundreds of Python processes (the CLI, pytest inside pytest, xdist workers, the gate's sides): each
# would compile the project's modules again, and pytest rewrite every test module's assertions again, when bytecode
# is not written (PYTHONDONTWRITEBYTECODE, set on some CI machines). The test session writes it, for its own
# processes and the ones it starts, into the __pycache__ folders git ignores.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False


def pytest_make_parametrize_id(config: object, val: object, argname: str) -> str | None:
    """A parameter id pytest would write with backslash escapes (a newline, a lone surrogate, U+2028) cannot be
    selected again by its node id (mutation testing and ``pytest 'file::test[id]'`` do that): spell such
    characters, and the backslash, ``U+XXXX`` instead."""
    text = val.decode("latin-1") if isinstance(val, bytes) else val
    if not isinstance(text, str) or all(_plain(char) for char in text):
        return None
    return "".join(char if _plain(char) else f"U+{ord(char):04X}" for char in text)


def _plain(char: str) -> bool:
    return char.isascii() and char.isprintable() and char != "\\"


# ---- Offline means loopback only ----------------------------------------------------------------------------------

_LOOPBACK = ("127.", "::1", "localhost", "0:0:0:0:0:0:0:1")


def _loopback(host: object) -> bool:
    return isinstance(host, str) and (host.startswith(_LOOPBACK) or host == "")


def _guarded_connect(original: Any) -> Any:
    def connect(self: socket.socket, address: Any, *rest: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
            raise NetworkBlocked(f"test tried to connect to {address[0]}: tests may reach loopback only")
        return original(self, address, *rest)
    return connect


class NetworkBlocked(RuntimeError):
    """A test reached for a host other than 127.0.0.1/::1."""


def guard_loopback() -> None:
    """This process refuses to resolve or connect beyond loopback: the test session's own, and a server the tests
    start in a process of its own (``tests/e2e/loopback_only.py``)."""
    original_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, *rest: Any, **options: Any) -> Any:
        if host is not None and not _loopback(host if isinstance(host, str) else host.decode("ascii", "replace")):
            raise NetworkBlocked(f"test tried to resolve {host!r}: tests may reach loopback only")
        return original_getaddrinfo(host, *rest, **options)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.socket.connect = _guarded_connect(socket.socket.connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect(socket.socket.connect_ex)  # type: ignore[method-assign]


def pytest_configure(config: Any) -> None:
    """Every test process (xdist workers included) refuses to resolve or connect beyond loopback; subprocesses
    that could fetch (pip) are started with ``PIP_NO_INDEX``, and the clients' offline switches are on."""
    guard_loopback()
    os.environ["PIP_NO_INDEX"] = "1"
    # The clients' own offline switches, before any of them is imported (docs/gateways.md): LiteLLM fetches its
    # model cost map at import, and boto3 (langchain-aws too) walks the credential chain to the metadata address.
    os.environ["LITELLM_OFFLINE_MODE"] = "true"
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
