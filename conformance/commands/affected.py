"""``conformance affected``: whether a change touches anything the reports depend on (docs/ci.md, "When the gate
runs").

The workflow ``init`` writes runs on every pull request and asks this first, so that the triggers follow the
configuration instead of a path list written once: the cases folders, the configured adapter and stack modules, the
local packages they import (followed through the packages' own imports), the configuration and dependency files,
and the workflow itself. A change elsewhere (docs, another service in the same repository) skips the gate in a few
seconds. The scan reads the code, it never imports it: the branch's code does not run before the gate installs it.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import os
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from conformance.commands.options import EXIT_OK, configured
from conformance.engine.sanitize import terminal_safe
from conformance.errors import InputError, Problem

DEPENDENCY_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "pytest.ini", ".pytest.ini", "tox.ini",
                    "requirements*.txt", "constraints*.txt", "*.lock", "Pipfile", "Pipfile.lock",
                    "uv.lock", "poetry.lock", "pdm.lock")
"""Where an SDK, gateway or suite bump lands, and where the configuration lives: matched on the file's name, in any
folder."""
WORKFLOW = ".github/workflows/conformance.yml"
ROOT_CONFTEST = "conftest.py"
"""The repository's root conftest: its fixtures and hooks run in the gate's pytest session."""


def add_parser(commands: Any) -> None:
    """``conformance affected``'s options."""
    parser = commands.add_parser(
        "affected", help="say whether a change touches the cases, your adapters and stacks, the packages they "
                         "import or your dependencies (the workflow skips the gate otherwise)")
    changed = parser.add_mutually_exclusive_group(required=True)
    changed.add_argument("--base", metavar="REF",
                         help="the changed files are those of `git diff REF...HEAD` (e.g. origin/main)")
    changed.add_argument("--files", nargs="+", metavar="PATH",
                         help="the changed files, relative to the repository's root (instead of --base)")
    parser.add_argument("--no-config", action="store_true", help="ignore the repository's configuration")


class Watched(NamedTuple):
    """What the reports depend on, as paths relative to the repository's root (POSIX)."""

    folders: tuple[str, ...]
    """Every file under these: the cases, the local packages the glue imports."""
    files: tuple[str, ...]
    """These files: the glue modules, single-module imports, the workflow."""

    def why(self, path: str) -> str | None:
        """Why a changed file matters, or None."""
        if path in self.files:
            return {WORKFLOW: "the workflow", ROOT_CONFTEST: "pytest's root conftest"}.get(
                path, "your glue, or a module it imports")
        for folder in self.folders:
            if path.startswith(folder.rstrip("/") + "/"):
                return f"under {folder}/"
        name = PurePosixPath(path).name
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in DEPENDENCY_FILES):
            return "configuration or dependencies"
        return None


def watched(root: Path, cases: Iterable[Path], specs: Iterable[str], pythonpath: Iterable[Path]) -> Watched:
    """What the reports of the repository at ``root`` depend on: its cases folders, the files of its adapter and
    stack specs, and the local modules and packages they import, followed through every file of those packages."""
    search = [*(Path(folder) for folder in pythonpath), root]
    folders = {shown for folder in cases if (shown := _relative(Path(folder), root))}
    files = {WORKFLOW, ROOT_CONFTEST}
    pending = [path for spec in specs if (path := _spec_file(spec, search)) is not None]
    seen: set[Path] = set()
    while pending:
        path = pending.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        shown = _relative(path, root)
        if shown is not None:
            files.add(shown)
        for imported in _local_imports(path, search):
            package = _top_package(imported, search)
            if package is not None and package.is_dir():
                folder = _relative(package, root)
                if folder:
                    folders.add(folder)
                pending += [child for child in sorted(package.rglob("*.py")) if child not in seen]
            else:
                pending.append(imported)
    kept = sorted(folder for folder in folders if folder)
    alone = sorted(file for file in files if not any(file.startswith(f"{folder}/") for folder in kept))
    return Watched(folders=tuple(kept), files=tuple(alone))


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None  # outside the repository: no change of this repository can touch it


