"""One configuration for both entry points (docs/cli.md, "Configuration"): the settings ``conformance init`` writes for
pytest are what ``conformance run`` and the other commands read, their flags over them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.commands.options import BUNDLED_CASES
from conformance.engine.cases import base_provider
from conformance.engine.settings import Settings, find_config, read_settings
from conformance.errors import InputError
from tests.helpers import cli

REPORTS = ("report.json", "report.md", "report.html")


def test_after_init_conformance_run_and_pytest_write_the_same_reports(pytester: pytest.Pytester) -> None:
    root = pytester.path
    assert cli("init", str(root)).returncode == 0
    ran = cli("run", cwd=root)  # no flags: the cases and the adapter stub come from what init wrote
    assert ran.returncode == 0, ran.stderr
    assert "app-openai-chat" in ran.stdout
    by_cli = {name: (root / "reports" / name).read_bytes() for name in REPORTS}
    shutil.rmtree(root / "reports")
    result = pytester.runpytest_inprocess("-q", "-p", "no:randomly")
    assert result.ret == 0, result.stdout.str()
    by_pytest = {name: (root / "reports" / name).read_bytes() for name in REPORTS}
    assert by_cli == by_pytest
    assert b'"app-openai-chat"' in by_cli["report.json"]


def test_the_commands_read_the_configuration_and_their_flags_go_over_it(tmp_path: Path) -> None:
    assert cli("init", str(tmp_path)).returncode == 0
    listed = cli("list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.split()[0] == "example", listed.stdout
    assert "app-openai-chat" in listed.stdout
    # --cases replaces the configured cases; --with-bundled adds the bundled ones beside them.
    bundled = cli("list", "--cases", str(BUNDLED_CASES), cwd=tmp_path)
    assert "example" not in bundled.stdout.split() and "normal" in bundled.stdout.split()
    both = cli("list", "--with-bundled", cwd=tmp_path)
    assert {"example", "normal"} <= set(both.stdout.split())
    assert cli("validate", cwd=tmp_path).returncode == 0
    # Without the configuration the stub is unknown: the same error a repository without init gets.
    ignored = cli("validate", "--no-config", "--cases", "cases", cwd=tmp_path)
    assert ignored.returncode == 2 and "unknown provider 'app-openai-chat'" in ignored.stderr
    # The configured report folder, relative to the configuration's folder, unless --report-dir says otherwise.
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'conformance_report = "out/conformance"\n')
    sub = tmp_path / "cases"
    assert cli("run", "--provider", "gemini", cwd=sub).returncode == 0
    assert (tmp_path / "out" / "conformance" / "report.json").is_file()
    assert cli("run", "--provider", "gemini", "--report-dir", str(tmp_path / "elsewhere"), cwd=sub).returncode == 0
    assert (tmp_path / "elsewhere" / "report.json").is_file()


def test_required_providers_mean_one_list_in_the_configuration_and_the_flag(tmp_path: Path) -> None:
    assert cli("init", str(tmp_path)).returncode == 0
    case = tmp_path / "cases" / "example" / "case.yaml"
    text = case.read_text()
    case.write_text(text.replace("  gemini: {}\n", ""))  # the example has no Gemini fixtures any more
    assert "gemini: {}" in text
    assert cli("run", cwd=tmp_path).returncode == 0
    flagged = cli("run", "--require-providers", "gemini", cwd=tmp_path)
    assert flagged.returncode == 1 and "case example has no fixtures for gemini" in flagged.stderr
    assert cli("run", "--require-providers", cwd=tmp_path).returncode == 1  # alone: every selected provider
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'conformance_require_providers = ["gemini"]\n')
    configured = cli("run", cwd=tmp_path)
    assert configured.returncode == 1 and "no fixtures for gemini" in configured.stderr


@pytest.mark.parametrize(("name", "text"), [
    ("pytest.ini", "[pytest]\nconformance_cases = cases more\nconformance_adapters =\n    a.py:X\n    pkg.mod:Y\n"
                   "pythonpath = src\nconformance_report =\n"),
    ("tox.ini", "[tox]\n[pytest]\nconformance_cases = cases more\nconformance_adapters =\n    a.py:X\n    pkg.mod:Y\n"
                "pythonpath = src\nconformance_report =\n"),
    ("setup.cfg", "[tool:pytest]\nconformance_cases = cases more\nconformance_adapters =\n    a.py:X\n    pkg.mod:Y\n"
                  "pythonpath = src\nconformance_report =\n"),
    ("pyproject.toml", '[tool.pytest.ini_options]\nconformance_cases = ["cases", "more"]\n'
                       'conformance_adapters = ["a.py:X", "pkg.mod:Y"]\npythonpath = ["src"]\n'
                       'conformance_report = ""\n'),
])
def test_each_configuration_file_pytest_reads_is_read_alike(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    (tmp_path / "deeper").mkdir()
    settings = read_settings(tmp_path / "deeper")
    assert settings == Settings(root=tmp_path, source=tmp_path / name, cases=(tmp_path / "cases", tmp_path / "more"),
                                adapters=(f"{tmp_path / 'a.py'}:X", "pkg.mod:Y"), report=None,
                                pythonpath=(tmp_path / "src",))


def test_the_first_file_that_configures_pytest_wins_as_in_pytest(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no pytest section: not a configuration
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\nconformance_cases = from-cfg\n")
    assert find_config(tmp_path) == (tmp_path / "setup.cfg", "tool:pytest")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # pytest.ini always wins, even empty
    assert read_settings(tmp_path).cases == ()
    assert read_settings(tmp_path).report == tmp_path / "reports"


def test_a_broken_configuration_is_named(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\nconformance_cases = 3\n")
    with pytest.raises(InputError, match="conformance_cases is not a list of strings"):
        read_settings(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options\n")
    result = cli("list", cwd=tmp_path)
    assert result.returncode == 2 and "pyproject.toml" in result.stderr and "not TOML" in result.stderr
    assert "Traceback" not in result.stderr


def test_only_the_configuration_names_code_to_import_and_no_config_imports_none(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('evil')\n"
                                      "from conformance.providers.openai_chat import ADAPTER\n")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nconformance_adapters = ["evil.py:ADAPTER"]\n')
    assert cli("list", "--no-config", cwd=tmp_path).returncode == 0
    assert not marker.exists()
    assert cli("list", cwd=tmp_path).returncode == 0
    assert marker.read_text() == "evil"  # named by the repository's configuration: imported, as pytest would


def test_list_providers_names_each_adapter_and_stack_with_what_it_is(tmp_path: Path) -> None:
    assert cli("init", str(tmp_path)).returncode == 0
    listed = cli("list", "--providers", cwd=tmp_path)
    assert listed.returncode == 0
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    for provider in ("openai-responses", "openai-chat", "anthropic-messages", "gemini", "bedrock-converse",
                     "app-openai-chat", "openai-chat@openai-sdk", "gemini@litellm"):
        assert provider in lines
        assert len(lines[provider].split(maxsplit=1)) == 2  # and what it is
    assert "AWS Bedrock Converse" in lines["bedrock-converse"]


def test_one_run_plans_runs_and_reports_what_both_entry_points_write(tmp_path: Path) -> None:
    """``conformance.session.Run`` alone, driven as the entry points drive it, writes the bundled run's reports
    byte for byte as ``conformance run`` does, and pytest does the same (its own test above)."""
    from conformance.session import Run, stopped_early_message

    assert cli("run", "--no-config", "--report-dir", str(tmp_path / "cli")).returncode == 0
    run = Run.configure()
    cases = run.load([BUNDLED_CASES])
    planned = [item for case in cases for item in run.plan(case)]
    assert planned and all(item.mode is not None for item in planned)  # nothing is required: nothing unrecorded
    for item in planned:
        run.execute(item)
    assert len(run.rows) == len(planned)
    assert {base_provider(lane) for _, lane in run.ran} == set(run.adapters)  # variants: their provider's
    run.write(run.report(run.fixture_files(cases), provenance=run.fixture_provenance(cases)), tmp_path / "run")
    for name in REPORTS:
        assert (tmp_path / "run" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    # A required provider a case lacks is planned as a not-recorded item, for both entry points.
    required = Run.configure(require=["all"])
    lacking = [item for case in cases for item in required.plan(case) if item.mode is None]
    assert lacking and all(item.lane not in item.case.providers for item in lacking)
    assert "left as they were" in stopped_early_message(3, "reports")


def test_the_bundled_setting_adds_the_bundled_cases_to_the_commands_too(tmp_path: Path) -> None:
    assert cli("init", str(tmp_path)).returncode == 0
    assert "normal" not in cli("list", cwd=tmp_path).stdout.split()
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'conformance_bundled = "conformance_bundled"\n')
    listed = cli("list", cwd=tmp_path).stdout.split()
    assert {"example", "normal", "truncation"} <= set(listed)
    assert "normal" not in cli("list", "--cases", "cases", cwd=tmp_path).stdout.split()  # --cases replaces them
    assert read_settings(tmp_path).bundled == tmp_path / "conformance_bundled"
