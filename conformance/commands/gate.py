"""``conformance gate``: a pull request's upgrade gate in one command, as the CI workflow ``conformance init``
writes runs it (docs/ci.md, "The gate in your repository").

1. **Head.** The checked-out branch's cases run through pytest with the current interpreter, where the workflow
   installed the branch's stack and the suite: the team's own adapters and stacks, as its pytest ini names them.
2. **Base.** The base ref is checked out beside (``git worktree``), its stack installed into a fresh virtual
   environment with the team's install command, then the *same* suite version as the head (``--suite``), so that
   only the team's change differs; its cases run there.
3. **Gate.** ``conformance diff`` of the two reports, written as ``diff.md`` / ``diff.json``, appended to the job
   summary, and as ``comment.md`` (for ``conformance comment``, which posts it on the pull request, updated in
   place). Exit 1 on a regression (``--fail-on change``: on any change), else 0.

When the base cannot be built (its stack does not install, its cases do not run, the ref is not fetched), the gate
says which step failed, with the end of its output, and exits 0 (``--strict-base``: 2), since no regression was
found; when the base has no cases folder yet, there is nothing to compare and it says so. A head that cannot run
its own cases exits 2.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from conformance import __version__
from conformance.errors import InputError, Problem

MARKER = "<!-- conformance-gate -->"
TAIL_LINES = 25
# The user-info of a URL, with or without a password (`https://<token>@github.com/…`, `https://user:pass@index/…`).
URL_USER_INFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^\s/?#@]+)@")


def mask_credentials(text: str) -> str:
    """``text`` with URL user-info and every secret shape the hygiene scan knows masked: what the gate writes (the
    logs, ``diff.md``, ``comment.md``, the job summary, its own messages) holds the team's install command and its
    output, which may carry an index password or a token (docs/ci.md)."""
    from conformance.replay.hygiene import redact
    from conformance.replay.secrets import REDACTED

    return redact(URL_USER_INFO.sub(lambda match: f"{match['scheme']}{REDACTED}@", text))


class StepFailed(Exception):
    """A step of building a report failed: what it was, and the end of its output."""

    def __init__(self, step: str, detail: str, output: str = "") -> None:
        super().__init__(step)
        self.step, self.detail, self.output = (mask_credentials(step), mask_credentials(detail),
                                               mask_credentials(output))


class Side(NamedTuple):
    """Where one report is built: the checkout, the interpreter, the log."""

    name: str
    checkout: Path
    python: str
    log: Path


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``conformance gate``'s options."""
    parser = commands.add_parser("gate", help="the pull request's upgrade gate: base and head reports with the same "
                                              "suite, their diff, a comment (docs/ci.md)")
    parser.add_argument("--base", required=True, metavar="REF",
                        help="the base branch as a git ref, e.g. origin/main (fetched: checkout with fetch-depth 0)")
    parser.add_argument("--cases", action="append", type=Path, default=[], metavar="DIR",
                        help="the cases folder(s), relative to the repository (default: cases)")
    parser.add_argument("--install", default="", metavar="COMMAND",
                        help="how the base branch's stack installs, run in its checkout with the base environment "
                             "first on PATH, e.g. 'python -m pip install -r requirements.txt'")
    parser.add_argument("--suite", default="", metavar="SPEC",
                        help="what pip installs into the base environment when it lacks this suite's version: the "
                             "requirement the head was installed with (llm-conformance==0.1.0, a wheel URL, "
                             "llm-conformance @ git+https://...)")
    parser.add_argument("--share-head-packages", action="store_true",
                        help="the base environment sees the head's packages behind its own (faster; the suite "
                             "comes from the head; only what the base installs differs)")
    parser.add_argument("--pytest-arg", action="append", default=[], metavar="ARG",
                        help="an extra pytest argument for both runs (repeatable), e.g. --pytest-arg=-n2")
    parser.add_argument("--report-dir", type=Path, default=Path("reports/conformance"),
                        help="where head/, base/, diff.md, diff.json, comment.md and the logs go")
    parser.add_argument("--accept", type=Path, metavar="FILE", help="accepted changes, as for conformance diff")
    parser.add_argument("--fail-on", choices=("regression", "change"), default="regression",
                        help="exit 1 on a regression (default), or on any regression or change")
    parser.add_argument("--strict-base", action="store_true",
                        help="exit 2 when the base report cannot be built (default: say so and exit 0)")


