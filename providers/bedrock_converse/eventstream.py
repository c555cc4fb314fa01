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
    """A stored ``.jsonl`` ConverseStream as the frames to send, one chunk per event
    (``conformance.kit.adapter.Wire``)."""
    return list(encode_jsonl(data.decode("utf-8")))


def decode_frames(data: bytes) -> Iterator[tuple[dict[str, str], bytes]]:
    """Each message of a binary event stream: its string headers and payload. A truncated frame or a CRC that does
    not match raises ValueError naming the byte offset."""
    offset = 0
    while offset < len(data):
        if len(data) - offset < 16:
            raise ValueError(f"byte {offset}: a frame shorter than its 16-byte prelude and trailer")
        total, headers_length = struct.unpack_from(">II", data, offset)
        (prelude_crc,) = struct.unpack_from(">I", data, offset + 8)
        if zlib.crc32(data[offset:offset + 8]) != prelude_crc or total < 16 + headers_length:
            raise ValueError(f"byte {offset}: the prelude's CRC or lengths do not match")
        if offset + total > len(data):
            raise ValueError(f"byte {offset}: the frame says {total} bytes, {len(data) - offset} remain")
        message = data[offset:offset + total]
        if zlib.crc32(message[:-4]) != struct.unpack_from(">I", message, total - 4)[0]:
            raise ValueError(f"byte {offset}: the message CRC does not match")
        yield _decoded_headers(message[12:12 + headers_length]), message[12 + headers_length:total - 4]
        offset += total


def _decoded_headers(raw: bytes) -> dict[str, str]:
    headers: dict[str, str] = {}
    at = 0
    while at < len(raw):
        name_length = raw[at]
        name = raw[at + 1:at + 1 + name_length].decode("utf-8")
        value_type = raw[at + 1 + name_length]
        if value_type != STRING:
            raise ValueError(f"header {name!r}: value type {value_type}, only strings (7) are read")
        (value_length,) = struct.unpack_from(">H", raw, at + 2 + name_length)
        start = at + 4 + name_length
        headers[name] = raw[start:start + value_length].decode("utf-8")
        at = start + value_length
    return headers


def decode_jsonl(data: bytes) -> bytes:
    """A binary ConverseStream as the suite stores it: one ``{member: payload}`` line per message, as boto3 yields
    it (an exception frame under its ``:exception-type``), compact JSON as ``encode_event`` reads it back."""
    lines = []
    for headers, payload in decode_frames(data):
        kind = headers.get(":message-type")
        if kind == "error":  # a service error frame: its code and message travel as headers, not as a payload
            member = headers.get(":error-code") or "internalServerException"
            event: dict[str, Any] = {member: {"message": headers.get(":error-message")}}
        else:
            member = headers.get(":exception-type" if kind == "exception" else ":event-type", "")
            if not member:
                raise ValueError(f"a frame without :event-type or :exception-type (headers {sorted(headers)})")
            event = {member: json.loads(payload) if payload else {}}
        lines.append(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
