"""Bedrock's binary event stream (``application/vnd.amazon.eventstream``), encoded from the suite's ``.jsonl`` streams.

The suite stores a ConverseStream decoded, one ``{member: payload}`` object per line, as boto3 yields it; a replay to
a real client needs the wire framing back. Each frame, integers big-endian (the AWS event stream encoding, as
botocore's ``botocore/eventstream.py`` decodes it):

    uint32 total length (12 + H + P + 4) | uint32 headers length H | uint32 CRC32 of the 8 bytes before
    H bytes of headers: uint8 name length, name, uint8 value type (7 = string), uint16 value length, value
    P bytes of payload: the member's JSON
    uint32 CRC32 of every byte before it

An event is sent with ``:event-type`` = the member name; a member the ConverseStream output models as an error
(``…Exception``) is sent as an exception frame (``:message-type: exception``, ``:exception-type``), which botocore
raises as ``EventStreamError`` during iteration.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from typing import Any

STRING = 7
EVENTSTREAM = "application/vnd.amazon.eventstream"


def _headers(headers: dict[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        encoded_name, encoded_value = name.encode("utf-8"), value.encode("utf-8")
        out += struct.pack(">B", len(encoded_name)) + encoded_name
        out += struct.pack(">BH", STRING, len(encoded_value)) + encoded_value
    return bytes(out)


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event stream message: prelude, prelude CRC, headers, payload, message CRC."""
    encoded = _headers(headers)
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return body + struct.pack(">I", zlib.crc32(body))


def is_exception(member: str) -> bool:
    """Whether a ConverseStream member is an error (``throttlingException``, ``modelStreamErrorException``, ...)."""
    return member.endswith("Exception")


def encode_event(event: dict[str, Any]) -> bytes:
    """One decoded line (``{member: payload}``) as its wire frame."""
    ((member, payload),) = event.items()
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if is_exception(member):
        headers = {":message-type": "exception", ":exception-type": member, ":content-type": "application/json"}
    else:
        headers = {":message-type": "event", ":event-type": member, ":content-type": "application/json"}
    return frame(headers, data)


def encode_jsonl(text: str) -> Iterator[bytes]:
    """Every line of a ``.jsonl`` stream as one frame, in order; blank lines skipped. A line that is not one
    ``{member: payload}`` object raises ValueError naming the line."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        event = json.loads(line)
        if not isinstance(event, dict) or len(event) != 1:
            raise ValueError(f"line {number}: not one {{member: payload}} object")
        yield encode_event(event)


def encode_stream(data: bytes) -> list[bytes]:
    """A stored ``.jsonl`` ConverseStream as the frames to send, one chunk per event (``conformance.adapter.Wire``)."""
    return list(encode_jsonl(data.decode("utf-8")))
