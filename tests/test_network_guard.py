"""The test session is offline: loopback works, any other host fails the test that reaches for it."""

from __future__ import annotations

import socket

import pytest

from conftest import NetworkBlocked


@pytest.mark.parametrize("host", ["192.0.2.10", "2001:db8::1"])
def test_connecting_beyond_loopback_fails(host: str) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as client, pytest.raises(NetworkBlocked, match=host):
        client.connect((host, 443))


@pytest.mark.parametrize("host", ["api.openai.com", "169.254.169.254.nip.io"])
def test_resolving_a_name_fails(host: str) -> None:
    with pytest.raises(NetworkBlocked, match="loopback only"):
        socket.getaddrinfo(host, 443)


def test_the_aws_metadata_address_is_refused() -> None:
    with socket.socket() as client, pytest.raises(NetworkBlocked):
        client.connect(("169.254.169.254", 80))


def test_loopback_still_works() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            accepted, _ = server.accept()
            accepted.close()
