"""Case files name no fixture that follows <provider>/turn<N>.<ext>: the loader finds them, and says what is wrong
when a turn is missing, misnamed or out of sequence."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.engine.cases import load_cases
from conformance.errors import InputError
from tests.helpers import CASES


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    shutil.copytree(CASES, folder)
    return folder


def _problems(cases: Path) -> str:
    with pytest.raises(InputError) as caught:
        load_cases([cases])
    return str(caught.value)


def test_conventional_turns_load_as_bodies_and_streams_in_order() -> None:
    normal = next(case for case in load_cases([CASES]) if case.id == "normal")
    turns = normal.providers["bedrock-converse"].turns
    assert [(turn.source, turn.stream_source) for turn in turns] == [
        (f"{CASES.name}/normal/bedrock-converse/turn1.json", f"{CASES.name}/normal/bedrock-converse/turn1.jsonl"),
        (f"{CASES.name}/normal/bedrock-converse/turn2.json", f"{CASES.name}/normal/bedrock-converse/turn2.jsonl"),
    ]


def test_a_misnamed_body_is_named_with_the_files_that_exist(cases: Path) -> None:
    (cases / "normal/openai-chat/turn2.json").rename(cases / "normal/openai-chat/turn2.jsn")
    message = _problems(cases)
    assert "normal/case.yaml:" in message
    assert ("fixture file 'openai-chat/turn2.json' not found (existing: turn1.json, turn1.sse, turn2.jsn, turn2.sse)"
            in message)


def test_a_gap_in_the_turn_numbers_is_refused(cases: Path) -> None:
    folder = cases / "normal/gemini"
    for name in ("turn2.json", "turn2.sse"):
        (folder / name).rename(folder / name.replace("2", "3"))
    assert "gemini/turn2.json (or .sse) is missing; recorded: turn1, turn3" in _problems(cases)


def test_a_provider_without_recorded_turns_is_refused(cases: Path) -> None:
    shutil.rmtree(cases / "normal/anthropic-messages")
    assert "no recorded turns for anthropic-messages: expected anthropic-messages/turn1.json" in _problems(cases)


def test_two_stream_fixtures_for_one_turn_are_refused(cases: Path) -> None:
    shutil.copy(cases / "normal/openai-chat/turn1.sse", cases / "normal/openai-chat/turn1.jsonl")
    assert "turn 1 has two stream fixtures" in _problems(cases)


def test_explicit_turns_still_win_over_the_convention(cases: Path) -> None:
    path = cases / "normal/case.yaml"
    path.write_text(path.read_text().replace("  gemini: {}", "  gemini:\n    turns:\n      - body: gemini/turn1.json\n"
                                             "      - body: gemini/turn2.json", 1))
    normal = next(case for case in load_cases([cases]) if case.id == "normal")
    assert [turn.stream for turn in normal.providers["gemini"].turns] == [None, None]
