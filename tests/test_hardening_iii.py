"""Hardening III (docs/hardening.md): the report folder, findings and the gate under hostile input. Each test
reproduces one attack from its description and fails without its fix."""

from __future__ import annotations

import os
from pathlib import Path

from conformance.report.files import write_reports
from tests.helpers import OWN, cli

# ---- 7. A symlinked reports/.sets never deletes anything outside the report folder --------------------------


def _repository(tmp_path: Path) -> tuple[Path, Path]:
    """A repository-like folder with precious content beside its report folder."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('keep me')\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    reports = root / "reports"
    reports.mkdir()
    return root, reports


def test_a_sets_link_to_the_parent_is_refused_and_nothing_is_removed(tmp_path: Path) -> None:
    root, reports = _repository(tmp_path)
    os.symlink("..", reports / ".sets")
    result = cli("run", *OWN, "--case", "normal", "--report-dir", str(reports))
    assert result.returncode == 2
    assert ".sets" in result.stderr and "symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert (root / "src" / "app.py").read_text() == "print('keep me')\n"
    assert (root / ".git" / "HEAD").exists()
    assert not (reports / "report.json").exists()


def test_a_current_link_pointing_outside_is_refused(tmp_path: Path) -> None:
    root, reports = _repository(tmp_path)
    os.symlink("../src", reports / ".current")
    result = cli("run", *OWN, "--case", "normal", "--report-dir", str(reports))
    assert result.returncode == 2 and ".current" in result.stderr
    assert sorted(path.name for path in (root / "src").iterdir()) == ["app.py"]


def test_a_link_inside_sets_is_unlinked_never_followed(tmp_path: Path) -> None:
    root, reports = _repository(tmp_path)
    (reports / ".sets").mkdir()
    os.symlink(str(root / "src"), reports / ".sets" / "set-planted")
    write_reports({"report.json": "{}\n"}, reports)
    assert (root / "src" / "app.py").exists()
    assert not (reports / ".sets" / "set-planted").exists()
    assert (reports / "report.json").read_text() == "{}\n"


def test_two_runs_in_a_row_keep_one_set_and_the_links_work(tmp_path: Path) -> None:
    _, reports = _repository(tmp_path)
    write_reports({"report.json": "{\"n\": 1}\n"}, reports)
    write_reports({"report.json": "{\"n\": 2}\n"}, reports)
    assert (reports / "report.json").read_text() == "{\"n\": 2}\n"
    assert len(list((reports / ".sets").iterdir())) == 1


# ---- 9. Findings are compared by what they say, not by key only ----------------------------------------------

def _finding(effect: str, wire: object, value: object, accepted: str | None) -> dict[str, object]:
    return {"stack": "openai-chat@litellm", "case": "normal", "mode": "body", "turn": 1,
            "field": "usage.output_tokens", "effect": effect, "wire": wire, "stack_value": value,
            "meaning": "the output count", "accepted": accepted}


def test_an_accepted_finding_whose_value_changes_is_a_regression() -> None:
    from conformance.report.diff import compare

    old = [_finding("lost", 26, None, "LiteLLM drops the count on this path")]
    new = [_finding("changed", 26, 2600, "LiteLLM drops the count on this path")]
    (change,) = compare({}, {}, old, new)
    assert change.label == "regression"
    assert change.notes == ["finding changed: was turn 1 usage.output_tokens lost: 26 → null (the output count); "
                            "now turn 1 usage.output_tokens changed: 26 → 2600 (the output count)"]


def test_the_same_finding_twice_is_no_change_and_one_value_off_is() -> None:
    from conformance.report.diff import compare

    same = [_finding("changed", 26, 27, None)]
    assert compare({}, {}, same, [dict(same[0])]) == []
    (change,) = compare({}, {}, same, [_finding("changed", 26, 28, None)])
    assert change.label == "regression"


def test_diff_exits_1_on_a_finding_that_changed(tmp_path: Path) -> None:
    import json

    result = cli("run", *OWN, "--case", "normal", "--report-dir", str(tmp_path / "a"))
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "a" / "report.json").read_text())
    for folder, finding in (("old", _finding("lost", 26, None, "dropped")), ("new", _finding("changed", 26, 2600,
                                                                                              "dropped"))):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "report.json").write_text(json.dumps({**document, "findings": [finding]}))
    diff = cli("diff", str(tmp_path / "old" / "report.json"), str(tmp_path / "new" / "report.json"))
    assert diff.returncode == 1, diff.stdout + diff.stderr
    assert "finding changed" in diff.stdout


# ---- 2, 3. Secrets streamed in pieces, and JSON inside JSON strings ------------------------------------------------

import json as _json  # noqa: E402

import pytest  # noqa: E402

from conformance.replay.hygiene import redact, scan_text  # noqa: E402

ANTHROPIC_KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _chat_stream(pieces: list[str], field: str = "content") -> str:
    events = []
    for piece in pieces:
        delta: dict[str, object] = {field: piece} if field == "content" else {
            "tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        events.append("data: " + _json.dumps({"id": "chatcmpl-u1", "object": "chat.completion.chunk", "model": "m",
                                             "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}))
    return "\n\n".join([*events, "data: [DONE]"]) + "\n\n"


def _in_threes(text: str) -> list[str]:
    return [text[index:index + 3] for index in range(0, len(text), 3)]


@pytest.mark.parametrize(("secret", "kind"), [(ANTHROPIC_KEY, "Anthropic API key"),
                                              ("jane.doe@example.org", "e-mail address"),
                                              ("+44 20 7946 0958", "phone number")])
def test_a_secret_streamed_three_characters_at_a_time_is_found(secret: str, kind: str) -> None:
    stream = _chat_stream(_in_threes(f"Reach us at {secret} today."))
    assert not [line for line in stream.splitlines() if secret in line]  # no line holds it whole
    kinds = [finding.kind for finding in scan_text(Path("turn1.sse"), stream)]
    assert f"{kind}, once decoded or joined" in kinds


def test_streamed_tool_arguments_are_joined_too() -> None:
    arguments = _json.dumps({"note": f"use {ANTHROPIC_KEY}"})
    stream = _chat_stream(_in_threes(arguments), field="arguments")
    assert any("Anthropic API key" in finding.kind for finding in scan_text(Path("turn1.sse"), stream))


def test_a_bedrock_jsonl_stream_in_pieces_is_joined() -> None:
    lines = [_json.dumps({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": piece}}})
             for piece in _in_threes(f"mail jane.doe@example.org or key {ANTHROPIC_KEY}")]
    kinds = {finding.kind for finding in scan_text(Path("turn1.jsonl"), "\n".join(lines) + "\n")}
    assert {"e-mail address, once decoded or joined", "Anthropic API key, once decoded or joined"} <= kinds


@pytest.mark.parametrize("inner", [
    {"aws_secret_access_key": AWS_SECRET},
    {"api_key": "k3y-0123456789abcdefghij"},
    {"headers": {"x-api-key": "0123456789abcdefghijklmn"}},
    {"headers": {"api-key": "abcdef0123456789abcdef01"}},
])
def test_a_secret_in_json_inside_a_json_string_is_found(inner: dict[str, object]) -> None:
    body = {"choices": [{"message": {"tool_calls": [{"id": "call_1", "type": "function", "function": {
        "name": "save", "arguments": _json.dumps(inner)}}]}}]}
    text = _json.dumps(body, indent=2)
    assert scan_text(Path("turn1.json"), text), text


def test_validate_refuses_a_fixture_whose_stream_holds_a_split_secret(tmp_path: Path) -> None:
    import shutil

    from tests.helpers import CASES

    root = tmp_path / "cases"
    root.mkdir()
    shutil.copy(CASES / "world.yaml", root / "world.yaml")
    shutil.copytree(CASES / "normal", root / "normal")
    assert cli("validate", "--cases", str(root)).returncode == 0
    stream = root / "normal/openai-chat/turn2.sse"
    stream.write_text(stream.read_text().replace("data: [DONE]", _chat_stream(_in_threes(ANTHROPIC_KEY))
                                                 .replace("data: [DONE]\n\n", "") + "data: [DONE]", 1))
    result = cli("validate", "--cases", str(root))
    assert result.returncode == 2 and "turn2.sse" in result.stderr and "once decoded or joined" in result.stderr


def test_record_refuses_a_stream_with_a_split_secret() -> None:
    from conformance.errors import InputError
    from conformance.replay.record import Staged, write_fixtures

    with pytest.raises(InputError) as refused:
        write_fixtures(Path("/nonexistent/normal/openai-chat"),
                       [Staged("turn1.sse", _chat_stream(_in_threes(ANTHROPIC_KEY)).encode())])
    assert "once decoded or joined" in str(refused.value)


# ---- 4, 11, 12. Signed URLs, account identifiers, more PII and key shapes ---------------------------------------

@pytest.mark.parametrize("text", [
    "https://acct.blob.core.windows.net/img/a.png?sv=2024-05-04&se=2026-12-02&sp=r&sig=AbCdEfGhIjKlMnOpQrSt%2Bu%3D",
    "https://storage.googleapis.com/b/o.png?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=0a1b2c3d4e5f60718293",
    "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abcdef0123456789abcdef0123",
    "https://d111111abcdef8.cloudfront.net/i.png?Expires=1764403200&Signature=Q2xvdWRGcm9udFNpZ25hdHVyZQ&Key-Pair-Id=K",
    "Generative Language API has not been used in project 576123456789 before or it is disabled.",
    "https://console.developers.google.com/apis/api/generativelanguage.googleapis.com/overview?project=576123456789",
    "Permission denied on resource projects/acme-prod-4711/locations/us-central1",
    "The account 123456789012 is not authorized",
    "AccessDeniedException:arn:aws:iam::123456789012:role/recorder",
    "call +14155550134", "or 415-555-0134 after five", "jane.doe%40example.org",
    "gsk_" + "A1b2" * 13, "xai-" + "Z9y8" * 20, "hf_" + "Qw" * 17, "ghp_" + "x" * 36, "github_pat_" + "y" * 82,
    "sk_live_" + "z" * 24, "sk_test_" + "w" * 24, "xoxb-1234567890-0987654321-AbCdEfGhIjKl",
])
def test_each_new_shape_is_found_and_redacted(text: str) -> None:
    assert scan_text(Path("f.json"), text), text
    redacted = redact(text)
    assert "<redacted>" in redacted and not scan_text(Path("f.json"), redacted), redacted


@pytest.mark.parametrize("text", [
    "Order ORD-1001 shipped on 2026-11-30 at 12:00.", "The total is 1234567890 tokens.", "Call the API at 555-1234.",
    "ISBN 978-3-16-148410-0", "projects/my-project with no digits", "?sig=short", "the account was closed",
    "promptTokenCount 414155550134 in the log", "Your project PRJ-2041 is on track.",
    "The project 2024-roadmap was approved", "Order total +12345678",
])
def test_look_alikes_are_left_alone(text: str) -> None:
    assert not scan_text(Path("f.json"), text), text


# ---- 16, 17, 26, 27. serve: request framing, sizes and what is kept ------------------------------------------------

import socket  # noqa: E402

from conformance.engine.cases import load_cases  # noqa: E402
from conformance.replay.server import BackgroundServer  # noqa: E402
from tests.helpers import CASES  # noqa: E402

CHAT_PATH = "/s/normal/openai-chat/body/v1/chat/completions"


def _raw(base: str, request: bytes) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        connection.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def _post(length: str, body: bytes = b"{}") -> bytes:
    return (f"POST {CHAT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode("latin-1") + body


@pytest.mark.parametrize(("length", "status"), [("-1", b"400"), ("12abc", b"400"), (" 0x10", b"400"),
                                                ("\u00b2", b"400"), (str(70 * 1024 * 1024), b"413")])
def test_a_content_length_that_is_not_a_count_or_too_large_is_refused(length: str, status: bytes) -> None:
    with BackgroundServer(load_cases([CASES]), max_seconds=30) as server:
        reply = _raw(server.base, _post(length))
        assert reply.split(b" ", 2)[1] == status, reply[:200]
        assert server.replay.sessions == {}  # nothing was served, no cursor moved


def test_a_chunked_request_body_is_read_as_one_request() -> None:
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    chunks = b"".join(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" for piece in (body[:10], body[10:]))
    request = (f"POST {CHAT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
               "Connection: close\r\n\r\n").encode() + chunks + b"0\r\n\r\n"
    with BackgroundServer(load_cases([CASES]), max_seconds=30) as server:
        reply = _raw(server.base, request)
        session = server.replay.sessions[("normal", "openai-chat", "body")]
    assert reply.startswith(b"HTTP/1.1 200")
    assert session.requests == [_json.loads(body)] and session.served == [1]


def test_a_request_with_both_framings_is_refused() -> None:
    request = (f"POST {CHAT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n"
               "\r\n2\r\n{}\r\n0\r\n\r\n").encode()
    with BackgroundServer(load_cases([CASES]), max_seconds=30) as server:
        assert _raw(server.base, request).startswith(b"HTTP/1.1 400")


def test_a_deeply_nested_body_is_answered_and_kept_as_text() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with BackgroundServer(load_cases([CASES]), max_seconds=30) as server:
        first = _raw(server.base, _post(str(len(deep)), deep))
        again = _raw(server.base, _post(str(len(deep)), deep))  # a repeat: the same turn, the cursor stays
        session = server.replay.sessions[("normal", "openai-chat", "body")]
    assert first.startswith(b"HTTP/1.1 200") and again.startswith(b"HTTP/1.1 200")
    assert session.served == [1] and isinstance(session.requests[0], str)


def test_bytes_in_flight_kept_bodies_and_sessions_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.replay.router as replay_module
    import conformance.replay.server as serve_module

    monkeypatch.setattr(serve_module, "MAX_BYTES_IN_FLIGHT", 1000)
    monkeypatch.setattr(replay_module, "MAX_KEPT_BYTES", 100)
    monkeypatch.setattr(replay_module, "MAX_SESSIONS", 2)
    with BackgroundServer(load_cases([CASES]), max_seconds=30) as server:
        assert _raw(server.base, _post("2000", b"x" * 2000)).startswith(b"HTTP/1.1 503")
        big = b'{"pad": "' + b"y" * 200 + b'"}'
        assert _raw(server.base, _post(str(len(big)), big)).startswith(b"HTTP/1.1 200")
        assert server.server.in_flight == 0  # released once answered
        session = server.replay.sessions[("normal", "openai-chat", "body")]
        assert session.requests[0].startswith("(not kept: 211 bytes")
        other = "/s/refusal/openai-chat/body/v1/chat/completions"
        for path, status in ((other, b"200"), ("/s/truncation/openai-chat/body/v1/chat/completions", b"400")):
            request = _post("2").replace(CHAT_PATH.encode(), path.encode())
            assert _raw(server.base, request).split(b" ", 2)[1] == status
        assert len(server.replay.sessions) == 2
        kept = server.replay.kept_bytes
        server.replay.reset("refusal", "openai-chat", "body")
        assert (kept, server.replay.kept_bytes) == (2, 0)  # a reset frees what the session kept


# ---- 18. A recorded request nested too deep is a fixture error, not an adapter's -----------------------------------

def test_a_deep_recorded_request_is_a_one_line_fixture_error(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "cases"
    root.mkdir()
    shutil.copy(CASES / "world.yaml", root / "world.yaml")
    shutil.copytree(CASES / "normal", root / "normal")
    requests = root / "normal/openai-chat/requests"
    requests.mkdir()
    (requests / "turn1.body.json").write_text("[" * 100_000 + "]" * 100_000)
    result = cli("run", "--cases", str(root), "--provider", "openai-chat", "--report-dir", str(tmp_path / "r"))
    assert result.returncode == 2, result.stdout[-500:]
    assert "turn1.body.json" in result.stderr and "RecursionError" not in result.stderr + result.stdout
    assert len(result.stderr.strip().splitlines()) == 1


# ---- 6. A cases folder is code only where its owner says so ---------------------------------------------------------

def _python_tool_cases(tmp_path: Path, callable_spec: str) -> tuple[Path, Path]:
    import shutil

    root = tmp_path / "cases"
    root.mkdir()
    marker = tmp_path / "imported"
    world = (CASES / "world.yaml").read_text()
    tool = ("  quote:\n    kind: python\n    description: A shipping quote.\n"
            "    parameters: {type: object, properties: {postcode: {type: string}}, required: [postcode]}\n"
            f"    callable: {callable_spec}\n    evidence: [price]\n")
    (root / "world.yaml").write_text(world.replace("tools:\n", "tools:\n" + tool, 1))
    (root / "tools.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n"
                                   "def quote(arguments, principal):\n    return {'price': '4.90'}\n")
    shutil.copytree(CASES / "normal", root / "normal")
    return root, marker


def test_validate_list_and_collection_never_import_a_python_tool(tmp_path: Path) -> None:
    root, marker = _python_tool_cases(tmp_path, "tools.py:quote")
    assert cli("validate", "--cases", str(root)).returncode == 0
    assert cli("list", "--cases", str(root)).returncode == 0
    assert cli("run", "--cases", str(root), "--report-dir", str(tmp_path / "r")).returncode == 0  # no case calls it
    assert not marker.exists()


@pytest.mark.parametrize("spec", ["../evil.py:quote", "/tmp/evil.py:quote", "sub/../../evil.py:quote"])
def test_a_python_tool_outside_the_cases_folder_is_refused_without_importing(tmp_path: Path, spec: str) -> None:
    root, marker = _python_tool_cases(tmp_path, spec)
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('evil')\ndef quote(a, p):\n    return {{}}\n")
    result = cli("validate", "--cases", str(root))
    assert result.returncode == 2 and "world.yaml" in result.stderr
    assert ("outside the cases folder" in result.stderr or "absolute path" in result.stderr)
    assert not marker.exists()


def test_a_linked_tool_file_pointing_outside_is_refused(tmp_path: Path) -> None:
    root, marker = _python_tool_cases(tmp_path, "linked.py:quote")
    (tmp_path / "evil.py").write_text("def quote(a, p):\n    return {}\n")
    os.symlink(tmp_path / "evil.py", root / "linked.py")
    result = cli("validate", "--cases", str(root))
    assert result.returncode == 2 and "outside the cases folder (links resolved)" in result.stderr


def test_a_python_tool_runs_only_where_the_owner_allowed_it(tmp_path: Path) -> None:
    from conformance.engine.cases import load_cases as load
    from conformance.engine.world import Principal

    root, marker = _python_tool_cases(tmp_path, "tools.py:quote")
    world = next(iter(load([root]))).world
    principal = Principal(tenant="shop-a", user="u-100")
    with pytest.raises(Exception) as refused:
        world.execute(world.tools["quote"], {"postcode": "1"}, principal, approved=False)
    assert "CONFORMANCE_PYTHON_TOOLS=allow" in str(refused.value) and not marker.exists()
    os.environ["CONFORMANCE_PYTHON_TOOLS"] = "allow"
    try:
        receipt = world.execute(world.tools["quote"], {"postcode": "1"}, principal, approved=False)
    finally:
        del os.environ["CONFORMANCE_PYTHON_TOOLS"]
    assert receipt.output == {"price": "4.90"} and marker.exists()


# ---- 15, 29. --accept accepts a change, not a row; what it matched and did not is said -------------------------

def _reports(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    import copy

    result = cli("run", *OWN, "--case", "refusal", "--provider", "openai-chat", "--report-dir", str(tmp_path / "a"))
    assert result.returncode == 0, result.stderr
    document = _json.loads((tmp_path / "a" / "report.json").read_text())
    changed = copy.deepcopy(document)
    row = changed["results"][0]
    row.update(passed=False, outcome=kind, failures=[f"outcome {kind}, expected refusal"])
    row["turns"][0]["kind"] = kind
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(_json.dumps(document))
    new.write_text(_json.dumps(changed))
    return old, new


def _accept(tmp_path: Path, *changes: str, case: str = "refusal", provider: str = "openai-chat") -> Path:
    path = tmp_path / "accepted.yaml"
    path.write_text("".join(f"- {{case: '{case}', provider: '{provider}', change: '{change}', reason: the vendor "
                            "changed}\n" for change in changes))
    return path


FAILED_NOTE = "passed → failed: outcome text, expected refusal"


def test_an_accepted_change_accepts_that_change(tmp_path: Path) -> None:
    old, new = _reports(tmp_path, "text")
    # Every note of the row is named: the kind and outcome that changed, and the failure the row now has.
    only_the_kind = cli("diff", str(old), str(new), "--accept", str(_accept(tmp_path, "*refusal → text*")))
    assert only_the_kind.returncode == 1 and "not accepted: passed → failed" in only_the_kind.stdout
    result = cli("diff", str(old), str(new), "--accept", str(_accept(tmp_path, "*refusal → text*", FAILED_NOTE)))
    assert result.returncode == 0, result.stdout
    assert "accepted: the vendor changed" in result.stdout


def test_a_note_copied_from_the_diff_matches_itself_brackets_and_all() -> None:
    from conformance.report.diff import RowChange, apply_accepted

    note = "turn 1 call ids ['call_1'] → ['call_2']"
    change = RowChange(("normal", "openai-chat", "body"), "regression", [note])
    assert apply_accepted([change], [{"case": "normal", "provider": "openai-chat", "change": note,
                                      "reason": "ids are new"}]) == []
    assert change.label == "change"


def test_an_entry_for_one_regression_does_not_hide_another_in_the_same_row(tmp_path: Path) -> None:
    old, new = _reports(tmp_path, "unsupported")
    result = cli("diff", str(old), str(new), "--accept", str(_accept(tmp_path, "*refusal → text*")))
    assert result.returncode == 1 and "regression" in result.stdout
    assert "not accepted" in result.stdout and "matched nothing" in result.stderr


def test_an_entry_accepting_any_change_is_refused_and_every_row_is_said(tmp_path: Path) -> None:
    old, new = _reports(tmp_path, "text")
    for wildcard in ("*", "**", "?*"):
        refused = cli("diff", str(old), str(new), "--accept", str(_accept(tmp_path, wildcard)))
        assert refused.returncode == 2 and "accepts any change" in refused.stderr
    everywhere = cli("diff", str(old), str(new), "--accept",
                     str(_accept(tmp_path, "*refusal → text*", FAILED_NOTE, case="*", provider="*")))
    assert everywhere.returncode == 0 and "for every case and provider" in everywhere.stderr


# ---- 13, 14, 28, 30, 31. merge and verify ----------------------------------------------------------------------

def _two_case_folder(tmp_path: Path) -> Path:
    import shutil

    root = tmp_path / "cases"
    root.mkdir()
    shutil.copy(CASES / "world.yaml", root / "world.yaml")
    for case in ("normal", "refusal"):
        shutil.copytree(CASES / case, root / case)
    return root


def _shards(tmp_path: Path, root: Path, name: str) -> list[Path]:
    folders = []
    for index in (1, 2):
        folder = tmp_path / name / f"s{index}"
        result = cli("run", "--cases", str(root), "--provider", "openai-chat", "--shard", f"{index}/2",
                     "--report-dir", str(folder))
        assert result.returncode in (0, 1), result.stderr
        folders.append(folder)
    return folders


def test_merge_refuses_shards_whose_case_file_changed_between_them(tmp_path: Path) -> None:
    root = _two_case_folder(tmp_path)
    before = _shards(tmp_path, root, "before")
    case = root / "normal/case.yaml"
    case.write_text(case.read_text().replace("outcome: answer_ready", "outcome: refusal"))
    after = _shards(tmp_path, root, "after")
    mixed = cli("merge", str(before[0]), str(after[1]), "--report-dir", str(tmp_path / "m"))
    both = cli("merge", str(before[1]), str(after[0]), "--report-dir", str(tmp_path / "m2"))
    assert 2 in (mixed.returncode, both.returncode), mixed.stdout + both.stdout
    refused = mixed if mixed.returncode == 2 else both
    assert "its plan" in refused.stderr and "case and world files" in refused.stderr


def test_merge_refuses_a_shard_with_a_row_removed_by_hand(tmp_path: Path) -> None:
    root = _two_case_folder(tmp_path)
    folders = _shards(tmp_path, root, "run")
    report = folders[0] / "report.json"
    document = _json.loads(report.read_text())
    document["results"] = document["results"][1:]
    report.unlink()  # the link into the report set, replaced by the edited file
    report.write_text(_json.dumps(document))
    result = cli("merge", *map(str, folders), "--report-dir", str(tmp_path / "merged"))
    assert result.returncode == 2 and "do not match its summary" in result.stderr


def test_merging_twice_into_a_folder_under_the_shards_does_not_read_its_own_output(tmp_path: Path) -> None:
    root = _two_case_folder(tmp_path)
    _shards(tmp_path, root, "shards")
    out = tmp_path / "shards" / "merged"
    for _ in range(2):
        result = cli("merge", str(tmp_path / "shards"), "--report-dir", str(out))
        assert result.returncode == 0, result.stderr


def test_verify_does_not_take_a_filtered_run_for_the_whole(tmp_path: Path) -> None:
    root = _two_case_folder(tmp_path)
    (root / "refusal/openai-chat/turn1.json").write_text('{"choices": []}')  # the whole run fails a row
    assert cli("run", "--cases", str(root), "--report-dir", str(tmp_path / "a/full")).returncode == 1
    assert cli("run", "--cases", str(root), "--case", "normal",
               "--report-dir", str(tmp_path / "a/part")).returncode == 0
    result = cli("verify", str(tmp_path / "a"))
    assert result.returncode == 1 and result.stdout.rstrip().endswith("verified: no"), result.stdout
    assert "a filtered run (case normal)" in result.stdout


def test_verify_can_require_a_fixture_digest(tmp_path: Path) -> None:
    root = _two_case_folder(tmp_path)
    assert cli("run", "--cases", str(root), "--report-dir", str(tmp_path / "r")).returncode == 0
    digest = _json.loads((tmp_path / "r/report.json").read_text())["measured"]["fixtures"]["sha256"]
    assert cli("verify", str(tmp_path / "r"), "--fixtures", digest[:12]).returncode == 0
    other = cli("verify", str(tmp_path / "r"), "--fixtures", "0" * 12)
    assert other.returncode == 1 and f"it ran on fixtures {digest[:12]}" in other.stdout


def test_verify_neither_hangs_on_a_fifo_nor_raises_on_a_deep_report(tmp_path: Path) -> None:
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo/report.json")
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep/report.json").write_text("[" * 100_000 + "]" * 100_000)
    result = cli("verify", str(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    assert result.stdout.count("unreadable") == 2


@pytest.mark.parametrize("size", [b"0x2", b"+2", b"1_0"])
def test_a_chunk_size_that_is_not_plain_hex_is_refused(size: bytes) -> None:
    request = (f"POST {CHAT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n").encode() \
        + size + b"\r\n{}\r\n0\r\n\r\n"
    with BackgroundServer(load_cases([CASES]), max_seconds=30) as server:
        assert _raw(server.base, request).startswith(b"HTTP/1.1 400")


def test_a_compressed_reply_that_expands_past_the_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    import conformance.replay.record as record
    from conformance.replay.record import Exchange

    monkeypatch.setattr(record, "MAX_DECODED_BYTES", 1000)
    bomb = Exchange(b"{}", 200, {"content-encoding": "gzip"}, gzip.compress(b"0" * 100_000))
    assert record._decoded("openai-chat", bomb).failed is not None
    torn = Exchange(b"{}", 200, {"content-encoding": "gzip"}, gzip.compress(b'{"a": 1}')[:-6])
    assert "ends before its end" in str(record._decoded("openai-chat", torn).failed)
    fine = Exchange(b"{}", 200, {"content-encoding": "gzip"}, gzip.compress(b'{"a": 1}'))
    assert record._decoded("openai-chat", fine).body == b'{"a": 1}'


@pytest.mark.parametrize("digest", [" ", "a", "abc123", "not-hex-at-all"])
def test_verify_refuses_a_fixture_digest_too_short_to_mean_anything(tmp_path: Path, digest: str) -> None:
    root = _two_case_folder(tmp_path)
    assert cli("run", "--cases", str(root), "--report-dir", str(tmp_path / "r")).returncode == 0
    result = cli("verify", str(tmp_path / "r"), "--fixtures", digest)
    assert result.returncode == 2 and "is not a fixture digest" in result.stderr


def test_the_plan_covers_provider_modules_world_files_and_python_tools(tmp_path: Path) -> None:
    from conformance.engine.cases import load_cases as load
    from conformance.engine.registry import builtin_adapters
    from conformance.engine.shard import decisive_files

    root, _ = _python_tool_cases(tmp_path, "tools.py:quote")
    files = decisive_files(load([root]), builtin_adapters().values())
    assert {"code:providers/gemini/usage.py", "code:conformance/kit/verdict.py", "world:cases/world.yaml",
            "tool:cases/tools.py", "case:cases/normal/case.yaml"} <= set(files)
