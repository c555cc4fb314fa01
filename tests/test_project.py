"""The project's promises about itself: CI runs the README's test command verbatim; the docs show what ships."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```sh\n(.+?)\n```", readme)
    assert len(commands) >= 2
    assert commands[1] in (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert "conformance run" in commands[0]


def test_the_documented_ci_recipe_is_the_shipped_workflow() -> None:
    readme = (ROOT / "docs/ci.md").read_text(encoding="utf-8")
    workflow = (ROOT / ".github/workflows/conformance.yml").read_text(encoding="utf-8")
    assert "```yaml\n" + workflow + "```" in readme
    assert "conformance diff" in workflow and "--junitxml" in workflow


def test_the_documented_case_list_is_generated_from_the_case_files() -> None:
    from conformance.engine.cases import load_cases
    from conformance.report.catalogue import END, START, render_catalogue

    readme = (ROOT / "docs/cases.md").read_text(encoding="utf-8")
    block = readme[readme.index(START): readme.index(END) + len(END)] + "\n"
    assert block == render_catalogue(load_cases([ROOT / "cases"])), (
        "docs/cases.md's case list is stale: paste the output of `conformance list --markdown`")


def test_the_readme_starts_with_the_newcomers_path() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", readme, flags=re.MULTILINE)
    assert headings[:4] == ["Use it in your repository", "Write a case", "Review a changed classification",
                            "Gate an upgrade in CI"]
    for link in re.findall(r"\]\((docs/[^)]+)\)", readme):
        assert (ROOT / link).is_file(), link


def test_ci_keeps_mypys_cache_outside_the_clean_clone() -> None:
    """A clean clone has no .mypy_cache: the cache is kept where the next run finds it (docs/ci.md)."""
    script = (ROOT / ".ci/run").read_text(encoding="utf-8")
    export = re.search(r'^export MYPY_CACHE_DIR="(.+)"$', script, flags=re.MULTILINE)
    assert export is not None and "$HOME" in export.group(1)
    assert script.index("export MYPY_CACHE_DIR") < script.index(".venv/bin/mypy")
    workflow = (ROOT / ".github/workflows/conformance.yml").read_text(encoding="utf-8")
    assert "actions/cache@" in workflow and "path: ~/.cache/conformance/mypy" in workflow
    assert 'export MYPY_CACHE_DIR="$HOME/.cache/conformance/mypy"' in workflow
    assert workflow.index("MYPY_CACHE_DIR") < workflow.index(".venv/bin/mypy")
