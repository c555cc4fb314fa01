"""``conformance inspect``: one recorded response classified through an adapter, printed as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from conformance.commands.options import EXIT_OK
from conformance.engine.sanitize import report_safe, terminal_safe
from conformance.errors import InputError, Problem

# A body given to `inspect` is read whole; a transcript (--stream) is read in chunks and has no limit.
INSPECT_MAX_BYTES = 64 * 1024 * 1024


def add_parser(commands: Any) -> None:
    """``conformance inspect``'s options."""
    inspect = commands.add_parser("inspect", help="classify one recorded response and print it as JSON")
    inspect.add_argument("--provider", required=True, help="provider id")
    inspect.add_argument("--adapter", action="append", default=[],
                         help="your own adapter as module:object or path/to/file.py:object (repeatable)")
    inspect.add_argument("--status", type=int, default=200, help="HTTP status of the recorded response")
    inspect.add_argument("--header", action="append", default=[], help="a response header as K:V (repeatable)")
    inspect.add_argument("--stream", action="store_true", help="read FILE as a raw stream transcript")
    inspect.add_argument("file", type=Path, help="a JSON body, an error body, or a raw stream transcript")


def run(arguments: argparse.Namespace) -> int:
    """Classify the file and print the result as JSON."""
    from conformance.engine.classify import classify_response
    from conformance.engine.files import read_regular_file, regular_file_problem
    from conformance.engine.registry import select_adapters
    from conformance.kit.http import lower_headers
    from conformance.kit.jsontext import parse_json
    from conformance.kit.sse import read_chunks

    adapters = select_adapters([arguments.provider], arguments.adapter)
    adapter = adapters[arguments.provider]
    shown = str(arguments.file)
    headers: dict[str, str] = {}
    for header in arguments.header:
        name, separator, value = header.partition(":")
        if not separator or not name.strip():
            raise InputError([Problem("--header", None, f"expected K:V, got {header!r}",
                                      "e.g. --header retry-after:2")])
        headers[name.strip()] = value.strip()
    if not 100 <= arguments.status <= 599:
        raise InputError([Problem("--status", None, f"{arguments.status} is not an HTTP status",
                                  "pass the recorded status, 100 to 599")])
    if arguments.stream:
        problem = regular_file_problem(arguments.file, shown, sys.maxsize)  # streamed: no size limit
        if problem is not None:
            raise InputError([problem])
        data = b""
    else:
        data = read_regular_file(arguments.file, shown, INSPECT_MAX_BYTES)
    body: Any = None
    is_json = not arguments.stream
    if is_json:
        try:
            body = parse_json(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            is_json = False
            if arguments.status >= 400:
                # An error page need not be JSON (a proxy's HTML, an empty body): classify it by status.
                body = data.decode("utf-8", errors="replace") or None
            # A file that is not one JSON document may be a stream transcript; only then is it readable.
            elif adapter.assemble_stream is None or not _looks_like_stream(data):
                line = getattr(error, "lineno", None)
                message = getattr(error, "msg", error)
                reason = "not UTF-8" if isinstance(error, UnicodeDecodeError) else f"not JSON: {message}"
                fix = "pass a JSON body exactly as received, or a raw stream transcript"
                raise InputError([Problem(shown, line, reason, fix)]) from None
    if is_json or arguments.status >= 400:
        result = classify_response(adapter, arguments.status, lower_headers(headers), body).to_dict()
    else:
        if adapter.assemble_stream is None:
            raise InputError([Problem(shown, None, f"adapter '{adapter.id}' cannot read streams", "pass a JSON body")])
        assembled = adapter.assemble_stream(read_chunks(str(arguments.file)))
        result = assembled.response.to_dict()
        result["stream"] = assembled.summary.to_dict()
    print(terminal_safe(json.dumps(report_safe(result), indent=2, ensure_ascii=False, allow_nan=False)))
    return EXIT_OK


def _looks_like_stream(data: bytes) -> bool:
    """SSE fields, or JSON lines (one event object per line, as decoded binary event streams are stored).

    A JSON body cut short is neither: its first line (``{`` of a pretty-printed body) is not a whole object, so
    it is reported as "not JSON" instead of being read as a broken stream."""
    from conformance.kit.jsontext import parse_json

    stripped = data.lstrip()
    if stripped.startswith((b"data:", b"event:", b":", b"id:", b"retry:")):
        return True
    first, newline, _ = stripped.partition(b"\n")
    if not newline:
        return False
    try:
        return isinstance(parse_json(first.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError):
        return False
