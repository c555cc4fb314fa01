"""The byte-level SSE reader: line endings, multi-line data, comments, fields, a last event without its blank line."""

from __future__ import annotations

import pytest

from conformance.kit.sse import ServerSentEvent, iter_events, iter_lines


def events(data: bytes, *, chunk: int | None = None) -> list[ServerSentEvent]:
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] if chunk else [data]
    return list(iter_events(pieces))


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
@pytest.mark.parametrize("chunk", [None, 1, 2, 7])
def test_every_line_ending_and_any_chunking_give_the_same_events(newline: bytes, chunk: int | None) -> None:
    data = newline.join([b"event: a", b"data: {\"x\":1}", b"", b"data: two", b"", b""])
    assert events(data, chunk=chunk) == [ServerSentEvent("a", '{"x":1}'), ServerSentEvent(None, "two")]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert events(b"data: first\ndata: second\n\n") == [ServerSentEvent(None, "first\nsecond")]


def test_comments_and_pings_are_skipped_and_fields_kept() -> None:
    data = b": keep-alive\n\nid: 7\nretry: 1500\nevent: ping\ndata: {}\n\n"
    assert events(data) == [ServerSentEvent("ping", "{}", "7", 1500)]


def test_data_without_a_space_after_the_colon() -> None:
    assert events(b"data:{\"a\":1}\n\n") == [ServerSentEvent(None, '{"a":1}')]


def test_a_last_event_without_its_blank_line_is_still_dispatched() -> None:
    assert events(b"data: one\n\ndata: two") == [ServerSentEvent(None, "one"), ServerSentEvent(None, "two")]


def test_an_event_with_no_data_is_not_dispatched() -> None:
    assert events(b"event: lonely\n\n") == []


def test_u2028_inside_json_does_not_split_a_line() -> None:
    data = '{"text":"a\u2028b\u2029c\x85d"}'.encode()
    assert list(iter_lines([data + b"\n"])) == [data]
    assert events(b"data: " + data + b"\n\n")[0].data == data.decode()


def test_a_cr_at_a_chunk_boundary_followed_by_lf_is_one_line_end() -> None:
    assert list(iter_lines([b"one\r", b"\ntwo\r", b"\r\nthree"])) == [b"one", b"two", b"", b"three"]


def test_memory_holds_one_line_not_the_file() -> None:
    def many() -> object:
        for index in range(100_000):
            yield f"data: {index}\n\n".encode()

    count, last = 0, None
    for event in iter_events(many()):  # type: ignore[arg-type]
        count, last = count + 1, event
    assert count == 100_000 and last is not None and last.data == "99999"
