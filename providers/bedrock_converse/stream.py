"""A ConverseStream transcript → the same kind its Converse body gives (botocore bedrock-runtime
ConverseStreamOutput). The binary ``application/vnd.amazon.eventstream`` body is stored DECODED: one JSON line
per frame, a one-member object ``{"<eventName>": <payload>}`` as boto3 yields it, exception frames included
(``{"throttlingException": {...}}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from conformance.kit.jsontext import parse_json
from conformance.kit.sse import iter_lines
from conformance.kit.stream import StreamResult, StreamSummary, TextBuffer, interrupted, parse_event
from conformance.providers.bedrock_converse.errors import classify_stream_error
from conformance.providers.bedrock_converse.response import classify_body

TERMINAL_EVENT = "messageStop"
# ConverseStreamMetadataEvent: usage and metrics, sent AFTER messageStop.
METADATA_EVENT = "metadata"
# An exception frame decodes to a member named after its exception shape; boto3 raises EventStreamError for
# any of them, a name it does not know included, so a new one is still an error rather than an unknown event.
EXCEPTION_SUFFIX = "Exception"
BLOCK_EVENTS = frozenset({"contentBlockStart", "contentBlockDelta", "contentBlockStop"})
# Starts whose value must be an object; any other value reaches classify_body as is and is named there.
OBJECT_STARTS = frozenset({"toolUse", "toolResult"})


class _Block:
    """One content block, keyed by ``contentBlockIndex``: its start and its deltas, per union member."""

    def __init__(self) -> None:
        self.members: list[str] = []
        self.start: dict[str, Mapping[str, Any]] = {}
        self.started = False
        self.stopped = False
        self.text = TextBuffer()
        self.tool_input = TextBuffer()
        self.reasoning: dict[str, TextBuffer] = {}
        self.tool_result: list[Any] = []
        self.other: dict[str, Any] = {}
        self.citations: list[Any] = []

    def add_start(self, start: Mapping[str, Any]) -> None:
        self.started = True
        for member, value in start.items():
            self._note(member)
            if member in OBJECT_STARTS and isinstance(value, dict):
                self.start[member] = value
            else:
                self.other[member] = value

    def add_delta(self, delta: Mapping[str, Any]) -> None:
        for member, value in delta.items():
            if member == "citation":
                # The cited words arrive as text deltas of the same block, each citation beside them: the block
                # is the body's citationsContent (content = the text, citations = these).
                self.citations.append(value)
                continue
            self._note(member)
            if member == "text" and isinstance(value, str):
                self.text.append(value)
            elif member == "toolUse" and isinstance(value, dict) and isinstance(value.get("input"), str):
                self.tool_input.append(value["input"])
            elif member == "reasoningContent" and isinstance(value, dict):
                for key, piece in value.items():
                    if isinstance(piece, str):
                        if key not in self.reasoning:
                            self.reasoning[key] = TextBuffer()
                        self.reasoning[key].append(piece)
            elif member == "toolResult" and isinstance(value, list):
                self.tool_result.extend(value)  # one content item per delta item (unverified, §5d)
            elif member not in self.other:
                self.other[member] = value

    def _note(self, member: str) -> None:
        if member not in self.members:
            self.members.append(member)

    def to_block(self) -> dict[str, Any]:
        """The body's ContentBlock; a block mixing members keeps them all, and classify_body names it."""
        if self.citations and self.members == ["text"]:
            return {"citationsContent": {"content": [{"text": self.text.value()}], "citations": self.citations}}
        if self.citations and not self.members:
            # Citation deltas alone (Nova web grounding): the body's citations-only citationsContent block.
            return {"citationsContent": {"citations": self.citations}}
        return {member: self._value(member) for member in self.members}

    def _value(self, member: str) -> Any:
        if member in self.other:
            return self.other[member]
        if member == "text":
            return self.text.value()
        if member == "toolUse":
            start = self.start.get("toolUse", {})
            tool_use = {key: start[key] for key in ("toolUseId", "name") if key in start}
            tool_use["input"] = _parse_input(self.tool_input.value())
            if "type" in start:
                tool_use["type"] = start["type"]
            return tool_use
        if member == "reasoningContent":
            return self._reasoning()
        start = self.start.get("toolResult", {})
        result = {"toolUseId": start.get("toolUseId"), "content": list(self.tool_result)}
        result.update({key: start[key] for key in ("status", "type") if key in start})
        return result

    def _reasoning(self) -> dict[str, Any]:
        pieces = {key: parts.value() for key, parts in self.reasoning.items()}
        if "text" not in pieces and "signature" not in pieces and "redactedContent" in pieces:
            return {"redactedContent": pieces["redactedContent"]}
        reasoning_text = {"text": pieces.get("text", "")}
        if "signature" in pieces:
            reasoning_text["signature"] = pieces["signature"]
        return {"reasoningText": reasoning_text}


