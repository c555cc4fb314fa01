"""Gemini 3's streamed function-call arguments (``streamFunctionCallArguments``) → one whole ``functionCall``.

A call opens with ``{"name": …, "willContinue": true}``; later fragments carry ``partialArgs`` — values at a
``jsonPath`` (``stringValue`` pieces are joined while the piece before said ``willContinue``; ``numberValue``,
``boolValue`` and ``nullValue`` are set) — and an empty ``{}`` (or any fragment without ``willContinue``)
closes it. google-genai types: ``FunctionCall.partial_args``, ``PartialArg``.
"""

from __future__ import annotations

import re
from typing import Any

# `$.order_id`, `$.items[0].sku`, `$['odd key']`: one segment per match, anchored at `$`.
_SEGMENT = re.compile(r"""\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]""")

# PartialArg value fields; `nullValue` carries the enum string NULL_VALUE.
_VALUE_FIELDS = ("stringValue", "numberValue", "boolValue", "nullValue")


def opens_call(function_call: Any) -> bool:
    """A ``functionCall`` that starts a streamed call (or carries its arguments as ``partialArgs``)."""
    return isinstance(function_call, dict) and (function_call.get("willContinue") is True
                                                or "partialArgs" in function_call)


def continues_call(function_call: Any) -> bool:
    """While a call is open, every ``functionCall`` without a ``name`` is one of its fragments."""
    return isinstance(function_call, dict) and "name" not in function_call


class StreamedCall:
    """One call being assembled from its fragments; ``part`` is the part that stands for it in the content."""

    def __init__(self, part: dict[str, Any]) -> None:
        opening = part["functionCall"]
        self.call: dict[str, Any] = {key: value for key, value in opening.items()
                                     if key not in ("partialArgs", "willContinue")}
        self.arguments: dict[str, Any] = {}
        self.problem: str | None = None
        self._continuing: set[str] = set()
        self.part: dict[str, Any] = {**part, "functionCall": self.call}
        self.open = True
        self.add(opening)

    def add_part(self, part: dict[str, Any]) -> None:
        """A later fragment's part: its metadata (a ``thoughtSignature``) stays with the call it belongs to."""
        for key, value in part.items():
            if key != "functionCall":
                self.part.setdefault(key, value)
        self.add(part["functionCall"])

    def add(self, fragment: dict[str, Any]) -> None:
        """Fold one fragment in; a fragment without ``willContinue`` closes the call."""
        partial = fragment.get("partialArgs")
        if isinstance(partial, list):
            for piece in partial:
                self._apply(piece)
        elif partial is not None:
            self.problem = "partialArgs is not a list"
        if fragment.get("willContinue") is not True:
            self.close()

    def close(self) -> None:
        """End the call: its arguments are what the fragments built, or a marker that they could not be."""
        self.open = False
        # A string stands in for arguments that could not be rebuilt: it is not an object, so the call is
        # reported as not runnable instead of being run with arguments it never had.
        self.call["args"] = self.arguments if self.problem is None else f"unreadable partialArgs: {self.problem}"

    def _apply(self, piece: Any) -> None:
        if not isinstance(piece, dict):
            self.problem = "a partialArgs entry is not an object"
            return
        path = piece.get("jsonPath")
        segments = parse_json_path(path)
        present = [name for name in _VALUE_FIELDS if name in piece]
        if segments is None or len(present) > 1:
            self.problem = f"partialArgs entry at {path!r}"
            return
        if not present:
            return  # a piece that only says willContinue
        value: Any = None if present[0] == "nullValue" else piece[present[0]]
        key = str(path)
        if present[0] == "stringValue" and isinstance(value, str) and key in self._continuing:
            previous = _get(self.arguments, segments)
            value = (previous if isinstance(previous, str) else "") + value
        if piece.get("willContinue") is True:
            self._continuing.add(key)
        else:
            self._continuing.discard(key)
        if not _set(self.arguments, segments, value):
            self.problem = f"partialArgs path {path!r} crosses a value of another type"


def parse_json_path(path: Any) -> list[str | int] | None:
    """``$.a[0].b`` → ``["a", 0, "b"]``; None when the path is not one this reader understands."""
    if not isinstance(path, str) or not path.startswith("$"):
        return None
    segments: list[str | int] = []
    position = 1
    while position < len(path):
        match = _SEGMENT.match(path, position)
        if match is None:
            return None
        name, index, single, double = match.groups()
        segments.append(int(index) if index is not None else next(s for s in (name, single, double) if s is not None))
        position = match.end()
    return segments or None


def _get(root: Any, segments: list[str | int]) -> Any:
    node = root
    for segment in segments:
        if isinstance(segment, int):
            node = node[segment] if isinstance(node, list) and segment < len(node) else None
        else:
            node = node.get(segment) if isinstance(node, dict) else None
    return node


def _set(root: dict[str, Any], segments: list[str | int], value: Any) -> bool:
    node: Any = root
    for segment, following in zip(segments, [*segments[1:], None], strict=True):
        fresh: Any = value if following is None else ([] if isinstance(following, int) else {})
        if isinstance(segment, int):
            if not isinstance(node, list):
                return False
            while len(node) <= segment:
                node.append(None)
            if following is None or node[segment] is None:
                node[segment] = fresh
        else:
            if not isinstance(node, dict):
                return False
            if following is None or segment not in node:
                node[segment] = fresh
        node = node[segment]
    return True
