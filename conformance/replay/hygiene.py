"""Fixture hygiene: no secret or personal data in a committed fixture, and no fixture file that no case uses.

``redact`` / ``redact_file`` are what ``conformance redact`` and fixture-writing code run on every recording
before it is saved; ``scan_file`` is what ``conformance validate`` runs over every file under the cases folders. The
detectors, and the rules every one of them keeps, are ``conformance.replay.secrets``.

Files are read line by line, and a file over ``SCAN_LIMIT_BYTES`` is reported instead of read.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import re
import stat
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from conformance.engine.provenance import SIDECAR
from conformance.errors import InputError, Problem
from conformance.replay.secrets import KEY_BODY, KEY_END, REDACTED, Detector, KeyBlockDetector, Span, detectors
from conformance.report.snapshot import SNAPSHOT_FOLDER


@dataclass(frozen=True, slots=True)
class SecretHit:
    """One suspected secret: where it is and what it looks like (never the value itself)."""

    path: Path
    line: int
    kind: str

SCAN_LIMIT_BYTES = 5 * 1024 * 1024
"""A fixture is a few KB; a bigger file is reported as too large rather than read (it would cost its size in
memory)."""


class TooLargeToScan(Exception):
    """The file is over ``SCAN_LIMIT_BYTES``; it was not read."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def line_kinds(line: str) -> list[str]:
    """The kinds of secret in one line, each once, in detector order."""
    kinds: list[str] = []
    for detector in _candidates(line):
        if detector.kind not in kinds and next(detector.spans(line), None) is not None:
            kinds.append(detector.kind)
    return kinds


def _candidates(line: str) -> Iterable[Detector]:
    """The detectors whose secrets may be in ``line``, by their hints.

    One search for any hint first: about one line in a thousand of the bundled cases has one, so most lines cost
    that search and the few detectors without hints.
    """
    lowered = line.lower()
    if _hint_pattern().search(lowered) is None:
        return _detectors_without_hints()
    return [detector for detector in detectors() if detector.may_occur_in(lowered)]


@functools.cache
def _hint_pattern() -> re.Pattern[str]:
    hints = {hint for detector in detectors() for hint in detector.hints}
    return re.compile("|".join(re.escape(hint) for hint in sorted(hints)))


@functools.cache
def _detectors_without_hints() -> tuple[Detector, ...]:
    return tuple(detector for detector in detectors() if not detector.hints)


def scan_text(path: Path, text: str) -> list[SecretHit]:
    """Findings in ``text``, numbered as the lines of the file ``path`` would be: each line, then what its JSON
    values say once decoded and a stream's pieces joined (``conformance.replay.joined_scan``) where no line said it."""
    findings = [SecretHit(path, number, kind) for number, line in enumerate(_lines(text), start=1)
                for kind in line_kinds(_without_newline(line)[0])]
    return findings + _joined_findings(path, text, findings)


def _joined_findings(path: Path, text: str, line_findings: list[SecretHit]) -> list[SecretHit]:
    from conformance.replay.joined_scan import joined_kinds  # noqa: PLC0415 - only files that hold JSON need it

    if "{" not in text:
        return []
    seen = {finding.kind for finding in line_findings}
    return [SecretHit(path, number, f"{kind}, once decoded or joined") for number, kind in joined_kinds(text)
            if kind not in seen]


