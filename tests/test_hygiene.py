"""Secret scan and redaction: every shape the scan knows is found with its line, and redaction removes exactly it.

Every secret here is synthetic and assembled from pieces, so no whole key-shaped value sits in this file.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from conformance.errors import InputError
from conformance.replay.hygiene import SCAN_LIMIT_BYTES, hygiene_problems, redact, redact_file, scan_file, scan_text
from tests.helpers import cli

BUNDLED_CASES = Path(__file__).resolve().parent.parent / "cases"


def fill(length: int, alphabet: str = "FAKE0fake1") -> str:
    """``length`` characters of obviously synthetic key material."""
    return (alphabet * (length // len(alphabet) + 1))[:length]


def base64url(document: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")


OPENAI_KEY = "sk-" + "proj-" + fill(40)
ANTHROPIC_KEY = "sk-" + "ant-" + "api03-" + fill(40)
GOOGLE_KEY = "AI" + "za" + fill(35)
AWS_KEY_ID = "AS" + "IA" + fill(16, "FAKE0123")
AWS_SECRET = fill(40, "FAKE/fake+0")
AWS_SESSION_TOKEN = "IQoJb3JpZ2lu" + fill(300, "FAKE/fake+0")
GOOGLE_TOKEN = "ya" + "29." + fill(60, "FAKE-fake_0")
JWT = ".".join([base64url({"alg": "HS256", "typ": "JWT"}), base64url({"sub": "u-100"}), fill(43, "FAKE-fake_0")])
BASIC_CREDENTIALS = base64.b64encode(b"jane:" + fill(16).encode()).decode()
BEGIN = "-----" + "BEGIN"
END = "-----" + "END"

SECRETS = [
    (f'"api_key": "{OPENAI_KEY}"', "OpenAI API key"),
    (f"key={ANTHROPIC_KEY}", "Anthropic API key"),
    (f'"x": "{GOOGLE_KEY}"', "Google API key"),
    (AWS_KEY_ID, "AWS access key id"),
    (f"aws_secret_access_key = {AWS_SECRET}", "AWS secret access key"),
    (f'"Authorization": "Bearer {fill(22)}"', "credential header"),
    (f"x-api-key: {fill(16)}", "credential header"),
    (f"x-goog-api-key: {fill(16)}", "credential header"),
    (f"curl -H 'authorization: bearer {fill(22)}'", "bearer token"),
    ("contact: jane.doe@example.com", "e-mail address"),
    # Shapes the review found missing.
    (f'"SecretAccessKey": "{AWS_SECRET}"', "AWS secret access key"),
    (f'"SessionToken": "{AWS_SESSION_TOKEN}"', "AWS session token"),
    (f'"Authorization": "Basic {BASIC_CREDENTIALS}"', "credential header"),
    (f"authorization: Token {fill(40)}", "credential header"),
    (f'"access_token": "{GOOGLE_TOKEN}"', "Google OAuth access token"),
    (f"{BEGIN} RSA PRIVATE KEY-----", "private key"),
    (f'"key": "{BEGIN} PRIVATE KEY-----\\nMIIEv{fill(40)}\\n{END} PRIVATE KEY-----\\n"', "private key"),
    (f"{BEGIN} OPENSSH PRIVATE KEY-----", "private key"),
    (f'"apiKey": "{fill(32)}"', "API key field"),
    (f'"api_key": "{fill(32)}"', "API key field"),
    (f"GEMINI_API_KEY={fill(39)}", "API key field"),
    (f'"googleApiKey": "{fill(39)}"', "API key field"),
    (f'"Proxy-Authorization": "Basic {BASIC_CREDENTIALS}"', "credential header"),
    ("openai-organization: org-" + fill(24, "Fake0"), "OpenAI organization id"),
    ('"project": "proj_' + fill(24, "Fake0") + '"', "OpenAI project id"),
    # From detect-secrets: a quoted AWS secret under any aws…key name, a JWT, credentials in a URL.
    (f'aws_key = "{AWS_SECRET}"', "AWS secret access key"),
    (f'"id_token": "{JWT}"', "JSON Web Token"),
    (f'"proxy": "https://jane:{fill(12)}@proxy.example.com:8080"', "credentials in a URL"),
]


@pytest.mark.parametrize(("line", "kind"), SECRETS)
def test_scan_finds_each_secret_shape_on_its_line(line: str, kind: str) -> None:
    findings = scan_text(Path("f.json"), "{\n" + line + "\n}")
    assert kind in {finding.kind for finding in findings}
    assert {finding.line for finding in findings} == {2}


@pytest.mark.parametrize(("line", "kind"), SECRETS)
def test_redact_leaves_nothing_to_find(line: str, kind: str) -> None:
    cleaned = redact(line)
    assert "<redacted>" in cleaned
    assert scan_text(Path("f.json"), cleaned) == []


@pytest.mark.parametrize("clean", [
    '{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "27s"}',
    '"call_id": "call_Nq3vT7", "id": "toolu_01A09q90qw90lq917835lq9"',
    '"signature": "EqQBCkgIARABGAIiQL2Zm9uZm9ybWFuY2Utc2lnbmF0dXJlLWZpeHR1cmU="',
    '"request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"',
    '"message": "Rate limit reached for gpt-5.5 on tokens per min (TPM)"',
    # Ordinary ids that merely contain a key prefix: not at a token start.
    '"id": "task-' + fill(24) + '"',
    '"risk": "risk-' + fill(30) + '"',
    '"name": "desk-' + fill(20) + '", "team": "myorg-' + fill(24, "Fake0") + '"',
    "code: invalid_api_key",
    '"error": "invalid x-api-key", "detail": "The security token included in the request is invalid."',
    "Basic information about your order, with a token count of 1200000",
    '"organization": "org-123", "project": "proj_abc"',
    f"{BEGIN} PUBLIC KEY-----",
    # Opaque high-entropy wire values: why the entropy detectors stay off.
    '"thoughtSignature": "' + base64.b64encode(bytes(range(256))).decode() + '"',
    '"encrypted_content": "gAAAAAB' + base64.urlsafe_b64encode(bytes(range(255, 0, -1))).decode() + '"',
])
def test_ordinary_wire_values_are_not_flagged(clean: str) -> None:
    assert scan_text(Path("f.json"), clean) == []


def test_the_bundled_cases_have_no_findings() -> None:
    """The detectors are tuned on real recordings: signatures, encrypted reasoning and ids are not secrets."""
    findings = [finding for path in sorted(BUNDLED_CASES.rglob("*")) if path.is_file() for finding in scan_file(path)]
    assert findings == []


@pytest.mark.parametrize(("line", "expected"), [
    ('{"id": "task-' + fill(24) + '", "key": "' + OPENAI_KEY + '"}',
     '{"id": "task-' + fill(24) + '", "key": "<redacted>"}'),
    ("risk-" + fill(30) + " (" + OPENAI_KEY + ")", "risk-" + fill(30) + " (<redacted>)"),
    ('"email": "jane.doe@example.com", "ref": "ord.1001"', '"email": "<redacted>", "ref": "ord.1001"'),
    (f'"Authorization": "Basic {BASIC_CREDENTIALS}", "Accept": "*/*"',
     '"Authorization": "<redacted>", "Accept": "*/*"'),
    (f'{{"AccessKeyId": "{AWS_KEY_ID}", "SecretAccessKey": "{AWS_SECRET}", "SessionToken": "{AWS_SESSION_TOKEN}", '
     '"Expiration": "2026-01-01T00:00:00Z"}',
     '{"AccessKeyId": "<redacted>", "SecretAccessKey": "<redacted>", "SessionToken": "<redacted>", '
     '"Expiration": "2026-01-01T00:00:00Z"}'),
    (f'{{"key": "{BEGIN} PRIVATE KEY-----\\nMIIEv{fill(64)}\\n{END} PRIVATE KEY-----\\n", "kid": "k1"}}',
     '{"key": "<redacted>\\n", "kid": "k1"}'),
    (f"git clone https://jane:{fill(12)}@git.example.com/repo", "git clone https://<redacted>@git.example.com/repo"),
    ("openai-organization: org-" + fill(24, "Fake0") + "\r\n", "openai-organization: <redacted>\r\n"),
])
def test_redact_replaces_exactly_the_secret(line: str, expected: str) -> None:
    assert redact(line) == expected


def test_redact_removes_a_private_key_written_over_several_lines() -> None:
    body = "\n".join(fill(64, "FAKEfake0+/") for _ in range(3))
    text = f"before\n{BEGIN} RSA PRIVATE KEY-----\n{body}\n{END} RSA PRIVATE KEY-----\nafter\n"
    assert redact(text) == "before\n<redacted>\nafter\n"


def test_redact_stops_a_private_key_without_end_marker_at_the_first_line_that_is_not_key_material() -> None:
    text = f"{BEGIN} PRIVATE KEY-----\n{fill(64)}\nnext: the recording goes on\n"
    assert redact(text) == "<redacted>\nnext: the recording goes on\n"


def test_every_private_key_marker_of_detect_secrets_is_found() -> None:
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    for marker in PrivateKeyDetector.denylist:
        assert [finding.kind for finding in scan_text(Path("id_key"), f"-----{marker.pattern}-----")] == ["private key"]


def test_redact_keeps_the_header_name() -> None:
    assert redact(f'"x-api-key": "{fill(16)}"') == '"x-api-key": "<redacted>"'


def test_findings_never_show_the_secret(tmp_path: Path) -> None:
    (tmp_path / "turn1.json").write_text("\n".join(line for line, _ in SECRETS) + "\n")
    problems = hygiene_problems(tmp_path, {(tmp_path / "turn1.json").resolve()}, str)
    assert len(problems) >= len(SECRETS)
    shown = "\n".join(str(problem) for problem in problems)
    for secret in (OPENAI_KEY, ANTHROPIC_KEY, GOOGLE_KEY, AWS_SECRET, AWS_SESSION_TOKEN, GOOGLE_TOKEN, JWT, fill(16)):
        assert secret not in shown


# Worst cases for each pattern family: a backtracking regex spends minutes on one such line. Each is 1 MB.
PATHOLOGICAL_PIECES = [
    "a.", "a+", "a@", "a@a.", "@a.", "sk-", "task-", "ya29.", "AIza", "org-", "eyJ", "eyJ.", "eyJa.", "://a:",
    "authorization:", "authorization: x ", "bearer ", "aws_key ", "SecretAccessKey=", "x-api-key ",
    "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY----", "-----END AAAA", "'", '"',
]


def test_a_file_over_the_size_cap_is_reported_without_being_read(tmp_path: Path) -> None:
    big = tmp_path / "turn1.json"
    big.write_text(f'{{"key": "{OPENAI_KEY}"}}\n')
    os.truncate(big, SCAN_LIMIT_BYTES + 1)  # sparse: costs no disk
    problems = hygiene_problems(tmp_path, {big.resolve()}, str)
    assert [(problem.line, problem.message.split(" (")[0]) for problem in problems] == [
        (None, "too large to scan for secrets")]


def test_an_unreadable_file_is_reported_not_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tmp_path / "turn1.json"
    locked.write_text("{}\n")
    opened = Path.open

    def refuse(path: Path, *arguments: object, **options: object) -> object:
        if path.name == "turn1.json":
            raise PermissionError(13, "Permission denied")
        return opened(path, *arguments, **options)  # type: ignore[call-overload]

    monkeypatch.setattr(Path, "open", refuse)
    problems = hygiene_problems(tmp_path, {locked.resolve()}, str)
    assert [problem.message for problem in problems] == ["cannot be read to scan for secrets (Permission denied)"]


def test_scan_numbers_lines_of_a_file_read_line_by_line(tmp_path: Path) -> None:
    fixture = tmp_path / "stream.sse"
    fixture.write_bytes(b"data: {}\r\n\r\n" * 3 + b'data: {"note": "from jane.doe@example.com"}\r\n')
    assert [(finding.line, finding.kind) for finding in scan_file(fixture)] == [(7, "e-mail address")]


def test_redact_file_keeps_the_file_mode(tmp_path: Path) -> None:
    fixture = tmp_path / "turn1.json"
    fixture.write_text(f'{{"key": "{OPENAI_KEY}"}}\n')
    fixture.chmod(0o640)
    assert redact_file(fixture) is True
    assert fixture.read_text() == '{"key": "<redacted>"}\n'
    assert stat.S_IMODE(fixture.stat().st_mode) == 0o640


def test_redact_file_replaces_the_file_atomically_and_leaves_no_temporary(tmp_path: Path) -> None:
    fixture = tmp_path / "turn1.json"
    fixture.write_text(f'{{"key": "{OPENAI_KEY}"}}\n')
    before = fixture.stat().st_ino
    assert redact_file(fixture) is True
    assert fixture.stat().st_ino != before  # a new file swapped in with os.replace, not the old one rewritten
    assert [path.name for path in tmp_path.iterdir()] == ["turn1.json"]


def test_redact_file_leaves_a_clean_file_untouched(tmp_path: Path) -> None:
    fixture = tmp_path / "turn1.json"
    fixture.write_text('{"id": "task-' + fill(24) + '"}\n')
    before = fixture.stat()
    assert redact_file(fixture) is False
    after = fixture.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert [path.name for path in tmp_path.iterdir()] == ["turn1.json"]


def test_redact_file_follows_a_symlink_rewrites_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    target = tmp_path / "recordings" / "turn1.json"
    target.parent.mkdir()
    target.write_text(f'{{"key": "{OPENAI_KEY}"}}\n')
    link = tmp_path / "cases" / "turn1.json"
    link.parent.mkdir()
    link.symlink_to(Path("..") / "recordings" / "turn1.json")
    assert redact_file(link) is True
    assert link.is_symlink() and os.readlink(link) == str(Path("..") / "recordings" / "turn1.json")
    assert target.read_text() == '{"key": "<redacted>"}\n'
    assert sorted(path.name for path in target.parent.iterdir()) == ["turn1.json"]


def test_redact_file_refuses_a_hard_linked_file(tmp_path: Path) -> None:
    fixture = tmp_path / "turn1.json"
    fixture.write_text(f'{{"key": "{OPENAI_KEY}"}}\n')
    os.link(fixture, tmp_path / "copy.json")
    with pytest.raises(InputError) as raised:
        redact_file(fixture)
    assert "hard links" in raised.value.problems[0].message
    assert OPENAI_KEY in fixture.read_text()


def test_redact_file_refuses_non_utf8_with_its_line_and_changes_nothing(tmp_path: Path) -> None:
    fixture = tmp_path / "turn1.json"
    original = f'{{"key": "{OPENAI_KEY}",\n "name": "Jos\xe9"}}\n'.encode("latin-1")
    fixture.write_bytes(original)
    with pytest.raises(InputError) as raised:
        redact_file(fixture)
    problem = raised.value.problems[0]
    assert (problem.file, problem.line, problem.message) == (str(fixture), 2, "not UTF-8 (byte 0xe9)")
    assert fixture.read_bytes() == original
    assert [path.name for path in tmp_path.iterdir()] == ["turn1.json"]


@pytest.mark.parametrize("name", ["missing.json", "folder"])
def test_redact_file_refuses_what_it_cannot_read(tmp_path: Path, name: str) -> None:
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputError) as raised:
        redact_file(tmp_path / name)
    assert raised.value.problems[0].file == str(tmp_path / name)


def test_redact_command_rewrites_a_recorded_fixture(tmp_path: Path) -> None:
    fixture = tmp_path / "turn1.json"
    fixture.write_text(f'{{"headers": {{"x-api-key": "{fill(16)}"}}, "note": "from jane.doe@example.com"}}\n')
    completed = cli("redact", str(fixture))
    assert completed.returncode == 0 and "redacted" in completed.stdout
    assert fixture.read_text() == '{"headers": {"x-api-key": "<redacted>"}, "note": "from <redacted>"}\n'
