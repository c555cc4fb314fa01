"""End-to-end tests of the plugin's and the commands' sessions: each starts pytest or a command in a process
of its own (shards, stops, debugger, gate, hang guards)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CASES, cli, copied_cases
from tests.test_hardening_ii import _edit_json, _pytest
from tests.test_hardening_iii import _accept, _two_case_folder
from tests.test_hygiene import PATHOLOGICAL_PIECES
from tests.test_pytest_plugin import FAILING_ADAPTER, PLUGIN, _repository
from tests.test_shard import same_reports

# End-to-end: it starts processes (pytest -m "not e2e" skips it).
pytestmark = pytest.mark.e2e


def test_pytest_shards_merge_into_the_unsharded_pytest_report(tmp_path: Path) -> None:
    cases = copied_cases(tmp_path / "cases", 1)

    def run(report: str, *extra: str) -> str:
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "conformance_snapshots=false",
             f"--conformance-cases={cases}", f"--conformance-report={tmp_path / report}", *extra],
            capture_output=True, text=True, cwd=tmp_path, check=False)
        assert completed.returncode in (0, 1), completed.stdout[-2000:] + completed.stderr[-2000:]
        return completed.stdout

    run("full")
    outputs = [run(f"s{index}", f"--conformance-shard={index}/4") for index in (1, 2, 3, 4)]
    assert all("deselected" in output for output in outputs)
    assert cli("merge", *(str(tmp_path / f"s{index}") for index in (1, 2, 3, 4)),
               "--report-dir", str(tmp_path / "merged")).returncode == 0
    same_reports(tmp_path / "full", tmp_path / "merged")


def test_pytest_rejects_a_bad_shard_as_a_usage_error(tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CASES),
                                "--conformance-shard=5/4", f"--conformance-report={tmp_path}"],
                               capture_output=True, text=True, cwd=CASES.parent, check=False)
    assert completed.returncode == 4 and "--conformance-shard" in completed.stderr


def test_a_pytest_shard_of_a_selection_with_no_case_keeps_pytests_exit_code(tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CASES),
                                f"--conformance-cases={CASES}", "-k", "no_such_case_anywhere",
                                "--conformance-shard=1/2", f"--conformance-report={tmp_path}"],
                               capture_output=True, text=True, cwd=tmp_path, check=False)
    assert completed.returncode == 5


def test_the_gate_says_what_accept_matched_nothing(tmp_path: Path) -> None:
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    for command in (["init", "-q", "-b", "main"], ["config", "user.email", "ci@example.invalid"],
                    ["config", "user.name", "CI"]):
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)
    assert cli("init", str(repo)).returncode == 0
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-qm", "suite"], cwd=repo, check=True, capture_output=True)
    accept = _accept(tmp_path, "*refusal → text*", case="gone_case")
    result = cli("gate", "--base", "HEAD", "--share-head-packages", "--accept", str(accept), cwd=repo)
    assert result.returncode == 0, result.stderr
    comment = (repo / "reports/conformance/comment.md").read_text()
    assert "gone_case" in comment and "matched nothing" in comment and "matched nothing" in result.stderr


def test_a_pytest_run_narrowed_by_path_or_deselection_records_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = _two_case_folder(tmp_path)

    def report(*arguments: str) -> dict[str, object]:
        folder = tmp_path / f"r{len(list(tmp_path.glob('r*')))}"
        completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments,
                                    f"--conformance-cases={root}", f"--conformance-report={folder}",
                                    "-o", "conformance_snapshots=false", "--rootdir", str(tmp_path)],
                                   capture_output=True, text=True, cwd=tmp_path, check=False)
        assert completed.returncode == 0, completed.stdout[-1500:]
        measured = json.loads((folder / "report.json").read_text())["measured"]
        assert isinstance(measured, dict)
        return measured

    assert "selection" not in report(str(root))
    assert report(str(root / "normal"))["selection"] == {"paths": [str(root / "normal")]}
    deselected = report(str(root), "--deselect", "cases/refusal/case.yaml::refusal[openai-chat-body]")
    assert deselected["selection"] == {"deselected": 1}


def test_pytest_refuses_two_case_folders_holding_one_case_id(tmp_path: Path) -> None:
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(CASES / "world.yaml", folder)
        shutil.copytree(CASES / "normal", folder / "normal")
    completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conformance.pytest_plugin",
                                "--conformance-report=", "-p", "no:cacheprovider", "--conformance-cases",
                                str(tmp_path / "a"), "--conformance-cases", str(tmp_path / "b"),
                                "-o", "conformance_snapshots=false", "--rootdir", str(tmp_path)],
                               capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    assert completed.returncode != 0
    assert "duplicate case id 'normal'" in completed.stdout


def test_a_session_stopped_by_x_keeps_the_previous_reports(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    shutil.copytree(CASES, cases)
    report = tmp_path / "reports"
    assert _pytest(cases, report).returncode == 0
    before = (report / "report.json").read_bytes()
    _edit_json(cases / "cached_usage/openai-chat/turn1.json",
               lambda body: body["choices"][0].update(finish_reason="brand_new"))
    stopped = _pytest(cases, report, "-x")
    assert stopped.returncode == 1 and "stopped early" in stopped.stdout
    assert (report / "report.json").read_bytes() == before
    partial = _pytest(cases, report, "-x", "--conformance-report-partial")
    assert partial.returncode == 1 and (report / "report.json").read_bytes() != before


def test_a_host_process_that_runs_pytest_gets_its_gc_state_back(pytester: pytest.Pytester) -> None:
    _repository(pytester)
    # What the items leave alive joins the frozen objects every REFREEZE_EVERY case items (3 here: 10 items freeze
    # three more times). pytest's own clean-up, after every plugin's unconfigure, collects garbage (to surface
    # unraisable exceptions); the plugin gives the frozen objects back only after it, so that pass does not walk every
    # case and item.
    script = ("import gc, sys, pytest\n"
              "import conformance.pytest_plugin as plugin\n"
              "plugin.REFREEZE_EVERY = 3\n"
              "passes = []\n"
              "class Seen:\n"
              "    counts = []\n"
              "    ended = False\n"
              "    def pytest_runtest_logfinish(self):\n"
              "        self.counts.append(gc.get_freeze_count())\n"
              "    def pytest_unconfigure(self):\n"
              "        Seen.ended = True\n"
              "collect = gc.collect\n"
              "def counted(*arguments):\n"
              "    if Seen.ended:\n"
              "        passes.append(gc.get_freeze_count())\n"
              "    return collect(*arguments)\n"
              "gc.collect = counted\n"
              "code = pytest.main(['-q', '-p', 'conformance.pytest_plugin', '--snapshot-update'], plugins=[Seen()])\n"
              "print('frozen again during the run:', len(set(Seen.counts)) >= 3, Seen.counts[0] > 0)\n"
              "print('frozen during pytest clean-up:', all(count > 0 for count in passes), len(passes))\n"
              "print('frozen after the session:', gc.get_freeze_count())\n"
              "sys.exit(int(code))\n")
    result = pytester.run(sys.executable, "-c", script, timeout=300)
    assert result.ret == 0, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["*10 passed*", "frozen again during the run: True True",
                                 "frozen during pytest clean-up: True [1-9]*",
                                 "frozen after the session: 0"])


def test_a_pytest_command_line_ends_with_the_run_still_frozen(pytester: pytest.Pytester) -> None:
    # `pytest` and `python -m pytest` exit as soon as the session returns: the plugin leaves what it froze frozen,
    # so the interpreter's collection at shutdown does not walk every case, item and row (docs/performance.md).
    # An exit handler runs after the session, in the same process: it sees what the interpreter's shutdown sees.
    _repository(pytester)
    pytester.makeconftest("import atexit, gc\n"
                          "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n")
    for command in ([sys.executable, "-m", "pytest"], [str(Path(sys.executable).with_name("pytest"))]):
        result = pytester.run(*command, "-q", "-p", "no:cacheprovider", "--snapshot-update", timeout=300)
        assert result.ret == 0, result.stdout.str()[-2000:]
        result.stdout.fnmatch_lines(["*10 passed*", "frozen at exit: True"])


def test_pdb_stops_inside_the_adapter(pytester: pytest.Pytester) -> None:
    _repository(pytester, ini='conformance_cases = ["cases"]\nconformance_snapshots = false')
    pytester.makepyfile(my_adapter=FAILING_ADAPTER)
    child = pytester.spawn_pytest(" ".join([*PLUGIN, "--conformance-adapter", "my_adapter.py:ADAPTER", "-k",
                                            "openai-chat-body", "--pdb", "--conformance-report="]))
    import pexpect

    child.expect(r"\(Pdb\)")
    child.sendline("p body['id']")
    child.expect("chatcmpl")
    child.sendline("c")
    child.expect(pexpect.EOF, timeout=120)  # the run ends; a second prompt would be a hang, not a pass
    child.wait()


def test_pathological_lines_do_not_hang_the_scan() -> None:
    """A hang guard, not a speed measurement: linear scans take seconds; the old quadratic e-mail regex took
    84 s on 200 KB of ``a.a.a…`` (about 35 minutes on the 1 MB line here). Speed is measured by benchmarks."""
    program = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from conformance.replay.hygiene import redact, scan_text\n"
        "for piece in json.loads(sys.argv[1]):\n"
        "    line = piece * (1_000_000 // len(piece))\n"
        "    scan_text(Path('x'), line)\n"
        "    redact(line)\n"
    )
    completed = subprocess.run([sys.executable, "-c", program, json.dumps(PATHOLOGICAL_PIECES)], timeout=60,
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