def run(arguments: argparse.Namespace) -> int:
    """Build both reports, diff them, write the outputs; the exit code of the module docstring."""
    # Imported when the command runs (DeepDiff is a third of the CLI's import time): `--help` reads the parser only.
    from conformance.report.diff import (
        accepted_warnings,
        apply_accepted,
        compare,
        fails,
        forward_changes,
        load_accepted,
        load_document,
        render_json,
        render_markdown,
        retry_changes,
        versions_moved,
    )

    check_ref_name(arguments.base)
    absolute = [str(path) for path in arguments.cases if path.is_absolute()]
    if absolute:
        raise InputError([Problem("--cases", None, f"{', '.join(absolute)} is absolute: the base would run the head's "
                                                   "folder", "name the cases folder relative to the repository")])
    accepted = load_accepted(arguments.accept) if arguments.accept is not None else None  # bad input fails first
    out = arguments.report_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("diff.md", "diff.json", "comment.md", "base.log"):  # never post an earlier run's verdict
        (out / stale).unlink(missing_ok=True)
    shutil.rmtree(out / "base", ignore_errors=True)
    (out / "head.log").write_text("")
    cases = [str(path) for path in arguments.cases] or ["cases"]
    head = Side("head", Path.cwd(), sys.executable, out / "head.log")
    try:
        _run_cases(head, cases, arguments.pytest_arg, out / "head")
    except StepFailed as failure:
        _publish(out, _failure_markdown("The head's report could not be built", failure, "head.log"))
        print(f"::error title=conformance gate::{failure.step} failed: {failure.detail}", file=sys.stderr)
        return 2
    base_ref = arguments.base
    with tempfile.TemporaryDirectory(prefix="conformance-gate-") as scratch:
        try:
            built = _build_base(base_ref, cases, arguments, Path(scratch), out)
        except StepFailed as failure:
            _publish(out, _failure_markdown(f"The base report (`{base_ref}`) could not be built: the gate did not "
                                            "compare anything", failure, "base.log"))
            print(mask_credentials(f"::warning title=conformance gate::the base report could not be built: "
                                   f"{failure.step} failed ({failure.detail}); see {out / 'base.log'}"),
                  file=sys.stderr)
            return 2 if arguments.strict_base else 0
        finally:
            _run(["git", "worktree", "remove", "--force", str(Path(scratch) / "base")], out / "base.log")
    if not built:
        _publish(out, f"## Conformance gate\n\nThe base (`{base_ref}`) has no cases folder "
                      f"({', '.join(f'`{case}`' for case in cases)}): nothing to compare yet. The head's report is "
                      "in the artifacts.\n")
        print("conformance gate: the base has no cases folder; nothing to compare")
        return 0
    (old, old_findings), (new, new_findings) = load_document(out / "base/report.json"), \
        load_document(out / "head/report.json")
    changes = compare(old, new, old_findings, new_findings) + forward_changes(out / "base/report.json",
                                                                              out / "head/report.json") + \
        retry_changes(out / "base/report.json", out / "head/report.json")
    notes = accepted_warnings(accepted, apply_accepted(changes, accepted)) if accepted is not None else []
    versions = versions_moved(out / "base/report.json", out / "head/report.json")
    markdown = render_markdown(changes, f"base ({base_ref})", "head", versions)
    # The comment stays short however many rows move: its table lists COMMENT_LINES lines, regressions first.
    comment = render_markdown(changes, f"base ({base_ref})", "head", versions, max_lines=COMMENT_LINES)
    if notes:  # said where the team reads the verdict, as `conformance diff` says them
        said = "\n" + "".join(f"- note: {line}\n" for line in notes)
        markdown, comment = markdown + said, comment + said
        for line in notes:
            print(f"::notice title=conformance gate::{line}", file=sys.stderr)
    from conformance.report.files import write_atomic  # filelock and the report layer: not for --help

    write_atomic(out / "diff.json", render_json(changes, f"base ({base_ref})", "head"))
    _publish(out, markdown, comment)
    print(mask_credentials(markdown), end="")
    return 1 if fails(changes, arguments.fail_on) else 0


