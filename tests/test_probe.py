"""``conformance probe`` (docs/probe.md) against servers started here on loopback: the project's own replay server
over the frozen cases (a server that answers as the vendor did), the same server with fixtures changed the way
OpenAI-compatible servers are known to differ, and the gate between two probes naming what changed."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.replay.server import BackgroundServer
from tests.helpers import CASES, cli

SESSION = "/s/{case}/{provider}/{mode}"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[[Callable[[Path], None] | None], str]]:
    """Start a replay server over a copy of the frozen cases, changed by ``change``; its URL template. Each probe
    gets a server of its own (a replay's turn cursors are per session)."""
    servers: list[BackgroundServer] = []

    def start(change: Callable[[Path], None] | None = None) -> str:
        folder = tmp_path / f"server-{len(servers)}"
        shutil.copytree(CASES, folder, ignore=shutil.ignore_patterns("__snapshots__"))
        if change is not None:
            change(folder)
        server = BackgroundServer(load_cases([folder]), max_seconds=120).__enter__()
        servers.append(server)
        return server.base + SESSION

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def _probe(url: str, out: Path, *extra: str, name: str = "local") -> Any:
    return cli("probe", "--no-config", "--cases", str(CASES), "--server", f"{name}={url}", "--api", "openai-chat",
               "--model", "model-under-test", "--out", str(out), *extra)


def _rows(out: Path, lane: str = "openai-chat~local") -> dict[tuple[str, str], dict[str, Any]]:
    report = json.loads((out / "report/report.json").read_text(encoding="utf-8"))
    return {(row["case"], row["mode"]): row for row in report["results"] if row["provider"] == lane}


def _tool_call_finish(folder: Path) -> None:
    """The `normal` case's first Chat turn with the finish reason an OpenAI-compatible server sent for a tool call
    (ml-explore/mlx-lm#782: "tool_call" where the API says "tool_calls"), in the body and in the stream."""
    turn = folder / "normal/openai-chat"
    body = json.loads((turn / "turn1.json").read_text(encoding="utf-8"))
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    body["choices"][0]["finish_reason"] = "tool_call"
    (turn / "turn1.json").write_text(json.dumps(body), encoding="utf-8")
    stream = (turn / "turn1.sse").read_text(encoding="utf-8")
    assert '"finish_reason":"tool_calls"' in stream
    (turn / "turn1.sse").write_text(stream.replace('"finish_reason":"tool_calls"', '"finish_reason":"tool_call"'),
                                    encoding="utf-8")


def _forced_choice_refused(folder: Path) -> None:
    """A server that refuses a forced tool choice with a 400 (the request the vendor accepts), body and stream."""
    turn = folder / "forced_tool_choice/openai-chat"
    for name in ("turn1.json", "turn1.sse"):
        (turn / name).unlink()
    (turn / "turn1.error.json").write_text(json.dumps({"status": 400, "headers": {"content-type": "application/json"},
                                                       "body": {"error": {"message": "tool_choice 'required' is not "
                                                                          "supported", "type": "BadRequestError",
                                                                          "code": 400}}}), encoding="utf-8")


def test_a_server_that_answers_as_the_vendor_did_passes_every_probed_row(served: Any, tmp_path: Path) -> None:
    result = _probe(served(), tmp_path / "probe")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _rows(tmp_path / "probe")
    cases = {case.id: case for case in load_cases([CASES])}
    probed = {case_id for case_id, case in cases.items() if "openai-chat" in case.providers and not (
        {*(case.expectation_for("openai-chat").turns or ()), case.expectation_for("openai-chat").outcome}
        & {"retryable_error", "fatal_error"})}
    assert {case for case, _ in rows} == probed and len(probed) >= 15
    assert all(row["passed"] for row in rows.values())
    # The vendor's own recordings run beside the server's, unchanged: the comparison is in one report.
    assert all(row["passed"] for row in _rows(tmp_path / "probe", "openai-chat").values())
    assert "not probed: http_rate_limit [openai-chat]: it expects retryable_error" in result.stdout
    assert (tmp_path / "probe/cases/frozen_cases/normal/openai-chat~local/turn1.json").is_file()
    provenance = json.loads((tmp_path / "probe/cases/frozen_cases/normal/openai-chat~local/provenance.json")
                            .read_text(encoding="utf-8"))
    assert provenance["turns"]["turn1.json"]["host"] == "loopback"
    assert not (CASES / "normal/openai-chat~local").exists()  # the team's cases are never written


def test_the_gate_between_two_probes_names_the_quirk_a_server_introduces(served: Any, tmp_path: Path) -> None:
    assert _probe(served(), tmp_path / "before").returncode == 0
    changed = _probe(served(_tool_call_finish), tmp_path / "after")
    assert changed.returncode == 1
    assert "normal [openai-chat~local, body]" in changed.stdout
    row = _rows(tmp_path / "after")[("normal", "body")]
    assert row["turns"][0]["kind"] == "unsupported" and "tool_call" in json.dumps(row["turns"][0])
    others = {key: value["passed"] for key, value in _rows(tmp_path / "after").items() if key[0] != "normal"}
    assert all(others.values())
    gate = cli("diff", str(tmp_path / "before/report/report.json"), str(tmp_path / "after/report/report.json"))
    assert gate.returncode == 1
    regressions = [line for line in gate.stdout.splitlines() if line.startswith("| ❌ regression")]
    assert [line.split(" | ")[1:4] for line in regressions] == [["normal", "openai-chat\\~local", "body"],
                                                               ["normal", "openai-chat\\~local", "stream"]]
    assert all("turn 1 kind tool\\_calls → unsupported (finish\\_reason=tool\\_call)" in line for line in regressions)


def test_a_request_the_server_refuses_is_recorded_and_named(served: Any, tmp_path: Path) -> None:
    result = _probe(served(_forced_choice_refused), tmp_path / "probe", "--case", "forced_tool_choice",
                    "--case", "normal")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "recorded anyway: turn 1: the upstream answered HTTP 400" in result.stdout
    rows = _rows(tmp_path / "probe")
    # An error turn answers both modes (it is one file, turn1.error.json): the case's row is its body row, as for the
    # vendor's own HTTP error cases.
    assert set(rows) == {("forced_tool_choice", "body"), ("normal", "body"), ("normal", "stream")}
    refused = rows[("forced_tool_choice", "body")]
    assert not refused["passed"] and refused["turns"][0]["kind"] == "fatal_error"
    assert rows[("normal", "body")]["passed"]


def test_a_vendor_key_in_the_environment_never_reaches_disk(served: Any, tmp_path: Path) -> None:
    secret = "sk-proj-" + "Zq8" * 16
    result = cli("probe", "--no-config", "--cases", str(CASES), "--server", f"local={served()}", "--api",
                 "openai-chat", "--model", "model-under-test", "--out", str(tmp_path / "probe"), "--case", "normal",
                 env={"OPENAI_API_KEY": secret})
    assert result.returncode == 0, result.stdout + result.stderr
    written = [path for path in (tmp_path / "probe").rglob("*") if path.is_file()]
    assert written and not [path for path in written if secret in path.read_text(encoding="utf-8", errors="replace")]


@pytest.mark.parametrize(("arguments", "message"), [
    (("--server", "vllm"), "'vllm' is not NAME=URL"),
    (("--server", "bad name=http://127.0.0.1:1"), "is not NAME=URL"),
    (("--server", "vllm=ftp://127.0.0.1:1"), "is not NAME=URL"),
])
def test_a_bad_server_is_refused_with_what_to_write(tmp_path: Path, arguments: tuple[str, ...],
                                                    message: str) -> None:
    result = cli("probe", "--no-config", "--cases", str(CASES), *arguments, "--api", "openai-chat", "--model", "m",
                 "--out", str(tmp_path / "probe"))
    assert result.returncode == 2 and message in result.stderr and "--server vllm=http://" in result.stderr
    assert not (tmp_path / "probe").exists()


def test_an_out_folder_in_use_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "probe"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    result = _probe("http://127.0.0.1:9" + SESSION, out)
    assert result.returncode == 2 and "exists and is not empty" in result.stderr
    assert [path.name for path in out.iterdir()] == ["notes.txt"]


def test_a_probe_with_nothing_to_probe_leaves_no_folder_behind(tmp_path: Path) -> None:
    result = _probe("http://127.0.0.1:9" + SESSION, tmp_path / "probe", "--case", "http_*")
    assert result.returncode == 2 and "no case to probe" in result.stderr
    assert not (tmp_path / "probe").exists()


def test_an_unreachable_server_is_one_line_and_nothing_is_kept(tmp_path: Path) -> None:
    result = _probe("http://127.0.0.1:9" + SESSION, tmp_path / "probe", "--case", "normal", "--mode", "body")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "could not reach the upstream" in result.stderr and "check --server" in result.stderr
    assert not (tmp_path / "probe").exists()


@pytest.mark.parametrize("api", ["bedrock-converse", "openai-chat~local", "vllm"])
def test_an_api_a_server_cannot_claim_is_refused_with_the_ones_it_can(tmp_path: Path, api: str) -> None:
    result = cli("probe", "--no-config", "--cases", str(CASES), "--server", "local=http://127.0.0.1:9", "--api", api,
                 "--model", "m", "--out", str(tmp_path / "probe"))
    assert result.returncode == 2 and f"{api!r} is not an API a server can claim here" in result.stderr
    assert "use one of anthropic-messages, gemini, openai-chat, openai-responses" in result.stderr
    assert not (tmp_path / "probe").exists()


def test_a_server_that_claims_several_apis_is_probed_on_each(served: Any, tmp_path: Path) -> None:
    """Servers and gateways that answer Anthropic Messages, Responses and Gemini besides Chat: one column per API."""
    apis = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")
    result = cli("probe", "--no-config", "--cases", str(CASES), "--server", f"local={served()}",
                 *[argument for api in apis for argument in ("--api", api)], "--model", "model-under-test",
                 "--case", "normal", "--out", str(tmp_path / "probe"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "8 of 8 local rows passed" in result.stdout
    for api in apis:
        assert set(_rows(tmp_path / "probe", f"{api}~local")) == {("normal", "body"), ("normal", "stream")}, api


def test_a_turn_refused_in_one_mode_only_leaves_that_mode_out_by_name() -> None:
    """The fixture layout holds one error turn for both modes: a server that answers the body and refuses the stream
    (or the reverse) has the refusing mode's files left out, with a line naming it, instead of a set that cannot be
    written."""
    from conformance.commands.record import _one_answer_per_turn
    from conformance.replay.record import Staged

    def staged(*names: str) -> list[Staged]:
        return [Staged(name, b"{}") for name in names]

    body = ("turn1.json", "turn2.json", "requests/turn1.body.json", "requests/turn2.body.json")
    kept, lines = _one_answer_per_turn(staged(*body, "turn1.error.json", "requests/turn1.stream.json"))
    assert sorted(item.name for item in kept) == sorted(body)
    assert lines == ["the stream request of turn 1 was refused (HTTP error) where the body one was answered: its "
                     "stream rows are left out (an error turn answers both modes)"]
    stream = ("turn1.sse", "turn2.sse", "requests/turn1.stream.json", "requests/turn2.stream.json")
    kept, lines = _one_answer_per_turn(staged(*stream, "turn2.error.json", "requests/turn1.body.json",
                                              "requests/turn2.body.json", "turn1.json"))
    assert sorted(item.name for item in kept) == sorted(stream) and "the body request of turn 2" in lines[0]
    both = staged("turn1.error.json", "requests/turn1.body.json", "requests/turn1.stream.json")
    assert _one_answer_per_turn(both) == (both, [])  # refused in both modes: one error turn, as recorded


def test_a_wrong_url_is_bad_input_not_a_failing_server(served: Any, tmp_path: Path) -> None:
    """A base URL the server does not answer at (the OpenAI SDK adds /v1 itself; a probe given .../v1 asks for
    /v1/v1/...) is a 404: the probe stops (exit 2) and says what to check, instead of scoring the server on it."""
    result = _probe(served().replace(SESSION, SESSION + "/v1"), tmp_path / "probe", "--case", "normal", "--mode",
                    "body")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "HTTP 404" in result.stderr and "without /v1" in result.stderr
    assert not (tmp_path / "probe").exists()


def test_a_case_pattern_that_matches_nothing_is_refused(served: Any, tmp_path: Path) -> None:
    result = _probe(served(), tmp_path / "probe", "--case", "no_such_case")
    assert result.returncode == 2 and "no case matches 'no_such_case'" in result.stderr


def test_an_out_folder_inside_the_cases_is_refused(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    shutil.copytree(CASES, cases, ignore=shutil.ignore_patterns("__snapshots__"))
    result = cli("probe", "--no-config", "--cases", str(cases), "--server", "local=http://127.0.0.1:9", "--api",
                 "openai-chat", "--model", "m", "--out", str(cases / "probes/one"))
    assert result.returncode == 2 and "is inside the cases folder" in result.stderr
    assert not (cases / "probes").exists()


def test_the_servers_key_is_read_from_the_variable_named_and_no_vendor_key_is(served: Any, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The vendor's own key (OPENAI_API_KEY) never goes to a probed server; --key-env names the server's."""
    import urllib.request

    sent: list[dict[str, str]] = []
    original = urllib.request.Request

    class Spied(original):  # type: ignore[misc, valid-type]
        """The recording proxy's requests to the server, their headers kept for the test."""

        def __init__(self, url: str, *arguments: Any, **options: Any) -> None:
            super().__init__(url, *arguments, **options)
            sent.append({key.lower(): value for key, value in self.header_items()})

    monkeypatch.setattr(urllib.request, "Request", Spied)
    vendor, server = "sk-proj-" + "Vv7" * 16, "sk-" + "Sv9" * 16
    result = cli("probe", "--no-config", "--cases", str(CASES), "--server", f"local={served()}", "--api",
                 "openai-chat", "--model", "model-under-test", "--out", str(tmp_path / "probe"), "--case", "normal",
                 "--mode", "body", "--key-env", "PROBE_KEY", env={"OPENAI_API_KEY": vendor, "PROBE_KEY": server})
    assert result.returncode == 0, result.stdout + result.stderr
    assert sent and all(headers.get("authorization") == f"Bearer {server}" for headers in sent)
    written = [path for path in (tmp_path / "probe").rglob("*") if path.is_file()]
    assert not [path for path in written if server in path.read_text(encoding="utf-8", errors="replace")]


def test_a_repository_set_up_by_init_is_probed_with_its_own_adapter(tmp_path: Path) -> None:
    """`conformance init`'s repository: its example case lists the team's adapter, which the probe loads from the
    configuration (and hands to the offline run) instead of refusing the case."""
    repo = tmp_path / "repo"
    repo.mkdir()
    assert cli("init", cwd=repo).returncode == 0
    with BackgroundServer(load_cases([CASES]), max_seconds=60) as server:
        # The frozen `normal` case answers the example's task (the same task and world, docs/cases.md).
        url = server.base + "/s/normal/{provider}/{mode}"
        result = cli("probe", "--server", f"local={url}", "--api", "openai-chat", "--model", "model-under-test",
                     "--out", str(tmp_path / "probe"), cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 of 2 local rows passed" in result.stdout
    assert (tmp_path / "probe/cases/cases/example/openai-chat~local/turn1.json").is_file()
