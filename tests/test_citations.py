"""Comments and docstrings cite what a reader can open: vendor documentation, SDK types, files in this repository.

Documents kept outside the repository (the first written contract, research notes) are not citations a
contributor can follow, so they are kept out of the code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SOURCES = sorted([*ROOT.glob("conformance/**/*.py"), *ROOT.glob("providers/**/*.py")])
UNREACHABLE = re.compile(r"wire-formats|CONTRACT\.md|client-facts|code-review\.md|mutation\.md|\.\./shared")
REPOSITORY_FILE = re.compile(r"\b((?:docs|conformance|providers|tests|benchmarks|cases)/[\w./-]+\.(?:md|py|json|yaml))")


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_sources_cite_nothing_outside_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not [line for line in text.splitlines() if UNREACHABLE.search(line)]


def test_every_repository_file_a_source_cites_exists() -> None:
    cited = {match for path in SOURCES for match in REPOSITORY_FILE.findall(path.read_text(encoding="utf-8"))}
    assert cited, "the sources cite docs/contract.md at least"
    assert sorted(name for name in cited if not (ROOT / name).exists()) == []
