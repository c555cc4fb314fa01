"""The framing mutants (docs/forward.md, "Framing"): the same events delivered in other reads, with other line ends,
with keep-alive comments, with parallel calls interleaved. Every reference adapter reads each as the recording; a
stream reader with one of the framing bugs public trackers report fails its family by name, and only that one."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import forward
from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.kit.adapter import Adapter
from conformance.replay.router import Replay
from conformance.session import Run
from tests.helpers import CASES

ADAPTERS = builtin_adapters()
CASE_LIST = load_cases([CASES])
CHAT = ADAPTERS["openai-chat"]
FRAMES = ("frame.split", "frame.merged", "frame.line_ends", "frame.keepalive", "frame.interleaved")
CHOSEN = ("normal", "parallel_tool_calls", "plain_text_refusal")


def _events_to_chat(payloads: Iterable[str]) -> Any:
    """Events a reader found (their ``data:`` texts) through the reference assembler, framed as recorded."""
    assert CHAT.assemble_stream is not None
    return CHAT.assemble_stream([b"".join(f"data: {payload}\n\n".encode() for payload in payloads)])


def per_read(chunks: Iterable[bytes]) -> Any:
    """Each read decoded and split into lines on its own: a line cut across two reads is two broken lines."""
    payloads = []
    for chunk in chunks:
        for line in chunk.decode("utf-8").splitlines():
            if line.startswith("data: "):
                payloads.append(line[6:])
    return _events_to_chat(payloads)


def lf_only(chunks: Iterable[bytes]) -> Any:
    """Events cut at ``\\n\\n`` only, their data lines joined as the SSE rule joins them: CRLF makes one event."""
    text = b"".join(chunks).decode("utf-8")
    payloads = []
    for block in text.split("\n\n"):
        data = [line[6:] for line in block.split("\n") if line.startswith("data: ")]
        if data:
            payloads.append("\n".join(data))
    return _events_to_chat(payloads)


def data_lines_only(chunks: Iterable[bytes]) -> Any:
    """Every non-empty line taken for a ``data:`` line: a comment line is an error."""
    payloads = []
    for line in b"".join(chunks).decode("utf-8").splitlines():
        if not line.strip():
            continue
        if not line.startswith("data: "):
            raise ValueError(f"unexpected stream line {line[:40]!r}")
        payloads.append(line[6:])
    return _events_to_chat(payloads)


def last_call(chunks: Iterable[bytes]) -> Any:
    """A fragment without an id taken as the continuation of the last call that had one (its ``index`` ignored)."""
    payloads, opened = [], None
    for line in b"".join(chunks).decode("utf-8").splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        for choice in event.get("choices") or []:
            for delta in (choice.get("delta") or {}).get("tool_calls") or []:
                if delta.get("id"):
                    opened = delta["index"]
                elif opened is not None:
                    delta["index"] = opened
        payloads.append(json.dumps(event))
    return _events_to_chat([*payloads, "[DONE]"])


def _frames(adapter: Adapter) -> dict[str, dict[str, int]]:
    run = Run.configure()
    run.adapters = {"openai-chat": adapter}
    section = run.forward([case for case in CASE_LIST if case.id in CHOSEN])
    return {family: cell for family, cell in section["lanes"]["openai-chat"].items() if family.startswith("frame.")}


def _not_held(cell: dict[str, int]) -> int:
    return sum(cell.values()) - cell["held"]


@pytest.mark.parametrize(("reader", "family"), [(per_read, "frame.split"), (lf_only, "frame.line_ends"),
                                                (data_lines_only, "frame.keepalive"),
                                                (last_call, "frame.interleaved")])
def test_a_reader_with_a_framing_bug_fails_that_family_by_name_and_no_other(
        reader: Callable[[Iterable[bytes]], Any], family: str) -> None:
    broken = _frames(dataclasses.replace(CHAT, id=f"broken-{reader.__name__}", assemble_stream=reader))
    fixed = _frames(CHAT)
    assert sorted(fixed) == sorted(f"{name} (stream)" for name in FRAMES)
    assert all(_not_held(cell) == 0 for cell in fixed.values()), fixed  # the fixed reader holds every one
    assert _not_held(broken[f"{family} (stream)"]) > 0, broken
    others = {name: cell for name, cell in broken.items() if name != f"{family} (stream)"}
    assert all(_not_held(cell) == 0 for cell in others.values()), others


def test_the_framing_mutants_are_the_recorded_events_delivered_or_framed_another_way() -> None:
    for provider, adapter in sorted(ADAPTERS.items()):
        assert adapter.wire is not None and adapter.wire.shape is not None
        by_case = {case.id: case for case in CASE_LIST}
        for mutant in forward.mutants_for(CASE_LIST, provider, adapter.wire.shape):
            if not mutant.family.name.startswith("frame."):
                continue
            stream = by_case[mutant.case].providers[provider].turns[mutant.turn - 1].stream
            assert stream is not None
            recorded = stream.read_bytes().decode("utf-8")
            jsonl = stream.suffix == ".jsonl"
            events = forward._read_stream(mutant.data, jsonl)
            before = forward._read_stream(recorded, jsonl)
            name = mutant.family.name
            if name in ("frame.split", "frame.merged"):
                assert mutant.data == recorded and mutant.reads == (int(mutant.id.rsplit("@", 1)[1])
                                                                    if name == "frame.split" else 0), mutant.id
                continue
            assert mutant.reads is None and mutant.data != recorded
            if name == "frame.line_ends":
                assert mutant.data.replace("\r\n", "\n") == recorded.replace("\r\n", "\n")
                assert ("\r\n" in mutant.data) != ("\r\n" in recorded), mutant.id
            elif name == "frame.keepalive":
                kept = [event for event in events if event.raw != forward.KEEPALIVE]
                assert [(e.name, e.data, e.raw) for e in kept] == [(e.name, e.data, e.raw) for e in before]
                assert len(events) - len(kept) == len(before) + 1, mutant.id
            else:  # interleaved: each call's fragments in their recorded order, other events where they were
                calls = adapter.wire.shape.stream_calls
                assert calls is not None
                assert _fragments(events, calls) == _fragments(before, calls) and len(_fragments(before, calls)) >= 2
                order = [delta["index"] for event in events for delta in forward._get_or_none(event.data, calls) or []]
                assert order != sorted(order) or mutant.id.endswith("@together"), mutant.id


def _fragments(events: list[Any], pointer: str) -> dict[int, list[Any]]:
    """Each call's fragments, by the index that ties them to it, in stream order."""
    out: dict[int, list[Any]] = {}
    for event in events:
        for delta in forward._get_or_none(event.data, pointer) or []:
            out.setdefault(delta["index"], []).append(delta)
    return out


def test_the_replay_delivers_a_split_stream_in_reads_of_that_size(tmp_path: Path) -> None:
    case = next(case for case in CASE_LIST if case.id == "normal")
    shape = CHAT.wire.shape  # type: ignore[union-attr]
    mutant = next(m for m in forward.mutants_for([case], "openai-chat", shape) if m.id.endswith("frame.split@7"))
    changed = forward.mutated_case(case, "openai-chat", mutant, tmp_path)
    replay = Replay([changed])
    path = "/s/normal/openai-chat/stream/v1/chat/completions"
    reply = replay.handle("POST", path, "", json.dumps({"model": "m", "stream": True, "messages": []}).encode())
    chunks = list(reply.chunks)
    recorded = case.providers["openai-chat"].turns[0].stream.read_bytes()  # type: ignore[union-attr]
    assert b"".join(chunks) == recorded and reply.streamed
    assert {len(chunk) for chunk in chunks[:-1]} == {7} and 0 < len(chunks[-1]) <= 7