def _parse_input(joined: str) -> Any:
    # A tool with no parameters streams no input fragment at all; the body then says {}.
    if not joined.strip():
        return {}
    try:
        return parse_json(joined)
    except ValueError:
        return joined  # kept raw: classify_body then finds input that is not an object → invalid_tool_call


def _index(payload: Mapping[str, Any]) -> int | None:
    index = payload.get("contentBlockIndex")
    return index if isinstance(index, int) and not isinstance(index, bool) and index >= 0 else None


class _Assembly:
    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.role: Any = "assistant"
        self.message_started = False
        self.stop: Mapping[str, Any] | None = None
        self.metadata: Mapping[str, Any] | None = None

    def is_duplicate(self, event_type: str, payload: Mapping[str, Any]) -> bool:
        """A repeat the framing makes impossible: no event carries a sequence number, so only these are seen."""
        if event_type == "messageStart":
            return self.message_started
        if event_type == METADATA_EVENT:
            return self.metadata is not None
        index = _index(payload)
        block = self.blocks.get(index) if index is not None else None
        if block is None or event_type not in BLOCK_EVENTS:
            return False
        return block.stopped or (event_type == "contentBlockStart" and block.started)

    def apply(self, event_type: str, payload: Mapping[str, Any]) -> None:
        if event_type == "messageStart":
            self.message_started = True
            self.role = payload.get("role", "assistant")
        elif event_type == METADATA_EVENT:
            self.metadata = payload
        elif event_type in BLOCK_EVENTS:
            index = _index(payload)
            if index is None:
                return  # contentBlockIndex is required by the service model; without it there is no block to join
            block = self.blocks.setdefault(index, _Block())
            member = {"contentBlockStart": "start", "contentBlockDelta": "delta"}.get(event_type)
            value = payload.get(member) if member else None
            if event_type == "contentBlockStop":
                block.stopped = True
            elif isinstance(value, dict):
                (block.add_start if member == "start" else block.add_delta)(value)

    def partial_text(self) -> list[str]:
        return [self.blocks[index].text.value() for index in sorted(self.blocks)]

    def body(self) -> dict[str, Any]:
        """The Converse body these events stand for: messageStop and metadata members keep their body names."""
        # A block that carried nothing (only a stop) has no body counterpart.
        content = [block.to_block() for _, block in sorted(self.blocks.items()) if block.members or block.citations]
        message = {"role": self.role, "content": content}
        return {**(self.stop or {}), **(self.metadata or {}), "output": {"message": message}}


def assemble_stream(chunks: Iterable[bytes]) -> StreamResult:
    """Rebuild the Converse body from the events and classify it with the body's own rules.

    Terminal event: ``messageStop``. The first ``metadata`` after it supplies usage and is not counted as
    ignored; when none arrives the result stands with usage None. Duplicates before the terminal event (first
    copy wins, repeats counted in ``summary.duplicates`` and not applied): a second ``messageStart`` or
    ``metadata``, a second ``contentBlockStart`` for an index, and any delta or stop for an index already
    stopped. A replayed delta inside an open block cannot be told from a real one.
    """
    summary = StreamSummary()
    assembly = _Assembly()
    for line in iter_lines(chunks):
        if not line.strip():
            continue
        try:
            event = parse_event(line)
        except ValueError:
            summary.count("unparsable")
            if summary.terminal:
                continue
            return interrupted(summary, assembly.partial_text(), detail="an event that is not JSON")
        if not isinstance(event, dict) or len(event) != 1:
            summary.count("not-an-event")
            continue
        event_type, payload = next(iter(event.items()))
        payload = payload if isinstance(payload, dict) else {}
        if summary.terminal:
            summary.count(event_type)
            if event_type == METADATA_EVENT and assembly.metadata is None:
                summary.ignored_after_terminal -= 1  # metadata belongs after messageStop (§5d); it is not ignored
                assembly.apply(event_type, payload)
            continue
        if assembly.is_duplicate(event_type, payload):
            summary.duplicates += 1
            continue
        summary.count(event_type)
        if event_type.endswith(EXCEPTION_SUFFIX):
            summary.terminal = True
            return StreamResult(response=classify_stream_error(event_type, payload), summary=summary)
        if event_type == TERMINAL_EVENT:
            summary.terminal = True
            assembly.stop = payload
            continue
        assembly.apply(event_type, payload)
    if assembly.stop is None:
        return interrupted(summary, assembly.partial_text())
    return StreamResult(response=classify_body(assembly.body()), summary=summary)
