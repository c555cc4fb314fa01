"""Recorded turns: the fixture files a case names, checked (inside the cases folder, present, within the size
limit, UTF-8, JSON) and read into the status, headers and body the loop replays."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.engine.files import read_regular_file
from conformance.engine.rows import Lane, Mode
from conformance.errors import InputError
from conformance.kit.http import lower_headers
from conformance.kit.jsontext import parse_json


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedTurn:
    """One recorded vendor response: status, headers and the body (JSON value or text)."""

    status: int
    headers: Mapping[str, str]
    body: Any
    source: str
    """Where the body came from: a fixture path, ``inline``, or "" when the turn was recorded as a stream only."""
    has_body: bool = True
    """False when only a stream was recorded for this turn."""
    stream: Path | None = None
    """The raw stream transcript, read lazily at replay so a large one is never held whole."""
    stream_source: str = ""
    """The stream fixture path as shown to users."""
    body_path: Path | None = None
    """The body fixture file, when the body came from one."""
    error_path: Path | None = None
    """The ``turnN.error.json`` file an HTTP error turn came from (status, headers and body in one file)."""
    stream_reads: int | None = None
    """How the stream's bytes reach the reader: None as recorded (the adapter reads 64 KiB at a time, the replay
    sends one HTTP chunk per event), else in reads of this many bytes, 0 for one read of the whole stream (the
    framing mutants, docs/forward.md)."""

    def replayable(self, mode: Mode) -> bool:
        """Whether this turn can be replayed in ``mode``; an HTTP error fails before any body or stream."""
        if self.status >= 400:
            return True
        return self.stream is not None if mode == "stream" else self.has_body


def shown_path(path: Path) -> str:
    """A path as the user should see it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def load_turn(turn: Mapping[str, Any], case_path: Path, root: Path, pointer: str, problem: Any,
               max_file_bytes: int) -> RecordedTurn | None:
    """One recorded turn; ``root`` is the resolved cases folder."""
    if "error" in turn:
        return _error_turn(turn["error"], case_path, root, f"{pointer}/error", problem, max_file_bytes)
    sources = sum(key in turn for key in ("body", "inline", "text"))
    if sources > 1 or (sources == 0 and "stream" not in turn):
        # Checked here rather than in the schema: schema branches cost a large share of each case's load.
        problem(pointer, "a turn holds exactly one of body, inline or text, and/or a stream",
                "keep one body source (plus `stream:` if the turn was also recorded as a stream)")
        return None
    status = turn.get("status", 200)
    headers = lower_headers(turn.get("headers"))
    stream: Path | None = None
    if "stream" in turn:
        stream = _fixture_path(turn["stream"], case_path, root, f"{pointer}/stream", problem, max_file_bytes)
        if stream is None:
            return None
    extra: dict[str, Any] = {"stream": stream, "stream_source": _report_path(stream, root) if stream else ""}
    if "inline" in turn:
        return RecordedTurn(status=status, headers=headers, body=turn["inline"], source="inline", **extra)
    if "text" in turn:
        return RecordedTurn(status=status, headers=headers, body=turn["text"], source="inline", **extra)
    if "body" not in turn:
        return RecordedTurn(status=status, headers=headers, body=None, source="", has_body=False, **extra)
    target = _fixture_path(turn["body"], case_path, root, f"{pointer}/body", problem, max_file_bytes)
    if target is None:
        return None
    relative = turn["body"]
    try:
        text = read_regular_file(target, relative, max_file_bytes).decode("utf-8")
    except InputError as error:
        problem(f"{pointer}/body", f"fixture '{relative}' {error.problems[0].message}", error.problems[0].fix)
        return None
    except UnicodeDecodeError:
        problem(f"{pointer}/body", f"fixture '{relative}' is not UTF-8", "save it as UTF-8")
        return None
    try:
        body = parse_json(text)
    except ValueError as error:
        line = getattr(error, "lineno", None)
        where = f"line {line}: " if line else ""
        problem(f"{pointer}/body", f"fixture '{relative}' is not valid JSON ({where}{error})",
                "record the body exactly as received, or use `text:` for a non-JSON body")
        return None
    return RecordedTurn(status=status, headers=headers, body=body, source=_report_path(target, root),
                        body_path=target, **extra)


