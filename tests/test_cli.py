"""The command line as a user meets it: exit codes, one-line errors, what ``inspect`` prints and which of its
options it applies. Vendor behaviour is pinned in each vendor's own test file; commands run in process
(``tests.helpers.cli``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from tests.helpers import CASES, FIXTURES, OWN, CliResult, cli


def run_cli(*arguments: str, cwd: Path | None = None) -> CliResult:
    return cli(*arguments, cwd=cwd)


def inspect(capsys: pytest.CaptureFixture[str], *arguments: str) -> dict:
    assert main(["inspect", *arguments]) == 0
    return json.loads(capsys.readouterr().out)


def test_inspect_chat_forced_tool_with_finish_stop(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "openai-chat/body-forced-tool-finish-stop.json"
    result = inspect(capsys, "--provider", "openai-chat", str(path))
    assert result["kind"] == "tool_calls"
    assert result["calls"][0]["call_id"] == "call_F1"
    assert set(result["usage"]) == {"input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens",
                                    "reasoning_tokens", "total_tokens"}


def test_inspect_insufficient_quota_is_fatal_quota(capsys: pytest.CaptureFixture[str]) -> None:
    result = inspect(capsys, "--provider", "openai-chat", "--status", "429", "--header", "retry-after: 20",
                     str(FIXTURES / "openai-chat/error-429-insufficient-quota.json"))
    assert (result["kind"], result["reason"], result["http_status"]) == ("fatal_error", "quota", 429)


def test_inspect_rate_limit_keeps_retry_after(capsys: pytest.CaptureFixture[str]) -> None:
    result = inspect(capsys, "--provider", "openai-responses", "--status", "429", "--header", "Retry-After:3",
                     str(FIXTURES / "openai-responses/error-429-rate-limit.json"))
    assert (result["kind"], result["retry_after_s"]) == ("retryable_error", 3.0)




def test_inspect_non_json_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "body.json"
    bad.write_text("<html>oops</html>")
    completed = run_cli("inspect", "--provider", "openai-chat", str(bad))
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert len(completed.stderr.strip().splitlines()) == 1
    assert "not JSON" in completed.stderr and "Traceback" not in completed.stderr


def test_inspect_unknown_provider_exits_2() -> None:
    completed = run_cli("inspect", "--provider", "nope", str(FIXTURES / "openai-chat/body-text.json"))
    assert completed.returncode == 2 and "unknown provider" in completed.stderr


def test_the_whole_bundled_matrix_passes(tmp_path: Path) -> None:
    """The one test that needs every bundled case to pass; the others run the tests' own frozen copy."""
    completed = run_cli("run", "--report-dir", str(tmp_path))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summary"]["failed"] == 0
    assert {row["provider"] for row in report["results"]} >= {"openai-responses", "openai-chat"}
    assert (tmp_path / "report.md").read_text().startswith("# Conformance report")
    validated = run_cli("validate")  # the bundled cases' hygiene, and every expectation met on replay
    assert validated.returncode == 0, validated.stdout + validated.stderr


def copy_cases(tmp_path: Path) -> Path:
    target = tmp_path / "cases"
    shutil.copytree(CASES, target)
    return target


def test_run_exits_1_when_a_stop_reason_changes(tmp_path: Path) -> None:
    cases = copy_cases(tmp_path)
    fixture = cases / "truncation/openai-chat/turn1.json"
    fixture.write_text(fixture.read_text().replace('"finish_reason": "length"', '"finish_reason": "stop"'))
    completed = run_cli("run", "--cases", str(cases), "--report-dir", str(tmp_path / "out"))
    assert completed.returncode == 1
    report = json.loads((tmp_path / "out/report.json").read_text())
    failed = [(row["case"], row["provider"], row["mode"]) for row in report["results"] if not row["passed"]]
    assert failed == [("truncation", "openai-chat", "body")]
    before = tmp_path / "before"
    assert run_cli("run", *OWN, "--report-dir", str(before)).returncode == 0
    gate = run_cli("diff", str(before / "report.json"), str(tmp_path / "out/report.json"))
    assert gate.returncode == 1
    assert "| ❌ regression | truncation | openai-chat | body |" in gate.stdout


