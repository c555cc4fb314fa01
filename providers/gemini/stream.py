"""A ``streamGenerateContent?alt=sse`` transcript → the same kind its body gives
(ai.google.dev/api/generate-content#method:-models.streamgeneratecontent).

Every frame is a whole GenerateContentResponse chunk; candidate 0's parts are rebuilt into one body for
``classify_body``, so body and stream can never disagree on a mapping rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from conformance.kit.sse import iter_events
from conformance.kit.stream import StreamResult, StreamSummary, interrupted, parse_event
from conformance.kit.types import ModelResponse, RetryableError
from conformance.providers.gemini.errors import classify_stream_error
from conformance.providers.gemini.partial_args import StreamedCall, continues_call, opens_call
from conformance.providers.gemini.response import PART_METADATA, classify_body

# Chunk fields that every chunk repeats (§4d) or that hold no payload: they name no event of their own.
CHUNK_METADATA = frozenset({"responseId", "modelVersion", "createTime", "modelStatus"})
CHUNK_PAYLOADS = frozenset({"candidates", "promptFeedback", "usageMetadata"})

# A text part may be merged with its neighbour only when it holds nothing but text (and the thought flag):
# a thoughtSignature, or any other field, must stay on the part it came on, in its position, or Gemini 3
# rejects the replayed history (§4b "Thought signatures").
PLAIN_TEXT_KEYS = frozenset({"text", "thought"})

# Part payloads that name a chunk, in order of precedence (see ``event_type``).
NAMED_PAYLOADS = ("functionCall", "text", "thought")


class _Assembly:
    def __init__(self) -> None:
        self.parts: list[Any] = []
        self.invalid_parts: Any = None
        self.has_content = False
        self.role: Any = None
        self.usage: Any = None
        self.feedback: Any = None
        self.response_id: str | None = None
        self.model: str | None = None
        self.call_frames: set[str] = set()
        self.streamed_call: StreamedCall | None = None

    def is_replay(self, raw: str, candidate: Mapping[str, Any] | None) -> bool:
        """A frame identical to an earlier one that carried a functionCall with an id: a call arrives whole,
        once, and its id is unique, so the copy is a replay. A text frame may repeat legitimately."""
        if not any(isinstance(call, dict) and call.get("id") for call in _calls(candidate)):
            return False
        if raw in self.call_frames:
            return True
        self.call_frames.add(raw)
        return False

    def apply(self, data: Mapping[str, Any], candidate: Mapping[str, Any] | None) -> None:
        if isinstance(data.get("responseId"), str):
            self.response_id = data["responseId"]
        if isinstance(data.get("modelVersion"), str):
            self.model = data["modelVersion"]
        if data.get("usageMetadata") is not None:
            self.usage = data["usageMetadata"]  # several chunks carry it: the last one wins, never a sum (§4d)
        if data.get("promptFeedback") is not None:
            self.feedback = data["promptFeedback"]
        content = candidate.get("content") if candidate is not None else None
        if not isinstance(content, dict):
            return
        self.has_content = True
        if content.get("role") is not None:
            self.role = content["role"]
        parts = content.get("parts")
        if parts is None:
            return
        if not isinstance(parts, list):
            self.invalid_parts = parts
            return
        for part in parts:
            self._append(part)

    def _append(self, part: Any) -> None:
        function_call = part.get("functionCall") if isinstance(part, dict) else None
        open_call = self.streamed_call if self.streamed_call is not None and self.streamed_call.open else None
        if open_call is not None and continues_call(function_call):
            open_call.add_part(part)
            return
        if open_call is not None and function_call is not None:
            open_call.close()  # a new name starts the next call
        if opens_call(function_call):
            self.streamed_call = StreamedCall(part)
            self.parts.append(self.streamed_call.part)
            return
        previous: Any = self.parts[-1] if self.parts else None
        if _plain_text(part) and _plain_text(previous) and _thought(part) == _thought(previous):
            self.parts[-1] = {**previous, "text": previous["text"] + part["text"]}  # text parts are deltas (§4d)
        else:
            self.parts.append(part)

    def content(self) -> dict[str, Any] | None:
        if not self.has_content:
            return None
        content: dict[str, Any] = {} if self.role is None else {"role": self.role}
        if self.invalid_parts is not None:
            content["parts"] = self.invalid_parts
        elif self.parts:
            content["parts"] = self.parts
        return content

    def body(self, terminal: Mapping[str, Any], finished: Mapping[str, Any] | None) -> dict[str, Any]:
        """The body the stream stands for: the terminal chunk, with candidate 0's content rebuilt from every
        chunk and the last usage and prompt feedback sent."""
        body = {key: value for key, value in terminal.items() if key != "candidates"}
        if finished is not None:
            candidate = {key: value for key, value in finished.items() if key != "content"}
            content = self.content()
            if content is not None:
                candidate["content"] = content
            body["candidates"] = [candidate]
        for key, value in (("usageMetadata", self.usage), ("promptFeedback", self.feedback),
                           ("responseId", self.response_id), ("modelVersion", self.model)):
            if value is not None:
                body[key] = value
        return body

    def partial_text(self) -> list[str]:
        return [part["text"] for part in self.parts
                if isinstance(part, dict) and isinstance(part.get("text"), str) and not _thought(part)]

    def with_partial(self, result: ModelResponse) -> ModelResponse:
        """A mid-stream error keeps the response id, the model and, when it is retryable, the text so far."""
        extra: dict[str, Any] = {"response_id": self.response_id, "model": self.model}
        if isinstance(result, RetryableError):
            extra["text"] = "".join(self.partial_text()) or None
        return dataclasses.replace(result, **extra)


def assemble_stream(chunks: Iterable[bytes]) -> StreamResult:
    """Assemble one Gemini stream.

    Terminal: the first chunk whose candidate 0 carries a ``finishReason``, or a ``promptFeedback.blockReason``.
    Gemini frames carry no sequence number or event id, so the only duplicate this detects is a frame identical
    byte for byte to an earlier one carrying a ``functionCall`` with an ``id`` (a call arrives whole, once); it
    is dropped and counted in ``summary.duplicates``. Repeated text frames are kept: two equal deltas are legal.
    """
    summary = StreamSummary()
    assembly = _Assembly()
    terminal: Mapping[str, Any] | None = None
    finished: Mapping[str, Any] | None = None
    for event in iter_events(chunks):
        if event.event is not None:
            summary.count(f"event:{event.event}")  # Gemini names no event (§4d): a named one is not a chunk
            continue
        try:
            data = parse_event(event.data)
        except ValueError:
            summary.count("unparsable")
            if terminal is not None:
                continue
            return interrupted(summary, assembly.partial_text(), response_id=assembly.response_id,
                               model=assembly.model, detail="an event that is not JSON")
        if not isinstance(data, dict):
            summary.count("not-an-object")
            continue
        candidate = _candidate(data)
        if terminal is None and assembly.is_replay(event.data, candidate):
            summary.duplicates += 1
            continue
        summary.count(event_type(data, candidate))
        if terminal is not None:
            continue
        if "error" in data:
            summary.terminal = True
            return StreamResult(response=assembly.with_partial(classify_stream_error(data)), summary=summary)
        assembly.apply(data, candidate)
        if candidate is not None and candidate.get("finishReason") is not None:
            terminal, finished = data, candidate
        elif _block_reason(data):
            terminal = data
        summary.terminal = terminal is not None
    return _finish(assembly, summary, terminal, finished)


def _finish(assembly: _Assembly, summary: StreamSummary, terminal: Mapping[str, Any] | None,
            finished: Mapping[str, Any] | None) -> StreamResult:
    """The assembled body's kind once the stream ended, or an interruption when no terminal chunk came or a
    streamed call was still open."""
    if terminal is None:
        return interrupted(summary, assembly.partial_text(), response_id=assembly.response_id, model=assembly.model)
    if assembly.streamed_call is not None and assembly.streamed_call.open:
        # The stream ended inside a call whose arguments were still arriving: nothing says they were complete.
        return interrupted(summary, assembly.partial_text(), response_id=assembly.response_id, model=assembly.model,
                           raw="stream ended inside a streamed functionCall (no closing fragment)")
    return StreamResult(response=classify_body(assembly.body(terminal, finished)), summary=summary)


def event_type(data: Mapping[str, Any], candidate: Mapping[str, Any] | None) -> str:
    """A chunk's summary name, by what it carries: ``error``, ``chunk:blocked`` (a prompt block),
    ``chunk:finish`` (candidate 0's finishReason), then its parts' payload (``chunk:functionCall``,
    ``chunk:text``, ``chunk:thought``, else the first payload's own name, e.g. ``chunk:executableCode``),
    ``chunk:usage`` (usage only), the first unknown top-level field, or ``chunk:empty``."""
    if "error" in data:
        return "error"
    if _block_reason(data):
        return "chunk:blocked"
    if candidate is not None and candidate.get("finishReason") is not None:
        return "chunk:finish"
    payloads = _payloads(candidate)
    for name in NAMED_PAYLOADS:
        if name in payloads:
            return f"chunk:{name}"
    if payloads:
        return f"chunk:{payloads[0]}"
    if data.get("usageMetadata") is not None:
        return "chunk:usage"
    unknown = [key for key in data if key not in CHUNK_METADATA and key not in CHUNK_PAYLOADS]
    return f"chunk:{unknown[0]}" if unknown else "chunk:empty"


def _candidate(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    # With candidateCount > 1 a chunk may hold other candidates; proto3 JSON may leave out index 0.
    candidates = data.get("candidates")
    for candidate in candidates if isinstance(candidates, list) else []:
        if isinstance(candidate, dict) and candidate.get("index", 0) == 0:
            return candidate
    return None


def _parts(candidate: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    content = candidate.get("content") if candidate is not None else None
    parts = content.get("parts") if isinstance(content, dict) else None
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _calls(candidate: Mapping[str, Any] | None) -> list[Any]:
    return [part["functionCall"] for part in _parts(candidate) if "functionCall" in part]


def _payloads(candidate: Mapping[str, Any] | None) -> list[str]:
    payloads = []
    for part in _parts(candidate):
        for key in part:
            if key not in PART_METADATA:
                payloads.append("thought" if key == "text" and _thought(part) else str(key))
    return payloads


def _block_reason(data: Mapping[str, Any]) -> bool:
    feedback = data.get("promptFeedback")
    block = feedback.get("blockReason") if isinstance(feedback, dict) else None
    return isinstance(block, str) and bool(block)


def _plain_text(part: Any) -> bool:
    return isinstance(part, dict) and isinstance(part.get("text"), str) and set(part) <= PLAIN_TEXT_KEYS


def _thought(part: Any) -> bool:
    return isinstance(part, dict) and part.get("thought") is True
