"""The built wheel, installed as a team installs it, in a repository of its own that has its own ``providers``
package: the bundled cases run from any folder, ``conformance init`` + ``pytest`` work through the entry point,
snapshots are updated and checked, a user adapter runs through ``conformance run`` and ``pytest``, and an
adapter's exception shows its own traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.installed import run, shared_wheel

# End-to-end: it builds a wheel and installs it in a new venv (pytest -m "not e2e" skips it).
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent.parent

BROKEN_ADAPTER = '''
import dataclasses
from conformance.providers.openai_chat import ADAPTER as CHAT

def classify(body):
    return body["choices"][0]["no_such_field"]

ADAPTER = dataclasses.replace(CHAT, id="app-openai-chat", classify_body=classify)
'''


_run = run


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh virtual environment with the wheel (and its dependencies) installed, and its environment."""
    return shared_wheel(tmp_path_factory)


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A team's repository, with a ``providers`` package of its own (a common name in LLM apps)."""
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers/__init__.py").write_text("")
    (tmp_path / "providers/llm.py").write_text(
        "import dataclasses\nfrom conformance.providers.openai_chat import ADAPTER as CHAT\n"
        "ADAPTER = dataclasses.replace(CHAT, id='app-openai-chat')\n")
    return tmp_path


def test_the_bundled_cases_run_from_any_folder(installed: tuple[Path, dict[str, str]], repository: Path) -> None:
    bin_dir, env = installed
    completed = _run(str(bin_dir / "conformance"), "run", "--report-dir", "r", cwd=repository, env=env)
    # Found and run from the installed package; whether they all pass is test_the_whole_bundled_matrix_passes's.
    assert completed.returncode in (0, 1), completed.stderr[-2000:]
    report = json.loads((repository / "r/report.json").read_text())
    assert report["summary"]["cases"] == len(list((ROOT / "cases").glob("*/case.yaml")))
    # Every provider folder of the bundled cases, a model variant (`openai-chat~deepseek-v4`) its own column.
    folders = {path.name for path in (ROOT / "cases").glob("*/*")
               if path.is_dir() and path.parent.name != "__snapshots__"}
    assert set(report["providers"]) == folders and len(folders) > 5, (sorted(report["providers"]), sorted(folders))
    listed = _run(str(bin_dir / "python"), "-m", "conformance", "list", cwd=repository, env=env)
    assert listed.returncode == 0 and "normal" in listed.stdout, listed.stderr  # cwd on sys.path: no shadowing


def test_init_then_pytest_snapshots_and_a_user_adapter(installed: tuple[Path, dict[str, str]],
                                                       repository: Path) -> None:
    bin_dir, env = installed
    assert _run(str(bin_dir / "conformance"), "init", cwd=repository, env=env).returncode == 0
    first = _run(str(bin_dir / "python"), "-m", "pytest", "-q", cwd=repository, env=env)
    assert first.returncode == 0 and "12 passed" in first.stdout, first.stdout[-3000:]

    user = _run(str(bin_dir / "conformance"), "run", "--cases", "cases", "--adapter", "providers.llm:ADAPTER",
                "--report-dir", "r", cwd=repository, env={**env, "PYTHONPATH": str(repository)})
    assert user.returncode == 0, user.stderr[-2000:]
    rows = json.loads((repository / "r/report.json").read_text())["results"]
    assert {row["provider"] for row in rows} == {"anthropic-messages", "bedrock-converse", "gemini", "openai-chat",
                                                 "openai-responses", "app-openai-chat"}

    fixture = repository / "cases/example/app-openai-chat/turn2.json"
    body = json.loads(fixture.read_text())
    body["usage"]["completion_tokens"] += 7
    body["usage"]["total_tokens"] += 7
    fixture.write_text(json.dumps(body))
    changed = _run(str(bin_dir / "python"), "-m", "pytest", "-q", "-k", "app-openai-chat-body", cwd=repository, env=env)
    assert changed.returncode == 1
    assert "turn 2 › usage › output_tokens:" in changed.stdout, changed.stdout[-3000:]
    accepted = _run(str(bin_dir / "python"), "-m", "pytest", "-q", "--snapshot-update", cwd=repository, env=env)
    assert accepted.returncode == 0, accepted.stdout[-3000:]
    assert _run(str(bin_dir / "python"), "-m", "pytest", "-q", cwd=repository, env=env).returncode == 0

    (repository / "conformance_adapter.py").write_text(BROKEN_ADAPTER)
    broken = _run(str(bin_dir / "python"), "-m", "pytest", "-q", "-k", "app-openai-chat-body", "--tb=short",
                  cwd=repository, env=env)
    assert broken.returncode == 1
    assert 'return body["choices"][0]["no_such_field"]' in broken.stdout, broken.stdout[-3000:]
    assert "conformance: case example [app-openai-chat, body], turn 1 (reading the response)" in broken.stdout
