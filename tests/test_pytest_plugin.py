"""The pytest plugin as a team meets it in its own repository (pytester): inert until opted in, snapshots beside
the cases, adapter exceptions with their traceback, required providers, no state left in the host process."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import CASES, cli

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

PLUGIN = ("-p", "conformance.pytest_plugin", "-p", "no:cacheprovider", "-p", "no:randomly")

FAILING_ADAPTER = '''
import dataclasses
from conformance.providers.openai_chat import ADAPTER as CHAT

def parse_body(body):
    if body.get("choices", [{}])[0].get("finish_reason") == "stop":
        return explode(body)
    return CHAT.classify_body(body)

def explode(body):
    return body["choices"][0]["message"]["no_such_field"]

ADAPTER = dataclasses.replace(CHAT, id="openai-chat", classify_body=parse_body)
'''


def _repository(pytester: pytest.Pytester, ini: str | None = 'conformance_cases = ["cases"]',
                cases: tuple[str, ...] = ("normal",)) -> Path:
    """A team's repository: its own cases folder (copied from the bundled one), maybe an ini opting in."""
    root = pytester.path / "cases"
    root.mkdir()
    shutil.copy(CASES / "world.yaml", root)
    for name in cases:
        shutil.copytree(CASES / name, root / name)
    if ini is not None:
        pytester.makefile(".toml", pyproject=f"[tool.pytest.ini_options]\n{ini}\n")
    return root


def test_without_opting_in_the_plugin_collects_nothing_and_writes_nothing(pytester: pytest.Pytester) -> None:
    _repository(pytester, ini=None)
    pytester.makepyfile(test_app="def test_app():\n    assert True\n")
    result = pytester.runpytest_inprocess(*PLUGIN)
    result.assert_outcomes(passed=1)
    assert "case.yaml" not in result.stdout.str()
    assert not (pytester.path / "reports").exists()


def test_the_ini_option_opts_in(pytester: pytest.Pytester) -> None:
    _repository(pytester)
    result = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update")
    result.assert_outcomes(passed=10)
    report = json.loads((pytester.path / "reports/report.json").read_text())
    assert report["summary"]["rows"] == 10


def test_the_python_tools_setting_allows_them_for_the_session_only(pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONFORMANCE_PYTHON_TOOLS", raising=False)
    _repository(pytester, ini='conformance_cases = ["cases"]\nconformance_python_tools = "allow"')
    pytester.makepyfile(test_env="import os\n\ndef test_env():\n"
                                 "    assert os.environ['CONFORMANCE_PYTHON_TOOLS'] == 'allow'\n")
    result = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update", "test_env.py")
    result.assert_outcomes(passed=1)
    assert "CONFORMANCE_PYTHON_TOOLS" not in os.environ  # the host process gets its environment back


def test_the_command_line_option_opts_in_without_an_ini(pytester: pytest.Pytester) -> None:
    _repository(pytester, ini=None)
    result = pytester.runpytest_inprocess(*PLUGIN, "--conformance-cases", "cases", "--snapshot-update",
                                          "--conformance-report=")
    result.assert_outcomes(passed=10)
    assert not (pytester.path / "reports").exists()


def test_snapshots_are_created_then_checked_and_a_change_is_shown_whole_naming_the_turn(
        pytester: pytest.Pytester) -> None:
    root = _repository(pytester)
    missing = pytester.runpytest_inprocess(*PLUGIN, "-q")
    missing.assert_outcomes(failed=10)
    assert "no reviewed classification snapshot for body in cases/__snapshots__/normal/openai-chat.json" in (
        missing.stdout.str())

    pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update").assert_outcomes(passed=10)
    stored = json.loads((root / "__snapshots__/normal/openai-chat.json").read_text())
    assert stored["stream"] == "same as body" and stored["body"]["turns"][1]["kind"] == "text"
    pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=10)

    fixture = root / "normal/openai-chat/turn2.json"
    body = json.loads(fixture.read_text())
    body["choices"][0]["finish_reason"] = "length"
    body["usage"]["completion_tokens"] += 7
    fixture.write_text(json.dumps(body))
    changed = pytester.runpytest_inprocess(*PLUGIN, "-q", "-k", "openai-chat-body")
    changed.assert_outcomes(failed=1)
    text = changed.stdout.str()
    assert "the classification left its snapshot cases/__snapshots__/normal/openai-chat.json [body]" in text
    assert 'turn 2 › kind: "text" → "incomplete"' in text
    assert 'turn 2 › raw: "finish_reason=stop" → "finish_reason=length"' in text
    assert "usage › output_tokens:" in text and "..." not in text.split("snapshot")[1].split("short test")[0]


