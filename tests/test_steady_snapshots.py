"""Snapshot files read once per session that writes none (``conformance.report.syrupy_store.steady_files``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.report import syrupy_store


@pytest.fixture
def steady() -> Iterator[None]:
    syrupy_store.steady_files(True)
    try:
        yield
    finally:
        syrupy_store.steady_files(False)


def _write(path: Path, text: str, mtime: int) -> None:
    path.write_text(json.dumps({"body": {"kind": text}}), encoding="utf-8")
    os.utime(path, ns=(mtime, mtime))


def test_a_steady_session_reads_a_file_once_and_a_write_reads_it_as_it_is_now(tmp_path: Path, steady: None) -> None:
    path = tmp_path / "gemini.json"
    _write(path, "text", 1_000_000_000)
    assert syrupy_store._stored_text(str(path), "body") == '{"kind":"text"}'
    _write(path, "refusal-longer", 2_000_000_000)  # another size and time: a stat would see it
    assert syrupy_store._stored_text(str(path), "body") == '{"kind":"text"}'
    assert syrupy_store._load(path) == {"body": {"kind": "refusal-longer"}}  # what a write merges with


def test_files_are_looked_at_again_once_the_steady_session_ends(tmp_path: Path, steady: None) -> None:
    path = tmp_path / "gemini.json"
    _write(path, "text", 1_000_000_000)
    assert syrupy_store._modes(str(path)) == ("body",)
    syrupy_store.steady_files(False)
    path.write_text(json.dumps({"body": {"kind": "text"}, "stream": "same as body"}), encoding="utf-8")
    assert syrupy_store._modes(str(path)) == ("body", "stream")
    assert syrupy_store._stored_text(str(path), "stream") == '{"kind":"text"}'


def test_a_new_steady_session_forgets_what_the_last_one_read(tmp_path: Path, steady: None) -> None:
    path = tmp_path / "gemini.json"
    _write(path, "text", 1_000_000_000)
    assert syrupy_store._stored_text(str(path), "body") == '{"kind":"text"}'
    _write(path, "tex2", 1_000_000_000)  # same size and time: only forgetting reads it again
    syrupy_store.steady_files(True)
    assert syrupy_store._stored_text(str(path), "body") == '{"kind":"tex2"}'