def test_validate_reports_yaml_error_with_file_and_line(tmp_path: Path) -> None:
    cases = copy_cases(tmp_path)
    path = cases / "normal/case.yaml"
    lines = path.read_text().splitlines()
    lines[4] = "title: [unclosed"
    path.write_text("\n".join(lines) + "\n")
    completed = run_cli("validate", "--cases", str(cases))
    assert completed.returncode == 2
    assert "normal/case.yaml:" in completed.stderr and "YAML syntax error" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_validate_reports_unknown_key_with_line_and_suggestion(tmp_path: Path) -> None:
    cases = copy_cases(tmp_path)
    path = cases / "normal/case.yaml"
    text = path.read_text().replace("budget:", "budjet:", 1)
    path.write_text(text)
    line = next(number for number, content in enumerate(text.splitlines(), 1) if content.startswith("budjet:"))
    completed = run_cli("validate", "--cases", str(cases))
    assert completed.returncode == 2
    assert f"normal/case.yaml:{line}: unknown key 'budjet'" in completed.stderr
    assert "did you mean 'budget'" in completed.stderr


def test_validate_reports_missing_fixture_listing_existing_files(tmp_path: Path) -> None:
    cases = copy_cases(tmp_path)
    (cases / "normal/openai-chat/turn2.json").unlink()
    completed = run_cli("validate", "--cases", str(cases))
    assert completed.returncode == 2
    assert "normal/case.yaml:" in completed.stderr
    expected = "fixture file 'openai-chat/turn2.json' not found (existing: turn1.json, turn1.sse, turn2.sse)"
    assert expected in completed.stderr


def explicit_turns(path: Path) -> None:
    """Write the openai-chat turn of a case out explicitly (bundled cases find their fixtures by convention)."""
    path.write_text(path.read_text().replace("  openai-chat: {}", "  openai-chat:\n    turns:\n"
                                                                  "      - body: openai-chat/turn1.json", 1))


def test_validate_refuses_a_fixture_path_outside_the_cases_folder(tmp_path: Path) -> None:
    cases = copy_cases(tmp_path)
    path = cases / "refusal/case.yaml"
    explicit_turns(path)
    path.write_text(path.read_text().replace("body: openai-chat/turn1.json", "body: ../../outside.json"))
    (tmp_path / "outside.json").write_text("{}")
    completed = run_cli("validate", "--cases", str(cases))
    assert completed.returncode == 2 and "leaves the cases folder" in completed.stderr


def test_validate_ok_on_the_bundled_cases() -> None:
    completed = run_cli("validate", "--cases", str(CASES))
    assert completed.returncode == 0 and completed.stdout.startswith("ok: ")












