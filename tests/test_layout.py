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
# The adapters' folder: the top-level providers/ of a checkout (conformance/providers links to it), or the package's
# own copy in a copied tree.
PROVIDERS = ROOT / "providers" if (ROOT / "providers").is_dir() else PACKAGE / "providers"

LAYERS = {
    "conformance": 0, "conformance.errors": 0, "conformance.kit": 1, "conformance.providers": 2,
    "conformance.engine": 3, "conformance.report": 4, "conformance.replay": 5, "conformance.stacks": 6,
    "conformance.commands": 7, "conformance.cli": 7, "conformance.pytest_plugin": 7, "conformance.__main__": 7,
    "conformance.session": 7,
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
    for folder, prefix in ((PACKAGE, "conformance"), (PROVIDERS, "conformance.providers")):
        for path in sorted(folder.rglob("*.py")):
            if folder == PACKAGE and path.resolve().is_relative_to(PROVIDERS.resolve()):
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
    if (ROOT / "providers" / "__init__.py").is_file():  # a checkout (a copied tree may hold the package alone)
        with pytest.raises(ImportError, match="conformance.providers"):
            importlib.import_module("providers")


VENDOR_IDS = {"openai-responses", "openai-chat", "anthropic-messages", "gemini", "bedrock-converse"}
# `x-should-retry` and `retry-after-ms` are read by several vendors' SDKs alike (the Stainless-built ones); they are
# the engine's to keep and send.
VENDOR_HEADER_PREFIXES = ("x-amzn-", "x-amz-", "anthropic-", "x-goog-", "openai-", "x-ratelimit-")
VENDOR_ENVIRONMENT = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "AWS_")
# Where vendors are named on purpose: the adapters, the clients' code (SDK and gateway stacks, their in-process
# seams), the tables from ids to them, and the templates init writes into a user's repository.
NAMING_VENDORS = ("conformance.providers", "conformance.stacks.sdk", "conformance.stacks.gateways",
                  "conformance.stacks.transports", "conformance.engine.registry", "conformance.stacks.stack")
# The secret scan's detector table names what each vendor's credentials look like (as detect-secrets' plugins do):
# what a leak looks like, not how an API travels.
SECRET_SHAPES = "conformance.replay.secrets"


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes: they may name a vendor as an example."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
        if isinstance(node, ast.Module | ast.ClassDef):  # attribute docstrings: a string after an assignment
            for before, after in zip(node.body, node.body[1:], strict=False):
                if isinstance(before, ast.Assign | ast.AnnAssign) and isinstance(after, ast.Expr) \
                        and isinstance(after.value, ast.Constant):
                    found.add(id(after.value))
    return found


def vendor_facts(path: Path, module: str) -> list[str]:
    """Each vendor id, vendor header or SDK environment name used as a value, and each import of an adapter's
    module by name, in one engine module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            value = node.value
            if value in VENDOR_IDS or value.lower().startswith(VENDOR_HEADER_PREFIXES) \
                    or value.startswith(VENDOR_ENVIRONMENT):
                found.append(f"{path.name}:{node.lineno}: {value!r}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("conformance.providers."):
            found.append(f"{path.name}:{node.lineno}: imports {node.module}")
    return found


def test_no_engine_module_names_a_vendor() -> None:
    engine = {module: path for module, path in modules().items()
              if not module.startswith(NAMING_VENDORS) and module != SECRET_SHAPES}
    assert len(engine) > 50
    found = [fact for module, path in engine.items() for fact in vendor_facts(path, module)]
    assert not found, "vendor facts belong behind Adapter.wire (docs/layout.md):\n" + "\n".join(found)


def test_the_vendor_scan_sees_what_it_looks_for(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('"""Docstrings may say openai-chat."""\nKEPT = ("x-amzn-errortype", "OPENAI_BASE_URL")\n'
                       'if provider != "bedrock-converse":\n    pass\n'
                       "from conformance.providers.gemini.errors import error_reply\n")
    found = vendor_facts(planted, "planted")
    assert sorted(fact.split(": ", 1)[1] for fact in found) == [
        "'OPENAI_BASE_URL'", "'bedrock-converse'", "'x-amzn-errortype'", "imports conformance.providers.gemini.errors"]


def test_the_kit_is_one_public_surface() -> None:
    kit = importlib.import_module("conformance.kit")
    assert sorted(kit.__all__) == sorted(set(kit.__all__))
    missing = [name for name in kit.__all__ if not hasattr(kit, name)]
    assert not missing
    # Every name an adapter of the kit's own providers imports from a kit module is on the surface.
    used = set()
    for path in PROVIDERS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "") in {
                    "conformance.kit.adapter", "conformance.kit.task", "conformance.kit.values"}:
                used.update(alias.name for alias in node.names)
    assert used and used <= set(kit.__all__), sorted(used - set(kit.__all__))


def test_conformance_help_reads_the_parsers_only() -> None:
    import subprocess
    import sys

    script = ("import sys\nfrom conformance.cli import build_parser\nbuild_parser()\n"
              "print(sorted(name for name in sys.modules if name.startswith(('deepdiff', 'conformance.providers', "
              "'conformance.engine.runner', 'syrupy', 'jsonschema'))))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout
