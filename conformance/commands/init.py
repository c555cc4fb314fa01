"""``conformance init``: a repository made ready for its own cases, and ``conformance schema``.

``init`` writes, and never overwrites: a cases folder (the bundled world and one example case with fixtures for
every built-in vendor and for the adapter stub), the example's reviewed snapshots, an adapter stub, the pytest
ini lines, a CI workflow, and copies of the case and world schemas that the YAML files point at in their
``yaml-language-server`` modeline.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.errors import InputError, Problem

EXAMPLE = "example"
DISTRIBUTION = "llm-conformance"
"""The suite's name on the package index (the import package is ``conformance``; the name ``conformance`` on PyPI
is an unrelated project)."""
STUB_PROVIDER = "app-openai-chat"
SCHEMA_FOLDER = ".conformance"
INI_LINES = ('conformance_cases = ["cases"]', 'conformance_adapters = ["conformance_adapter.py:ADAPTER"]',
             # The glue imports the application's own packages from the repository's root, under pytest and the CLI.
             'pythonpath = ["."]')


def schema_text(name: str) -> str:
    """The text of the installed ``case`` or ``world`` schema."""
    return resources.files("conformance").joinpath(f"schema/{name}.schema.json").read_text(encoding="utf-8")


def schema_path(name: str) -> str:
    """Where the installed ``case`` or ``world`` schema lives."""
    return str(resources.files("conformance").joinpath(f"schema/{name}.schema.json"))


def init(target: Path, bundled: Path) -> list[str]:
    """Scaffold ``target``; returns what was written and what to do next. InputError (nothing written) when a
    file it would write exists."""
    from conformance.engine.cases import WORLD_FILE

    cases = target / "cases"
    planned = [cases / WORLD_FILE, cases / EXAMPLE, target / "conformance_adapter.py",
               target / ".github/workflows/conformance.yml", target / SCHEMA_FOLDER]
    taken = [path for path in planned if path.exists()]
    if taken:
        raise InputError([Problem(str(path), None, "already exists; init writes only new files",
                                  "run init in a repository without these files, or in a new folder")
                          for path in taken])
    _write_cases(cases, bundled)
    templates = resources.files("conformance").joinpath("templates/init")
    (target / "conformance_adapter.py").write_text(templates.joinpath("conformance_adapter.py").read_text())
    workflow = target / ".github/workflows/conformance.yml"
    workflow.parent.mkdir(parents=True, exist_ok=True)
    install = install_command(target)
    workflow.write_text(templates.joinpath("conformance.yml").read_text().replace("__INSTALL__", install)
                        .replace("__SUITE__", f"{DISTRIBUTION}=={__version__}"))
    (target / SCHEMA_FOLDER).mkdir()
    for name in ("case", "world"):
        (target / SCHEMA_FOLDER / f"{name}.schema.json").write_text(schema_text(name))
    ini_note = _ini(target / "pyproject.toml")
    _snapshots(cases, target / "conformance_adapter.py")
    return [
        f"wrote {cases}/ (world.yaml, {EXAMPLE}/ with fixtures for the built-in vendors and {STUB_PROVIDER}, "
        "__snapshots__/)",
        f"wrote {target / 'conformance_adapter.py'} (your adapter: a stub to replace with calls into your code)",
        f"wrote {workflow} (the upgrade gate; it installs your stack with `{install}`: change CONFORMANCE_INSTALL "
        "there if that is not how it installs" + _lock_note(target) + f"; it installs the suite as "
        f"{DISTRIBUTION}=={__version__}: change CONFORMANCE_SUITE there to install it from elsewhere)",
        f"wrote {target / SCHEMA_FOLDER}/ (the case and world schemas your editor reads through the modelines)",
        ini_note,
        "next: pytest  (runs the example case, its expectation and its snapshots)",
    ]


def install_command(target: Path) -> str:
    """How the repository's stack installs, as far as its files tell: ``requirements.txt``, else an installable
    ``pyproject.toml`` (a ``[project]`` table), else nothing to install (``true``)."""
    if (target / "requirements.txt").is_file():
        return "python -m pip install -r requirements.txt"
    pyproject = target / "pyproject.toml"
    if pyproject.is_file() and "[project]" in pyproject.read_text(encoding="utf-8", errors="replace"):
        return "python -m pip install -e ."
    return "true"


def _lock_note(target: Path) -> str:
    """A lockfile the install command does not read: an SDK bump landing only there would go unseen."""
    locks = [name for name in ("uv.lock", "poetry.lock", "Pipfile.lock", "pdm.lock") if (target / name).is_file()]
    return f" — it does not read {', '.join(locks)}: install from it there" if locks else ""


def _write_cases(cases: Path, bundled: Path) -> None:
    """The world (the bundled one) and the example: a case of its own, shipped with the scaffold, so that
    re-recording a bundled case never changes what a new repository starts from."""
    from conformance.engine.cases import CASE_FILE, WORLD_FILE
    from conformance.engine.registry import STUB_WIRE

    example = cases / EXAMPLE
    with resources.as_file(resources.files("conformance").joinpath("templates/init/example")) as source:
        shutil.copytree(source, example)
    shutil.copytree(example / STUB_WIRE, example / STUB_PROVIDER)
    text = (example / CASE_FILE).read_text(encoding="utf-8")
    for key in ("id", "scenario"):
        text = text.replace(f"{key}: normal\n", f"{key}: {EXAMPLE}\n", 1)
    text = text.rstrip("\n") + f"\n  {STUB_PROVIDER}: {{}}\n"
    (example / CASE_FILE).write_text(_modeline("../../", "case") + text, encoding="utf-8")
    world = (bundled / WORLD_FILE).read_text(encoding="utf-8")
    (cases / WORLD_FILE).write_text(_modeline("../", "world") + world, encoding="utf-8")


def _modeline(up: str, name: str) -> str:
    return f"# yaml-language-server: $schema={up}{SCHEMA_FOLDER}/{name}.schema.json\n"


def _ini(pyproject: Path) -> str:
    section = "[tool.pytest.ini_options]\n" + "\n".join(INI_LINES) + "\n"
    if not pyproject.exists():
        pyproject.write_text(section)
        return f"wrote {pyproject} (the pytest ini lines that opt in)"
    text = pyproject.read_text(encoding="utf-8")
    if "[tool.pytest.ini_options]" in text:
        return (f"{pyproject} already has [tool.pytest.ini_options]: add these lines to it yourself:\n    "
                + "\n    ".join(INI_LINES))
    pyproject.write_text(text.rstrip("\n") + "\n\n" + section, encoding="utf-8")
    return f"added [tool.pytest.ini_options] to {pyproject} (the pytest ini lines that opt in)"


def _snapshots(cases: Path, stub: Path) -> None:
    """The example's reviewed snapshots, so the first ``pytest`` passes."""
    from conformance.engine.cases import load_cases
    from conformance.engine.registry import load_adapter, select_adapters
    from conformance.engine.runner import modes_for, run_case_with_requests
    from conformance.report.snapshot import entry_of, request_entry, request_file, snapshot_file, write_entry

    adapters = {**select_adapters(None, []), STUB_PROVIDER: load_adapter(f"{stub}:ADAPTER")}
    for case in load_cases([cases], known_providers=adapters):
        for provider in case.providers:
            for mode in modes_for(case, provider, adapters[provider]):
                row, _, requests = run_case_with_requests(case, provider, adapters[provider], mode)
                if not row["passed"]:  # the example must pass as written; a failure here is a packaging bug
                    raise AssertionError(json.dumps(row["failures"]))
                write_entry(snapshot_file(cases, case.id, provider), mode, entry_of(row))
                write_entry(request_file(cases, case.id, provider), mode, request_entry(requests))


def add_parser(commands: Any) -> None:
    """``conformance init``'s options."""
    init_command = commands.add_parser("init", help="scaffold a repository: cases, an example, an adapter stub, "
                                                    "the pytest ini lines, a CI workflow, the schemas")
    init_command.add_argument("folder", type=Path, nargs="?", default=Path("."),
                              help="the repository to scaffold (default: here)")


def run(arguments: Any) -> int:
    """Scaffold the folder; every line says what was written or left alone."""
    from conformance.commands.options import BUNDLED_CASES, EXIT_OK
    from conformance.engine.sanitize import terminal_safe

    if not arguments.folder.is_dir():
        raise InputError([Problem(str(arguments.folder), None, "not a folder", "create it first, or pass a folder")])
    for line in init(arguments.folder, BUNDLED_CASES):
        print(terminal_safe(line))
    return EXIT_OK
