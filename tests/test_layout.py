"""The layout docs/layout.md describes: each module imports only from its own layer or the layers below it, and every
module has one import name."""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "conformance"

LAYERS = {
    "conformance": 0, "conformance.errors": 0, "conformance.kit": 1, "conformance.providers": 2,
    "conformance.engine": 3, "conformance.report": 4, "conformance.replay": 5, "conformance.stacks": 6,
    "conformance.commands": 7, "conformance.cli": 7, "conformance.pytest_plugin": 7, "conformance.__main__": 7,
}


def layer_of(module: str) -> int:
    """The layer of the longest package prefix docs/layout.md names."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        if name in LAYERS:
            return LAYERS[name]
    raise AssertionError(f"{module} is in no layer of docs/layout.md")


@functools.cache
def modules() -> dict[str, Path]:
    """Every source module of the package, the adapters included, by its import name."""
    found = {}
    for folder, prefix in ((PACKAGE, "conformance"), (ROOT / "providers", "conformance.providers")):
        for path in sorted(folder.rglob("*.py")):
            if folder == PACKAGE and path.resolve().is_relative_to((ROOT / "providers").resolve()):
                continue  # the link: named once, below
            if "templates" in path.relative_to(folder).parts:
                continue  # written into a user's repository by init, not part of the package's code
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


def imported(path: Path, module: str) -> set[str]:
    """What a module imports, lazy imports too, relative ones resolved."""
    names = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                kept = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(kept + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules())
    return {name for name in names if name.split(".")[0] == "conformance"}


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = []
    for module, path in modules().items():
        for name in imported(path, module):
            if layer_of(name) > layer_of(module):
                upward.append(f"{module} (layer {layer_of(module)}) imports {name} (layer {layer_of(name)})")
    assert not upward, "\n".join(upward)


def test_the_layer_table_knows_every_module() -> None:
    assert {layer_of(module) for module in modules()} == set(range(8))


def test_the_adapters_have_one_import_name() -> None:
    assert importlib.import_module("conformance.providers.openai_chat").__name__ == "conformance.providers.openai_chat"
    with pytest.raises(ImportError, match="conformance.providers"):
        importlib.import_module("providers")
