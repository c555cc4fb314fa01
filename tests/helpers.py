"""Shared test helpers: reading the adapter fixtures under tests/fixtures/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
CASES = Path(__file__).parent.parent / "cases"


def fixture(provider: str, name: str) -> Any:
    return json.loads((FIXTURES / provider / name).read_text(encoding="utf-8"))


def fixture_names(provider: str, prefix: str) -> list[str]:
    return sorted(path.name for path in (FIXTURES / provider).glob(f"{prefix}*.json"))
