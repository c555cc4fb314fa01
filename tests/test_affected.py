"""``conformance affected``: the gate's triggers follow the configuration — the cases, the glue and the packages it
imports, the dependency files — so a change in the application's own package runs the gate and a docs change
does not (docs/ci.md, "When the gate runs")."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.commands.affected import watched
from tests.helpers import cli

STACK = '''"""The team's stack glue."""
from support_agent.llm import anthropic_llm
from . import sibling_helpers  # a relative import outside any package: nothing to follow
import json, os
'''


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A team's repository after ``init``: a stack module that imports the app's package, which imports another
    local package; an unrelated service beside them."""
    assert cli("init", str(tmp_path)).returncode == 0
    (tmp_path / "conformance_stack.py").write_text(STACK)
    for path, text in {
        "support_agent/__init__.py": "",
        "support_agent/llm/__init__.py": "",
        "support_agent/llm/anthropic_llm.py": "from shared_money import cents\nimport anthropic\n",
        "support_agent/tools.py": "def get_order(order_id): ...\n",
        "shared_money/__init__.py": "from .cents import cents\n",
        "shared_money/cents.py": "def cents(value): return value\n",
        "billing_service/__init__.py": "import shared_money\n",
        "docs/index.md": "# docs\n",
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'conformance_stacks = ["conformance_stack:STACKS"]\n')
    return tmp_path


def affected(app: Path, *files: str) -> str:
    result = cli("affected", "--files", *files, cwd=app)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_change_in_the_apps_package_or_what_it_imports_is_relevant(app: Path) -> None:
    for path in ("support_agent/tools.py", "support_agent/llm/anthropic_llm.py", "shared_money/cents.py",
                 "conformance_stack.py", "conformance_adapter.py", "cases/example/case.yaml",
                 "requirements.txt", "services/api/requirements-dev.txt", "uv.lock", "pyproject.toml",
                 ".github/workflows/conformance.yml"):
        out = affected(app, path)
        assert out.startswith("relevant: 1 of 1 changed file(s)") and f"  {path} (" in out, (path, out)


def test_a_change_nothing_depends_on_is_not(app: Path) -> None:
    out = affected(app, "README.md", "docs/index.md", "billing_service/__init__.py", ".github/workflows/other.yml",
                   "tests/conftest.py", "conformance_bundled/__snapshots__/normal/openai-chat.json")
    assert out.startswith("nothing the reports depend on changed (6 changed file(s))"), out


def test_the_bundled_sets_snapshots_and_the_root_conftest_are_relevant(app: Path) -> None:
    """With ``conformance_bundled``, the team's snapshots of the bundled cases are what the gate checks; the root
    conftest runs in its pytest session."""
    pyproject = app / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'conformance_bundled = "conformance_bundled"\n')
    for path, why in (("conformance_bundled/__snapshots__/normal/openai-chat.json", "under conformance_bundled/"),
                      ("conftest.py", "pytest's root conftest")):
        assert affected(app, path).startswith("relevant: 1 of 1") and f"  {path} ({why})" in affected(app, path)


def test_the_watched_set_is_read_from_the_code_without_importing_it(app: Path) -> None:
    (app / "support_agent/llm/anthropic_llm.py").write_text(
        "raise SystemExit('imported')\nfrom shared_money import cents\n")
    scope = watched(app, [app / "cases"], [f"{app}/conformance_adapter.py:ADAPTER", "conformance_stack:STACKS",
                                           "all", "openai-chat@openai-sdk"], [app])
    assert scope.folders == ("cases", "shared_money", "support_agent")
    assert scope.files == (".github/workflows/conformance.yml", "conformance_adapter.py", "conformance_stack.py",
                           "conftest.py")


def test_the_answer_reaches_github_actions_and_a_bad_base_is_named(app: Path, tmp_path: Path) -> None:
    output = tmp_path / "github_output"
    assert cli("affected", "--files", "support_agent/tools.py", cwd=app,
               env={"GITHUB_OUTPUT": str(output)}).returncode == 0
    assert cli("affected", "--files", "README.md", cwd=app, env={"GITHUB_OUTPUT": str(output)}).returncode == 0
    assert output.read_text() == "relevant=true\nrelevant=false\n"
    missing = cli("affected", "--base", "origin/nowhere", cwd=app)
    assert missing.returncode == 2 and "--base" in missing.stderr and "Traceback" not in missing.stderr


def test_a_changed_file_name_never_writes_control_characters_to_the_terminal(app: Path) -> None:
    out = affected(app, "support_agent/\x1b]0;pwned\x07tools.py")
    assert "\x1b" not in out and "\x07" not in out and out.startswith("relevant: 1 of 1")