def _error_turn(relative: str, case_path: Path, root: Path, pointer: str, problem: Any,
                max_file_bytes: int) -> RecordedTurn | None:
    """An HTTP error turn recorded as ``turnN.error.json``: ``{"status": 4xx/5xx, "headers": {...}, "body": ...}``
    (``conformance record`` writes it; the body is the vendor's JSON, or its text as a string)."""
    target = _fixture_path(relative, case_path, root, pointer, problem, max_file_bytes)
    if target is None:
        return None
    try:
        document = parse_json(read_regular_file(target, relative, max_file_bytes).decode("utf-8"))
    except (InputError, UnicodeDecodeError, ValueError) as error:
        problem(pointer, f"fixture '{relative}' is not a UTF-8 JSON file ({error})",
                'write {"status": 429, "headers": {...}, "body": ...}')
        return None
    status = document.get("status") if isinstance(document, dict) else None
    headers = document.get("headers", {}) if isinstance(document, dict) else None
    if not isinstance(status, int) or not 400 <= status <= 599 or not isinstance(headers, dict) \
            or "body" not in document:
        problem(pointer, f"fixture '{relative}' is not an error turn: expected an object with status (400-599), "
                         "headers (an object) and body", 'write {"status": 429, "headers": {...}, "body": ...}')
        return None
    return RecordedTurn(status=status, headers=lower_headers(headers), body=document["body"],
                        source=_report_path(target, root), error_path=target)


def _fixture_path(relative: str, case_path: Path, root: Path, pointer: str, problem: Any,
                  max_file_bytes: int) -> Path | None:
    """The fixture file ``relative`` names, checked to exist, stay inside the cases folder and fit the limit."""
    if "\0" in relative:
        problem(pointer, f"fixture path {relative!r} holds a NUL byte", "fix the path")
        return None
    target = case_path.parent / relative
    resolved = _resolved(case_path.parent, relative)  # follows symlinks: a link out of the folder is caught here
    if os.path.isabs(relative) or not resolved.is_relative_to(root):
        problem(pointer, f"fixture path '{relative}' leaves the cases folder",
                "keep fixtures inside the cases folder, next to the case file")
        return None
    try:
        info = os.stat(resolved)
    except OSError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        problem(pointer, f"fixture '{relative}' is not a regular file (a folder, FIFO or device)",
                "point it at the recorded file itself")
        return None
    if info is None:
        folder = target.parent
        existing = sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
        listing = ", ".join(existing) if existing else f"no files in {shown_path(folder)}"
        problem(pointer, f"fixture file '{relative}' not found (existing: {listing})",
                "fix the path or add the fixture")
        return None
    size = info.st_size
    if size > max_file_bytes:
        problem(pointer, f"fixture '{relative}' is {size} bytes, over the {max_file_bytes}-byte limit",
                "trim the fixture, or raise the limit with --max-file-bytes")
        return None
    return resolved


_REAL_FOLDERS: dict[str, str] = {}


def forget_folders() -> None:
    """Drop the resolved case folders ``_resolved`` keeps; ``load_cases`` calls it first, so a folder replaced by a
    link since the last load is resolved again."""
    _REAL_FOLDERS.clear()


def _resolved(folder: Path, relative: str) -> Path:
    """``(folder / relative).resolve()``, at a fraction of its cost for the usual ``provider/turn1.json``: the case
    folder is resolved once, then each part of ``relative`` is checked not to be a link (a link, ``..``, ``.`` or
    an absolute path takes the full resolve)."""
    parts = relative.split("/")
    if os.sep != "/" or os.path.isabs(relative) or any(part in ("", ".", "..") for part in parts):
        return (folder / relative).resolve()
    key = str(folder)
    current = _REAL_FOLDERS.get(key)
    if current is None:
        current = _REAL_FOLDERS[key] = os.path.realpath(key)
    for part in parts:
        current = os.path.join(current, part)
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return (folder / relative).resolve()
        except OSError:  # missing: reported by the caller, from the path as the case names it
            return (folder / relative).resolve()
    return Path(current)


def _report_path(path: Path, root: Path) -> str:
    """A fixture path as reports show it: from the cases folder's name down, the same from any working directory.

    Both paths are already resolved."""
    return path.relative_to(root.parent).as_posix()


# Fixture files named by convention: <provider>/turn<N>.json (a body) and turn<N>.sse or .jsonl (a stream).
CONVENTION = re.compile(r"turn([1-9][0-9]{0,3})\.(json|sse|jsonl|error\.json)")


