"""docs/telemetry.md, "What each reports wrong": the telemetry lanes run over the bundled cases beside their SDK stacks,
and every line of the table (lane, attribute, effect, count, example) is what the pinned instrumentations report; a
finding the table does not list fails too."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import OWN, cli

# End-to-end: it runs every telemetry lane (pytest -m "not e2e" skips it).
pytestmark = pytest.mark.e2e

DOC = Path(__file__).parent.parent.parent / "docs" / "telemetry.md"
LINE = re.compile(r"^\| `(?P<lane>[^`]+\+[^`]+)` \| `(?P<field>[^`]+)` \| (?P<effect>\w+) \| (?P<count>\d+) \| "
                  r"(?P<case>\w+) (?P<mode>body|stream) (?P<turn>\d+): `(?P<wire>[^`]*)` → `(?P<span>[^`]*)` \|$")


def table() -> list[dict[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- telemetry findings: start -->", 1)[1].split("<!-- telemetry findings: end -->", 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("| `")]
    parsed = [match.groupdict() for line in rows if (match := LINE.match(line))]
    assert len(parsed) == len(rows), "a line of the table does not read as lane | attribute | effect | count | example"
    return parsed


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("telemetry")
    result = cli("run", *OWN, "--stack", "sdks", "--stack", "telemetry", "--in-process", "--report-dir", str(folder))
    report = json.loads((folder / "report.json").read_text())
    lanes = {row["provider"] for row in report["results"] if "+" in row["provider"]}
    assert len(lanes) == 13, sorted(lanes)
    failed = [(row["provider"], row["case"], row["mode"]) for row in report["results"] if not row["passed"]]
    # The one row the doc names: Logfire's Chat stream wrapper raises into the team's code on an unseen tool call.
    assert failed == [("openai-chat@openai-sdk+logfire", "unsupported_item", "stream")], failed
    assert result.returncode == 1, result.stderr
    broken = next(row for row in report["results"] if not row["passed"])
    assert "AttributeError" in broken["failures"][0]
    # docs/contract.md, "What the vendor refuses": no SDK stack's or lane's request breaks a rule
    assert not [failure for row in report["results"] for failure in row["failures"]
                if "the vendor would refuse it" in failure]
    found = [finding for finding in report["findings"] if "+" in finding["stack"]]
    rows = sum(1 for row in report["results"] if "+" in row["provider"])
    assert f"13\nlanes, {rows:,} rows, {len(found):,} findings." in DOC.read_text(encoding="utf-8")
    return found


def test_every_line_of_the_table_is_what_the_lanes_report(findings: list[dict[str, Any]]) -> None:
    counts = collections.Counter((finding["stack"], finding["field"], finding["effect"]) for finding in findings)
    documented = {(line["lane"], line["field"], line["effect"]): int(line["count"]) for line in table()}
    assert dict(counts) == documented


def test_every_example_of_the_table_is_a_finding(findings: list[dict[str, Any]]) -> None:
    seen = {(finding["stack"], finding["field"], finding["effect"], finding["case"], finding["mode"], finding["turn"],
             json.dumps(finding["wire"]), json.dumps(finding["stack_value"])) for finding in findings}
    for line in table():
        assert (line["lane"], line["field"], line["effect"], line["case"], line["mode"], int(line["turn"]),
                line["wire"], line["span"]) in seen, line


def test_the_cache_left_out_of_input_tokens_is_named_where_the_doc_says(findings: list[dict[str, Any]]) -> None:
    bedrock = [finding for finding in findings if finding["stack"] == "bedrock-converse@boto3+openllmetry"
               and finding["field"] == "gen_ai.usage.input_tokens" and finding["case"] == "cached_usage"]
    assert {(finding["mode"], finding["wire"], finding["stack_value"]) for finding in bedrock} == {
        ("body", 582, 70), ("stream", 582, 70)}
    assert all("the 512 cached prompt tokens are left out" in finding["meaning"] for finding in bedrock)
