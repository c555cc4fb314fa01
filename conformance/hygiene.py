"""Fixture hygiene: no secret or personal data in a committed fixture, and no fixture file that no case uses.

``redact`` is what fixture-writing code runs on every recording before it is saved; ``scan`` is what
``conformance validate`` runs over every case and fixture.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from conformance.errors import Problem

# (name, pattern). Key shapes of the five vendors, credential headers, bearer tokens, e-mail addresses.
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Anthropic API key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}")),
    ("OpenAI API key", re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("Google API key", re.compile(r"AIza[0-9A-Za-z_\-]{35}")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("AWS secret access key", re.compile(r"(?i)aws_secret_access_key[\"'\s:=]+[A-Za-z0-9/+=]{40}")),
    ("credential header", re.compile(
        r"(?i)(?P<name>[\"']?(?:authorization|x-api-key|x-goog-api-key|api-key|x-amz-security-token)[\"']?\s*[:=]\s*"
        r"[\"']?)(?P<value>(?:bearer\s+)?(?!<redacted>)[^\s\"',}]{8,})")),
    ("bearer token", re.compile(r"(?i)\bbearer\s+(?!<redacted>)[A-Za-z0-9._~+/\-]{16,}=*")),
    ("e-mail address", re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b")),
)

REDACTED = "<redacted>"


@dataclass(frozen=True, slots=True)
class Finding:
    """One suspected secret: where it is and what it looks like (never the value itself)."""

    path: Path
    line: int
    kind: str


def redact(text: str) -> str:
    """``text`` with every suspected secret replaced; credential headers keep their name."""
    for kind, pattern in SECRET_PATTERNS:
        if kind == "credential header":
            text = pattern.sub(lambda match: match.group("name") + REDACTED, text)
        elif kind == "bearer token":
            text = pattern.sub(f"Bearer {REDACTED}", text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def scan_text(path: Path, text: str) -> list[Finding]:
    findings = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in SECRET_PATTERNS:
            if pattern.search(line):
                findings.append(Finding(path, number, kind))
    return findings


def scan_files(paths: Iterable[Path]) -> list[Finding]:
    findings: list[Finding] = []
    for path in paths:
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        findings.extend(scan_text(path, text))
    return findings


def unused_fixtures(root: Path, used: set[Path]) -> list[Path]:
    """Files under the case folders that no case names (the world file and case files excepted)."""
    unused = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name in ("case.yaml", "world.yaml") or path.name.startswith("."):
            continue
        if path.resolve() not in used:
            unused.append(path)
    return unused


def hygiene_problems(root: Path, used: set[Path], shown: Callable[[Path], str]) -> list[Problem]:
    problems = [
        Problem(shown(path), None, "fixture file is not used by any case",
                "delete it, or name it from a case's providers.<id>.turns")
        for path in unused_fixtures(root, used)
    ]
    files = [path for path in sorted(root.rglob("*")) if path.is_file()]
    problems.extend(
        Problem(shown(finding.path), finding.line, f"looks like a secret or personal data ({finding.kind})",
                "remove it, or run `conformance redact FILE` to replace it with <redacted>")
        for finding in scan_files(files)
    )
    return problems
