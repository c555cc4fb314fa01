"""The request side of the contract, checked on every request of a row (docs/contract.md, "Requests").

From the case's task and the transcript the loop sent, the engine knows what each request must carry; the adapter
reads its own wire request back into neutral form (``RequestParts.sent``, ``Adapter.read_history``), and this
module compares the two without knowing any vendor. A check the adapter gives no reading for is reported as not
checked, never as passed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.engine.rows import Mode
from conformance.errors import InputError, Problem
from conformance.kit.adapter import Adapter, RequestParts, SentEntry, SentPrefix, SentResult
from conformance.kit.jsontext import parse_json
from conformance.kit.task import (
    FORCING_CHOICES,
    ModelTurn,
    Task,
    ToolResults,
    TranscriptEntry,
    UserMessage,
    called_since_user,
    task_for_turn,
)
from conformance.kit.values import strings_in


def canonical(value: Any) -> str:
    """One spelling of a JSON value: sorted keys, no spaces, UTF-8 text."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


_quoted = json.encoder.encode_basestring
"""A string's JSON spelling with ensure_ascii off: what ``canonical`` writes for a string."""


def check_requests(adapter: Adapter, task: Task, requests: Sequence[dict[str, Any]],
                   transcripts: Sequence[Sequence[TranscriptEntry]],
                   rebuild: bool = True, parts: Sequence[RequestParts] | None = None,
                   ) -> tuple[list[dict[str, Any]], list[str]]:
    """Per request, a record for the report (sizes, digest, what each slot carries, problems), and the row's
    failures: each problem once, with the turns it holds on (``turns 1, 2: …``). ``rebuild`` False: the requests
    came from a real client (a stack), so the adapter's own build is not the one to repeat. ``parts``: the requests
    as the adapter reads them, when the caller has read them already."""
    records = []
    found: dict[str, list[int]] = {}
    spelled = _Spelled.of(task)
    if parts is None:
        parts = [adapter.read_request(request) for request in requests]
    for index, (request, transcript, read) in enumerate(zip(requests, transcripts, parts, strict=True)):
        record = _check_one(adapter, task, spelled, request, transcript, rebuild, read)
        records.append(record)
        for problem in record["problems"]:
            found.setdefault(problem, []).append(index + 1)
    return records, _by_turns(found)


def prefix_failures(adapter: Adapter, task: Task, requests: Sequence[dict[str, Any]]) -> list[str]:
    """The request-contract failures of what every request must carry whatever the conversation (the instructions
    in the system slot, the tools and their schemas, the tool choice, the output schema, the token cap), for
    requests whose conversation the suite did not build: a team's own loop (``conformance.stacks.agent``)."""
    spelled = _Spelled.of(task)
    found: dict[str, list[int]] = {}
    for index, request in enumerate(requests):
        for problem in acceptance_problems(adapter, request):
            found.setdefault(problem, []).append(index + 1)
        parts = adapter.read_request(request)
        if parts.sent is None:
            continue
        conversation = list(adapter.read_history(parts.history)) if adapter.read_history is not None else []
        for problem in _prefix_problems(task, spelled, parts.sent, conversation):
            found.setdefault(problem, []).append(index + 1)
    return _by_turns(found)


def acceptance_problems(adapter: Adapter, request: dict[str, Any]) -> list[str]:
    """What the vendor would refuse in ``request`` before it answers (``Wire.acceptance``), each with the rule and
    the JSON pointer (docs/contract.md, "Requests")."""
    rules = adapter.wire.acceptance if adapter.wire is not None else ()
    problems: list[str] = []
    for rule in rules:
        try:
            found = list(rule.check(request))
        except Exception as error:  # noqa: BLE001 - a body the rule cannot read is said, not raised
            problems.append(f"the rule {rule.id} could not read the request ({type(error).__name__}: {error}): "
                            "the vendor's check of this body is unknown; fix the request's shape")
            continue
        problems += [f"the vendor would refuse it ({rule.id}, {rule.source}): {pointer}: {what}"
                     for pointer, what in found]
    return problems


