"""In-process transports: the replay router (``conformance.replay.router``) behind the clients' own seams, with no
socket (docs/serve.md, "In process"). The loopback server stays the reference: these skip the client's socket and HTTP
layer, which is where they gain their speed.

- ``httpx_transport(replay)``: an ``httpx2.MockTransport`` (the HTTP library of openai, anthropic and google-genai):
  ``openai.OpenAI(base_url=..., http_client=httpx2.Client(transport=httpx_transport(replay)))``.
- ``attach_to_botocore(client, replay)``: a ``before-send`` hook on a boto3 client, so botocore's own parsers (JSON
  and the binary event stream) still run on the bytes.

Use any base URL whose path holds the session (``http://127.0.0.1/s/<case>/<provider>/<mode>``): nothing connects.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from conformance.replay.router import Replay


def httpx_transport(replay: Replay) -> Any:
    """An ``httpx2.MockTransport`` answering every request from ``replay``."""
    import httpx2  # noqa: PLC0415 - the clients' HTTP library, installed with them

    def handle(request: Any) -> Any:
        reply = replay.handle(request.method, request.url.path, request.url.query.decode("ascii"), request.read())
        if reply.streamed:  # the chunks as the loopback server flushes them: one read each
            return httpx2.Response(reply.status, headers=reply.headers, content=iter(reply.chunks))
        return httpx2.Response(reply.status, headers=reply.headers, content=b"".join(reply.chunks))

    return httpx2.MockTransport(handle)


class _RawBody:
    """What botocore reads a response body from: ``stream()`` yields the chunks (an event stream frame by frame)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield from self.chunks

    def read(self, *_: Any, **__: Any) -> bytes:
        return b"".join(self.chunks)


def attach_to_botocore(client: Any, replay: Replay) -> None:
    """Answer every request of a boto3 ``bedrock-runtime`` client from ``replay``, before anything is sent."""
    from botocore.awsrequest import AWSResponse  # noqa: PLC0415

    def before_send(request: Any, **_: Any) -> Any:
        url = urlsplit(request.url)
        body = request.body if isinstance(request.body, bytes) else (request.body or "").encode("utf-8")
        reply = replay.handle(request.method, url.path, url.query, body)
        return AWSResponse(request.url, reply.status, reply.headers, _RawBody(list(reply.chunks)))

    client.meta.events.register("before-send.bedrock-runtime", before_send)


def http_client(replay: Replay | None, default: Callable[..., Any] | None = None) -> Any:
    """For a stack's SDK client: in process, an ``httpx2.Client`` answering from ``replay``; over loopback, the SDK's
    own client class (``default``: ``openai.DefaultHttpxClient``, ``anthropic.DefaultHttpxClient``, which keep the
    SDK's timeouts, limits and redirects) with the shared TLS context (``shared_tls``), or None where the SDK builds
    its own and takes the context another way (``google-genai``'s ``client_args``)."""
    if replay is None:
        return None if default is None else default(verify=shared_tls())
    import httpx2  # noqa: PLC0415

    return httpx2.Client(transport=httpx_transport(replay))


@functools.cache
def shared_tls() -> ssl.SSLContext:
    """One TLS context for every SDK client the stacks build. Left to itself, each client makes its own and reads the
    whole CA bundle into it (about 28 ms on a 2-core machine; a ``google-genai`` client makes three: httpx, aiohttp,
    websockets), and each replay session has its own base URL, so its own client: that was half the time of a stack's
    row. No replay speaks TLS (the loopback server and the in-process seams are plain HTTP), so the context only has
    to exist; it is what a production service that builds many clients shares too."""
    return ssl.create_default_context()


def genai_tls() -> dict[str, dict[str, Any]]:
    """The fields of ``google-genai``'s ``HttpOptions`` that hand it the shared TLS context for each HTTP library it
    prepares a client for: httpx's ``verify``, aiohttp's and websockets' ``ssl`` (each drops the other's key)."""
    tls = shared_tls()
    return {"client_args": {"verify": tls, "ssl": tls}, "async_client_args": {"verify": tls, "ssl": tls}}