TEMPERATURE_ADAPTER = '''
import dataclasses
from conformance.providers.openai_chat import ADAPTER as CHAT

def build_request(task, transcript):
    return {**CHAT.build_request(task, transcript), "temperature": 0}

ADAPTER = dataclasses.replace(CHAT, build_request=build_request)
'''


def test_a_changed_request_leaves_its_snapshot_is_accepted_by_update_and_reported_by_diff(
        pytester: pytest.Pytester) -> None:
    root = _repository(pytester, ini='conformance_cases = ["cases"]\nconformance_report = "before"')
    pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update").assert_outcomes(passed=10)
    stored = json.loads((root / "__snapshots__/normal/openai-chat.requests.json").read_text())
    assert stored["stream"] == "same as body"
    assert [message["role"] for message in stored["body"]["turn 2"]["messages"]] == [
        "system", "user", "assistant", "tool"]

    pytester.makepyfile(team_adapter=TEMPERATURE_ADAPTER)
    adapter = ("--conformance-adapter", "team_adapter.py:ADAPTER")
    changed = pytester.runpytest_inprocess(*PLUGIN, *adapter, "-k", "openai-chat-body", "--conformance-report=")
    changed.assert_outcomes(failed=1)
    text = changed.stdout.str()
    assert "the request left its snapshot cases/__snapshots__/normal/openai-chat.requests.json [body]" in text
    assert "turn 1 › temperature: (new) → 0" in text and "turn 2 › temperature: (new) → 0" in text
    assert "the classification left" not in text

    pytester.runpytest_inprocess(*PLUGIN, *adapter, "--snapshot-update", "--conformance-report=after").assert_outcomes(
        passed=10)
    assert json.loads((root / "__snapshots__/normal/openai-chat.requests.json").read_text())["body"]["turn 1"][
        "temperature"] == 0
    pytester.runpytest_inprocess(*PLUGIN, *adapter, "--conformance-report=").assert_outcomes(passed=10)
    gate = cli("diff", str(pytester.path / "before/report.json"), str(pytester.path / "after/report.json"))
    assert gate.returncode == 0, gate.stdout
    assert "**0 regression(s)**, 2 change(s)" in gate.stdout
    assert "turn 1 request temperature new" in gate.stdout and "turn 2 request temperature new" in gate.stdout


def test_a_stale_snapshot_fails_the_session_as_syrupy_does_and_update_deletes_it(
        pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The inner session is no xdist worker, though this test may run in one (syrupy reads the variable).
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    root = _repository(pytester)
    created = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update")
    created.assert_outcomes(passed=10)
    assert "20 snapshots generated." in created.stdout.str()  # syrupy's summary counts the case snapshots
    checked = pytester.runpytest_inprocess(*PLUGIN)
    assert checked.ret == 0 and "20 snapshots passed." in checked.stdout.str()
    # A case that is gone, and a mode no item has any more: both are unused snapshots.
    stale = root / "__snapshots__/renamed_case/openai-chat.json"
    stale.parent.mkdir()
    stale.write_text(json.dumps({"body": {"outcome": "answer"}}))
    kept = root / "__snapshots__/normal/gemini.json"
    stored = json.loads(kept.read_text())
    kept.write_text(json.dumps({**stored, "legacy": {"outcome": "answer"}}))
    failed = pytester.runpytest_inprocess(*PLUGIN)
    failed.assert_outcomes(passed=10)
    assert failed.ret == 1, failed.stdout.str()
    assert "2 snapshots unused." in failed.stdout.str()
    warned = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-warn-unused")
    assert warned.ret == 0 and "2 snapshots unused." in warned.stdout.str()
    details = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-details").stdout.str()
    assert "renamed_case[openai-chat-body]" in details and "normal[gemini-legacy]" in details
    updated = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update")
    assert updated.ret == 0 and "2 unused snapshots deleted." in updated.stdout.str()
    assert not stale.exists() and not stale.parent.exists()
    assert json.loads(kept.read_text()) == stored


def test_matching_items_keep_one_record_per_snapshot_file_and_no_data(pytester: pytest.Pytester,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A match costs syrupy's session two names, not an assertion holding both serialized entries: one record per
    snapshot file, one data-free result per item, counted by syrupy as passed; a changed entry is syrupy's own
    assertion again, with what it recalled."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    root = _repository(pytester)
    pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update").assert_outcomes(passed=10)
    recorder = pytester.inline_run(*PLUGIN)
    recorder.assertoutcome(passed=10)
    session = recorder.getcalls("pytest_sessionfinish")[0].session.config._syrupy
    files = {Path(next(iter(a.executions.values())).snapshot_location).name for a in session._assertions}
    assert files == {f"{lane}{suffix}" for lane in ("anthropic-messages", "bedrock-converse", "gemini", "openai-chat",
                                                   "openai-responses") for suffix in (".json", ".requests.json")}
    results = [result for assertion in session._assertions for result in assertion.executions.values()]
    assert len(results) == 20 and all(result.success and result.final_data is None for result in results)
    assert session.report.num_matched == 20 and session.report.num_unused == 0
    path = root / "__snapshots__/normal/gemini.json"
    changed = json.loads(path.read_text())
    changed["body"]["outcome"] = "refused"
    path.write_text(json.dumps(changed))
    recorder = pytester.inline_run(*PLUGIN, "-k", "gemini")
    recorder.assertoutcome(passed=0, failed=2)
    session = recorder.getcalls("pytest_sessionfinish")[0].session.config._syrupy
    failed = [result for assertion in session._assertions for result in assertion.executions.values()
              if not result.success]
    assert len(failed) == 2 and all('"refused"' in str(result.recalled_data) for result in failed)
    assert session.report.num_failed == 2 and session.report.num_matched == 2  # the requests still match


def test_a_case_items_snapshot_change_is_named_per_field_and_update_rewrites_it(
        pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The inner session is no xdist worker, though this test may run in one (syrupy reads the variable).
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    root = _repository(pytester)
    pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update").assert_outcomes(passed=10)
    path = root / "__snapshots__/normal/gemini.json"
    reviewed = json.loads(path.read_text())
    changed = json.loads(path.read_text())
    changed["body"]["turns"][1]["kind"] = "empty"
    path.write_text(json.dumps(changed))
    result = pytester.runpytest_inprocess(*PLUGIN, "-k", "gemini")
    assert result.ret == 1
    text = result.stdout.str()
    assert "the classification left its snapshot cases/__snapshots__/normal/gemini.json [body]" in text
    assert "turn 2 › kind: \"empty\" → \"text\"" in text
    assert "2 snapshots failed." in text  # the stream entry is "same as body"
    # Without syrupy the snapshot is still compared (nothing can be written or found unused).
    assert pytester.runpytest_inprocess(*PLUGIN, "-p", "no:syrupy", "-k", "gemini").ret == 1
    pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update").assert_outcomes(passed=10)
    assert json.loads(path.read_text()) == reviewed


def test_snapshots_of_what_did_not_run_are_kept(pytester: pytest.Pytester,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # The inner session is no xdist worker, though this test may run in one (syrupy reads the variable).
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    root = _repository(pytester)
    pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update").assert_outcomes(passed=10)
    lane = root / "__snapshots__/normal/openai-chat@openai-sdk.json"
    lane.write_text(json.dumps({"body": {"outcome": "answer"}}))  # a stack lane this session does not run
    before = {path: path.read_bytes() for path in (root / "__snapshots__").rglob("*.json")}
    # A deselected part of the matrix, a node id, a lane not run: none is unused.
    for arguments in (("-k", "gemini"), ("cases/normal/case.yaml::normal[gemini-body]",), ()):
        result = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update", *arguments)
        assert result.ret == 0, result.stdout.str()
        assert {path: path.read_bytes() for path in (root / "__snapshots__").rglob("*.json")} == before, arguments
    # An adapter that raises never reached its snapshot check: its reviewed snapshots stay.
    pytester.makepyfile(my_adapter=FAILING_ADAPTER)
    crashed = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update", "--conformance-adapter",
                                           "my_adapter.py:ADAPTER", "-k", "openai-chat")
    crashed.assert_outcomes(passed=1, failed=1)
    assert {path: path.read_bytes() for path in (root / "__snapshots__").rglob("*.json")} == before


def test_an_adapter_exception_fails_with_its_own_traceback_and_the_row_names_turn_and_fixture(
        pytester: pytest.Pytester) -> None:
    _repository(pytester, ini='conformance_cases = ["cases"]\nconformance_snapshots = false')
    pytester.makepyfile(my_adapter=FAILING_ADAPTER)
    result = pytester.runpytest_inprocess(*PLUGIN, "--conformance-adapter", "my_adapter.py:ADAPTER",
                                          "-k", "openai-chat-body", "--tb=long")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "def explode(body):" in text and "KeyError: 'no_such_field'" in text
    assert "conformance: case normal [openai-chat, body], turn 2 (reading the response), fixture " \
           "cases/normal/openai-chat/turn2.json" in text
    (row,) = json.loads((pytester.path / "reports/report.json").read_text())["results"]
    assert row["outcome"] == "error" and [turn["kind"] for turn in row["turns"]] == ["tool_calls"]
    error = row["error"]
    assert (error["type"], error["turn"], error["phase"], error["fixture"]) == (
        "KeyError", 2, "reading the response", "cases/normal/openai-chat/turn2.json")
    assert error["traceback"][-1].startswith("my_adapter.py:") and "in explode" in error["traceback"][-1]


def test_a_required_provider_without_fixtures_fails_and_names_the_folder(pytester: pytest.Pytester) -> None:
    root = _repository(pytester, ini='conformance_cases = ["cases"]\nconformance_require_providers = '
                                     '["gemini", "openai-chat"]\nconformance_snapshots = false')
    shutil.rmtree(root / "normal/gemini")
    case = root / "normal/case.yaml"
    case.write_text(case.read_text().replace("  gemini: {}\n", ""))
    result = pytester.runpytest_inprocess(*PLUGIN, "--conformance-report=")
    result.assert_outcomes(passed=8, failed=1)
    assert "no fixtures for required provider gemini: record " in result.stdout.str()


def test_a_stack_runs_as_items_beside_the_providers_with_its_own_snapshots(pytester: pytest.Pytester) -> None:
    root = _repository(pytester)
    stack = ("--conformance-stack", "openai-chat@openai-sdk")
    result = pytester.runpytest_inprocess(*PLUGIN, *stack, "--snapshot-update", "-k", "openai", "-v")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*normal[[]openai-chat@openai-sdk-body[]] PASSED*",
                                 "*normal[[]openai-chat@openai-sdk-stream[]] PASSED*"])
    lane = json.loads((root / "__snapshots__/normal/openai-chat@openai-sdk.json").read_text())
    raw = json.loads((root / "__snapshots__/normal/openai-chat.json").read_text())
    assert lane["body"]["turns"] == raw["body"]["turns"] and lane["stream"] == "same as body"
    requests = json.loads((root / "__snapshots__/normal/openai-chat@openai-sdk.requests.json").read_text())
    assert requests["body"]["turn 1"]["messages"][0]["role"] == "system"
    report = json.loads((pytester.path / "reports/report.json").read_text())
    assert {row["stack"] for row in report["results"]} == {"raw", "openai-sdk"}

    # A session without the stack leaves its snapshots alone, even when it updates.
    pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update").assert_outcomes(passed=10)
    assert (root / "__snapshots__/normal/openai-chat@openai-sdk.json").exists()
    pytester.runpytest_inprocess(*PLUGIN, *stack, "-k", "sdk").assert_outcomes(passed=2)


def test_record_mode_records_before_collecting_and_none_never_forwards(pytester: pytest.Pytester) -> None:
    from conformance.engine.cases import load_cases
    from conformance.replay.server import BackgroundServer
    from tests.test_record import prime

    root = _repository(pytester)
    folder = root / "normal" / "openai-chat"
    for name in ("turn2.json", "turn2.sse"):
        (folder / name).unlink()
    with BackgroundServer(load_cases([CASES])) as upstream:
        # `none` (the default) forwards nothing, even with an upstream named: turn 2 is missing, the item fails.
        replayed = pytester.runpytest_inprocess(
            *PLUGIN, "-q", "-k", "openai-chat", "--snapshot-update",
            "--conformance-upstream", f"openai-chat={upstream.base}/s/{{case}}/{{provider}}/{{mode}}")
        assert replayed.ret == 1 and not (folder / "turn2.json").exists() and upstream.replay.sessions == {}
        prime(upstream.base, "normal", "openai-chat", "/v1/chat/completions")
        recorded = pytester.runpytest_inprocess(
            *PLUGIN, "-q", "-k", "openai-chat", "--snapshot-update", "--conformance-record-mode", "new_episodes",
            "--conformance-upstream", f"openai-chat={upstream.base}/s/{{case}}/{{provider}}/{{mode}}")
    assert recorded.ret == 0, recorded.stdout.str()
    for name in ("turn2.json", "turn2.sse"):
        assert (folder / name).read_bytes() == (CASES / "normal" / "openai-chat" / name).read_bytes()


def test_a_model_variant_is_an_item_with_its_own_snapshot(pytester: pytest.Pytester) -> None:
    root = _repository(pytester)
    shutil.copytree(root / "normal" / "openai-chat", root / "normal" / "openai-chat~gpt-5.5-mini")
    result = pytester.runpytest_inprocess(*PLUGIN, "-q", "-k", "openai-chat", "--snapshot-update",
                                          "--collect-only")
    assert "normal[openai-chat~gpt-5.5-mini-body]" in result.stdout.str()
    ran = pytester.runpytest_inprocess(*PLUGIN, "-q", "-k", "openai-chat", "--snapshot-update")
    assert ran.ret == 0, ran.stdout.str()
    assert (root / "__snapshots__" / "normal" / "openai-chat~gpt-5.5-mini.json").is_file()


def test_the_session_report_compares_the_selection_once_and_again_after_xdist_merges(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Syrupy's report asks whether every collected item was selected once per snapshot file; the case items'
    session answers it once (a 20,000-item run spent 12 s there), and again after syrupy clears its caches."""
    import syrupy.session
    from syrupy.report import SnapshotReport

    from conformance.report.syrupy_store import SelectionCachedReport, cache_selection_check

    monkeypatch.setitem(vars(syrupy.session), "SnapshotReport", SnapshotReport)
    cache_selection_check()
    assert vars(syrupy.session)["SnapshotReport"] is SelectionCachedReport
    report = object.__new__(SelectionCachedReport)
    report.__dict__.update(lf_filtered=False, selected_items={"a": True}, _collected_items_by_nodeid={"a": 1})
    assert report.selected_all_collected_items is True
    report.__dict__["selected_items"] = {"a": True, "b": True}  # cached: the same answer without comparing again
    assert report.selected_all_collected_items is True
    report._invalidate_selection_caches()
    report.__dict__["_collected_items_by_nodeid"] = {"a": 1}
    assert report.selected_all_collected_items is False
    report.__dict__.update(lf_filtered=True, selected_items={"a": True})  # syrupy's own rule still decides
    report._invalidate_selection_caches()
    report.__dict__["_collected_items_by_nodeid"] = {"a": 1}
    assert report.selected_all_collected_items is False

    class Other(SnapshotReport):
        """Another plugin's report class is left alone."""

    monkeypatch.setitem(vars(syrupy.session), "SnapshotReport", Other)
    cache_selection_check()
    assert vars(syrupy.session)["SnapshotReport"] is Other


WAIVING_ADAPTER = '''
import dataclasses
from conformance.kit import Waiver
from conformance.providers.openai_chat import ADAPTER as CHAT


class RateLimitError(Exception):
    pass


def raises(status, body, headers):
    raise RateLimitError(f"{status} from the vendor")


ADAPTER = dataclasses.replace(CHAT, id="openai-chat", classify_error=raises, waivers=(
    Waiver(why="errors propagate: the caller retries", cases=("http_*",), raises=("RateLimitError",)),))
'''


def test_a_waived_item_is_skipped_with_its_reason_and_counted_waived_in_the_report(pytester: pytest.Pytester) -> None:
    _repository(pytester, cases=("http_rate_limit",),
                ini='conformance_cases = ["cases"]\nconformance_adapters = ["team.py:ADAPTER"]')
    (pytester.path / "team.py").write_text(WAIVING_ADAPTER)
    result = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update", "-rs", "-k", "openai-chat")
    result.assert_outcomes(skipped=1)
    assert "waived: errors propagate: the caller retries (the adapter raised RateLimitError: 429 from the vendor" \
        in result.stdout.str()
    summary = json.loads((pytester.path / "reports/report.json").read_text())["summary"]
    assert summary["waived"] == 1 and summary["failed"] == 0 and summary["passed"] == 0


def test_the_bundled_cases_run_through_the_teams_stack_with_their_snapshots_in_its_repository(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    # The cases as a wheel installs them, outside any conftest.py (this checkout's own would load with them).
    installed_cases = pytester.path / "venv/site-packages/conformance/cases"
    shutil.copytree(CASES, installed_cases)
    (installed_cases / "__snapshots__/normal").mkdir(parents=True)
    monkeypatch.setattr("conformance.pytest_plugin.BUNDLED_CASES", installed_cases)
    beside = pytester.path / "venv/site-packages/other_package/test_theirs.py"  # another package's own tests
    beside.parent.mkdir()
    beside.write_text("def test_theirs():\n    assert False\n")
    BUNDLED_CASES = installed_cases
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\nconformance_bundled = "conformance_bundled"\n'
                                         'conformance_stacks = ["openai-chat@openai-sdk"]\n')
    installed = sorted(path.name for path in (BUNDLED_CASES / "__snapshots__/normal").iterdir())
    # Body rows only: the openai SDK's stream types do not survive a second in-process session of one interpreter.
    selection = ("-k", "normal and openai-sdk and body", "--conformance-report=")
    created = pytester.runpytest_inprocess(*PLUGIN, *selection, "--snapshot-update")
    created.assert_outcomes(passed=1)
    kept = pytester.path / "conformance_bundled/__snapshots__/normal"
    assert sorted(path.name for path in kept.iterdir()) == [
        "openai-chat@openai-sdk.json", "openai-chat@openai-sdk.requests.json"]
    assert sorted(path.name for path in (BUNDLED_CASES / "__snapshots__/normal").iterdir()) == installed
    checked = pytester.runpytest_inprocess(*PLUGIN, *selection)
    assert checked.ret == 0 and "2 snapshots passed." in checked.stdout.str()
    # Given explicit paths (as the gate gives its cases folder), the bundled cases are still collected.
    (pytester.path / "cases").mkdir()
    explicit = pytester.runpytest_inprocess(*PLUGIN, "cases", *selection)
    explicit.assert_outcomes(passed=1)
    everything = pytester.runpytest_inprocess(*PLUGIN, "--collect-only", "-q", "--conformance-report=")
    assert "test_theirs" not in everything.stdout.str() and "normal[openai-chat@openai-sdk-body]" in \
        everything.stdout.str()


def test_snapshot_writes_lock_one_file_per_case_in_one_folder_of_the_temporary_directory(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    import tempfile

    from filelock import Timeout

    from conformance.report.snapshot import LOCKS, snapshot_lock

    temporary = tmp_path_factory.mktemp("system-temporary")
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    root = _repository(pytester, cases=("normal", "refusal"))
    result = pytester.runpytest_inprocess(*PLUGIN, "--snapshot-update")
    assert result.ret == 0
    written = sorted(path.relative_to(root / "__snapshots__").as_posix()
                     for path in (root / "__snapshots__").rglob("*.json"))
    assert len(written) > 4 and {name.split("/")[0] for name in written} == {"normal", "refusal"}
    # every lock in one folder, one per case folder of snapshots (not one per snapshot file)
    assert [path.name for path in temporary.iterdir()] == [LOCKS]
    assert len(list((temporary / LOCKS).iterdir())) == 2

    one, other = root / "__snapshots__/normal/openai-chat.json", root / "__snapshots__/normal/anthropic-messages.json"
    with snapshot_lock(one):  # two files of one case share the lock; another case's is free
        with pytest.raises(Timeout):
            snapshot_lock(other).acquire(timeout=0)
        with snapshot_lock(root / "__snapshots__/refusal/openai-chat.json").acquire(timeout=0):
            pass