def _by_turns(found: dict[str, list[int]]) -> list[str]:
    """Each problem once, with the turns it holds on (``request: turns 1, 2: …``)."""
    return [f"request: turn{'s' if len(turns) > 1 else ''} {', '.join(map(str, turns))}: {problem}"
            for problem, turns in found.items()]


@dataclass(frozen=True, slots=True)
class _Spelled:
    """The case's schemas and strings in canonical JSON, spelled once per row, not once per turn."""

    tools: tuple[str, ...]
    output_schema: str | None
    strings: str
    """Every string the case itself states (instructions, tools, schemas): a date in it is not a per-call value."""

    @classmethod
    def of(cls, task: Task) -> _Spelled:
        return cls(tools=tuple(canonical(dict(tool.parameters)) for tool in task.tools),
                   output_schema=canonical(dict(task.output_schema)) if task.output_schema is not None else None,
                   strings=canonical([task.instructions, task.output_schema,
                                      [(tool.name, tool.description, dict(tool.parameters)) for tool in task.tools]]))


def _spelled_request(request: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The request's canonical text and each top-level field's, by key, in key order: each value spelled once. With
    string keys (every JSON object) the whole text is put together from the fields' texts, which is what one sorted
    dump writes; any other key is spelled by ``json`` as before."""
    if all(type(key) is str for key in request):
        fields = {key: canonical(request[key]) for key in sorted(request)}
        # A key's spelling is json's own for a string (``json.dumps`` of a str with ensure_ascii off calls it).
        return "{" + ",".join(f"{_quoted(key)}:{value}" for key, value in fields.items()) + "}", fields
    return canonical(request), {str(key): canonical(value)
                                for key, value in sorted(request.items(), key=lambda item: str(item[0]))}


def _check_one(adapter: Adapter, task: Task, spelled: _Spelled, request: dict[str, Any],
               transcript: Sequence[TranscriptEntry], rebuild: bool, parts: RequestParts) -> dict[str, Any]:
    text, fields = _spelled_request(request)
    encoded = text.encode("utf-8")
    record: dict[str, Any] = {
        "bytes": len(encoded),
        "prefix_bytes": len(canonical(parts.prefix).encode("utf-8")),
        "sha256": hashlib.sha256(encoded).hexdigest()[:16],
        # Each top-level field by the digest of its value, so an upgrade's diff names the fields that moved
        # (``max_tokens`` gone, ``max_completion_tokens`` new) without the report keeping the request itself.
        "fields": {key: hashlib.sha256(value.encode("utf-8")).hexdigest()[:8] for key, value in fields.items()},
    }
    problems: list[str] = []
    conversation = list(adapter.read_history(parts.history)) if adapter.read_history is not None else None
    if parts.sent is None:
        record["sent"] = None
    else:
        record["sent"] = _sent_record(parts.sent)
        problems += _prefix_problems(task, spelled, parts.sent, conversation or [])
    if conversation is None:
        record["conversation"] = None
    else:
        record["conversation"] = [_entry_record(entry) for entry in conversation]
        problems += _conversation_problems(adapter, transcript, conversation)
    problems += _cache_problems(adapter, task, spelled, request, transcript, parts, rebuild)
    problems += acceptance_problems(adapter, request)
    record["checked"] = parts.sent is not None and conversation is not None
    record["problems"] = problems
    return record


def _sent_record(sent: SentPrefix) -> dict[str, Any]:
    return {
        "instructions": sent.instructions is not None,
        "tools": [tool.name for tool in sent.tools],
        "tool_choice": sent.tool_choice if sent.tool_choice != "tool" else f"tool {sent.forced_tool}",
        "output_schema": sent.output_schema is not None,
        "max_output_tokens": sent.max_output_tokens,
    }


def _entry_record(entry: SentEntry) -> dict[str, Any]:
    record: dict[str, Any] = {"role": entry.role}
    if entry.role == "results":
        record["results"] = [{"call_id": result.call_id, "is_error": result.is_error} for result in entry.results]
    if entry.role == "model":
        record["signatures"] = len(entry.signatures)
    return record


# ---- The static prefix: instructions, tools, tool choice, output schema, token cap -------------------------------

def _prefix_problems(task: Task, spelled: _Spelled, sent: SentPrefix,
                     conversation: Sequence[SentEntry]) -> list[str]:
    problems = _instruction_problems(task, sent, conversation)
    names = [tool.name for tool in task.tools]
    offered = [tool.name for tool in sent.tools]
    if offered != names:
        problems.append(f"tools offered [{', '.join(offered)}] ≠ case tools [{', '.join(names)}]")
    else:
        for spec, tool, wanted in zip(task.tools, sent.tools, spelled.tools, strict=True):
            if canonical(tool.parameters) != wanted:
                problems.append(f"tool {spec.name}: the parameter schema sent differs from the case's "
                                f"({_first_difference(dict(spec.parameters), tool.parameters)})")
            if tool.description is not None and tool.description != spec.description:
                problems.append(f"tool {spec.name}: the description sent differs from the case's "
                                f"({_first_difference(spec.description, tool.description)})")
    if task.tools:
        problems += _choice_problems(task, sent, conversation)
    if task.output_schema is None and sent.output_schema is not None:
        problems.append("an output schema is sent, but the case asks for free text")
    elif task.output_schema is not None and sent.output_schema is None:
        problems.append("the case's output schema is not in the vendor's structured-output slot")
    elif task.output_schema is not None and canonical(sent.output_schema) != spelled.output_schema:
        problems.append(f"the output schema sent differs from the case's "
                        f"({_first_difference(dict(task.output_schema), sent.output_schema)})")
    if sent.max_output_tokens != task.max_output_tokens:
        cap = sent.max_output_tokens if sent.max_output_tokens is not None else "none"
        problems.append(f"output token cap sent: {cap}; the case says {task.max_output_tokens}")
    return problems


def _instruction_problems(task: Task, sent: SentPrefix, conversation: Sequence[SentEntry]) -> list[str]:
    if sent.instructions == task.instructions:
        return []
    if any(entry.role == "user" and entry.text and task.instructions in entry.text for entry in conversation):
        return ["the instructions were sent as a user message, not in the vendor's system slot"]
    if sent.instructions is None:
        return ["no instructions in the vendor's system slot"]
    where = _first_difference(task.instructions, sent.instructions)
    return [f"the instructions in the system slot differ from the case's ({where})"]


def _first_difference(wanted: Any, got: Any, pointer: str = "") -> str:
    """Where two JSON values first differ, as a JSON pointer with both values."""
    if isinstance(wanted, dict) and isinstance(got, dict):
        for key in sorted(set(wanted) | set(got)):
            if key not in got or key not in wanted or canonical(wanted[key]) != canonical(got[key]):
                if key in got and key in wanted:
                    return _first_difference(wanted[key], got[key], f"{pointer}/{key}")
                return f"at {pointer}/{key}: " + ("missing" if key not in got else "extra")
    if isinstance(wanted, list) and isinstance(got, list) and len(wanted) == len(got):
        for index, (left, right) in enumerate(zip(wanted, got, strict=True)):
            if canonical(left) != canonical(right):
                return _first_difference(left, right, f"{pointer}/{index}")
    return f"at {pointer or '/'}: {_short(got)} instead of {_short(wanted)}"


def _short(value: Any) -> str:
    text = canonical(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- The conversation: user messages, re-sent model turns, results ------------------------------------------------

def _conversation_problems(adapter: Adapter, transcript: Sequence[TranscriptEntry],
                           conversation: Sequence[SentEntry]) -> list[str]:
    expected = _expected_conversation(adapter, transcript)
    roles = [entry.role for entry in conversation]
    wanted = [entry.role for entry in expected]
    if roles != wanted:
        return [_shape_problem(expected, conversation)]
    problems = []
    model_turn = 0
    for sent, want in zip(conversation, expected, strict=True):
        if want.role == "model":
            model_turn += 1
            if len(sent.signatures) < len(want.signatures) or set(want.signatures) - set(sent.signatures):
                kept = len(set(want.signatures) & set(sent.signatures))
                problems.append(f"model turn {model_turn} was re-sent with {kept} of its {len(want.signatures)} "
                                f"reasoning signature(s): the vendor needs each back, unchanged")
        elif want.role == "results":
            problems += _result_problems(model_turn, sent, want)
        elif want.role == "user" and sent.text != want.text:
            problems.append(f"a user message reads {_short(sent.text)}; the transcript has {_short(want.text)}")
    return problems


def _expected_conversation(adapter: Adapter, transcript: Sequence[TranscriptEntry]) -> list[SentEntry]:
    expected = []
    for entry in transcript:
        if isinstance(entry, UserMessage):
            expected.append(SentEntry(role="user", text=entry.text))
        elif isinstance(entry, ModelTurn):
            received = adapter.read_history(entry.response.output_items) if adapter.read_history else []
            signatures = tuple(signature for item in received for signature in item.signatures)
            expected.append(SentEntry(role="model", signatures=signatures))
        elif isinstance(entry, ToolResults):
            expected.append(SentEntry(role="results", results=tuple(
                SentResult(call_id=None if result.call.synthesized_id else result.call.call_id,
                           name=result.call.name, is_error=result.is_error) for result in entry.results)))
    return expected


def _shape_problem(expected: Sequence[SentEntry], conversation: Sequence[SentEntry]) -> str:
    roles = [entry.role for entry in conversation]
    collapsed = [role for index, role in enumerate(roles) if index == 0 or not (role == "results" == roles[index - 1])]
    if collapsed == [entry.role for entry in expected]:
        return ("the results of one model turn travel in separate messages; the vendor wants all results of a turn "
                "together, in one message")
    return (f"the conversation reads {' → '.join(roles) or 'nothing'}; the transcript is "
            f"{' → '.join(entry.role for entry in expected)}")


def _result_problems(model_turn: int, sent: SentEntry, want: SentEntry) -> list[str]:
    problems = []
    sent_ids = [result.call_id for result in sent.results]
    want_ids = [result.call_id for result in want.results]
    # Results that answer no call, or calls left unanswered, are the correlation check's to report.
    if sorted(map(str, sent_ids)) == sorted(map(str, want_ids)) and sent_ids != want_ids:
        problems.append(f"the results of model turn {model_turn} are sent in the order "
                        f"[{', '.join(map(str, sent_ids))}]; the calls came as [{', '.join(map(str, want_ids))}]")
    for got, wanted in zip(sent.results, want.results, strict=False):
        if got.call_id != wanted.call_id:
            continue
        if got.is_error is not None and got.is_error != wanted.is_error:
            what = "is not flagged as an error" if wanted.is_error else "is flagged as an error but succeeded"
            problems.append(f"the result for call {got.call_id or got.name} {what}")
        if got.name is not None and got.name != wanted.name:
            problems.append(f"the result for call {got.call_id or got.name} names tool {got.name}; "
                            f"the call named {wanted.name}")
    return problems


# ---- The prompt-cache rule: the prefix holds nothing that varies per call ----------------------------------------

# An ISO-8601 date-time: what a per-call value usually looks like. A plain date is not flagged (model names and
# beta flags pin versions by date: `gpt-4o-2024-08-06`), nor a UUID (a fixed `prompt_cache_key` helps the cache);
# a value that really varies per call shows in the rebuild, or as a prefix change between turns.
VARYING = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?")


def _cache_problems(adapter: Adapter, task: Task, spelled: _Spelled, request: dict[str, Any],
                    transcript: Sequence[TranscriptEntry], parts: RequestParts, rebuild: bool) -> list[str]:
    problems = []
    again = adapter.build_request(task_for_turn(task, transcript), transcript) if rebuild else request
    # Equal as values (a dict comparison, far cheaper than spelling the request again): a value that varies
    # per call differs, while key order cannot vary between two builds in one process.
    if again != request:
        problems.append(f"the same task and transcript built a different request "
                        f"({_first_difference(request, again)}): a request that varies per call defeats "
                        f"the vendor's prompt cache")
    for value in strings_in(parts.prefix):
        for match in VARYING.finditer(value):
            if match.group(0) not in spelled.strings:
                problems.append(f"the static prefix holds {match.group(0)!r}, which the case does not: a per-call "
                                f"value in the prefix defeats the vendor's prompt cache")
    return problems


def _choice_problems(task: Task, sent: SentPrefix, conversation: Sequence[SentEntry]) -> list[str]:
    """The tool choice a request sends against the case's, for the turn it is: a forced choice is sent until the
    forced call has been answered, ``auto`` after it (``task_for_turn``; docs/contract.md, "Requests")."""
    wanted = task.tool_choice if task.tool_choice != "tool" else f"tool {task.tool_name}"
    reset = task.tool_choice in FORCING_CHOICES and called_since_user(entry.role for entry in conversation)
    if reset:
        wanted = "auto"
    got = sent.tool_choice if sent.tool_choice != "tool" else f"tool {sent.forced_tool}"
    only = f"tool {task.tools[0].name}" if len(task.tools) == 1 else None
    if only is not None and {got, wanted} == {"required", only}:
        got = wanted  # with one tool offered, requiring a call and forcing that tool are the same request
    if got == wanted:
        return []
    if reset:
        return [f"tool choice sent: {got or 'none readable'} after the forced call was answered; the loop sends auto "
                f"from then on (with the choice still forced, the model must call a tool again and cannot answer)"]
    return [f"tool choice sent: {got or 'none readable'}; the case says {wanted}"]



def check_sent(adapter: Adapter, task: Task, request: Any) -> list[str]:
    """The prefix expectations alone, on a request some other program sent (``conformance serve``): what the case's
    task fixes, with no transcript to compare the conversation against."""
    if not isinstance(request, dict):
        return ["the request body is not a JSON object"]
    parts = adapter.read_request(request)
    if parts.sent is None:
        return []
    conversation = list(adapter.read_history(parts.history)) if adapter.read_history is not None else []
    return _prefix_problems(task, _Spelled.of(task), parts.sent, conversation)


def recorded_request_problems(adapter: Adapter, case_path: str, provider: str, mode: Mode,
                              parts: Sequence[RequestParts]) -> list[str]:
    """Each request the adapter built, against the request recorded beside the same turn (``conformance record``
    stores it as ``<provider>/requests/turnN.<mode>.json``, docs/record.md): both read by the adapter, the static
    prefix slot by slot and the tool results' call ids. A turn with no recorded request is not checked."""
    folder = Path(case_path).parent / provider / "requests"
    if not folder.is_dir():
        return []
    problems = []
    for index, built in enumerate(parts):
        path = folder / f"turn{index + 1}.{mode}.json"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue
        try:
            recorded = parse_json(text)
        except ValueError as error:  # not JSON, or nested past the bound: the fixture is broken, not the adapter
            raise InputError([Problem(str(path), None, f"the recorded request is not readable JSON ({error})",
                                      "record it again, or delete it (a turn without it is not checked)")]) from None
        if not isinstance(recorded, dict):
            continue
        then = adapter.read_request(recorded)
        changed = [field.name for field in dataclasses.fields(SentPrefix)
                   if then.sent is not None and built.sent is not None
                   and getattr(then.sent, field.name) != getattr(built.sent, field.name)]
        if [call_id for call_id, _ in then.results] != [call_id for call_id, _ in built.results]:
            changed.append("tool result ids")
        if changed:
            problems.append(f"request: turn {index + 1}: differs from the request recorded in "
                            f"{provider}/requests/{path.name} ({', '.join(changed)})")
    return problems
