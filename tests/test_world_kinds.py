"""The world's tool kinds real agents use (docs/world.md): shared records, search, pure functions and a team's
own callable, each giving receipts the answer check and the refusal rules use."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.loop import run_loop
from conformance.engine.world import Principal, World
from conformance.errors import InputError
from conformance.providers.openai_responses import ADAPTER
from tests.helpers import CASES, cli

SHOP_A = Principal(tenant="shop-a", user="u-100")

WORLD_YAML = """\
tools:
  find_orders:
    kind: search
    description: The signed-in customer's orders, by status.
    parameters: {type: object, properties: {status: {type: string}}, additionalProperties: false}
    collection: orders
    key: order_id
    filters: {status: status}
    returns: [order_id, status]
    evidence: [order_id, status]
  find_products:
    kind: search
    description: Products whose name contains a word.
    parameters: {type: object, properties: {word: {type: string}}, required: [word]}
    collection: products
    key: sku
    filters: {word: name}
    match: contains
    limit: 1
    returns: [sku, name]
    evidence: [sku]
  add:
    kind: function
    description: The sum of two numbers.
    parameters: {type: object, properties: {a: {type: number}, b: {type: number}}, required: [a, b]}
    results:
      - when: {a: 2, b: 3}
        result: {sum: 5}
    evidence: [sum]
  quote:
    kind: python
    description: A shipping quote.
    parameters: {type: object, properties: {postcode: {type: string}}, required: [postcode]}
    callable: tools.py:quote
    evidence: [price]
  refund:
    kind: function
    access: write
    description: Refund everything.
    parameters: {type: object}
    results: []
    default: {refunded: true}
data:
  orders:
    ORD-1: {tenant: shop-a, user: u-100, status: shipped}
    ORD-2: {tenant: shop-a, user: u-100, status: processing}
    ORD-3: {tenant: shop-a, user: u-100, status: shipped}
    ORD-9: {tenant: shop-b, user: u-900, status: shipped}
    ORD-5: {tenant: shop-a, status: shipped}
  products:
    SKU-1: {name: Electric Kettle}
    SKU-2: {name: Kettle descaler}
"""

TOOLS_PY = """\
def quote(arguments, principal):
    if arguments["postcode"].startswith("X"):
        return {"error": "permission_denied", "message": "not served"}
    return {"price": "4.90", "tenant": principal.tenant}
