"""Bedrock requests are signed over their host (SigV4), so a request signed for the recording proxy's 127.0.0.1 is
refused upstream: the proxy signs each forwarded request again with the recorder's own credentials (botocore's
``SigV4Auth``, service ``bedrock``; docs/record.md)."""

from __future__ import annotations

from collections.abc import Mapping

from conformance.errors import InputError, Problem
from conformance.kit.adapter import Signer

# What a client's own signature put on the request: dropped before signing again.
SIGNATURE_HEADERS = ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256")


def sigv4_signer(access_key: str, secret_key: str, region: str, token: str | None = None) -> Signer:
    """A re-signer: SigV4 over the forwarded URL (its ``host``), service ``bedrock``, with these credentials."""
    from botocore.auth import SigV4Auth  # noqa: PLC0415 - botocore is needed only to record Bedrock
    from botocore.awsrequest import AWSRequest  # noqa: PLC0415
    from botocore.credentials import Credentials  # noqa: PLC0415

    credentials = Credentials(access_key, secret_key, token)

    def sign(method: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        kept = {name: value for name, value in headers.items() if name.lower() not in SIGNATURE_HEADERS}
        request = AWSRequest(method=method, url=url, data=body, headers=kept)
        SigV4Auth(credentials, "bedrock", region).add_auth(request)
        return dict(request.headers.items())

    return sign


def resign(environ: Mapping[str, str]) -> Signer:
    """The re-signer from the recorder's environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_SESSION_TOKEN``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``, as boto3 reads them)."""
    key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        raise InputError([Problem("AWS_ACCESS_KEY_ID", None, "recording Bedrock needs the recorder's own AWS "
                                  "credentials: the proxy signs each forwarded request again (SigV4 signs the host)",
                                  "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN, AWS_REGION)")])
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    return sigv4_signer(key, secret, region, environ.get("AWS_SESSION_TOKEN"))
