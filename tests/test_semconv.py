"""A report's rows as OpenTelemetry GenAI records (docs/telemetry.md, "Export"): the attribute values are what the
recorded wire says, worked out by hand from the fixtures, and the lossy kind → finish-reason table is the
documented one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conformance.report.semconv import FINISH_REASONS, records
from tests.helpers import CASES, cli, some_cases

DOC = (Path(__file__).parent.parent / "docs/telemetry.md").read_text(encoding="utf-8")


def _exported(tmp_path: Path, provider: str) -> list[dict[str, Any]]:
    root = some_cases(tmp_path / "cases", "cached_usage")
    run = cli("run", "--no-config", "--cases", str(root), "--provider", provider, "--mode", "body",
              "--report-dir", str(tmp_path / "report"))
    assert run.returncode == 0, run.stderr
    out = tmp_path / "semconv.jsonl"
    result = cli("export", str(tmp_path / "report/report.json"), "--output", str(out))
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_a_cached_follow_up_exports_the_wire_s_counts_ids_and_finish_reasons(tmp_path: Path) -> None:
    exported = _exported(tmp_path, "anthropic-messages")
    chats = [record["attributes"] for record in exported if record["attributes"]["gen_ai.operation.name"] == "chat"]
    tools = [record["attributes"] for record in exported if record["attributes"]["gen_ai.operation.name"]
             == "execute_tool"]
    first = json.loads((CASES / "cached_usage/anthropic-messages/turn1.json").read_text())
    second = json.loads((CASES / "cached_usage/anthropic-messages/turn2.json").read_text())
    assert [chat["gen_ai.response.finish_reasons"] for chat in chats] == [["tool_call"], ["stop"]]
    assert [chat["gen_ai.response.id"] for chat in chats] == [first["id"], second["id"]]
    assert chats[1]["gen_ai.response.model"] == second["model"]
    # Input includes the cache reads, as the convention says: Anthropic's 60 + 512 + 0.
    assert (chats[1]["gen_ai.usage.input_tokens"], chats[1]["gen_ai.usage.cache_read.input_tokens"],
            chats[1]["gen_ai.usage.output_tokens"]) == (572, 512, 21)
    assert chats[0]["gen_ai.provider.name"] == "anthropic"
    called = [block["id"] for block in first["content"] if block["type"] == "tool_use"]
    assert [tool["gen_ai.tool.call.id"] for tool in tools] == called


def test_a_count_the_vendor_did_not_report_is_left_out_and_unsupported_keeps_the_raw_value() -> None:
    report = {"results": [{"case": "c", "provider": "gemini@google-genai", "mode": "stream", "turns": [
        {"turn": 1, "kind": "unsupported", "raw": "finishReason=future_release", "model": None,
         "usage": {"input_tokens": 10, "output_tokens": 2, "cached_input_tokens": None, "reasoning_tokens": None}},
        {"turn": 2, "kind": "retryable_error", "raw": "http=429", "http_status": 429, "usage": None}]}]}
    first, second = (record["attributes"] for record in records(report, {"gemini": "gcp.gemini"}))
    assert first["gen_ai.response.finish_reasons"] == ["future_release"]
    assert "gen_ai.usage.cache_read.input_tokens" not in first and "gen_ai.usage.reasoning.output_tokens" not in first
    assert first["gen_ai.provider.name"] == "gcp.gemini" and first["conformance.lane"] == "gemini@google-genai"
    assert (second["gen_ai.response.finish_reasons"], second["error.type"]) == (["error"], "429")


def test_the_documented_table_is_the_one_the_export_applies() -> None:
    table = dict(re.findall(r"^\| `(\w+)` \| `?([\w ()]+?)`? \|", DOC.split("## Export", 1)[1], re.M))
    assert table == {kind: (reason if reason is not None else "the raw stop value") for kind, reason in
                     FINISH_REASONS.items()}


def test_an_unreadable_report_is_a_clear_error_and_no_file_is_written(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text("{not json")
    result = cli("export", str(tmp_path / "report.json"), "--output", str(tmp_path / "out.jsonl"))
    assert result.returncode == 2 and "not JSON" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out.jsonl").exists()