def test_inspect_responses_stream_cut_before_completed(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "openai-responses/stream-cut-before-completed.sse"
    result = inspect(capsys, "--provider", "openai-responses", str(path))
    assert (result["kind"], result["reason"], result["usage"]) == ("retryable_error", "interrupted", None)
    assert result["stream"]["terminal"] is False
    assert result["calls"] == []


def test_inspect_bedrock_json_lines_stream(capsys: pytest.CaptureFixture[str]) -> None:
    path = CASES / "normal/bedrock-converse/turn1.jsonl"
    result = inspect(capsys, "--provider", "bedrock-converse", str(path))
    assert result["kind"] == "tool_calls" and result["stream"]["terminal"] is True


def test_run_reports_both_modes_with_a_stream_summary_per_stream_turn(tmp_path: Path) -> None:
    completed = run_cli("run", *OWN, "--report-dir", str(tmp_path))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rows = json.loads((tmp_path / "report.json").read_text())["results"]
    assert {(row["provider"], row["mode"]) for row in rows} == {
        (provider, mode) for provider in ("openai-responses", "openai-chat", "anthropic-messages", "gemini",
                                          "bedrock-converse") for mode in ("body", "stream")}
    for row in rows:
        for turn in row["turns"]:
            if row["mode"] == "stream" and turn["http_status"] < 400:
                assert turn["stream"]["event_count"] > 0
                assert turn["stream"]["terminal"] is (turn.get("reason") != "interrupted")
            elif row["mode"] == "body":
                assert turn["stream"] is None


def test_run_appends_the_markdown_report_to_the_github_step_summary(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    completed = cli("run", *OWN, "--report-dir", str(tmp_path / "r"), env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert completed.returncode == 0
    text = summary.read_text()
    assert text.startswith("earlier step\n# Conformance report")
    assert "## Normalized usage per provider" in text


def test_validate_refuses_a_turn_with_two_body_sources(tmp_path: Path) -> None:
    cases = copy_cases(tmp_path)
    path = cases / "refusal/case.yaml"
    explicit_turns(path)
    path.write_text(path.read_text().replace("- body: openai-chat/turn1.json", "- body: openai-chat/turn1.json\n"
                                             "        text: also a body", 1))
    completed = run_cli("validate", "--cases", str(cases))
    assert completed.returncode == 2
    assert "a turn holds exactly one of body, inline or text" in completed.stderr


def test_run_with_nothing_to_run_exits_2() -> None:
    completed = run_cli("run", *OWN, "--adapter", "tests.slow_adapter:ADAPTER", "--provider", "openai-chat",
                        "--cases", str(FIXTURES.parent / "broken_cases" / "does-not-exist"))
    assert completed.returncode == 2 and "cases folder not found" in completed.stderr


def test_run_exits_2_when_no_case_has_fixtures_for_the_provider(tmp_path: Path) -> None:
    adapter = tmp_path / "my_adapter.py"
    adapter.write_text("import dataclasses\nfrom conformance.providers.openai_chat import ADAPTER as CHAT\n"
                       "ADAPTER = dataclasses.replace(CHAT, id='myapp-chat')\n")
    completed = run_cli("run", *OWN, "--adapter", f"{adapter}:ADAPTER", "--provider", "myapp-chat",
                        "--report-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert completed.returncode == 2
    assert "no case has fixtures for myapp-chat: nothing ran" in completed.stderr
    assert not (tmp_path / "r").exists()


def test_inspect_an_html_error_page_by_its_status(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<html><body>502 Bad Gateway</body></html>")
    result = inspect(capsys, "--provider", "anthropic-messages", "--status", "502", str(page))
    assert (result["kind"], result["reason"], result["http_status"]) == ("retryable_error", "server_error", 502)


# ---- Selection, coverage and required providers ----------------------------------------------------------------

def _rows(folder: Path) -> list[tuple[str, str, str]]:
    return [(row["case"], row["provider"], row["mode"])
            for row in json.loads((folder / "report.json").read_text())["results"]]


def test_run_filters_like_pytest_by_case_pattern_keyword_and_mode(tmp_path: Path) -> None:
    completed = run_cli("run", *OWN, "--report-dir", str(tmp_path), "--case", "http_*", "--case", "normal",
                        "-k", "(openai or gemini) and not responses", "--mode", "body")
    assert completed.returncode == 0, completed.stderr
    assert _rows(tmp_path) == [(case, provider, "body")
                               for case in ("http_auth", "http_context_too_long", "http_overloaded", "http_quota",
                                            "http_rate_limit", "normal")
                               for provider in ("gemini", "openai-chat")]


@pytest.mark.parametrize("expression", ["openai and", "(gemini", "and gemini", "gemini )"])
def test_a_broken_keyword_expression_exits_2_naming_it(expression: str, tmp_path: Path) -> None:
    completed = run_cli("run", *OWN, "--report-dir", str(tmp_path), "-k", expression)
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: -k: ") and repr(expression) in completed.stderr


def test_filters_that_match_nothing_exit_2_and_write_nothing(tmp_path: Path) -> None:
    completed = run_cli("run", *OWN, "--report-dir", str(tmp_path / "r"), "--case", "no_such_case")
    assert completed.returncode == 2 and "no case item matches the filters" in completed.stderr
    assert not (tmp_path / "r").exists()


def test_run_prints_the_coverage_matrix_and_require_providers_fails_a_gap(tmp_path: Path) -> None:
    plain = run_cli("run", *OWN, "--report-dir", str(tmp_path / "a"), "--case", "pause_turn", "--case", "normal")
    assert plain.returncode == 0
    lines = plain.stdout.splitlines()
    header = next(line for line in lines if line.startswith("coverage "))
    assert header.split() == ["coverage", "anthropic-messages", "bedrock-converse", "gemini", "openai-chat",
                              "openai-responses"]
    assert next(line for line in lines if line.startswith("pause_turn ")).split() == [
        "pause_turn", "body+stream", "not", "recorded", "not", "recorded", "not", "recorded", "not", "recorded"]
    required = run_cli("run", *OWN, "--report-dir", str(tmp_path / "b"), "--case", "pause_turn", "--require-providers",
                       "--provider", "anthropic-messages", "--provider", "gemini")
    assert required.returncode == 1
    case_file = CASES / "pause_turn/case.yaml"  # shown relative to the working directory when inside it
    shown = case_file.relative_to(Path.cwd()) if Path.cwd() in case_file.parents else case_file
    assert required.stderr.strip().splitlines() == [
        f"error: {shown}: case pause_turn has no fixtures for gemini. Fix: record "
        "gemini/turn1.json beside the case file and list 'gemini: {}' under providers:, or run without "
        "--require-providers"]


def _private_cases(tmp_path: Path, *names: str) -> Path:
    root = tmp_path / "cases"
    root.mkdir()
    shutil.copy(CASES / "world.yaml", root)
    for name in names:
        shutil.copytree(CASES / name, root / name)
    return root


def test_validate_names_a_misspelt_provider_folder_with_the_near_miss(tmp_path: Path) -> None:
    root = _private_cases(tmp_path, "normal")
    (root / "normal/openai-chat").rename(root / "normal/openai_chat")
    case = root / "normal/case.yaml"
    case.write_text(case.read_text().replace("  openai-chat: {}\n", ""))
    completed = run_cli("validate", "--cases", str(root))
    assert completed.returncode == 2
    assert completed.stderr.count("error: ") == 1
    assert "normal/openai_chat: folder openai_chat/ names no known provider, so none of its fixtures runs. " \
           "Fix: did you mean 'openai-chat'?" in completed.stderr


def test_validate_names_fixtures_of_a_provider_the_case_does_not_list(tmp_path: Path) -> None:
    root = _private_cases(tmp_path, "normal")
    case = root / "normal/case.yaml"
    case.write_text(case.read_text().replace("  gemini: {}\n", ""))
    completed = run_cli("validate", "--cases", str(root))
    assert completed.returncode == 2
    assert "fixtures for gemini are here, but the case does not list gemini under providers:" in completed.stderr


def test_validate_fails_a_case_whose_expectation_the_recordings_do_not_meet(tmp_path: Path) -> None:
    root = _private_cases(tmp_path, "normal")
    case = root / "normal/case.yaml"
    case.write_text(case.read_text().replace("turns: [tool_calls, text]", "turns: [tool_calls, tool_calls]"))
    completed = run_cli("validate", "--cases", str(root))
    assert completed.returncode == 1
    assert "normal [openai-chat, body]: turn kinds: expected tool_calls → tool_calls, got tool_calls → text" \
        in completed.stderr
    assert "10 case item(s) do not meet their expectation" in completed.stderr


# ---- init and schema -------------------------------------------------------------------------------------------

def test_init_scaffolds_a_repository_whose_example_passes_with_its_snapshots(tmp_path: Path) -> None:
    completed = run_cli("init", str(tmp_path))
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "pyproject.toml").read_text() == (
        '[tool.pytest.ini_options]\nconformance_cases = ["cases"]\n'
        'conformance_adapters = ["conformance_adapter.py:ADAPTER"]\npythonpath = ["."]\n')
    case = (tmp_path / "cases/example/case.yaml").read_text()
    assert case.startswith("# yaml-language-server: $schema=../../.conformance/case.schema.json\nid: example\n")
    assert (tmp_path / "cases/example/case.yaml").parent.joinpath("../../.conformance/case.schema.json").is_file()
    providers = ["anthropic-messages", "app-openai-chat", "bedrock-converse", "gemini", "openai-chat",
                 "openai-responses"]
    assert sorted(path.name for path in (tmp_path / "cases/__snapshots__/example").iterdir()) == sorted(
        f"{provider}{suffix}" for provider in providers for suffix in (".json", ".requests.json"))
    assert "pull_request" in (tmp_path / ".github/workflows/conformance.yml").read_text()
    validated = run_cli("validate", "--cases", str(tmp_path / "cases"), "--adapter",
                        f"{tmp_path / 'conformance_adapter.py'}:ADAPTER")
    assert validated.returncode == 0, validated.stderr
    tested = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conformance.pytest_plugin"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert tested.returncode == 0 and "12 passed" in tested.stdout, tested.stdout[-2000:]


def test_init_writes_nothing_over_existing_files(tmp_path: Path) -> None:
    (tmp_path / "conformance_adapter.py").write_text("mine\n")
    completed = run_cli("init", str(tmp_path))
    assert completed.returncode == 2 and "conformance_adapter.py: already exists" in completed.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["conformance_adapter.py"]
    assert (tmp_path / "conformance_adapter.py").read_text() == "mine\n"


def test_init_adds_the_ini_section_or_says_which_lines_to_add(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a/pyproject.toml").write_text('[project]\nname = "app"\n')
    run_cli("init", str(tmp_path / "a"))
    assert (tmp_path / "a/pyproject.toml").read_text() == (
        '[project]\nname = "app"\n\n[tool.pytest.ini_options]\nconformance_cases = ["cases"]\n'
        'conformance_adapters = ["conformance_adapter.py:ADAPTER"]\npythonpath = ["."]\n')
    (tmp_path / "b").mkdir()
    (tmp_path / "b/pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-q"\n')
    completed = run_cli("init", str(tmp_path / "b"))
    assert (tmp_path / "b/pyproject.toml").read_text() == '[tool.pytest.ini_options]\naddopts = "-q"\n'
    assert 'add these lines to it yourself:\n    conformance_cases = ["cases"]' in completed.stdout


@pytest.mark.parametrize("name", ["case", "world"])
def test_schema_prints_the_versioned_schema_and_its_path(name: str) -> None:
    printed = run_cli("schema", name)
    assert json.loads(printed.stdout)["$id"] == f"urn:conformance:schema:{name}:1"
    located = run_cli("schema", name, "--path")
    assert Path(located.stdout.strip()).read_text() == printed.stdout


def test_cases_replace_the_bundled_ones_unless_with_bundled(tmp_path: Path) -> None:
    root = _private_cases(tmp_path, "normal")
    (root / "normal").rename(root / "mine")
    case = root / "mine/case.yaml"
    case.write_text(case.read_text().replace("id: normal\n", "id: mine\n"))
    alone = run_cli("run", "--cases", str(root), "--report-dir", str(tmp_path / "a"), "--provider", "gemini")
    both = run_cli("run", "--cases", str(root), "--with-bundled", "--report-dir", str(tmp_path / "b"),
                   "--provider", "gemini", "--case", "mine", "--case", "normal")
    assert (alone.returncode, both.returncode) == (0, 0), both.stderr
    assert {row[0] for row in _rows(tmp_path / "a")} == {"mine"}
    assert {row[0] for row in _rows(tmp_path / "b")} == {"mine", "normal"}


def test_help_loads_the_parsers_and_nothing_a_command_needs_only_when_it_runs() -> None:
    """``conformance --help`` (and a usage error) import the parsers alone: no YAML, no file lock, no HTTP client,
    no schema validator, no configuration reader, no snapshot or diff library (docs/performance.md)."""
    probe = ("import runpy, sys\nsys.argv = ['conformance', '--help']\ntry:\n"
             "    runpy.run_module('conformance', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(completed.stderr.split())
    assert "usage: conformance" in completed.stdout
    heavy = {"yaml", "filelock", "urllib.request", "http.client", "jsonschema", "syrupy", "deepdiff", "inspect",
             "conformance.engine.settings", "conformance.report.files", "conformance.engine.yamlfile", "venv"}
    assert not heavy & loaded, sorted(heavy & loaded)
    assert len(loaded) <= 150, len(loaded)


# ---- Lanes over processes --------------------------------------------------------------------------------------

def test_run_over_two_processes_writes_the_reports_of_a_serial_run_byte_for_byte(tmp_path: Path) -> None:
    # No LiteLLM lane: LiteLLM makes up a new response id per call when the vendor's has none, so its rows differ
    # from run to run however they are run.
    selection = ("--stack", "openai-chat@openai-sdk", "--stack", "openai-chat@openai-sdk+otel",
                 "--stack", "anthropic-messages@anthropic-sdk+openllmetry", "--stack", "bedrock-converse@langchain",
                 "--case", "normal", "--case", "cached_usage", "--case", "http_quota")
    serial = run_cli("run", *OWN, *selection, "--report-dir", str(tmp_path / "serial"))
    assert serial.returncode == 0, serial.stderr
    # A process of its own: the pool forks it, and a test worker has threads of its own that a fork would copy.
    forked = subprocess.run([sys.executable, "-m", "conformance", "run", *OWN, *selection, "--jobs", "2",
                             "--report-dir", str(tmp_path / "forked")], capture_output=True, text=True, check=False)
    assert forked.returncode == 0, forked.stderr
    lanes = {provider for _, provider, _ in _rows(tmp_path / "serial")}
    assert {"openai-chat@openai-sdk+otel", "bedrock-converse@langchain", "openai-chat"} <= lanes
    for name in ("report.json", "report.md", "report.html"):
        assert (tmp_path / "forked" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), name


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_run_refuses_a_job_count_that_is_not_a_positive_number_or_auto(jobs: str, tmp_path: Path) -> None:
    completed = run_cli("run", *OWN, "--jobs", jobs, "--report-dir", str(tmp_path))
    assert completed.returncode == 2 and "--jobs" in completed.stderr and "auto" in completed.stderr
