"""A Messages SSE transcript → the same kind its body gives (docs.anthropic.com/en/docs/build-with-claude/streaming).

The message is rebuilt from the events (blocks by ``index``, stop fields and usage from ``message_delta``) and
handed to ``classify_body``, so body and stream share one set of mapping rules.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any

from conformance.kit.jsontext import parse_json
from conformance.kit.sse import iter_events
from conformance.kit.stream import StreamResult, StreamSummary, TextBuffer, interrupted, parse_event
from conformance.providers.anthropic_messages.errors import classify_stream_error
from conformance.providers.anthropic_messages.response import classify_body

TERMINAL_EVENT = "message_stop"

# message_delta.delta fields that land on the message; stop_reason is null in message_start until then.
DELTA_FIELDS = ("stop_reason", "stop_sequence", "stop_details", "container")

# Delta type → (the block type it extends, the block field its string is appended to).
TEXT_DELTAS: dict[str, tuple[str, str]] = {
    "text_delta": ("text", "text"),
    "thinking_delta": ("thinking", "thinking"),
}


class _Assembly:
    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stopped: set[int] = set()
        self.strings: dict[tuple[int, str], TextBuffer] = {}
        self.json_parts: dict[int, TextBuffer] = {}
        self.stop: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self.last_delta: dict[str, Any] | None = None

    def is_duplicate(self, event_type: str, data: dict[str, Any]) -> bool:
        """A structural event seen before, or a delta for a block already stopped (see ``assemble_stream``)."""
        index = _index(data)
        if event_type == "message_start":
            return self.message is not None
        if event_type == "content_block_start":
            return index in self.blocks
        if event_type in ("content_block_delta", "content_block_stop"):
            return index in self.stopped
        if event_type == "message_delta":
            return data == self.last_delta
        return False

    def apply(self, event_type: str, data: dict[str, Any]) -> None:
        index = _index(data)
        if event_type == "message_start":
            message = data.get("message")
            self.message = copy.deepcopy(message) if isinstance(message, dict) else {}
            usage = self.message.get("usage")
            self.usage = dict(usage) if isinstance(usage, dict) else {}
        elif event_type == "content_block_start" and index is not None:
            block = data.get("content_block")
            self.blocks[index] = copy.deepcopy(block) if isinstance(block, dict) else {"type": None}
        elif event_type == "content_block_delta" and index in self.blocks:
            self.apply_delta(index, data.get("delta"))
        elif event_type == "content_block_stop" and index is not None:
            self.stopped.add(index)
            self._finish_input(index)
        elif event_type == "message_delta":
            self.last_delta = data
            delta = data.get("delta")
            if isinstance(delta, dict):
                self.stop.update({key: delta[key] for key in DELTA_FIELDS if key in delta})
            usage = data.get("usage")
            if isinstance(usage, dict):
                # Cumulative counts (docs.anthropic.com/en/docs/build-with-claude/streaming): they overwrite
                # message_start's, never add to them; a
                # null leaves the earlier value, as the SDK's accumulator does.
                self.usage.update({key: value for key, value in usage.items() if value is not None})

    def apply_delta(self, index: int, delta: Any) -> None:
        if not isinstance(delta, dict):
            return
        block = self.blocks[index]
        delta_type = delta.get("type") if isinstance(delta.get("type"), str) else None
        if delta_type in TEXT_DELTAS:
            block_type, name = TEXT_DELTAS[delta_type]
            if block.get("type") == block_type and isinstance(delta.get(name), str):
                _buffer(self.strings, (index, name)).append(delta[name])
        elif delta_type == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            # Keyed by block index, never by tool_use id; server_tool_use inputs stream the same way.
            _buffer(self.json_parts, index).append(delta["partial_json"])
        elif delta_type == "signature_delta" and block.get("type") == "thinking":
            block["signature"] = delta.get("signature")
        elif delta_type == "citations_delta" and block.get("type") == "text":
            citations = block.get("citations")
            block["citations"] = [*(citations if isinstance(citations, list) else []), delta.get("citation")]

    def _finish_input(self, index: int) -> None:
        parts = self.json_parts.pop(index, None)
        if parts is None or index not in self.blocks:
            return
        joined = parts.value()
        try:
            self.blocks[index]["input"] = parse_json(joined) if joined else {}
        except ValueError:
            # Kept as the string it is, so classify_body reports the call as not runnable.
            self.blocks[index]["input"] = joined

    def _joined(self, index: int, name: str) -> str:
        """A block's string field: its start, and every delta after it."""
        start = self.blocks[index].get(name)
        pieces = self.strings.get((index, name))
        return (start if isinstance(start, str) else "") + (pieces.value() if pieces else "")

    def body(self) -> dict[str, Any]:
        for index in list(self.json_parts):
            self._finish_input(index)  # a block the stream never stopped
        content = []
        for index in sorted(self.blocks):
            block = dict(self.blocks[index])
            for _, name in TEXT_DELTAS.values():
                if (index, name) in self.strings:
                    block[name] = self._joined(index, name)
            content.append(block)
        body = dict(self.message) if self.message is not None else {}
        body["content"] = content
        body.update(self.stop)
        if self.usage:
            body["usage"] = self.usage
        return body

    def partial_text(self) -> list[str]:
        texts = [index for index in sorted(self.blocks) if self.blocks[index].get("type") == "text"]
        return [self._joined(index, "text") for index in texts]

    def identity(self) -> dict[str, str | None]:
        message = self.message or {}
        return {key: message[key] if isinstance(message.get(key), str) else None for key in ("id", "model")}


