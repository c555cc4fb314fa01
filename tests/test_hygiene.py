"""Secret scan and redaction: every shape the scan knows is found with its line, and redaction removes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.hygiene import redact, scan_text

SECRETS = [
    ('"api_key": "sk-proj-FAKEFAKEFAKEFAKEFAKE000000"', "OpenAI API key"),
    ("key=sk-ant-api03-FAKEFAKEFAKEFAKEFAKEFAKE", "Anthropic API key"),
    ('"x": "AIzaSyFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE123"', "Google API key"),
    ("AKIAFAKEFAKEFAKE1234", "AWS access key id"),
    ("aws_secret_access_key = FAKEfakeFAKEfakeFAKEfakeFAKEfakeFAKEfake", "AWS secret access key"),
    ('"Authorization": "Bearer FAKEtokenFAKEtokenFAKE"', "credential header"),
    ("x-api-key: FAKEFAKEFAKE1234", "credential header"),
    ("x-goog-api-key: FAKEFAKEFAKE1234", "credential header"),
    ("curl -H 'authorization: bearer FAKEtokenFAKEtokenFAKE'", "bearer token"),
    ("contact: jane.doe@example.com", "e-mail address"),
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
])
def test_ordinary_wire_values_are_not_flagged(clean: str) -> None:
    assert scan_text(Path("f.json"), clean) == []


def test_redact_keeps_the_header_name() -> None:
    assert redact('"x-api-key": "FAKEFAKEFAKE1234"') == '"x-api-key": "<redacted>"'


def test_redact_command_rewrites_a_recorded_fixture(tmp_path: Path) -> None:
    import subprocess
    import sys

    fixture = tmp_path / "turn1.json"
    fixture.write_text('{"headers": {"x-api-key": "FAKEFAKEFAKE1234"}, "note": "from jane.doe@example.com"}\n')
    completed = subprocess.run([sys.executable, "-m", "conformance", "redact", str(fixture)], capture_output=True,
                               text=True, check=False)
    assert completed.returncode == 0 and "redacted" in completed.stdout
    assert fixture.read_text() == '{"headers": {"x-api-key": "<redacted>"}, "note": "from <redacted>"}\n'