"""


CASE_HEAD = """\
id: c
scenario: c
title: c
proves: c
task: {instructions: i, input: q, tools: [find_orders]}
principal: {tenant: shop-a, user: u-100}
budget: {max_turns: 3, max_tool_calls: 3}
expect: {outcome: answer_ready}
"""


@pytest.fixture
def world(tmp_path: Path) -> World:
    (tmp_path / "world.yaml").write_text(WORLD_YAML)
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    return _load(tmp_path).world


def _load(root: Path, case_yaml: str | None = None) -> Any:
    case = root / "c"
    case.mkdir(exist_ok=True)
    (case / "case.yaml").write_text(case_yaml or CASE_HEAD + "providers: {openai-responses: {turns: [{status: 200, "
                                                             "inline: {}}]}}\n")
    return load_cases([root])[0]


def test_search_returns_only_visible_matching_records_in_key_order(world: World) -> None:
    receipt = world.execute(world.tools["find_orders"], {"status": "SHIPPED"}, SHOP_A, approved=False)
    assert receipt.output == {"results": [{"order_id": "ORD-1", "status": "shipped"},
                                          {"order_id": "ORD-3", "status": "shipped"},
                                          {"order_id": "ORD-5", "status": "shipped"}], "count": 3}
    assert [facts["order_id"] for facts in receipt.evidence_records] == ["ORD-1", "ORD-3", "ORD-5"]
    everything = world.execute(world.tools["find_orders"], {}, SHOP_A, approved=False)
    assert everything.output["count"] == 4  # no filter given: every record the principal may see
    other = world.execute(world.tools["find_orders"], {}, Principal(tenant="shop-b", user="u-900"), approved=False)
    assert [item["order_id"] for item in other.output["results"]] == ["ORD-9"]


def test_search_by_substring_keeps_the_limit_and_counts_every_match(world: World) -> None:
    receipt = world.execute(world.tools["find_products"], {"word": "kettle"}, SHOP_A, approved=False)
    assert receipt.output == {"results": [{"sku": "SKU-1", "name": "Electric Kettle"}], "count": 2}


def test_a_record_without_a_tenant_is_shared_and_one_without_a_user_is_the_tenants(world: World) -> None:
    from conformance.engine.world import visible

    assert visible({"name": "Kettle"}, Principal(tenant="anyone", user="x"))
    assert visible({"tenant": "shop-a"}, Principal(tenant="shop-a", user="u-2"))
    assert not visible({"tenant": "shop-a"}, Principal(tenant="shop-b", user="u-2"))
    assert not visible({"tenant": "shop-a", "user": "u-100"}, Principal(tenant="shop-a", user="u-2"))


def test_a_function_gives_its_declared_result_or_an_error(world: World) -> None:
    tool = world.tools["add"]
    assert world.execute(tool, {"a": 2, "b": 3}, SHOP_A, approved=False).output == {"sum": 5}
    assert world.execute(tool, {"a": 2, "b": 3}, SHOP_A, approved=False).evidence == {"sum": 5}
    missing = world.execute(tool, {"a": 1, "b": 1}, SHOP_A, approved=False)
    assert missing.is_error and missing.output["error"] == "no_result" and missing.evidence == {}


def test_a_write_function_needs_the_cases_approval(world: World) -> None:
    refused = world.execute(world.tools["refund"], {}, SHOP_A, approved=False)
    assert (refused.denied, refused.output["error"]) == ("approval_required", "approval_required")
    assert world.execute(world.tools["refund"], {}, SHOP_A, approved=True).output == {"refunded": True}


def test_a_python_tool_gets_the_principal_and_its_error_is_a_refusal(world: World,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFORMANCE_PYTHON_TOOLS", "allow")
    tool = world.tools["quote"]
    receipt = world.execute(tool, {"postcode": "10115"}, SHOP_A, approved=False)
    assert (receipt.output, receipt.evidence) == ({"price": "4.90", "tenant": "shop-a"}, {"price": "4.90"})
    refused = world.execute(tool, {"postcode": "X1"}, SHOP_A, approved=False)
    assert (refused.is_error, refused.denied, refused.evidence) == (True, "permission_denied", {})


def test_a_python_tool_that_cannot_be_loaded_is_an_error_naming_the_line(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFORMANCE_PYTHON_TOOLS", "allow")
    (tmp_path / "world.yaml").write_text(WORLD_YAML.replace("tools.py:quote", "tools.py:no_such_function"))
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    world = _load(tmp_path).world  # named, not imported: loading the cases runs no code of theirs
    with pytest.raises(InputError) as error:
        world.execute(world.tools["quote"], {"postcode": "10115"}, SHOP_A, approved=False)
    (problem,) = error.value.problems
    assert problem.file.endswith("world.yaml") and problem.line == 34
    assert "cannot load the tool's callable tools.py:no_such_function" in problem.message


@pytest.mark.parametrize(("removed", "message"), [("    filters: {status: status}\n", "'filters' is a required"),
                                                  ("    results:\n      - when: {a: 2, b: 3}\n"
                                                   "        result: {sum: 5}\n", "'results' is a required")])
def test_each_kind_requires_what_it_needs(tmp_path: Path, removed: str, message: str) -> None:
    assert removed in WORLD_YAML
    (tmp_path / "world.yaml").write_text(WORLD_YAML.replace(removed, "", 1))
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    with pytest.raises(InputError) as error:
        _load(tmp_path)
    assert any(message in problem.message for problem in error.value.problems)


def _responses_body(*items: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "completed", "model": "m", "output": list(items),
            "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    import json

    return {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name,
            "arguments": json.dumps(arguments), "status": "completed"}


def _text(value: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": value, "annotations": []}]}


@pytest.mark.parametrize(("answer", "outcome"), [
    ("Your shipped orders are ORD-1, ORD-3 and ORD-5.", "answer_ready"),
    ("Your shipped orders are ORD-1 and ORD-3.", "unverified_answer"),      # ORD-5 left out
    ("Your shipped orders are ORD-1, ORD-3, ORD-5 and ORD-2.", "unverified_answer"),  # a processing one added
])
def test_a_search_answer_must_state_every_record_found(tmp_path: Path, answer: str, outcome: str) -> None:
    import json

    (tmp_path / "world.yaml").write_text(WORLD_YAML)
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    turns = [_responses_body(_call("find_orders", status="shipped")), _responses_body(_text(answer))]
    body = "providers: {openai-responses: {turns: [" + ", ".join(
        f"{{status: 200, inline: {json.dumps(turn)}}}" for turn in turns) + "]}}\n"
    case = _load(tmp_path, CASE_HEAD + body)
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert run.outcome == outcome, run.detail
    assert run.receipts[0]["evidence_records"][2] == {"order_id": "ORD-5", "status": "shipped"}


def test_the_bundled_world_still_validates_with_the_new_kinds(tmp_path: Path) -> None:
    shutil.copytree(CASES, tmp_path / "cases", ignore=shutil.ignore_patterns("__snapshots__"))
    assert cli("validate", "--cases", str(tmp_path / "cases")).returncode == 0


@pytest.mark.parametrize(("call", "detail"), [
    (_call("refund"), "refund: approval_required"),                   # a write function, not approved
    (_call("quote", postcode="X1 1AA"), "quote: permission_denied"),  # the team's callable refuses the session
])
def test_a_denied_function_or_callable_ends_the_loop_as_a_denial(tmp_path: Path, call: dict[str, Any], detail: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.setenv("CONFORMANCE_PYTHON_TOOLS", "allow")

    (tmp_path / "world.yaml").write_text(WORLD_YAML)
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    head = CASE_HEAD.replace("tools: [find_orders]", "tools: [refund, quote]").replace(
        "answer_ready", "permission_denied")
    body = json.dumps(_responses_body(call))
    case = _load(tmp_path, head + f"providers: {{openai-responses: {{turns: [{{status: 200, inline: {body}}}]}}}}\n")
    run = run_loop(case, "openai-responses", ADAPTER, case.providers["openai-responses"].turns)
    assert (run.outcome, run.detail, run.leaks) == ("permission_denied", detail, [])
    assert run.receipts[0]["denied"] == detail.split(": ")[1]


def test_a_team_callable_that_breaks_is_the_rows_error_while_running_the_tool_calls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from conformance.engine.runner import run_case_keeping_error

    monkeypatch.setenv("CONFORMANCE_PYTHON_TOOLS", "allow")
    (tmp_path / "tools.py").write_text(TOOLS_PY + "\n\ndef broken(arguments, principal):\n    return ['4.90']\n")
    world = WORLD_YAML.replace("callable: tools.py:quote", "callable: tools.py:broken")
    (tmp_path / "world.yaml").write_text(world)
    head = CASE_HEAD.replace("tools: [find_orders]", "tools: [quote]")
    body = json.dumps(_responses_body(_call("quote", postcode="AB1 2CD")))
    case = _load(tmp_path, head + f"providers: {{openai-responses: {{turns: [{{status: 200, inline: {body}}}]}}}}\n")
    row, error = run_case_keeping_error(case, "openai-responses", ADAPTER)
    assert isinstance(error, TypeError)
    assert row["error"] is not None and (row["error"]["turn"], row["error"]["phase"]) == (1, "running the tool calls")
    assert row["detail"] == ("the adapter raised TypeError: tool quote returned list, not a mapping (turn 1, running "
                             "the tool calls, fixture inline)")