def _build_base(ref: str, cases: list[str], arguments: argparse.Namespace, scratch: Path, out: Path) -> bool:
    """The base report in ``out/base``; False when the base has no cases folder. StepFailed names what failed."""
    log = out / "base.log"
    log.write_text("")
    commit = _step("finding the base ref", ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], log,
                   detail=f"{ref} is not a commit in this clone: fetch it (actions/checkout with fetch-depth: 0)")
    checkout = scratch / "base"
    _step("checking out the base", ["git", "worktree", "add", "--detach", str(checkout), commit.strip()], log)
    if not any((checkout / case).is_dir() for case in cases):
        return False
    environment = scratch / "venv"
    try:
        import venv

        venv.EnvBuilder(with_pip=True, clear=True).create(environment)
    except (OSError, subprocess.CalledProcessError) as error:
        raise StepFailed("creating the base environment", str(error)) from None
    python = str(environment / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
    if arguments.share_head_packages:
        try:
            _share_head_packages(python)
        except (OSError, subprocess.CalledProcessError) as error:
            raise StepFailed("sharing the head's packages with the base environment", str(error)) from None
    env = {**os.environ, "VIRTUAL_ENV": str(environment),
           "PATH": str(Path(python).parent) + os.pathsep + os.environ.get("PATH", "")}
    env.pop("PYTHONHOME", None)
    if arguments.install:
        # The same shell as the workflow's own step (bash), not /bin/sh: a bash-only command works on both sides.
        shell = [shutil.which("bash") or "/bin/sh", "-c", arguments.install]
        _step("installing the base's stack", shell, log, cwd=checkout, env=env, shown=arguments.install)
    version = _suite_version(python, env)
    if version != __version__ and not arguments.suite:
        has = f"conformance {version}" if version else "no conformance"
        raise StepFailed("installing the suite into the base environment", f"it has {has}, the head {__version__}, "
                         "and no --suite says where to get it: set CONFORMANCE_SUITE to the requirement the head "
                         "was installed with")
    if version != __version__:
        _step(f"installing the suite into the base environment ({arguments.suite})",
              [python, "-m", "pip", "install", "-q", arguments.suite], log, env=env)
        version = _suite_version(python, env)
        if version != __version__:
            raise StepFailed("matching the suite version", f"the base environment has conformance {version}, the "
                             f"head {__version__}: make --suite name conformance=={__version__}")
    _run_cases(Side("base", checkout, python, log), cases, arguments.pytest_arg, out / "base", env)
    return True


def _run_cases(side: Side, cases: list[str], extra: list[str], report: Path, env: dict[str, str] | None = None
               ) -> None:
    """The side's cases through pytest, the report in ``report``; StepFailed when no report came out."""
    shutil.rmtree(report, ignore_errors=True)
    present = [case for case in cases if (side.checkout / case).is_dir()]
    if not present:
        raise StepFailed(f"running the {side.name}'s cases", f"no cases folder ({', '.join(cases)}) in "
                                                               f"{side.checkout}")
    command = [side.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *present,
               *(f"--conformance-cases={case}" for case in present), f"--conformance-report={report}", *extra]
    completed = _run(command, side.log, cwd=side.checkout, env=env)
    if completed.returncode not in (0, 1) or not (report / "report.json").is_file():
        raise StepFailed(f"running the {side.name}'s cases", f"pytest exited {completed.returncode} without a "
                                                               "report", _tail(completed.stdout))


def _step(what: str, command: list[str], log: Path, detail: str = "", cwd: Path | None = None,
          env: dict[str, str] | None = None, shown: str = "") -> str:
    """Run one step; StepFailed with ``detail`` (default: the command, as ``shown``, and its exit code)."""
    completed = _run(command, log, cwd=cwd, env=env)
    if completed.returncode == 127 and detail:  # the program itself is missing: say that, not the usual cause
        detail = completed.stdout.strip()
    if completed.returncode != 0:
        raise StepFailed(what, detail or f"{shown or shlex.join(command)} exited {completed.returncode}",
                         _tail(completed.stdout))
    return completed.stdout


def _run(command: list[str], log: Path, cwd: Path | None = None, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    """Run, output and errors together, appended to ``log``; a program that cannot start (``git`` not installed)
    is an exit of 127 with the reason as its output."""
    try:
        completed = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace", check=False)
    except OSError as error:
        completed = subprocess.CompletedProcess(command, 127, f"{command[0]}: {error.strerror or error}")
    completed.stdout = mask_credentials(completed.stdout)
    with log.open("a", encoding="utf-8") as stream:
        shown = mask_credentials(shlex.join(command))
        stream.write(f"$ {shown}\n{completed.stdout}\n[exit {completed.returncode}]\n")
    return completed


def _suite_version(python: str, env: dict[str, str]) -> str | None:
    try:
        completed = subprocess.run([python, "-c",
                                    "import importlib.metadata as m; print(m.version('llm-conformance'))"],
                                   env=env, capture_output=True, text=True, check=False)
    except OSError:
        return None
    return completed.stdout.strip() if completed.returncode == 0 else None


def _share_head_packages(python: str) -> None:
    """A ``.pth`` file in the base environment that adds the head's site folders after its own, with their own
    ``.pth`` files (editable installs), so what the base installs comes first."""
    import sysconfig

    folders = [path for path in dict.fromkeys([*sys.path, sysconfig.get_paths()["purelib"]])
               if path.endswith("site-packages") and Path(path).is_dir()]
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    lines = "".join(f"import site; site.addsitedir({folder!r})\n" for folder in folders)
    # "~" sorts after every name pip writes, so the base's own .pth files (editable installs) come first.
    Path(purelib, "~conformance_head_packages.pth").write_text(lines, encoding="utf-8")


def _tail(output: str) -> str:
    lines = output.rstrip("\n").splitlines()
    return "\n".join(lines[-TAIL_LINES:])


def _failure_markdown(title: str, failure: StepFailed, log: str) -> str:
    # What a step says holds the team's command and what it printed: shown as code, so no heading, image, link or
    # mention in it renders on the pull request. A code span or fence longer than any run of backticks inside it
    # cannot be closed from inside (CommonMark, "Code spans", "Fenced code blocks").
    detail = " ".join(failure.detail.split())
    tick = "`" * (1 + max((len(run) for run in re.findall(r"`+", detail)), default=0))
    text = f"## Conformance gate\n\n**{title}.**\n\n{failure.step} failed: {tick} {detail} {tick}\n"
    if failure.output:
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", failure.output)), default=0))
        text += (f"\nThe end of its output (all of it in `{log}`, in the artifacts):\n\n{fence}text\n"
                 f"{failure.output}\n{fence}\n")
    return text


COMMENT_LINES = 25
"""Lines of the changes table a pull-request comment lists; the job summary and ``diff.md`` list them all."""


def _publish(out: Path, markdown: str, comment: str | None = None) -> None:
    """``diff.md``, ``comment.md`` (with the marker ``conformance comment`` finds it by; ``comment``, the short
    rendering, when given) and the job summary."""
    markdown = mask_credentials(markdown)
    from conformance.report.files import append_step_summary, write_atomic

    write_atomic(out / "diff.md", markdown)
    write_atomic(out / "comment.md", f"{MARKER}\n{mask_credentials(comment or markdown)}")
    append_step_summary(markdown)


def check_ref_name(ref: str) -> None:
    """Refuse an empty base (``$GITHUB_BASE_REF`` unset outside a pull request)."""
    if not ref.strip() or ref.strip().endswith("/"):
        raise InputError([Problem("--base", None, f"no base ref ({ref!r})",
                                  "run the gate on pull_request events, or pass --base origin/main")])
