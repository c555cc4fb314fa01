"""Wire drift on re-recording (docs/record.md, "Drift"): what a new set of recordings carries that the previous one
never had, with whether the adapter reads it, and the turns whose classification moved."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import CASES, cli, some_cases


def _copies(tmp_path: Path, *names: str) -> list[Path]:
    """Cases folders holding the normal case, one per name."""
    return [some_cases(tmp_path / name, "normal") for name in names]


def test_a_rerecording_with_a_new_field_stop_value_and_block_type_names_all_three(tmp_path: Path) -> None:
    old, new = _copies(tmp_path, "old", "new")
    turn = new / "normal/anthropic-messages/turn2.json"
    body = json.loads(turn.read_text())
    body["content"][0]["confidence_v2"] = {"score": 0.9}  # a field the previous set never had
    body["content"].append({"type": "answer_card", "title": "Order ORD-1001"})  # a block type it never had
    body["stop_reason"] = "answer_complete"  # and a stop value
    body["usage"]["answer_tokens"] = 12  # a counter that appeared
    del body["usage"]["service_tier"]
    turn.write_text(json.dumps(body))
    result = cli("drift", str(old), str(new), "--provider", "anthropic-messages")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    where = "new/normal/anthropic-messages/turn2.json"
    assert any(line.startswith("anthropic-messages: new key path /content/*/confidence_v2 (") and where in line
               and line.endswith("the adapter does not read it)") for line in lines), lines
    assert any(line.startswith("anthropic-messages: new stop value answer_complete (")
               and line.endswith("the adapter does not read it)") for line in lines), lines
    assert any(line.startswith("anthropic-messages: new item type answer_card (") for line in lines), lines
    assert any(line.startswith("anthropic-messages: new counter /answer_tokens (") for line in lines), lines
    assert any(line.startswith("moved: anthropic-messages: normal turn 2 (body): text (stop_reason=end_turn) → "
                               "unsupported") for line in lines), lines
    again = cli("drift", str(new), str(old), "--provider", "anthropic-messages")
    assert "anthropic-messages: counter gone /answer_tokens" in again.stdout


def test_a_field_the_adapter_reads_is_said_to_be_read(tmp_path: Path) -> None:
    """A recording set that first carries the cache-read count: the adapter totals it, and the drift says so."""
    old, new = _copies(tmp_path, "old", "new")
    for path in (old / "normal/anthropic-messages").glob("turn*.json"):
        body = json.loads(path.read_text())
        del body["usage"]["cache_read_input_tokens"]
        path.write_text(json.dumps(body))
    result = cli("drift", str(old), str(new), "--provider", "anthropic-messages")
    assert any(line.startswith("anthropic-messages: new counter /cache_read_input_tokens (")
               and line.endswith("the adapter reads it)") for line in result.stdout.splitlines()), result.stdout


def test_the_same_recordings_have_no_drift(tmp_path: Path) -> None:
    result = cli("drift", str(CASES), str(CASES))
    assert result.returncode == 0 and result.stdout.strip().endswith("never had")
    assert result.stdout.strip().startswith("0 new thing(s)")


def test_record_says_what_the_new_recordings_carry(tmp_path: Path) -> None:
    """Re-recording a provider whose vendor now sends a new field: record lists it under the files it wrote."""
    import pytest

    pytest.importorskip("anthropic")
    from conformance.engine.cases import load_cases
    from conformance.replay.server import BackgroundServer

    upstream_cases, mine = _copies(tmp_path, "upstream", "cases")
    turn = upstream_cases / "normal/anthropic-messages/turn2.json"
    body = json.loads(turn.read_text())
    body["content"][0]["confidence_v2"] = {"score": 0.9}  # the vendor's next release, served by the upstream
    turn.write_text(json.dumps(body))
    with BackgroundServer(load_cases([upstream_cases])) as server:
        result = cli("record", "--cases", str(mine), "--case", "normal", "--provider", "anthropic-messages",
                     "--upstream", f"anthropic-messages={server.base}/s/{{case}}/{{provider}}/{{mode}}",
                     "--record-mode", "all", "--mode", "body")
    assert result.returncode == 0, result.stderr
    assert "  drift: anthropic-messages: new key path /content/*/confidence_v2 (" in result.stdout
    assert "the adapter does not read it)" in result.stdout


def test_a_naive_adapter_does_not_read_a_new_block_and_one_that_raises_is_named(tmp_path: Path) -> None:
    """`else: text` tells no new block from an unseen one: it does not read it. An adapter that raises on the new
    recordings is a line of the drift, not a traceback. A stop value the reference adapter knows, it reads."""
    old, new = _copies(tmp_path, "old", "new")
    turn = new / "normal/anthropic-messages/turn2.json"
    body = json.loads(turn.read_text())
    body["content"].append({"type": "answer_card", "title": "Order ORD-1001"})
    body["stop_reason"] = "max_tokens"
    turn.write_text(json.dumps(body))
    (tmp_path / "naive.py").write_text(
        "import dataclasses\nfrom conformance.kit.types import Text\n"
        "from conformance.providers.anthropic_messages import ADAPTER as A\n"
        "def read(body):\n"
        "    return A.classify_body(body) if body['stop_reason'] == 'tool_use' else Text(raw='x', text='t')\n"
        "ADAPTER = dataclasses.replace(A, id='anthropic-messages', classify_body=read)\n"
        "def explode(body):\n"
        "    return A.classify_body(body) if body['stop_reason'] == 'tool_use' else body['no_such_key']\n"
        "RAISES = dataclasses.replace(A, id='anthropic-messages', classify_body=explode)\n")
    naive = cli("drift", str(old), str(new), "--provider", "anthropic-messages", "--adapter",
                f"{tmp_path / 'naive.py'}:ADAPTER")
    assert naive.returncode == 0, naive.stderr
    card = next(line for line in naive.stdout.splitlines() if "new item type answer_card" in line)
    assert card.endswith("the adapter does not read it)")
    reference = cli("drift", str(old), str(new), "--provider", "anthropic-messages")
    stop = next(line for line in reference.stdout.splitlines() if "new stop value max_tokens" in line)
    assert stop.endswith("the adapter reads it)")
    raises = cli("drift", str(old), str(new), "--provider", "anthropic-messages", "--adapter",
                 f"{tmp_path / 'naive.py'}:RAISES")
    assert raises.returncode == 0 and "Traceback" not in raises.stderr
    assert "moved: anthropic-messages: normal turn 2 (body): the adapter raised KeyError: 'no_such_key'" in \
        raises.stdout


def test_a_stream_only_block_stop_value_and_enum_value_are_named_and_measured(tmp_path: Path) -> None:
    """What only a stream carries is named as a body's would be: its item type, its stop value, a new value of a
    field that names a kind (a delta's `type`); and whether the adapter reads it is measured on the stream. A stop
    value the adapter knows, it reads; one it does not, it does not."""
    old, new = _copies(tmp_path, "old", "new")
    stream = new / "normal/anthropic-messages/turn2.sse"
    card = ('event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":'
            '{"type":"answer_card","title":""}}\n\n'
            'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":'
            '{"type":"card_delta","title":"Order ORD-1001"}}\n\n'
            'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n')
    text = stream.read_text().replace("event: message_delta", card + "event: message_delta")
    stream.write_text(text.replace('"stop_reason":"end_turn"', '"stop_reason":"answer_complete"'))
    result = cli("drift", str(old), str(new), "--provider", "anthropic-messages")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    where = "new/normal/anthropic-messages/turn2.sse"
    for start in ("anthropic-messages: new item type answer_card (",
                  "anthropic-messages: new stop value answer_complete (",
                  "anthropic-messages: new enum value stream content_block_delta: /delta/type = card_delta ("):
        assert any(line.startswith(start) and where in line and line.endswith("the adapter does not read it)")
                   for line in lines), (start, lines)
    assert not any("not measured" in line for line in lines if "new key path" not in line), lines
    # A stop value the old streams never had but the adapter knows: `max_tokens` turns the answer into incomplete.
    stream.write_text(text.replace('"stop_reason":"end_turn"', '"stop_reason":"max_tokens"'))
    known = cli("drift", str(old), str(new), "--provider", "anthropic-messages")
    stop = next(line for line in known.stdout.splitlines() if "new stop value max_tokens" in line)
    assert stop.endswith("the adapter reads it)"), known.stdout


def test_a_new_enum_value_in_a_body_is_listed(tmp_path: Path) -> None:
    old, new = _copies(tmp_path, "old", "new")
    turn = new / "normal/openai-responses/turn2.json"
    body = json.loads(turn.read_text())
    body["output"][-1]["status"] = "finalizing"  # an item status the previous set never had
    turn.write_text(json.dumps(body))
    result = cli("drift", str(old), str(new), "--provider", "openai-responses")
    assert any(line.startswith("openai-responses: new enum value /output/*/status = finalizing (")
               for line in result.stdout.splitlines()), result.stdout
