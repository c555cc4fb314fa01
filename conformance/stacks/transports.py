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

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from conformance.replay.router import Replay


def httpx_transport(replay: Replay) -> Any:
    """An ``httpx2.MockTransport`` answering every request from ``replay``."""
    import httpx2  # noqa: PLC0415 - the clients' HTTP library, installed with them

    def handle(request: Any) -> Any:
        reply = replay.handle(request.method, request.url.path, request.url.query.decode("ascii"), request.read())
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


def http_client(replay: Replay | None) -> Any:
    """For a stack's SDK client: an ``httpx2.Client`` answering from ``replay`` in process, or None (the SDK's own
    client, for the loopback server)."""
    if replay is None:
        return None
    import httpx2  # noqa: PLC0415

    return httpx2.Client(transport=httpx_transport(replay))