def _buffer(buffers: dict[Any, TextBuffer], key: Any) -> TextBuffer:
    buffer = buffers.get(key)
    if buffer is None:
        buffer = buffers[key] = TextBuffer()
    return buffer


def _index(data: dict[str, Any]) -> int | None:
    value = data.get("index")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def assemble_stream(chunks: Iterable[bytes]) -> StreamResult:
    """The stream's kind and summary.

    Duplicates: events carry no sequence number, so only what the framing makes impossible is dropped (counted in
    ``summary.duplicates``, the first copy kept): a second ``message_start``, a second ``content_block_start`` or
    ``content_block_stop`` for one index, a ``content_block_delta`` for a block already stopped, and a
    ``message_delta`` equal to the one before it. A repeated delta inside an open block cannot be told from a
    repeated token and is applied.
    """
    summary = StreamSummary()
    assembly = _Assembly()
    for event in iter_events(chunks):
        try:
            data = parse_event(event.data)
        except ValueError:
            summary.count(event.event or "unparsable")
            if summary.terminal:
                continue
            identity = assembly.identity()
            return interrupted(summary, assembly.partial_text(), response_id=identity["id"], model=identity["model"],
                               detail="an event that is not JSON")
        if not isinstance(data, dict):
            summary.count(event.event or "not-an-object")
            continue
        declared = data.get("type")
        event_type = declared if isinstance(declared, str) else (event.event or "untyped")
        if event_type == "content_block_delta" and not summary.terminal:
            # The hot path: most events of a long answer are deltas of an open block.
            index = _index(data)
            if index in assembly.stopped:
                summary.duplicates += 1
                continue
            summary.count(event_type)
            if index in assembly.blocks:
                assembly.apply_delta(index, data.get("delta"))
            continue
        if not summary.terminal and assembly.is_duplicate(event_type, data):
            summary.duplicates += 1
            continue
        summary.count(event_type)
        if summary.terminal:
            continue
        if event_type == "error" or event.event == "error":
            return _stream_error(assembly, summary, data)
        if event_type == TERMINAL_EVENT:
            summary.terminal = True
            continue
        assembly.apply(event_type, data)
    return _finish(assembly, summary)


def _stream_error(assembly: _Assembly, summary: StreamSummary, data: dict[str, Any]) -> StreamResult:
    """An ``error`` event: the connection closes after it, with no ``message_stop``
    (docs.anthropic.com/en/docs/build-with-claude/streaming)."""
    summary.terminal = True
    identity = assembly.identity()
    result = dataclasses.replace(classify_stream_error(data), response_id=identity["id"], model=identity["model"])
    return StreamResult(response=result, summary=summary)


def _finish(assembly: _Assembly, summary: StreamSummary) -> StreamResult:
    """The assembled body's kind once the stream ended, or an interruption when ``message_stop`` never came."""
    if not summary.terminal:
        identity = assembly.identity()
        return interrupted(summary, assembly.partial_text(), response_id=identity["id"], model=identity["model"])
    return StreamResult(response=classify_body(assembly.body()), summary=summary)
