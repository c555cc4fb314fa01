"""A Responses SSE transcript → the same kind its body gives
(platform.openai.com/docs/api-reference/responses-streaming).

Items are rebuilt from the events: ``output_item.added`` opens an item, text and argument deltas fill it
(argument deltas are keyed by ``item_id``, never by ``call_id``), ``output_item.done`` replaces it with the
final item. Status, usage and errors come from the terminal event's ``response``.

An ``error`` event ends the stream. The live API nests its fields (``{"type": "error", "error": {"code": …}}``)
where the SDK's ``ResponseErrorEvent`` has them flat; both are read. A ``response.failed`` right after it is
the same failure and is read too; either way the code decides through the table a failed body uses.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Iterable
from typing import Any

from conformance.kit.sse import iter_events
from conformance.kit.stream import StreamResult, StreamSummary, interrupted, parse_event
from conformance.kit.types import ModelResponse
from conformance.kit.values import nonempty_string_or_none
from conformance.providers.openai_responses.response import classify_body, classify_failure

TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


class _Assembly:
    def __init__(self) -> None:
        self.items: dict[int, dict[str, Any]] = {}
        self.done: set[int] = set()
        self.index_of: dict[str, int] = {}
        # Deltas are written into StringIO buffers: a list of thousands of small strings costs ~50 bytes each.
        self.text: dict[tuple[str, int], io.StringIO] = {}
        self.refusal: dict[tuple[str, int], io.StringIO] = {}
        self.arguments: dict[str, io.StringIO] = {}
        self.response_id: str | None = None
        self.model: str | None = None

    def apply(self, event_type: str, data: dict[str, Any]) -> None:
        if event_type in ("response.created", "response.in_progress", "response.queued"):
            response = data.get("response")
            if isinstance(response, dict):
                self.response_id = response.get("id") if isinstance(response.get("id"), str) else None
                self.model = response.get("model") if isinstance(response.get("model"), str) else None
        elif event_type in ("response.output_item.added", "response.output_item.done"):
            index, item = data.get("output_index"), data.get("item")
            if isinstance(index, int) and isinstance(item, dict):
                if event_type.endswith(".done"):
                    self.done.add(index)
                elif index in self.done:
                    return
                self.items[index] = copy.deepcopy(item)
                if isinstance(item.get("id"), str):
                    self.index_of[item["id"]] = index
        elif event_type in ("response.output_text.delta", "response.refusal.delta"):
            content_index = data.get("content_index")
            key = (str(data.get("item_id")), content_index if isinstance(content_index, int) else 0)
            target = self.text if event_type == "response.output_text.delta" else self.refusal
            if isinstance(data.get("delta"), str):
                _buffer(target, key).write(data["delta"])
        elif event_type == "response.function_call_arguments.delta" and isinstance(data.get("delta"), str):
            _buffer(self.arguments, str(data.get("item_id"))).write(data["delta"])

    def output(self) -> list[dict[str, Any]]:
        """The items in output order; an item that never got its ``.done`` is completed from its deltas."""
        output = []
        for index in sorted(self.items):
            item = self.items[index]
            if index not in self.done:
                item_id = str(item.get("id"))
                if item.get("type") == "function_call" and item_id in self.arguments:
                    item["arguments"] = self.arguments[item_id].getvalue()
                elif item.get("type") == "message":
                    item["content"] = self._parts(item_id)
            output.append(item)
        return output

    def _parts(self, item_id: str) -> list[dict[str, Any]]:
        parts: list[tuple[int, dict[str, Any]]] = []
        for (owner, content_index), buffer in self.text.items():
            if owner == item_id:
                parts.append((content_index, {"type": "output_text", "text": buffer.getvalue(), "annotations": []}))
        for (owner, content_index), buffer in self.refusal.items():
            if owner == item_id:
                parts.append((content_index, {"type": "refusal", "refusal": buffer.getvalue()}))
        return [part for _, part in sorted(parts, key=lambda pair: pair[0])]

    def partial_text(self) -> list[str]:
        return [buffer.getvalue() for _, buffer in sorted(self.text.items(), key=lambda pair: pair[0])]


def _buffer(buffers: dict[Any, io.StringIO], key: Any) -> io.StringIO:
    buffer = buffers.get(key)
    if buffer is None:
        buffer = buffers[key] = io.StringIO()
    return buffer


def assemble_stream(chunks: Iterable[bytes]) -> StreamResult:
    """A raw Responses stream transcript, as byte chunks → the kind its body gives, plus the stream summary."""
    summary = StreamSummary()
    assembly = _Assembly()
    last_sequence = -1
    terminal: dict[str, Any] | None = None
    error_event: dict[str, Any] | None = None
    for event in iter_events(chunks):
        try:
            data = parse_event(event.data)
        except ValueError:
            summary.count(event.event or "unparsable")
            if terminal is not None:
                continue
            return interrupted(summary, assembly.partial_text(), response_id=assembly.response_id,
                               model=assembly.model, detail="an event that is not JSON")
        if not isinstance(data, dict):
            summary.count(event.event or "not-an-object")
            continue
        declared = data.get("type")
        event_type = declared if isinstance(declared, str) else (event.event or "untyped")
        sequence = data.get("sequence_number")
        if terminal is None and isinstance(sequence, int) and not isinstance(sequence, bool):
            # sequence_number only grows: an event that does not advance it is a replay and is dropped.
            if sequence <= last_sequence:
                summary.duplicates += 1
                continue
            last_sequence = sequence
        summary.count(event_type)
        if error_event is not None and terminal is None and event_type == "response.failed":
            summary.ignored_after_terminal -= 1  # the failure the error event announced, not a stray event
            response = data.get("response")
            terminal = response if isinstance(response, dict) else {}
            continue
        if terminal is not None or error_event is not None:
            continue
        if event_type == "error":
            summary.terminal = True
            error_event = data
            continue
        if event_type in TERMINAL_EVENTS:
            summary.terminal = True
            response = data.get("response")
            terminal = response if isinstance(response, dict) else {}
            continue
        assembly.apply(event_type, data)
    return _finish(assembly, summary, terminal, error_event)


def _finish(assembly: _Assembly, summary: StreamSummary, terminal: dict[str, Any] | None,
            error_event: dict[str, Any] | None) -> StreamResult:
    """The stream's failure, its interruption when no terminal event came, or the kind of the terminal
    response with the output assembled from the events."""
    if error_event is not None:
        return StreamResult(response=_stream_failure(error_event, terminal, assembly), summary=summary)
    if terminal is None:
        return interrupted(summary, assembly.partial_text(), response_id=assembly.response_id, model=assembly.model)
    body = dict(terminal)
    if assembly.items or not isinstance(body.get("output"), list):
        body["output"] = assembly.output()
    return StreamResult(response=classify_body(body), summary=summary)


def _stream_failure(event: dict[str, Any], failed: dict[str, Any] | None, assembly: _Assembly) -> ModelResponse:
    """An ``error`` event, and the ``response.failed`` that may follow it, as one failed response."""
    identity = {"response_id": assembly.response_id, "model": assembly.model}
    failed_error = failed.get("error") if failed is not None else None
    if failed is not None and isinstance(failed_error, dict) and nonempty_string_or_none(failed_error.get("code")):
        body = {"id": identity["response_id"], "model": identity["model"], **failed, "status": "failed"}
        return classify_body(body)
    nested = event.get("error")
    if isinstance(nested, dict):
        error: dict[str, Any] = nested
        code = nonempty_string_or_none(nested.get("code")) or nonempty_string_or_none(nested.get("type"))
    else:
        # The SDK's flat shape: `type` is always "error".
        error, code = event, nonempty_string_or_none(event.get("code"))
    raw = f"stream error={code}" if code else "stream error"
    return classify_failure(code, error, raw, identity)