def _spec_file(spec: str, search: list[Path]) -> Path | None:
    """The file a ``path/to/file.py:object`` or ``module:object`` spec names, when it is in the repository; a
    reference stack or ``all`` names none."""
    target, colon, _ = spec.rpartition(":")
    if not colon:
        return None
    if target.endswith(".py"):
        return Path(target)
    return _module_file(target, search)


def _module_file(dotted: str, search: list[Path]) -> Path | None:
    parts = dotted.split(".")
    for folder in search:
        base = folder.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _top_package(path: Path, search: list[Path]) -> Path | None:
    """The top-level package folder a module file belongs to (``support_agent/`` for
    ``support_agent/llm/openai.py``), None for a top-level module."""
    for folder in search:
        try:
            relative = path.resolve().relative_to(folder.resolve())
        except ValueError:
            continue
        if len(relative.parts) > 1:
            return folder.resolve() / relative.parts[0]
        return None
    return None


def _local_imports(path: Path, search: list[Path]) -> Iterator[Path]:
    """The files of the repository that ``path`` imports (absolute imports found on ``search``, relative ones beside
    it). A file that does not parse imports nothing known: the gate installing it will say what is wrong."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                module = (node.module or "").split(".") if node.module else []
                target = base.joinpath(*module)
                for candidate in (target.with_suffix(".py"), target / "__init__.py"):
                    if candidate.is_file():
                        yield candidate
                continue
            names = [node.module or ""]
        else:
            continue
        for name in names:
            found = _module_file(name, search)
            if found is not None:
                yield found


def changed_files(root: Path, base: str) -> list[str]:
    """The files ``git diff --name-only BASE...HEAD`` lists (changed since the merge base), relative to ``root``."""
    try:
        completed = subprocess.run(["git", "diff", "--name-only", "--no-renames", f"{base}...HEAD"], cwd=root,
                                   capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise InputError([Problem("--base", None, f"git could not run: {error}",
                                  "run in a git checkout with git installed, or pass --files")]) from None
    if completed.returncode != 0:
        raise InputError([Problem("--base", None, f"git diff {base}...HEAD failed: {completed.stderr.strip()[:300]}",
                                  "fetch the base first (actions/checkout with fetch-depth: 0), or pass --files")])
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True,
                         check=False, timeout=60).stdout.strip()
    prefix = Path(top).resolve() if top else root.resolve()
    out = []
    for line in completed.stdout.splitlines():
        relative = _relative(prefix / line, root)
        if line.strip() and relative is not None:
            out.append(relative)
    return out


def run(arguments: argparse.Namespace) -> int:
    """Print what matters among the changed files; write ``relevant=true|false`` to ``$GITHUB_OUTPUT`` when set.
    Exit 0 either way: a skipped gate is a passing check."""
    config = configured(arguments)
    settings = config.settings
    root = settings.root or Path.cwd()
    specs = [*config.adapters, *config.stacks]
    # The cases folders and, when the bundled set runs through the team's code, the folder of its snapshots.
    cases = [path for path in [*config.roots, *([settings.bundled] if settings.bundled else [])]
             if _relative(Path(path), root) is not None]
    scope = watched(root, cases, specs, settings.pythonpath)
    files = [file.replace(os.sep, "/") for file in arguments.files] if arguments.files else \
        changed_files(root, arguments.base)
    reasons = {path: why for path in files if (why := scope.why(path)) is not None}
    if reasons:
        print(f"relevant: {len(reasons)} of {len(files)} changed file(s) touch what the reports depend on")
        for path, why in sorted(reasons.items()):
            print(terminal_safe(f"  {path} ({why})"))  # a file name may hold control characters
    else:
        print(f"nothing the reports depend on changed ({len(files)} changed file(s)): the gate can be skipped")
    print(terminal_safe("watched: " + ", ".join([f"{folder}/" for folder in scope.folders] + list(scope.files))))
    output = os.environ.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a", encoding="utf-8") as handle:
            handle.write(f"relevant={'true' if reasons else 'false'}\n")
    return EXIT_OK
