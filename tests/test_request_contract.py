"""The request side of the contract: an adapter that sends the wrong request turns its row red, with a message that
says what is wrong (docs/contract.md, "Requests")."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
from collections.abc import Callable
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.request_check import check_requests
from conformance.engine.runner import modes_for, run_case, run_case_with_requests
from conformance.kit.adapter import Adapter, SentEntry, SentResult
from conformance.kit.task import ModelTurn, ToolResult, ToolResults, UserMessage
from conformance.kit.types import ToolCall, ToolCalls
from conformance.report.build import build_report, render_markdown
from tests.helpers import CASES

CASE = {case.id: case for case in load_cases([CASES])}
ADAPTERS = builtin_adapters()
PROVIDERS = sorted(ADAPTERS)

Change = Callable[[str, dict[str, Any]], None]


def mutated(provider: str, change: Change) -> Adapter:
    """The built-in adapter of ``provider`` with ``change`` applied to every request it builds."""
    adapter = ADAPTERS[provider]

    def build_request(task: Any, transcript: Any) -> dict[str, Any]:
        request = copy.deepcopy(adapter.build_request(task, transcript))
        change(provider, request)
        return request

    return dataclasses.replace(adapter, build_request=build_request)


def failures(case_id: str, provider: str, change: Change, mode: str = "body") -> tuple[dict[str, Any], list[str]]:
    row = run_case(CASE[case_id], provider, mutated(provider, change), mode)
    assert row["passed"] is False, row["failures"]
    return row, [failure for failure in row["failures"] if failure.startswith("request: ")]


# Where each API keeps the conversation, the tools and the system text.
HISTORY = {"openai-responses": "input", "openai-chat": "messages", "anthropic-messages": "messages",
           "gemini": "contents", "bedrock-converse": "messages"}
TOOLS = {"openai-responses": "tools", "openai-chat": "tools", "anthropic-messages": "tools", "gemini": "tools",
         "bedrock-converse": "toolConfig"}


def test_every_bundled_row_passes_the_request_checks_with_every_check_made() -> None:
    checked = 0
    for case in CASE.values():
        for provider, adapter in ADAPTERS.items():
            for mode in modes_for(case, provider, adapter) if provider in case.providers else []:
                row = run_case(case, provider, adapter, mode)
                assert [f for f in row["failures"] if f.startswith("request")] == [], (case.id, provider)
                for turn in row["turns"]:
                    assert turn["request"]["checked"] is True
                    assert turn["request"]["problems"] == []
                    checked += 1
    assert checked >= 254  # at least one turn in each of the bundled rows, body and stream


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_adapter_that_drops_the_tools_fails(provider: str) -> None:
    def drop(provider: str, request: dict[str, Any]) -> None:
        request.pop(TOOLS[provider], None)

    row, found = failures("normal", provider, drop)
    assert "request: turns 1, 2: tools offered [] ≠ case tools [get_order]" in found
    assert "tools offered [] ≠ case tools [get_order]" in row["turns"][0]["request"]["problems"]
    assert row["turns"][0]["request"]["sent"]["tools"] == []


def _instructions_as_user_message(provider: str, request: dict[str, Any]) -> None:
    if provider == "openai-chat":
        request["messages"][0]["role"] = "user"
        return
    if provider == "openai-responses":
        text = request.pop("instructions")
        request["input"].insert(0, {"role": "user", "content": text})
    elif provider == "gemini":
        system = request.pop("systemInstruction")
        request["contents"].insert(0, {"role": "user", "parts": system["parts"]})
    elif provider == "anthropic-messages":
        request["messages"].insert(0, {"role": "user", "content": request.pop("system")})
    else:
        request["messages"].insert(0, {"role": "user", "content": request.pop("system")})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_instructions_sent_as_a_user_message_fail(provider: str) -> None:
    _, found = failures("normal", provider, _instructions_as_user_message)
    assert ("request: turns 1, 2: the instructions were sent as a user message, not in the vendor's system slot"
            in found)


def test_a_gemini_thought_signature_dropped_on_resend_fails() -> None:
    def strip(provider: str, request: dict[str, Any]) -> None:
        for content in request["contents"]:
            for part in content["parts"]:
                if content["role"] == "model":
                    part.pop("thoughtSignature", None)

    row, found = failures("parallel_tool_calls", "gemini", strip)
    assert found[0] == ("request: turn 2: model turn 1 was re-sent with 0 of its 1 reasoning signature(s): the "
                        "vendor needs each back, unchanged")
    # and Gemini 3's own rule, by name and place (docs/contract.md, "What the vendor refuses")
    assert len(found) == 2 and "(thought-signature-sent-back, " in found[1]
    assert "/contents/1/parts/0/thoughtSignature" in found[1]
    assert row["turns"][1]["request"]["conversation"][1] == {"role": "model", "signatures": 0}


@pytest.mark.parametrize("mode", ["body", "stream"])
def test_an_anthropic_thinking_signature_dropped_on_resend_fails(mode: str) -> None:
    def strip(provider: str, request: dict[str, Any]) -> None:
        for message in request["messages"]:
            if message["role"] == "assistant":
                for block in message["content"]:
                    block.pop("signature", None)

    _, found = failures("normal", "anthropic-messages", strip, mode)
    assert found == ["request: turn 2: model turn 1 was re-sent with 0 of its 1 reasoning signature(s): the vendor "
                     "needs each back, unchanged"]


def test_a_responses_reasoning_item_resent_without_its_encrypted_content_fails() -> None:
    def strip(provider: str, request: dict[str, Any]) -> None:
        for item in request["input"]:
            item.pop("encrypted_content", None)

    _, found = failures("normal", "openai-responses", strip)
    assert found[0] == "request: turn 2: model turn 1 was re-sent with 0 of its 1 reasoning signature(s): the vendor " \
                       "needs each back, unchanged"
    # the request says it too, being stateless (store false): the vendor's rule, with the item's pointer
    assert len(found) == 2 and "(reasoning-items-replayable, " in found[1] and \
        "): /input/1/encrypted_content: " in found[1], found


def test_anthropic_results_sent_as_two_user_messages_fail() -> None:
    def split(provider: str, request: dict[str, Any]) -> None:
        messages = []
        for message in request["messages"]:
            blocks = message["content"]
            if message["role"] == "user" and isinstance(blocks, list) and len(blocks) > 1:
                messages.extend({"role": "user", "content": [block]} for block in blocks)
            else:
                messages.append(message)
        request["messages"] = messages

    _, found = failures("parallel_tool_calls", "anthropic-messages", split)
    assert found[0] == "request: turn 2: the results of one model turn travel in separate messages; the vendor " \
                       "wants all results of a turn together, in one message"
    # And the vendor's own rule says why it would refuse it: the second call has no result right after its turn.
    assert len(found) > 1 and all("(tool-results-first, " in failure for failure in found[1:]), found
    assert any(failure.endswith("needs exactly one tool_result here, found 0") for failure in found[1:]), found


def test_anthropic_text_before_the_results_fails() -> None:
    def text_first(provider: str, request: dict[str, Any]) -> None:
        for message in request["messages"]:
            if message["role"] == "user" and isinstance(message["content"], list):
                message["content"].insert(0, {"type": "text", "text": "Here are the results."})

    _, found = failures("parallel_tool_calls", "anthropic-messages", text_first)
    assert found == ["request: turn 2: the conversation reads user → model → user → results; the transcript is "
                     "user → model → results",
                     found[1]]
    assert "(tool-results-first, " in found[1] and found[1].endswith(
        "): /messages/2/content: tool_result blocks come first in the content, before any other block")


def _reverse_results(provider: str, request: dict[str, Any]) -> None:
    history = request[HISTORY[provider]]
    if provider in ("openai-chat", "openai-responses"):
        slots = [index for index, item in enumerate(history)
                 if item.get("role") == "tool" or item.get("type") == "function_call_output"]
        values = [history[index] for index in slots]
        for index, value in zip(slots, reversed(values), strict=True):
            history[index] = value
        return
    key = "parts" if provider == "gemini" else "content"
    for message in history:
        if message["role"] == "user" and isinstance(message[key], list) and len(message[key]) > 1:
            message[key].reverse()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reordered_parallel_results_fail(provider: str) -> None:
    row, found = failures("parallel_tool_calls", provider, _reverse_results)
    calls = [call["call_id"] for call in row["turns"][0]["calls"]]
    assert len(calls) == 2
    assert found == [f"request: turn 2: the results of model turn 1 are sent in the order [{calls[1]}, {calls[0]}]; "
                     f"the calls came as [{calls[0]}, {calls[1]}]"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_adapter_that_ignores_a_forced_tool_choice_fails(provider: str) -> None:
    adapter = ADAPTERS[provider]

    def build_request(task: Any, transcript: Any) -> dict[str, Any]:
        return adapter.build_request(dataclasses.replace(task, tool_choice="auto", tool_name=None), transcript)

    row = run_case(CASE["forced_tool_choice"], provider, dataclasses.replace(adapter, build_request=build_request))
    assert row["passed"] is False
    # Turn 2 follows the forced call's result: auto is what the loop sends there.
    assert "request: turn 1: tool choice sent: auto; the case says tool get_order" in row["failures"]
    assert not any("turn 2" in failure for failure in row["failures"])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_adapter_that_keeps_forcing_after_the_forced_call_fails_on_that_turn(provider: str) -> None:
    adapter = ADAPTERS[provider]

    def build_request(task: Any, transcript: Any) -> dict[str, Any]:
        return adapter.build_request(dataclasses.replace(task, tool_choice="tool", tool_name="get_order"), transcript)

    row = run_case(CASE["forced_tool_choice"], provider, dataclasses.replace(adapter, build_request=build_request))
    assert row["passed"] is False
    assert [failure for failure in row["failures"] if failure.startswith("request:")] == [
        "request: turn 2: tool choice sent: tool get_order after the forced call was answered; the loop sends auto "
        "from then on (with the choice still forced, the model must call a tool again and cannot answer)"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_timestamp_in_the_prefix_fails(provider: str) -> None:
    def stamp(provider: str, request: dict[str, Any]) -> None:
        request["metadata"] = {"sent_at": datetime.datetime.now(datetime.UTC).isoformat()}

    row, found = failures("refusal", provider, stamp)
    problems = row["turns"][0]["request"]["problems"]
    assert any(problem.startswith("the same task and transcript built a different request (at /metadata/sent_at: ")
               for problem in problems), problems
    assert any(problem.startswith("the static prefix holds '20") and "prompt cache" in problem for problem in problems)


def test_a_fixed_date_time_in_the_prefix_is_caught_by_the_scan_and_a_pinned_model_date_is_not() -> None:
    def dated(provider: str, request: dict[str, Any]) -> None:
        request["metadata"] = {"built": "2026-11-30T09:00:00Z"}

    _, found = failures("refusal", "openai-responses", dated)
    assert found == ["request: turn 1: the static prefix holds '2026-11-30T09:00:00', which the case does not: a "
                     "per-call value in the prefix defeats the vendor's prompt cache"]
    pinned = mutated("openai-responses", lambda provider, request: request.update(
        model="gpt-4o-2024-08-06", prompt_cache_key="5f0c7a52-3c1e-4b8e-9d51-0b5e2f1d6a11"))
    assert run_case(CASE["refusal"], "openai-responses", pinned)["passed"] is True


def test_a_date_the_case_itself_states_is_not_a_per_call_value() -> None:
    case = CASE["refusal"]
    task = dataclasses.replace(case.task, instructions=case.task.instructions + " Orders since 2024-01-01 only.")
    row = run_case(dataclasses.replace(case, task=task), "openai-responses", ADAPTERS["openai-responses"])
    assert row["turns"][0]["request"]["problems"] == []


@pytest.mark.parametrize(("change", "message"), [
    (lambda p, r: r.__setitem__("max_output_tokens", 4096),
     "request: turn 1: output token cap sent: 4096; the case says 512"),
    (lambda p, r: r.pop("max_output_tokens"), "request: turn 1: output token cap sent: none; the case says 512"),
    (lambda p, r: r["tools"][0]["parameters"]["properties"]["order_id"].pop("pattern"),
     "request: turn 1: tool get_order: the parameter schema sent differs from the case's "
     "(at /properties/order_id/pattern: missing)"),
    (lambda p, r: r.__setitem__("instructions", r["instructions"].upper()),
     "request: turn 1: the instructions in the system slot differ from the case's"),
    (lambda p, r: r.pop("instructions"), "request: turn 1: no instructions in the vendor's system slot"),
    (lambda p, r: r.__setitem__("text", {"format": {"type": "json_schema", "name": "x", "schema": {}}}),
     "request: turn 1: an output schema is sent, but the case asks for free text"),
])
def test_each_prefix_slot_is_checked(change: Change, message: str) -> None:
    _, found = failures("refusal", "openai-responses", change)
    assert any(failure.startswith(message) for failure in found), found


def test_a_missing_or_different_output_schema_fails() -> None:
    _, dropped = failures("structured_output_valid", "openai-chat", lambda p, r: r.pop("response_format"))
    assert dropped == ["request: turns 1, 2: the case's output schema is not in the vendor's structured-output "
                       "slot"]

    def loosen(provider: str, request: dict[str, Any]) -> None:
        request["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"] = '{"type":"object"}'

    _, loose = failures("structured_output_valid", "bedrock-converse", loosen)
    assert loose == ["request: turns 1, 2: the output schema sent differs from the case's (at /additionalProperties: "
                     "missing)"]


def _one_call_transcript(provider: str, call_id: str, is_error: bool) -> list[Any]:
    """A transcript of one call answered by one result, the model turn as the vendor would send it back."""
    call = ToolCall(call_id=call_id, name="get_order", arguments='{"order_id":"ORD-1001"}',
                    parsed_arguments={"order_id": "ORD-1001"})
    items = {
        "anthropic-messages": [{"role": "assistant", "content": [
            {"type": "tool_use", "id": call_id, "name": "get_order", "input": {"order_id": "ORD-1001"}}]}],
        "bedrock-converse": [{"role": "assistant", "content": [
            {"toolUse": {"toolUseId": call_id, "name": "get_order", "input": {"order_id": "ORD-1001"}}}]}],
        "gemini": [{"role": "model", "parts": [{"functionCall": {"id": call_id, "name": "get_order",
                                                                 "args": {"order_id": "ORD-1001"}},
                                                "thoughtSignature": "c3ludGhldGljLXNpZ25hdHVyZQ=="}]}],
    }[provider]
    return [UserMessage(text=CASE["normal"].task.input),
            ModelTurn(response=ToolCalls(raw="test", tool_calls=(call,), output_items=tuple(items))),
            ToolResults(results=(ToolResult(call=call, output={"error": "not found"}, is_error=is_error),))]


@pytest.mark.parametrize("provider", ["anthropic-messages", "bedrock-converse", "gemini"])
def test_an_error_result_must_carry_the_vendors_error_flag(provider: str) -> None:
    adapter, task = ADAPTERS[provider], CASE["normal"].task
    transcript = _one_call_transcript(provider, "call_e1", is_error=True)
    request = adapter.build_request(task, transcript)
    assert check_requests(adapter, task, [request], [transcript])[1] == []
    for sent, meant, what in [(False, True, "is not flagged as an error"), (True, False, "is flagged as an error but "
                                                                                    "succeeded")]:
        built = adapter.build_request(task, _one_call_transcript(provider, "call_e1", is_error=sent))
        frozen = dataclasses.replace(adapter, build_request=lambda task, transcript, built=built: built)
        assert check_requests(frozen, task, [built], [_one_call_transcript(provider, "call_e1", meant)])[1] == [
            f"request: turn 1: the result for call call_e1 {what}"]


def test_an_adapter_without_a_neutral_reading_is_reported_not_checked() -> None:
    adapter = ADAPTERS["openai-responses"]

    def read_request(request: Any) -> Any:
        return dataclasses.replace(adapter.read_request(request), sent=None)

    bare = dataclasses.replace(adapter, read_history=None, read_request=read_request)
    row = run_case(CASE["normal"], "openai-responses", bare)
    assert row["passed"] is True
    request = row["turns"][0]["request"]
    assert (request["checked"], request["sent"], request["conversation"]) == (False, None, None)


# ---- The neutral readings, one vendor at a time -------------------------------------------------------------------

def test_anthropic_history_reads_block_by_block() -> None:
    read = ADAPTERS["anthropic-messages"].read_history
    assert read is not None
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "…", "signature": "sig-A"},
                                          {"type": "redacted_thinking", "data": "red-B"},
                                          {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True},
                                     {"type": "text", "text": "And?"}]},
        {"role": "system", "content": "x"},
    ]
    assert read(history) == [
        SentEntry(role="user", text="Hi"),
        SentEntry(role="model", signatures=("sig-A", "red-B")),
        SentEntry(role="results", results=(SentResult(call_id="toolu_1", is_error=True),)),
        SentEntry(role="user", text="And?"),
        SentEntry(role="system message"),
    ]


def test_bedrock_history_reads_signatures_results_and_status() -> None:
    read = ADAPTERS["bedrock-converse"].read_history
    assert read is not None
    history = [
        {"role": "user", "content": [{"text": "Hi"}]},
        {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "…", "signature": "sig-A"}}},
            {"reasoningContent": {"redactedContent": "cmVk"}},
            {"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}},
            {"toolUse": {"toolUseId": "t2", "name": "f", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "status": "error"}},
                                     {"toolResult": {"toolUseId": "t2", "status": "success"}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t3"}}]},
    ]
    assert read(history) == [
        SentEntry(role="user", text="Hi"),
        SentEntry(role="model", signatures=("sig-A", "cmVk")),
        SentEntry(role="results", results=(SentResult(call_id="t1", is_error=True),
                                           SentResult(call_id="t2", is_error=False))),
        SentEntry(role="results", results=(SentResult(call_id="t3", is_error=False),)),
    ]


def test_gemini_history_reads_roles_and_the_error_convention() -> None:
    read = ADAPTERS["gemini"].read_history
    assert read is not None
    history = [
        {"role": "user", "parts": [{"text": "Hi"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "c2ln"},
                                    {"functionCall": {"name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"error": {"x": 1}}}},
                                   {"functionResponse": {"id": "fc_2", "name": "f", "response": {"output": {}}}}]},
        {"role": "function", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
    ]
    assert read(history) == [
        SentEntry(role="user", text="Hi"),
        SentEntry(role="model", signatures=("c2ln",)),
        SentEntry(role="results", results=(SentResult(call_id=None, name="f", is_error=True),
                                           SentResult(call_id="fc_2", name="f", is_error=False))),
        SentEntry(role="function content"),
    ]


def test_chat_and_responses_histories_group_one_turn_of_results() -> None:
    chat = ADAPTERS["openai-chat"].read_history
    responses = ADAPTERS["openai-responses"].read_history
    assert chat is not None and responses is not None
    assert chat([{"role": "user", "content": [{"type": "text", "text": "Hi"}]},
                 {"role": "assistant", "tool_calls": []},
                 {"role": "tool", "tool_call_id": "c1", "content": "{}"},
                 {"role": "tool", "tool_call_id": "c2", "content": "{}"},
                 {"role": "function", "name": "f", "content": "{}"},
                 {"role": "developer", "content": "x"}]) == [
        SentEntry(role="user", text="Hi"), SentEntry(role="model"),
        SentEntry(role="results", results=(SentResult(call_id="c1"), SentResult(call_id="c2"),
                                           SentResult(call_id=None, name="f"))),
        SentEntry(role="developer message"),
    ]
    assert responses([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
                      {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
                      {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": "c1", "output": "{}"},
                      {"role": "system", "content": "x"}]) == [
        SentEntry(role="user", text="Hi"), SentEntry(role="model", signatures=("enc",)),
        SentEntry(role="results", results=(SentResult(call_id="c1"),)),
        SentEntry(role="system message", text="x"),
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_tool_choice_reads_back_as_the_case_states_it(provider: str) -> None:
    adapter = ADAPTERS[provider]
    task = CASE["normal"].task
    for choice, name in [("auto", None), ("required", None), ("tool", "get_order"), ("none", None)]:
        built = adapter.build_request(dataclasses.replace(task, tool_choice=choice, tool_name=name), [])
        sent = adapter.read_request(built).sent
        assert sent is not None
        expected = "auto" if (provider, choice) == ("bedrock-converse", "none") else choice
        assert (sent.tool_choice, sent.forced_tool) == (expected, name), choice


def test_report_md_tallies_requests_per_provider() -> None:
    cases = [CASE["normal"], CASE["refusal"]]
    dropped = mutated("openai-chat", lambda provider, request: request.pop("tools", None))
    rows = [run_case(case, provider, dropped if provider == "openai-chat" else ADAPTERS[provider])
            for case in cases for provider in ("openai-chat", "gemini")]
    text = render_markdown(build_report(rows, ["gemini", "openai-chat"]))
    table = text.split("## Requests per provider (body mode, all cases)\n\n")[1].split("\n\n")[0].splitlines()
    def prefix_sizes(provider: str, adapter: Adapter) -> str:
        # The prefix spelled here, not by the code under test: the request without its conversation (Chat keeps
        # its leading system message under "system"), canonical JSON, UTF-8 bytes.
        def size(request: dict[str, Any]) -> int:
            history = "messages" if provider == "openai-chat" else "contents"
            prefix = {key: value for key, value in request.items() if key != history}
            if provider == "openai-chat":
                prefix["system"] = request["messages"][:1]
                prefix.pop("tool_choice", None)  # a per-turn slot (docs/contract.md, "Requests")
            elif "toolConfig" in prefix:
                prefix["toolConfig"] = {key: value for key, value in prefix["toolConfig"].items()
                                        if key != "functionCallingConfig"}
            return len(json.dumps(prefix, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode())

        sizes = sorted({size(request) for case in cases
                        for request in run_case_with_requests(case, provider, adapter)[2]})
        return str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"

    assert table[2:] == [
        f"| gemini | 3 | {prefix_sizes('gemini', ADAPTERS['gemini'])} | yes | 0 in 0 rows | 0 |",
        f"| openai-chat | 3 | {prefix_sizes('openai-chat', dropped)} | yes | 3 in 2 rows | 0 |",
    ]


# ---- Shapes a user's adapter may send that the built-in ones do not ----------------------------------------------

def test_a_reader_that_raises_is_an_error_row_not_a_crash() -> None:
    adapter = ADAPTERS["openai-chat"]

    def read_history(items: Any) -> Any:
        raise KeyError("role")

    row = run_case(CASE["normal"], "openai-chat", dataclasses.replace(adapter, read_history=read_history))
    assert (row["outcome"], row["passed"]) == ("error", False)
    assert (row["error"]["type"], row["error"]["phase"]) == ("KeyError", "checking the requests")


@pytest.mark.parametrize(("provider", "change"), [
    ("anthropic-messages", lambda p, r: r["messages"].__setitem__(0, {"role": "user", "content": [
        {"type": "text", "text": r["messages"][0]["content"][:10]},
        {"type": "text", "text": r["messages"][0]["content"][10:]}]})),
    ("bedrock-converse", lambda p, r: r["messages"][0]["content"].extend([{"cachePoint": {"type": "default"}}])),
    ("bedrock-converse", lambda p, r: r["messages"][0].__setitem__("content", [
        {"text": r["messages"][0]["content"][0]["text"][:10]},
        {"text": r["messages"][0]["content"][0]["text"][10:]}])),
    ("openai-responses", lambda p, r: r["input"].insert(0, {"role": "developer", "content": r.pop("instructions")})),
    ("openai-chat", lambda p, r: r["messages"].__setitem__(0, {"role": "developer", "content": [
        {"type": "text", "text": r["messages"][0]["content"]}]})),
    ("anthropic-messages", lambda p, r: r.__setitem__("system", [{"type": "text", "text": r["system"]}])),
])
def test_valid_shapes_the_built_in_adapters_do_not_send_still_pass(provider: str, change: Change) -> None:
    row = run_case(CASE["normal"], provider, mutated(provider, change))
    assert row["passed"] is True, row["failures"]


def test_a_dropped_tool_description_fails() -> None:
    def drop(provider: str, request: dict[str, Any]) -> None:
        del request["tools"][0]["function"]["description"]

    _, found = failures("normal", "openai-chat", drop)
    assert found[0].startswith("request: turns 1, 2: tool get_order: the description sent differs from the case's")


def test_with_one_tool_requiring_a_call_and_forcing_that_tool_are_the_same_request() -> None:
    case = CASE["forced_tool_choice"]
    for provider in PROVIDERS:
        adapter = ADAPTERS[provider]
        task = dataclasses.replace(case.task, tool_choice="required", tool_name=None)
        required = adapter.build_request(task, [UserMessage(text=task.input)])
        assert check_requests(adapter, case.task, [required], [[UserMessage(text=task.input)]],
                              rebuild=False)[1] == [], provider


def _snake(value: Any, schema: bool = False) -> Any:
    """A Gemini request in the proto field names (``system_instruction``), schemas left as they are."""
    if isinstance(value, list):
        return [_snake(item, schema) for item in value]
    if not isinstance(value, dict) or schema:
        return value
    out = {}
    for key, item in value.items():
        name = "".join(f"_{letter.lower()}" if letter.isupper() else letter for letter in key)
        out[name] = _snake(item, schema=name.endswith("json_schema"))
    return out


def test_gemini_requests_read_the_same_in_either_field_spelling() -> None:
    # The REST API takes proto JSON names and proto field names alike; LiteLLM sends `function_declarations`,
    # `system_instruction`, `function_response` (docs/gateways.md). The reader must see the same request.
    gemini = ADAPTERS["gemini"]
    for case_id in ("normal", "structured_output_valid", "forced_tool_choice", "multi_turn_history"):
        _, _, requests = run_case_with_requests(CASE[case_id], "gemini", gemini)
        for request in requests:
            snake = _snake(request)
            assert "system_instruction" in snake and snake != request
            camel_parts, snake_parts = gemini.read_request(request), gemini.read_request(snake)
            assert snake_parts.sent == camel_parts.sent and snake_parts.results == camel_parts.results
            assert gemini.read_history is not None
            assert gemini.read_history(snake_parts.history) == gemini.read_history(camel_parts.history)
