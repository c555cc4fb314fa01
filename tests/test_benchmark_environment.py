"""The benchmarks time their child processes with bytecode written, whatever the caller's environment says, so that
a ratio does not move with ``PYTHONDONTWRITEBYTECODE`` (docs/performance.md)."""

import os

from benchmarks.run import child_environment


def test_a_timed_child_writes_bytecode_and_keeps_the_rest(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("CONFORMANCE_BENCH_MARK", "kept")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    environment = child_environment()
    assert "PYTHONDONTWRITEBYTECODE" not in environment
    assert environment["CONFORMANCE_BENCH_MARK"] == "kept"
    assert "PYTHONPATH" not in environment
    assert os.environ["PYTHONDONTWRITEBYTECODE"] == "1"  # the caller's own environment is left as it was


def test_the_tree_timed_comes_first_on_the_path(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert child_environment("/tree").get("PYTHONPATH") == os.pathsep.join(["/tree", "/elsewhere"])
