"""The normalized classification of one report row: what a reviewer must see change, and nothing else."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SAME_AS_BODY = "same as body"

TURN_KEYS = ("kind", "reason", "source", "raw", "raw_type", "http_status", "retry_after_s", "detail")


def normalized_row(row: dict[str, Any]) -> dict[str, Any]:
    """Kinds, reasons, raw values, call ids and names, usage, correlation and outcome; no raw bodies."""
    turns = []
    for turn in row["turns"]:
        entry = {key: turn[key] for key in TURN_KEYS if turn.get(key) is not None}
        entry["calls"] = [
            {"call_id": call["call_id"], "name": call["name"], "synthesized_id": call["synthesized_id"]}
            for call in turn["calls"]
        ]
        entry["usage"] = turn["usage"]
        turns.append(entry)
    correlation = row["correlation"] or {}
    return {
        "case": row["case"],
        "provider": row["provider"],
        "mode": row["mode"],
        "outcome": row["outcome"],
        "passed": row["passed"],
        "turns": turns,
        "correlation": {key: correlation.get(key) for key in ("calls", "results", "matched", "problems")},
        "usage": row["usage"],
    }


def folded_rows(rows: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """One case × provider's normalized rows keyed by mode, a stream row that normalizes exactly like its body
    twin written as ``"same as body"``: the snapshot shows a stream only where it differs from the body."""
    normalized = {mode: {key: value for key, value in normalized_row(row).items() if key != "mode"}
                  for mode, row in rows.items()}
    body = normalized.get("body")
    return {mode: SAME_AS_BODY if mode != "body" and entry == body else entry for mode, entry in normalized.items()}
