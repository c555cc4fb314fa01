"""The suite's wheel installed as a team installs it: a fresh virtual environment with only the wheel installed, no
index, its dependencies read from this environment (tests/e2e/test_wheel.py, tests/e2e/test_journey.py). Built and
installed once per test session (``shared_wheel``), whichever pytest-xdist worker asks first."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent.parent


def run(*command: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


def shared_wheel(factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """``install_wheel`` once per test session: the first caller builds it under a lock in the session's temporary
    root (shared by the xdist workers, as pytest-xdist's docs advise), later callers, in any worker, wait for it and
    reuse it. Callers only run the installed suite: none installs anything more into the environment."""
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # every worker's base temp sits in one folder of the session
    base = root / "shared-wheel"
    with FileLock(str(root / "shared-wheel.lock")):
        done = base / "installed"
        if not done.exists():
            shutil.rmtree(base, ignore_errors=True)
            base.mkdir()
            install_wheel(base)
            done.write_text("")
    return base / "venv/bin", wheel_env(base)


def wheel_env(base: Path) -> dict[str, str]:
    """The environment the installed suite runs in: this one, without what points at this checkout, with no index
    for pip and the virtual environment's ``bin`` first on the path."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    env["PIP_NO_INDEX"] = "1"  # offline: pip may not reach any index
    env["PATH"] = f"{base / 'venv/bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def install_wheel(base: Path) -> tuple[Path, dict[str, str]]:
    """Build the wheel into ``base/dist``, install it into ``base/venv``; the venv's ``bin`` and its environment."""
    env = wheel_env(base)
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources, and two test modules
    # building from this checkout at once (pytest -n) would race on them. The copy follows
    # conformance/cases and conformance/providers, the links the wheel installs the bundled data through.
    source = base / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "conformance", source / "conformance", ignore=ignore)
    built = run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                str(base / "dist"), str(source), cwd=base, env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (base / "dist").glob("llm_conformance-*.whl")  # the distribution name, normalized (PEP 427)
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"conformance", "-".join(wheel.name.split("-")[:2]) + ".dist-info"}
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=300)
    # The dependencies come from this environment's site-packages, named by a path line (its .pth files, the
    # editable install's among them, are not read): only the wheel itself is installed, with no index.
    (site,) = (base / "venv/lib").glob("python3*/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = run(str(base / "venv/bin/python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel), cwd=base, env=env)
    assert pip.returncode == 0, pip.stderr[-3000:]
    located = run(str(base / "venv/bin/python"), "-c", "import conformance; print(conformance.__file__)", cwd=base,
                  env=env)
    assert located.stdout.startswith(str(site)), located.stdout  # the wheel's copy, not this checkout
    return base / "venv/bin", env
