"""One configuration for every entry point: the ``conformance_*`` settings a repository keeps in its pytest
configuration (what ``conformance init`` writes) are what ``pytest`` reads through its ini and what ``conformance
run``, ``validate``, ``list``, ``serve`` and ``record`` read from the same file; their flags add to it or override it
(docs/cli.md, "Configuration").

The file is found as pytest finds its own (docs.pytest.org, "Configuration file formats"): from the working folder
upwards, the first ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml`` with ``[tool.pytest.ini_options]``,
``tox.ini`` with ``[pytest]`` or ``setup.cfg`` with ``[tool:pytest]``. Its folder is the root every relative path in
it is read from, as pytest's rootdir. A repository's configuration names code (adapters, stacks, ``pythonpath``),
which the commands import, as pytest imports a repository's ``conftest.py``; ``--no-config`` reads none.
"""

from __future__ import annotations

import configparser
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.errors import InputError, Problem

_LINE_LISTS = frozenset({"conformance_adapters", "conformance_stacks", "conformance_require_providers"})
"""The settings the plugin registers as ``linelist`` (``pytest_plugin.pytest_addoption``); the others are ``paths``."""

ALL = "all"
"""In ``require_providers``: every loaded adapter."""

_INI_FILES = (("pytest.ini", "pytest"), (".pytest.ini", "pytest"), ("pyproject.toml", None), ("tox.ini", "pytest"),
              ("setup.cfg", "tool:pytest"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """The configuration of one repository (every field empty when it has none)."""

    root: Path | None = None
    """The folder of the configuration file: relative paths in it are read from here."""
    source: Path | None = None
    """The configuration file, None when there is none."""
    cases: tuple[Path, ...] = ()
    """``conformance_cases``: the cases folders."""
    adapters: tuple[str, ...] = ()
    """``conformance_adapters``: ``module:object`` or ``path/to/file.py:object`` (rooted)."""
    stacks: tuple[str, ...] = ()
    """``conformance_stacks``: ``all``, a reference stack's lane or ``module:object`` (rooted)."""
    report: Path | None = None
    """``conformance_report``: the report folder; None when it is set empty (no report)."""
    require_providers: tuple[str, ...] = ()
    """``conformance_require_providers``: provider ids every case must have fixtures for, or ``all``."""
    python_tools: bool = False
    """``conformance_python_tools = allow``: python tools named by the cases may run."""
    bundled: Path | None = None
    """``conformance_bundled``: where the bundled cases' snapshots live in this repository, when the bundled cases
    run through its adapters and stacks too (None: they do not)."""
    pythonpath: tuple[Path, ...] = ()
    """pytest's ``pythonpath``: folders put first on ``sys.path`` (where the adapters named here import from)."""
    max_age_days: int | None = None
    """``conformance_max_age_days``: ``conformance validate`` fails on recordings older than this (docs/record.md)."""
    prices: Path | None = None
    """``conformance_prices``: the price file the report's cost figures use (None: the bundled one, docs/cost.md)."""
    cost_function: str | None = None
    """``conformance_cost_function``: the team's own cost function, ``module:function`` (docs/cost.md)."""


def find_config(start: Path) -> tuple[Path, str | None] | None:
    """The configuration file that applies in ``start`` and its ini section (None: ``pyproject.toml``)."""
    for folder in (start.resolve(), *start.resolve().parents):
        for name, section in _INI_FILES:
            path = folder / name
            if not path.is_file():
                continue
            if section is None:
                if "ini_options" in _toml(path).get("tool", {}).get("pytest", {}):
                    return path, None
            elif name.endswith("pytest.ini") or _has_section(path, section):
                return path, section
    return None


def read_settings(start: Path) -> Settings:
    """The settings of the repository ``start`` is in, as ``conformance init`` writes them and pytest reads them."""
    found = find_config(start)
    if found is None:
        return Settings()
    path, section = found
    values = _ini_values(path, section)
    root = path.parent

    def listed(key: str) -> tuple[str, ...]:
        value = values.get(key, [])
        if isinstance(value, str):  # an ini value: pytest splits its `linelist` settings by line, the others as args
            if key in _LINE_LISTS:
                return tuple(line.strip() for line in value.splitlines() if line.strip())
            return tuple(shlex.split(value))
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise InputError([Problem(str(path), None, f"{key} is not a list of strings",
                                      f'write it as {key} = ["..."]')])
        return tuple(value)

    report = values.get("conformance_report", "reports")
    if not isinstance(report, str):
        raise InputError([Problem(str(path), None, "conformance_report is not a string",
                                  'write it as conformance_report = "reports"')])
    tools = values.get("conformance_python_tools", "")
    bundled = values.get("conformance_bundled", "")
    if not isinstance(bundled, str):
        raise InputError([Problem(str(path), None, "conformance_bundled is not a string",
                                  'write it as conformance_bundled = "conformance_bundled" (a folder)')])
    age = values.get("conformance_max_age_days", "")
    if isinstance(age, str) and age.strip().isdigit():
        age = int(age.strip())
    if age != "" and (not isinstance(age, int) or isinstance(age, bool) or age < 0):
        raise InputError([Problem(str(path), None, "conformance_max_age_days is not a number of days",
                                  "write it as conformance_max_age_days = 90")])
    prices, cost_function = values.get("conformance_prices", ""), values.get("conformance_cost_function", "")
    for key, value in (("conformance_prices", prices), ("conformance_cost_function", cost_function)):
        if not isinstance(value, str):
            raise InputError([Problem(str(path), None, f"{key} is not a string",
                                      f'write it as {key} = "prices.yaml"' if key == "conformance_prices" else
                                      f'write it as {key} = "my_costs:cost"')])
    return Settings(
        max_age_days=age if isinstance(age, int) else None,
        prices=root / prices.strip() if prices.strip() else None,
        cost_function=cost_function.strip() or None,
        bundled=root / bundled.strip() if bundled.strip() else None,
        root=root, source=path,
        cases=tuple(root / entry for entry in listed("conformance_cases")),
        adapters=tuple(rooted(spec, root) for spec in listed("conformance_adapters")),
        stacks=tuple(rooted(spec, root) for spec in listed("conformance_stacks")),
        report=root / report if report.strip() else None,
        require_providers=listed("conformance_require_providers"),
        python_tools=isinstance(tools, str) and tools.strip().lower() == "allow",
        pythonpath=tuple(root / entry for entry in listed("pythonpath")),
    )


def rooted(spec: str, root: Path) -> str:
    """A ``path/to/file.py:object`` spec read from ``root`` (where the configuration lives); a module spec as it is."""
    path, colon, attribute = spec.rpartition(":")
    if colon and path.endswith(".py") and not Path(path).is_absolute():
        return f"{root / path}:{attribute}"
    return spec


def required(named: Sequence[str], loaded: Mapping[str, Any]) -> list[str]:
    """The providers every case must have fixtures for: those named, or every loaded adapter for ``all``."""
    return sorted(loaded) if ALL in named else sorted(set(named))


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError([Problem(str(path), getattr(error, "lineno", None), f"not TOML: {error}",
                                  "fix the file (pytest cannot read it either)")]) from None


def _has_section(path: Path, section: str) -> bool:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as error:
        raise InputError([Problem(str(path), None, f"not an ini file: {error}", "fix the file")]) from None
    return parser.has_section(section)


def _ini_values(path: Path, section: str | None) -> dict[str, Any]:
    if section is None:
        options = _toml(path)["tool"]["pytest"]["ini_options"]
        return dict(options) if isinstance(options, dict) else {}
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path, encoding="utf-8")
    return dict(parser[section]) if parser.has_section(section) else {}