def conventional_turns(case_path: Path, provider: str, pointer: str, problem: Any,
                       case_id: str = "ID") -> list[dict[str, Any]] | None:
    """The turns of ``provider`` found by convention beside the case file, as explicit turn entries.

    Turn numbers must run from 1 without a gap; a turn has a body, a stream or both."""
    folder = case_path.parent / provider
    found: dict[int, dict[str, Any]] = {}
    others: list[str] = []
    names = sorted(entry.name for entry in folder.iterdir()) if folder.is_dir() else []
    for name in names:
        match = CONVENTION.fullmatch(name)
        if match is None:
            others.append(name)
            continue
        turn = found.setdefault(int(match.group(1)), {})
        key = {"json": "body", "error.json": "error"}.get(match.group(2), "stream")
        if key in turn:
            problem(pointer, f"turn {match.group(1)} has two stream fixtures ({turn[key]} and {provider}/{name})",
                    "keep one of turnN.sse and turnN.jsonl")
            return None
        turn[key] = f"{provider}/{name}"
    if not found:
        listing = ", ".join(others) if others else f"no files in {provider}/"
        problem(pointer, f"no recorded turns for {provider}: expected {provider}/turn1.json or turn1.sse "
                         f"(found: {listing})",
                f"record them: conformance record --case {case_id} --provider {provider} --upstream {provider}=URL "
                "(it starts from an empty provider), or list them under turns:")
        return None
    numbers = sorted(found)
    listing = ", ".join(names)
    errors = [number for number in numbers if "error" in found[number]]
    both = [number for number in errors if len(found[number]) > 1]
    if both:
        problem(pointer, f"turn {both[0]} has an error file and a body or stream ({listing})",
                "an HTTP error turn is its turnN.error.json alone: remove the other file")
        return None
    for key in ("body", "stream"):
        holders = [number for number in numbers if key in found[number]]
        lacking = [number for number in numbers if key not in found[number] and number not in errors]
        if holders and lacking:
            extension = Path(found[holders[0]][key]).suffix
            # Some turns have one and some do not: a file was deleted or misnamed, not a stream-only recording.
            problem(pointer, f"fixture file '{provider}/turn{lacking[0]}{extension}' not found (existing: {listing})",
                    "fix the file name, or list the turns under turns:")
            return None
    if numbers != list(range(1, len(numbers) + 1)):
        missing = min(set(range(1, numbers[-1] + 1)) - set(numbers))
        problem(pointer, f"{provider}/turn{missing}.json (or .sse) is missing; recorded: "
                         f"{', '.join(f'turn{number}' for number in numbers)}",
                "number the turns from 1 without a gap, or list them under turns:")
        return None
    return [found[number] for number in numbers]


def fixture_paths(cases: Iterable[Any], ran: Iterable[tuple[str, str]]) -> dict[str, Path]:
    """The fixture files the (case id, lane) pairs ran on, by their path as reports show it (from the cases
    folder's name down)."""
    ran = {(case, Lane.parse(lane).fixtures) for case, lane in ran}
    files: dict[str, Path] = {}
    for case in cases:
        for provider, fixtures in case.providers.items():
            if (case.id, provider) not in ran:
                continue
            for turn in fixtures.turns:
                # A turn's file paths as the loader already shows them in reports (``RecordedTurn.source``).
                recorded = turn.body_path or turn.error_path
                for path, shown in ((recorded, turn.source), (turn.stream, turn.stream_source)):
                    if path is not None:
                        files[shown] = path
    return files


def fixture_files(cases: Sequence[Any], ran: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The fixture files the (case id, lane) pairs ran on (``fixture_paths``) and the SHA-256 of each one's bytes."""
    return {shown: hashlib.sha256(path.read_bytes()).hexdigest() for shown, path in fixture_paths(cases, ran).items()}


def fixture_digest(files: dict[str, str]) -> dict[str, Any]:
    """The fixture set as content: how many files and one SHA-256 over each path and its bytes' hash, sorted by
    path. Two reports with the same hash ran on the same recordings, from whatever folder."""
    digest = hashlib.sha256()
    for shown in sorted(files):
        digest.update(shown.encode("utf-8") + b"\0" + bytes.fromhex(files[shown]))
    return {"files": len(files), "sha256": digest.hexdigest()}