def scan_file(path: Path, limit: int = SCAN_LIMIT_BYTES) -> list[SecretHit]:
    """Findings in ``path``, read one line at a time; raises TooLargeToScan (nothing read) and OSError."""
    with path.open("rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        if size > limit:
            raise TooLargeToScan(size)
        findings: list[SecretHit] = []
        lines = []
        for number, raw in enumerate(_bounded_lines(stream, limit), start=1):
            text = _without_newline(raw.decode("utf-8", errors="replace"))[0]
            lines.append(text)
            findings.extend(SecretHit(path, number, kind) for kind in line_kinds(text))
        return findings + _joined_findings(path, "\n".join(lines), findings)


def _bounded_lines(stream: BinaryIO, limit: int) -> Iterator[bytes]:
    """The stream's lines; raises TooLargeToScan once more than ``limit`` bytes came (the file grew as we read)."""
    remaining = limit
    while raw := stream.readline(remaining + 1):
        remaining -= len(raw)
        if remaining < 0:
            raise TooLargeToScan(limit - remaining)
        yield raw


def redact(text: str) -> str:
    """``text`` with every suspected secret replaced by ``<redacted>``; header and field names are kept."""
    redactor = _Redactor()
    return "".join(redactor.line(line) for line in _lines(text)) + redactor.finish()


def redact_file(path: Path) -> bool:
    """Redact ``path`` in place; True when something was replaced (a clean file is left untouched).

    A symbolic link is followed on purpose: the secret is in the target, so the target is rewritten and the link
    kept (replacing the link by a redacted copy would leave the secret in the target). A file with other hard links
    is refused for the same reason. The text is streamed line by line to a temporary file beside the target, which
    gets the target's permission bits (and owner, where allowed) and replaces it with ``os.replace``: a reader sees
    the old file or the new one. Raises InputError for a file that is missing, unreadable, not a regular file or not
    UTF-8; the file is then unchanged.
    """
    target, status = _redaction_target(path)
    try:
        handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:
        raise _cannot_write(path, error) from None
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as output:
            changed = _redact_stream(path, target, output)
            output.flush()
            os.fsync(output.fileno())  # the new text is on disk before it replaces the old
        if changed:
            _copy_ownership(status, temporary)
            os.replace(temporary, target)
        return changed
    except OSError as error:
        raise _cannot_write(path, error) from None
    finally:
        temporary.unlink(missing_ok=True)


def _cannot_write(path: Path, error: OSError) -> InputError:
    return InputError([Problem(str(path), None, f"cannot rewrite it: {error}",
                               "make its folder writable (the new text is written beside it first)")])


def _redaction_target(path: Path) -> tuple[Path, os.stat_result]:
    try:
        target = path.resolve(strict=True)
        status = target.stat()
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop (Python 3.11)
        raise InputError([Problem(str(path), None, f"cannot read it: {error}", "check the path")]) from None
    if not stat.S_ISREG(status.st_mode):
        raise InputError([Problem(str(path), None, "not a regular file", "name a recorded fixture file")])
    if status.st_nlink > 1:
        raise InputError([Problem(
            str(path), None, f"has {status.st_nlink} hard links; replacing it would leave the secret under the others",
            "redact a copy (cp FILE COPY && mv COPY FILE), then run redact again")])
    return target, status


def _redact_stream(path: Path, target: Path, output: BinaryIO) -> bool:
    try:
        stream = target.open("rb")
    except OSError as error:
        raise InputError([Problem(str(path), None, f"cannot read it: {error}", "check the path")]) from None
    redactor = _Redactor()
    changed = False
    with stream:
        for number, raw in enumerate(stream, start=1):
            line = _decoded(path, number, raw)
            cleaned = redactor.line(line)
            changed = changed or cleaned != line
            output.write(cleaned.encode("utf-8"))
    output.write(redactor.finish().encode("utf-8"))
    return changed


def _decoded(path: Path, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        problem = Problem(str(path), number, f"not UTF-8 (byte 0x{raw[error.start]:02x})",
                          "save it as UTF-8, then run redact again")
        raise InputError([problem]) from None


def _copy_ownership(status: os.stat_result, temporary: Path) -> None:
    """Give the new file the old one's permission bits and, where we may, its owner (mkstemp makes 0600, ours)."""
    os.chmod(temporary, stat.S_IMODE(status.st_mode))
    new = temporary.stat()
    if (new.st_uid, new.st_gid) != (status.st_uid, status.st_gid) and hasattr(os, "chown"):
        # Only root may give a file away; otherwise it stays ours, as an editor would leave it.
        with contextlib.suppress(PermissionError):
            os.chown(temporary, status.st_uid, status.st_gid)


class _Redactor:
    """Redacts line after line, following a private key written over several lines to its END marker."""

    def __init__(self) -> None:
        self._in_key = False
        self._held_newline = ""  # the BEGIN line's newline: dropped if the END marker comes, else given back

    def line(self, line: str) -> str:
        body, newline = _without_newline(line)
        if self._in_key:
            closing = KEY_END.search(body)
            if closing:
                self._in_key, self._held_newline = False, ""
                return self._redacted(body[closing.end():], newline)
            if KEY_BODY.fullmatch(body.strip()):
                return ""
            self._in_key = False
            return self.finish() + self._redacted(body, newline)
        return self._redacted(body, newline)

    def finish(self) -> str:
        held, self._held_newline = self._held_newline, ""
        return held

    def _redacted(self, body: str, newline: str) -> str:
        spans: list[Span] = []
        key_continues = False
        for detector in _candidates(body):
            spans.extend(detector.spans(body))
            key_continues = key_continues or (isinstance(detector, KeyBlockDetector) and detector.continues_past(body))
        if key_continues:  # the key's body is on the next lines: hold the newline until we know where it ends
            self._in_key, self._held_newline = True, newline
            return _replaced(body, spans)
        return _replaced(body, spans) + newline


def _replaced(line: str, spans: Iterable[Span]) -> str:
    """``line`` with each span replaced by ``<redacted>``; overlapping or touching spans become one."""
    pieces: list[str] = []
    position = 0
    for start, end in sorted(spans):
        if pieces and start <= position:  # e.g. a key inside a header value, both found
            position = max(position, end)
            continue
        pieces += [line[position:start], REDACTED]
        position = end
    pieces.append(line[position:])
    return "".join(pieces)


def _folder_problem(folder: Path, shown: Callable[[Path], str], known: Collection[str]) -> Problem:
    name = folder.name
    if name in known:
        return Problem(shown(folder), None, f"fixtures for {name} are here, but the case does not list {name} under "
                       "providers:", f"add '{name}: {{}}' under providers: in {folder.parent.name}/case.yaml")
    near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    hint = f"did you mean '{near[0]}'? " if near else ""
    return Problem(shown(folder), None, f"folder {name}/ names no known provider, so none of its fixtures runs",
                   f"{hint}rename it to a provider id ({', '.join(sorted(known))}), or load your adapter with "
                   "--adapter")


def _lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (as files are read), each with its newline."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _without_newline(line: str) -> tuple[str, str]:
    for newline in ("\r\n", "\n"):
        if line.endswith(newline):
            return line[: -len(newline)], newline
    return line, ""


def unused_fixtures(root: Path, used: set[Path]) -> list[Path]:
    """Files under the case folders that no case names (the world file, case files, the recordings' provenance
    sidecars and snapshots excepted)."""
    unused = []
    snapshots = root / SNAPSHOT_FOLDER
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name in ("case.yaml", "world.yaml", SIDECAR) or path.name.startswith("."):
            continue
        if snapshots in path.parents:
            continue
        if path.resolve() not in used:
            unused.append(path)
    return unused


def hygiene_problems(root: Path, used: set[Path], shown: Callable[[Path], str],
                     known: Collection[str] = ()) -> list[Problem]:
    """Unused fixtures and suspected secrets under a case folder, as problems for ``validate``. Unused files in a
    folder beside a case file are one problem for the folder: a provider id misspelt there (``openai_chat/``)
    would otherwise drop that vendor out of the run without a word."""
    problems: list[Problem] = []
    folders: set[Path] = set()
    live = {parent for path in used for parent in path.parents}
    for path in unused_fixtures(root, used):
        folder = next((parent for parent in path.parents if (parent.parent / "case.yaml").is_file()), None)
        if folder is None or folder.resolve() in live:
            problems.append(Problem(shown(path), None, "fixture file is not used by any case",
                                    "delete it, or name it from a case's providers.<id>.turns"))
        elif folder not in folders:
            folders.add(folder)
            problems.append(_folder_problem(folder, shown, known))
    for path in sorted(root.rglob("*")):
        if path.is_file():
            problems.extend(_scan_problems(path, shown))
    return problems


def _scan_problems(path: Path, shown: Callable[[Path], str]) -> list[Problem]:
    """What the secret scan says about one file; a file it cannot read is a problem, never silently passed."""
    try:
        findings = scan_file(path)
    except TooLargeToScan as error:
        return [Problem(shown(path), None,
                        f"too large to scan for secrets ({error.size:,} bytes, limit {SCAN_LIMIT_BYTES:,})",
                        "delete it: a recorded fixture is a few KB")]
    except OSError as error:
        return [Problem(shown(path), None, f"cannot be read to scan for secrets ({error.strerror or error})",
                        "make it readable, or delete it")]
    return [Problem(shown(finding.path), finding.line, f"looks like a secret or personal data ({finding.kind})",
                    "remove it, or run `conformance redact FILE` to replace it with <redacted>")
            for finding in findings]
