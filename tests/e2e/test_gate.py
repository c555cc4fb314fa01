"""The upgrade gate in a team's repository: ``conformance gate``, ``conformance comment``, the workflow ``conformance
init`` writes, and the local run of that workflow's steps in a temporary consumer repository (docs/ci.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conformance import __version__
from conformance.commands.gate import MARKER
from tests.fake_github import FakeGitHub
from tests.helpers import cli

# End-to-end: it starts processes, builds wheels, runs gates or a browser (pytest -m "not e2e" skips it).
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parent.parent.parent


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("gate") / "runs.json"
    completed = subprocess.run([sys.executable, str(ROOT / "scripts/run-gate-locally"), "--json", str(out)],
                               capture_output=True, text=True, check=False, timeout=900)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return json.loads(out.read_text())


def failed_steps(run: dict) -> list[str]:
    return [step["name"] for step in run["steps"] if step["outcome"] == "failure"]


def test_a_no_op_change_runs_the_gate_and_passes(local_runs: dict) -> None:
    run = local_runs["runs"]["noop"]
    assert run["relevant"] and run["changed"] == ["requirements.txt"]
    assert run["result"] == "success", run["steps"]
    assert "**0 regression(s)**, 0 change(s)" in run["summary"]


def test_a_regressing_sdk_bump_fails_the_gate_with_the_regression_named(local_runs: dict) -> None:
    run = local_runs["runs"]["sdk-bump"]
    assert run["relevant"] and run["result"] == "failure"
    assert failed_steps(run) == ["Upgrade gate (base and head reports, their diff)"]
    summary = run["summary"]
    assert "**1 regression(s)**" in summary
    assert "| ❌ regression | example | app-openai-chat | body | passed → failed" in summary
    assert "turn 1 kind tool\\_calls → text" in summary
    assert "fixtures: cases/example/app-openai-chat/turn1.json" in summary
    # The comment step still ran after the failed gate, and so did the upload.
    outcomes = {step["name"]: step["outcome"] for step in run["steps"]}
    assert outcomes["Pull-request comment (updated in place)"] == "success"
    assert outcomes["actions/upload-artifact@v4"] == "success"


def test_the_pull_request_comment_is_updated_in_place(local_runs: dict) -> None:
    comments = local_runs["comments"]["7"]  # two pushes to pull request 7: the no-op, then the bump
    assert len(comments) == 1
    assert comments[0]["body"].startswith(MARKER) and "**1 regression(s)**" in comments[0]["body"]
    calls = [call for call in local_runs["api_calls"] if "/issues/7/" in call or "/issues/comments/" in call]
    assert [call.split()[0] for call in calls] == ["GET", "POST", "GET", "PATCH"]


def test_a_base_that_cannot_be_built_is_said_clearly_and_does_not_fail(local_runs: dict) -> None:
    run = local_runs["runs"]["broken-base"]
    assert run["result"] == "success", run["steps"]
    summary = run["summary"]
    assert "could not be built: the gate did not compare anything" in summary
    assert "installing the base's stack failed: ` python -m pip install -r requirements.txt exited 1 `" in summary
    assert "acme-llm==0.9.0" in summary  # the end of pip's own output
    assert "cannot read" not in summary


def test_an_app_only_change_runs_the_gate_and_a_docs_change_skips_it(local_runs: dict) -> None:
    app = local_runs["runs"]["app-change"]
    assert app["changed"] == ["support_agent/reading.py"] and app["relevant"]
    assert app["result"] == "failure" and failed_steps(app) == ["Upgrade gate (base and head reports, their diff)"]
    assert "**1 regression(s)**" in app["summary"] and "turn 1 kind tool\\_calls → text" in app["summary"]
    assert len(local_runs["comments"]["9"]) == 1
    docs = local_runs["runs"]["docs-only"]
    assert docs["changed"] == ["README.md"] and not docs["relevant"] and docs["result"] == "success"
    outcomes = {step["name"]: step["outcome"] for step in docs["steps"]}
    assert outcomes["Upgrade gate (base and head reports, their diff)"] == "skipped"
    assert "Pull-request comment (updated in place)" not in outcomes  # the comment job did not start
    assert "10" not in local_runs["comments"]


def test_the_workflow_runs_on_every_pull_request_and_needs_only_what_it_uses(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("openai==2.1.0\n")
    assert cli("init", str(tmp_path)).returncode == 0
    text = (tmp_path / ".github/workflows/conformance.yml").read_text()
    workflow = yaml.safe_load(text)
    # No path filter: `conformance affected` decides from the configuration, as the code grows.
    assert workflow[True] == {"pull_request": None}
    names = [step.get("name") for step in workflow["jobs"]["gate"]["steps"]]
    affected = names.index("Does the change touch what the reports depend on?")
    assert affected < names.index("Install this branch's stack") < names.index(
        "Upgrade gate (base and head reports, their diff)")
    assert "conformance affected --base" in workflow["jobs"]["gate"]["steps"][affected]["run"]
    assert workflow["jobs"]["comment"]["if"] == "always() && needs.gate.outputs.relevant == 'true'"
    # The head's code runs with a read-only token not left in .git/config; the write token is only in the comment
    # job, which checks nothing out and installs only the suite (docs/ci.md).
    assert workflow["permissions"] == {"contents": "read"}
    gate, comment = workflow["jobs"]["gate"], workflow["jobs"]["comment"]
    assert gate["permissions"] == {"contents": "read"}
    assert gate["steps"][0]["uses"].startswith("actions/checkout")
    assert gate["steps"][0]["with"]["persist-credentials"] is False
    assert comment["permissions"] == {"pull-requests": "write"} and comment["needs"] == "gate"
    assert not any(str(step.get("uses", "")).startswith("actions/checkout") for step in comment["steps"])
    comment_runs = " ".join(step.get("run", "") for step in comment["steps"])
    assert "CONFORMANCE_INSTALL" not in comment_runs and "conformance comment" in comment_runs
    assert "github.token" not in json.dumps(gate)
    assert workflow["env"]["CONFORMANCE_INSTALL"] == "python -m pip install -r requirements.txt"
    # `conformance` on PyPI is another project: the suite is `llm-conformance`, pinned to this version; emptied, the
    # install step stops with a message.
    assert workflow["env"]["CONFORMANCE_SUITE"] == f"llm-conformance=={__version__}"
    install = workflow["jobs"]["gate"]["steps"][2]["run"]
    completed = subprocess.run(["bash", "-eo", "pipefail", "-c", install], capture_output=True, text=True,
                               env={"PATH": "/usr/bin:/bin", "CONFORMANCE_SUITE": "", "CONFORMANCE_INSTALL": "true"},
                               check=False)
    assert completed.returncode == 1 and "set CONFORMANCE_SUITE" in completed.stdout
    runs = " ".join(step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"])
    assert "conformance gate" in runs and "conformance comment" in runs
    assert "pytest" not in runs and "chromium" not in runs  # no unit tests, no browser before the gate


@pytest.mark.parametrize(("files", "expected"), [
    ({"pyproject.toml": "[project]\nname = 'agent'\n"}, "python -m pip install -e ."),
    ({}, "true"),
])
def test_init_writes_the_install_command_the_repository_suggests(tmp_path: Path, files: dict[str, str],
                                                                 expected: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = cli("init", str(tmp_path))
    assert result.returncode == 0 and f"`{expected}`" in result.stdout
    workflow = yaml.safe_load((tmp_path / ".github/workflows/conformance.yml").read_text())
    assert workflow["env"]["CONFORMANCE_INSTALL"] == expected


def git(repo: Path, *arguments: str) -> None:
    subprocess.run(["git", *arguments], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.invalid")
    git(repo, "config", "user.name", "CI")
    (repo / "README.md").write_text("# agent\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "before the suite")
    assert cli("init", str(repo)).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the suite")
    return repo


def test_a_base_without_cases_has_nothing_to_compare(repository: Path) -> None:
    result = cli("gate", "--base", "HEAD~1", "--share-head-packages", cwd=repository)
    assert result.returncode == 0, result.stderr
    comment = (repository / "reports/conformance/comment.md").read_text()
    assert comment.startswith(MARKER) and "has no cases folder" in comment
    assert (repository / "reports/conformance/head/report.json").is_file()


@pytest.mark.parametrize(("strict", "code"), [((), 0), (("--strict-base",), 2)])
def test_a_base_ref_that_is_not_fetched_is_named(repository: Path, strict: tuple[str, ...], code: int) -> None:
    result = cli("gate", "--base", "origin/main", *strict, cwd=repository)
    assert result.returncode == code
    assert "origin/main is not a commit in this clone: fetch it" in result.stderr
    assert "fetch-depth: 0" in (repository / "reports/conformance/diff.md").read_text()


def test_a_missing_git_is_named_not_a_traceback(repository: Path) -> None:
    result = cli("gate", "--base", "HEAD", cwd=repository, env={"PATH": "/nonexistent"})
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "git:" in (repository / "reports/conformance/diff.md").read_text()


def test_a_base_without_the_suite_and_no_suite_option_is_named(repository: Path) -> None:
    result = cli("gate", "--base", "HEAD", "--strict-base", cwd=repository)  # a fresh venv, nothing shared
    assert result.returncode == 2
    assert "no --suite says where to get it" in (repository / "reports/conformance/diff.md").read_text()


def test_an_earlier_verdict_is_never_left_behind(repository: Path) -> None:
    out = repository / "reports/conformance"
    out.mkdir(parents=True)
    (out / "comment.md").write_text(f"{MARKER}\nold verdict\n")
    cli("gate", "--base", "HEAD", "--cases", "nowhere", cwd=repository)
    assert "old verdict" not in (out / "comment.md").read_text()


def test_a_head_that_cannot_run_its_cases_exits_2(repository: Path) -> None:
    result = cli("gate", "--base", "HEAD", "--cases", "nowhere", cwd=repository)
    assert result.returncode == 2
    assert "no cases folder (nowhere)" in (repository / "reports/conformance/diff.md").read_text()


def test_an_empty_base_ref_is_refused(repository: Path) -> None:
    result = cli("gate", "--base", "origin/", cwd=repository)
    assert result.returncode == 2 and "--base" in result.stderr and "pull_request" in result.stderr


def event(tmp_path: Path, number: int = 12) -> dict[str, str]:
    (tmp_path / "event.json").write_text(json.dumps({"pull_request": {"number": number}}))
    return {"GITHUB_EVENT_PATH": str(tmp_path / "event.json"), "GITHUB_REPOSITORY": "acme/agent",
            "GITHUB_TOKEN": "fake-token"}


def test_comment_posts_once_then_edits_its_own_comment(tmp_path: Path) -> None:
    (tmp_path / "comment.md").write_text(f"{MARKER}\nfirst\n")
    with FakeGitHub() as github:
        github.comments[12] = [{"id": 5, "body": "a reviewer's comment"}]
        env = {**event(tmp_path), "GITHUB_API_URL": github.url}
        assert cli("comment", str(tmp_path / "comment.md"), env=env).returncode == 0
        (tmp_path / "comment.md").write_text(f"{MARKER}\nsecond\n")
        second = cli("comment", str(tmp_path / "comment.md"), env=env)
    assert second.returncode == 0 and "updated comment" in second.stdout
    assert [comment["body"] for comment in github.comments[12]] == ["a reviewer's comment", f"{MARKER}\nsecond\n"]
    assert set(github.tokens) == {"Bearer fake-token"}


def test_comment_ignores_a_marked_comment_someone_else_wrote(tmp_path: Path) -> None:
    (tmp_path / "comment.md").write_text(f"{MARKER}\nthe gate\n")
    planted = {"id": 9, "body": f"{MARKER}\n0 regressions", "user": {"login": "someone", "type": "User"}}
    with FakeGitHub() as github:
        github.comments[12] = [planted]
        assert cli("comment", str(tmp_path / "comment.md"),
                   env={**event(tmp_path), "GITHUB_API_URL": github.url}).returncode == 0
    assert github.comments[12][0] == planted and github.comments[12][1]["body"] == f"{MARKER}\nthe gate\n"


def test_comment_without_write_access_warns_and_exits_0(tmp_path: Path) -> None:
    (tmp_path / "comment.md").write_text("text without the marker\n")
    with FakeGitHub(deny=True) as github:
        result = cli("comment", str(tmp_path / "comment.md"), env={**event(tmp_path), "GITHUB_API_URL": github.url})
    assert result.returncode == 0 and "HTTP 403" in result.stderr and "fork" in result.stderr


def test_comment_outside_a_pull_request_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "comment.md").write_text("text\n")
    result = cli("comment", str(tmp_path / "comment.md"), env={"GITHUB_EVENT_PATH": str(tmp_path / "none.json")})
    assert result.returncode == 0 and "not a pull_request event" in result.stdout


def test_a_long_comment_is_cut_at_githubs_limit(tmp_path: Path) -> None:
    (tmp_path / "comment.md").write_text(MARKER + "\n" + "x" * 100_000)
    with FakeGitHub() as github:
        assert cli("comment", str(tmp_path / "comment.md"),
                   env={**event(tmp_path), "GITHUB_API_URL": github.url}).returncode == 0
    body = github.comments[12][0]["body"]
    assert len(body) < 65_536 and body.endswith("and the artifacts.\n")


def test_init_says_when_a_lockfile_is_not_what_installs(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'agent'\n")
    (tmp_path / "uv.lock").write_text("version = 1\n")
    result = cli("init", str(tmp_path))
    assert result.returncode == 0 and "it does not read uv.lock" in result.stdout


# ---- What the gate writes never carries the credentials its commands hold (docs/ci.md) -------------------------------

SECRETS = ("s3cretPass", "ghs_Abcdefghijklmnopqrstuvwx0123", "glpatToken0123456789abcdef")


def test_credentials_in_the_install_command_and_its_output_are_masked(repository: Path, tmp_path: Path) -> None:
    install = ("echo Looking in indexes: https://alice:s3cretPass@pypi.example.invalid/simple; "
               "echo Collecting git+https://x-access-token:ghs_Abcdefghijklmnopqrstuvwx0123@github.com/o/r.git; "
               "echo Cloning https://glpatToken0123456789abcdef@gitlab.example.invalid/o/r; exit 3")
    summary = tmp_path / "summary.md"
    result = cli("gate", "--base", "HEAD", "--share-head-packages", "--install", install,
                 "--suite", "conformance @ git+https://glpatToken0123456789abcdef@gitlab.example.invalid/o/s",
                 cwd=repository, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 0, result.stderr
    out = repository / "reports/conformance"
    written = {name: (out / name).read_text() for name in ("comment.md", "diff.md", "base.log")}
    written["summary"], written["stderr"], written["stdout"] = summary.read_text(), result.stderr, result.stdout
    assert "installing the base's stack failed" in written["comment.md"]
    assert "https://<redacted>@gitlab.example.invalid/o/r" in written["comment.md"]  # the output is still shown
    for name, text in written.items():
        assert not [secret for secret in SECRETS if secret in text], name
        assert "alice" not in text, name


def test_the_heads_output_cannot_break_out_of_the_comments_code_block(repository: Path) -> None:
    hostile = ("```\n## ✅ all checks passed\n![x](https://img.example.invalid/p.png) [docs](https://x.example.invalid)"
               " @acme/owners\n````\n")
    escaped = "".join(f"\\x{byte:02x}" for byte in hostile.encode())  # the command itself holds none of it
    result = cli("gate", "--base", "HEAD", "--share-head-packages", "--install", f"printf '{escaped}'; exit 1",
                 cwd=repository)
    assert result.returncode == 0, result.stderr
    comment = (repository / "reports/conformance/comment.md").read_text()
    opening = next(line for line in comment.splitlines() if line.startswith("`") and line.endswith("text"))
    fence = opening.removesuffix("text")
    assert len(fence) == 5  # longer than the four backticks the output holds
    inside = comment.split(opening + "\n", 1)[1].split("\n" + fence + "\n", 1)[0]
    assert "## ✅ all checks passed" in inside and "@acme/owners" in inside
    outside = comment.replace(inside, "")
    assert "all checks passed" not in outside and "@acme" not in outside and "![" not in outside
