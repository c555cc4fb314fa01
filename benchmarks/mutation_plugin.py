"""pytest plugin for ``benchmarks/mutate_tables.py``: applies the mutant in ``$CONFORMANCE_MUTANT`` to one table
row, in place, before any test runs (the adapters read their tables at call time, so the edit is seen)."""

from __future__ import annotations

import importlib
import json
import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Delete or replace the row the mutant names."""
    spec = os.environ.get("CONFORMANCE_MUTANT")
    if not spec:
        return
    mutant = json.loads(spec)
    module = importlib.import_module(mutant["module"])
    table = getattr(module, mutant["table"])
    if mutant["action"] == "delete":
        del table[mutant["key"]]
    else:
        namespace = {**vars(importlib.import_module("conformance.kit.verdict")), **vars(module)}
        table[mutant["key"]] = eval(mutant["value"], namespace)  # noqa: S307 - expressions written by the script
