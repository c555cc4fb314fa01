"""Shards: ``--shard I/N`` splits the case items across CI jobs by whole cases, and ``conformance merge`` joins
their reports into the one an unsharded run writes, byte for byte (docs/ci.md, "Shards")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.engine.shard import assign, parse_shard
from conformance.errors import InputError
from tests.helpers import cli, copied_cases

REPORTS = ("report.json", "report.md", "report.html")


def same_reports(one: Path, other: Path) -> None:
    for name in REPORTS:
        assert (one / name).read_bytes() == (other / name).read_bytes(), name


@pytest.mark.parametrize("text", ["0/4", "5/4", "x", "1/0", "", "2-4"])
def test_a_bad_shard_is_refused_naming_the_option(text: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--shard.*expected I/N"):
        parse_shard(text)
    result = cli("run", "--shard", text, "--report-dir", str(tmp_path))
    assert result.returncode == 2 and "I/N" in result.stderr
    assert not (tmp_path / "report.json").exists()


def test_the_split_is_deterministic_complete_and_even() -> None:
    costs = {f"case_{index:04d}": 1 + (index * 7919) % 23 for index in range(2500)}
    placed = assign(costs, 4)
    assert placed == assign(dict(reversed(list(costs.items()))), 4)  # input order does not matter
    assert set(placed) == set(costs) and set(placed.values()) == {1, 2, 3, 4}
    loads = [sum(cost for case, cost in costs.items() if placed[case] == shard) for shard in (1, 2, 3, 4)]
    assert max(loads) - min(loads) <= max(costs.values())  # even to within one case's cost
    assert assign({"only": 3}, 4) == {"only": 1}


def test_four_cli_shards_merge_into_the_unsharded_report_byte_for_byte(tmp_path: Path) -> None:
    cases = copied_cases(tmp_path / "cases", 3)
    common = ["--cases", str(cases), "--stack", "openai-chat@openai-sdk", "--in-process"]
    full = cli("run", *common, "--report-dir", str(tmp_path / "full"))
    assert full.returncode in (0, 1), full.stderr
    rows = []
    for index in (1, 2, 3, 4):
        shard = cli("run", *common, "--shard", f"{index}/4", "--report-dir", str(tmp_path / f"s{index}"))
        assert shard.returncode in (0, 1), shard.stderr
        document = json.loads((tmp_path / f"s{index}/report.json").read_text())
        assert document["shard"]["index"] == index and document["shard"]["of"] == 4
        rows.append(document["results"])
    cases_per_shard = [{row["case"] for row in shard_rows} for shard_rows in rows]
    assert all(not (a & b) for i, a in enumerate(cases_per_shard) for b in cases_per_shard[i + 1:])  # whole cases
    expected = json.loads((tmp_path / "full/report.json").read_text())
    assert sum(map(len, rows)) == expected["summary"]["rows"] > 700
    assert any(row["provider"].endswith("@openai-sdk") for row in expected["results"])
    sizes = sorted(map(len, rows))
    assert sizes[-1] - sizes[0] <= 40, sizes  # evenly split
    merged = cli("merge", *(str(tmp_path / f"s{index}") for index in (4, 2, 3, 1)),
                 "--report-dir", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr
    same_reports(tmp_path / "full", tmp_path / "merged")
    assert "shard" not in json.loads((tmp_path / "merged/report.json").read_text())


def test_an_empty_shard_writes_an_empty_report_and_still_merges(tmp_path: Path) -> None:
    common = ["--case", "normal", "--case", "refusal", "--provider", "openai-chat"]
    assert cli("run", *common, "--report-dir", str(tmp_path / "full")).returncode != 2
    for index in (1, 2, 3):
        result = cli("run", *common, "--shard", f"{index}/3", "--report-dir", str(tmp_path / f"s{index}"))
        assert result.returncode != 2, result.stderr
    rows = [json.loads((tmp_path / f"s{index}/report.json").read_text())["summary"]["rows"] for index in (1, 2, 3)]
    full = json.loads((tmp_path / "full/report.json").read_text())["summary"]["rows"]
    assert full == 8  # two cases, body and stream; `normal` with openai-chat's two variants
    assert sorted(rows)[0] == 0 and sum(rows) == full
    assert cli("merge", *(str(tmp_path / f"s{index}/report.json") for index in (1, 2, 3)),
               "--report-dir", str(tmp_path / "merged")).returncode == 0
    same_reports(tmp_path / "full", tmp_path / "merged")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("shards")
    common = ["--case", "normal", "--case", "refusal", "--case", "max_tokens", "--provider", "openai-chat",
              "--provider", "gemini"]
    for index in (1, 2):
        assert cli("run", *common, "--shard", f"{index}/2", "--report-dir", str(folder / f"s{index}")).returncode != 2
    return folder


def test_merge_refuses_a_missing_shard(shards: Path, tmp_path: Path) -> None:
    result = cli("merge", str(shards / "s1"), "--report-dir", str(tmp_path))
    assert result.returncode == 2 and "shard(s) 2/2 missing" in result.stderr
    assert not (tmp_path / "report.json").exists()


def test_merge_refuses_a_repeated_shard(shards: Path, tmp_path: Path) -> None:
    result = cli("merge", str(shards / "s1"), str(shards / "s1/report.json"), "--report-dir", str(tmp_path))
    assert result.returncode == 2 and "shard 1/2 is given twice" in result.stderr


def test_merge_refuses_a_report_that_is_not_a_shard(shards: Path, tmp_path: Path) -> None:
    whole = str(tmp_path / "whole")
    assert cli("run", "--case", "normal", "--provider", "gemini", "--report-dir", whole).returncode != 2
    result = cli("merge", str(shards / "s1"), str(tmp_path / "whole"), "--report-dir", str(tmp_path / "out"))
    assert result.returncode == 2 and "not a shard's report" in result.stderr and "whole/report.json" in result.stderr


def edited(source: Path, target: Path, change: str) -> Path:
    document = json.loads(source.read_text())
    if change == "suite":
        document["measured"]["suite"] = "0.0.1"
    elif change == "count":
        document["shard"]["of"] = 3
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document))
    return target


@pytest.mark.parametrize(("change", "message"), [("suite", "measured with"), ("count", "shard of 3")])
def test_merge_refuses_shards_of_different_runs(shards: Path, tmp_path: Path, change: str, message: str) -> None:
    other = edited(shards / "s2/report.json", tmp_path / "s2/report.json", change)
    result = cli("merge", str(shards / "s1"), str(other), "--report-dir", str(tmp_path / "out"))
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_merge_refuses_one_fixture_file_with_two_contents(shards: Path, tmp_path: Path) -> None:
    one = json.loads((shards / "s1/report.json").read_text())
    two = json.loads((shards / "s2/report.json").read_text())
    shared = next(iter(one["shard"]["fixture_files"]))
    two["shard"]["fixture_files"][shared] = "0" * 64
    (tmp_path / "s2.json").write_text(json.dumps(two))
    result = cli("merge", str(shards / "s1"), str(tmp_path / "s2.json"), "--report-dir", str(tmp_path / "out"))
    assert result.returncode == 2 and f"{shared} has other content" in result.stderr


def test_merge_refuses_an_unreadable_report(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"results": [')
    result = cli("merge", str(tmp_path / "bad.json"), "--report-dir", str(tmp_path / "out"))
    assert result.returncode == 2 and "bad.json" in result.stderr and "not JSON" in result.stderr


def test_merge_refuses_shards_of_other_filters_or_commits(shards: Path, tmp_path: Path) -> None:
    common = ["--case", "normal", "--case", "refusal", "--provider", "openai-chat"]  # without gemini
    assert cli("run", *common, "--shard", "2/2", "--report-dir", str(tmp_path / "other")).returncode != 2
    result = cli("merge", str(shards / "s1"), str(tmp_path / "other"), "--report-dir", str(tmp_path / "out"))
    assert result.returncode == 2 and "its plan" in result.stderr and "other filters" in result.stderr
    cases = copied_cases(tmp_path / "cases", 1)
    base = ["--cases", str(cases), "--case", "normal_000", "--case", "refusal_000", "--provider", "openai-chat"]
    assert cli("run", *base, "--shard", "1/2", "--report-dir", str(tmp_path / "c1")).returncode != 2
    fixture = cases / "refusal_000/openai-chat/turn1.json"
    fixture.write_text(fixture.read_text() + "\n")  # the next commit: one byte more in one recording
    assert cli("run", *base, "--shard", "2/2", "--report-dir", str(tmp_path / "c2")).returncode != 2
    result = cli("merge", str(tmp_path / "c1"), str(tmp_path / "c2"), "--report-dir", str(tmp_path / "out2"))
    assert result.returncode == 2 and "its plan" in result.stderr


@pytest.mark.parametrize(("pointer", "value"), [("/shard/index", 7), ("/shard/index", True), ("/measured", None),
                                                ("/providers", None), ("/shard/fixture_files", {"a": "nothex"})])
def test_merge_refuses_a_malformed_shard_naming_the_field(shards: Path, tmp_path: Path, pointer: str,
                                                          value: object) -> None:
    document = json.loads((shards / "s2/report.json").read_text())
    *parents, last = pointer.strip("/").split("/")
    target = document
    for key in parents:
        target = target[key]
    target[last] = value
    (tmp_path / "s2.json").write_text(json.dumps(document))
    result = cli("merge", str(shards / "s1"), str(tmp_path / "s2.json"), "--report-dir", str(tmp_path / "out"))
    assert result.returncode == 2 and pointer in result.stderr and "Traceback" not in result.stderr


def test_verify_does_not_take_one_shard_for_the_run(shards: Path) -> None:
    result = cli("verify", str(shards / "s1"), "--require", "conformance", "--allow-failures")
    assert result.returncode == 1 and "merge the shards first" in result.stdout


