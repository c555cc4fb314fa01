"""What a team's telemetry says of each turn, against what the wire said (docs/telemetry.md, "The telemetry lane").

A telemetry lane's row carries, per turn, the inference spans its instrumentation emitted, read under the
OpenTelemetry GenAI convention's names (``read_spans``). The suite's own reading of the same recorded turn, spelled in
those names, is ``conformance.report.semconv``'s record of the raw adapter's row. Every attribute where the two part is
a finding of the lane (``conformance.report.findings.Finding``, its field the attribute's name): ``lost`` (the wire had
it, the span has not), ``invented`` (the span has a value the wire never sent), ``changed`` (both have one, and they
differ). ``conformance diff`` gates them as it gates a stack's findings.

What counts as equal, decided here and written in docs/telemetry.md:

- a token count the span leaves out is equal to a 0 the wire sent (a dashboard sums both as nothing), and a 0 the
  span writes is equal to a count the wire did not send;
- a finish reason is right when it is the convention's word for the turn's kind (``semconv.FINISH_REASONS``) or the
  vendor's own stop value (``end_turn``, ``STOP``: the convention lets an instrumentation pass the provider's value
  on), compared without case;
- an error turn is right when its span records an error (``error.type`` or an error status); its finish reason and
  counts are not read;
- the tool call ids are the ids of the calls the turn asked for, in order (a call id the suite made up because the
  vendor sent none is not compared).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from conformance.report.semconv import FINISH_REASONS, USAGE

INFERENCE_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
"""The convention's ``gen_ai.operation.name`` values of a model call (an inference span)."""

FINISH = "gen_ai.response.finish_reasons"
ERRORS = frozenset({"retryable_error", "fatal_error"})
"""The kinds of a call that failed, by its HTTP status or by an error the stream sent after a 200."""
CALL_IDS = "gen_ai.tool.call.id"
"""The ids of the calls a turn asked for, as a list: the convention puts each on its ``execute_tool`` span and in
``gen_ai.output.messages``; an instrumentation of the client writes only the latter, read here."""
COUNTS = tuple(USAGE.values())
COMPARED = ("gen_ai.response.id", "gen_ai.response.model", FINISH, *COUNTS, CALL_IDS)
"""The attributes compared, in the order findings are listed."""

NON_SPEC: Mapping[str, tuple[str, ...]] = {
    "gen_ai.usage.input_tokens": ("gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens"),
    "gen_ai.usage.output_tokens": ("gen_ai.usage.completion_tokens", "llm.usage.completion_tokens"),
    "gen_ai.usage.cache_read.input_tokens": ("gen_ai.usage.cache_read_input_tokens",),
    "gen_ai.usage.cache_creation.input_tokens": ("gen_ai.usage.cache_creation_input_tokens",),
    "gen_ai.usage.reasoning.output_tokens": ("gen_ai.usage.reasoning_tokens", "llm.usage.reasoning_tokens"),
}
"""Names instrumentations have written counts under that the convention does not have: a value found only there is
still lost to a dashboard reading the convention, and the finding says where it is."""

OPENINFERENCE: Mapping[str, str] = {
    "llm.token_count.prompt": "gen_ai.usage.input_tokens",
    "llm.token_count.completion": "gen_ai.usage.output_tokens",
    "llm.token_count.prompt_details.cache_read": "gen_ai.usage.cache_read.input_tokens",
    "llm.token_count.prompt_details.cache_write": "gen_ai.usage.cache_creation.input_tokens",
    "llm.token_count.completion_details.reasoning": "gen_ai.usage.reasoning.output_tokens",
    "llm.response.model_name": "gen_ai.response.model",
    "llm.model_name": "gen_ai.response.model",
    "llm.finish_reason": FINISH,
}
"""OpenInference's names (openinference-semantic-conventions, ``SpanAttributes``) → the GenAI convention's. Its
prompt count includes the cache, as the convention's does. It has no name for the response id: that is lost."""

_OI_CALL_ID = re.compile(r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.id$")
_LEGACY_CALL_ID = re.compile(r"^gen_ai\.completion\.(\d+)\.tool_calls\.(\d+)\.id$")


def inference_spans(spans: Iterable[Mapping[str, Any]], dialect: str) -> list[Mapping[str, Any]]:
    """The spans of model calls among those a turn emitted (``conformance.stacks.telemetry.span_record`` dicts)."""
    if dialect == "openinference":
        return [span for span in spans if span["attributes"].get("openinference.span.kind") == "LLM"]
    return [span for span in spans if isinstance(operation := span["attributes"].get("gen_ai.operation.name"), str)
            and operation in INFERENCE_OPERATIONS]


def read_spans(spans: Sequence[Mapping[str, Any]], dialect: str) -> dict[str, Any]:
    """One turn's inference spans as the convention's attributes, read off the span that carries the counts (the
    last such; the first span when none does; how many there were is kept beside it by the caller), with
    ``non_spec``: the counts found only under a name the convention does not have, ``mistyped``: attributes of the
    wrong type, ``counted``: how many of the spans carry a token count, and ``error``: whether a span records an
    error."""
    if not spans:
        return {}
    counted = [span for span in spans if any(_count_names(span["attributes"], dialect))]
    span = counted[-1] if counted else spans[0]
    given: Mapping[str, Any] = span["attributes"]
    out: dict[str, Any] = {}
    if dialect == "openinference":
        for name, spec in OPENINFERENCE.items():
            if name in given and spec not in out:
                out[spec] = [given[name]] if spec == FINISH else given[name]
        ids = _indexed_ids(given, _OI_CALL_ID)
    else:
        for name in ("gen_ai.response.id", "gen_ai.response.model", FINISH, *COUNTS):
            if name in given:
                out[name] = given[name]
        ids = _message_call_ids(given.get("gen_ai.output.messages")) or _indexed_ids(given, _LEGACY_CALL_ID)
    mistyped = _typed(out)
    if ids:
        out[CALL_IDS] = ids
    aside = {spec: {name: given[name] for name in names if name in given}
             for spec, names in NON_SPEC.items() if spec not in out}
    out["non_spec"] = {spec: found for spec, found in aside.items() if found}
    out["mistyped"] = mistyped
    out["counted"] = len(counted)
    out["error"] = any(other.get("error") or other["attributes"].get("error.type") for other in spans)
    return out


def _typed(out: dict[str, Any]) -> list[str]:
    """Read the finish reasons and counts whatever their type, in place; the names of those of the wrong type (the
    list written as one JSON string, a count as text)."""
    mistyped: list[str] = []
    reasons = out.get(FINISH)
    if isinstance(reasons, str):
        mistyped.append(FINISH)
        out[FINISH] = _json_list(reasons)
    elif isinstance(reasons, (list, tuple)):
        out[FINISH] = list(reasons)
    elif FINISH in out:
        mistyped.append(FINISH)
        out[FINISH] = [reasons]
    for name in COUNTS:
        value = out.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            mistyped.append(name)
            out[name] = _as_int(value)
    return mistyped


def _count_names(given: Mapping[str, Any], dialect: str) -> Iterable[str]:
    names = OPENINFERENCE if dialect == "openinference" else dict.fromkeys(COUNTS)
    return (name for name in names if name.startswith(("gen_ai.usage.", "llm.token_count.")) and name in given)


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _json_list(text: str) -> list[Any]:
    try:
        parsed = json.loads(text)
    except ValueError:
        return [text]
    return parsed if isinstance(parsed, list) else [text]


def _message_call_ids(messages: Any) -> list[str]:
    """The ids of the ``tool_call`` parts of ``gen_ai.output.messages`` (a JSON string, as the convention writes
    structured values on a span)."""
    try:
        parsed = json.loads(messages) if isinstance(messages, str) else messages
    except ValueError:
        return []
    ids: list[str] = []
    for message in parsed if isinstance(parsed, list) else []:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_call" and isinstance(part.get("id"), str):
                ids.append(part["id"])
    return ids


def _indexed_ids(given: Mapping[str, Any], pattern: re.Pattern[str]) -> list[str]:
    """Call ids flattened into indexed attribute names, in message and call order."""
    found = sorted(((int(match[1]), int(match[2])), value) for name, value in given.items()
                   if (match := pattern.match(name)) and isinstance(value, str))
    return [value for _, value in found]


def expected(turn: Mapping[str, Any]) -> dict[str, Any]:
    """What a span of this raw turn should say, under the convention's names (``semconv``'s reading), with the tool
    call ids the vendor sent."""
    from conformance.report.semconv import chat_attributes  # noqa: PLC0415 - one reading for export and lane

    want = chat_attributes(turn)
    ids = [call.get("call_id") for call in turn.get("calls") or []
           if isinstance(call, dict) and not call.get("synthesized_id") and isinstance(call.get("call_id"), str)]
    if ids:
        want[CALL_IDS] = ids
    return want


Effect = Literal["lost", "invented", "changed"]


def compare_turn(turn: Mapping[str, Any], reading: Mapping[str, Any]
                 ) -> list[tuple[str, Effect, Any, Any, str]]:
    """The findings of one turn's span reading against the raw turn: (attribute, effect, wire, span, meaning)."""
    want = expected(turn)
    spans: int = reading["spans"] if isinstance(reading.get("spans"), int) else 0
    given = reading.get("attributes")
    got_first: Mapping[str, Any] = given if isinstance(given, dict) else {}
    if got_first.get("unreadable"):
        return [("span", "changed", "readable", "unreadable",
                 f"the span's attributes could not be read ({got_first['unreadable']})")]
    if spans == 0:
        return [("span", "lost", 1, 0, "no inference span for this call: the telemetry does not see the turn")]
    out: list[tuple[str, Effect, Any, Any, str]] = []
    got = got_first
    counted: int = got["counted"] if isinstance(got.get("counted"), int) else spans
    if spans > 1:
        out.append(("span", "changed", 1, spans,
                    f"{spans} inference spans for one call: every count is counted {counted} times" if counted > 1
                    else f"{spans} inference spans for one call, only one with the response's counts: a query on "
                         "the operation finds the call twice"))
    for name in got.get("mistyped") or []:
        if name == FINISH:
            out.append((f"{name}:type", "changed", "string[]", "string",
                        f"{name} is one JSON string, not a list of strings: a query on the array finds nothing"))
        else:
            out.append((f"{name}:type", "changed", "int", "other",
                        f"{name} is not an integer: a dashboard's sum skips it"))
    if "error.type" in want or turn.get("kind") in ERRORS:
        if not got.get("error"):
            out.append(("error.type", "lost", want.get("error.type") or turn.get("kind"), None,
                        "the span records no error for a call that failed"))
        return out
    for name in COMPARED:
        was, now = want.get(name), got.get(name)
        if name in COUNTS:
            was, now = was or None, now or None  # absent and 0 sum alike
        if name == FINISH and now and _right_reason(turn, now):
            continue
        if was == now:
            continue
        effect: Effect = "lost" if now is None else "invented" if was is None else "changed"
        out.append((name, effect, was, now, _meaning(name, effect, was, now, got.get("non_spec") or {}, want)))
    return out


def _right_reason(turn: Mapping[str, Any], reasons: Sequence[Any]) -> bool:
    """Whether the span's finish reason is the convention's word for the kind or the vendor's own value."""
    allowed = {FINISH_REASONS.get(str(turn.get("kind"))) or "", _raw_stop(turn.get("raw"))}
    return len(reasons) == 1 and str(reasons[0]).lower() in {value.lower() for value in allowed if value}


def _raw_stop(raw: Any) -> str:
    if not isinstance(raw, str) or "=" not in raw:
        return ""
    return raw.split("=", 1)[1].split(";", 1)[0].strip()


def _meaning(name: str, effect: str, was: Any, now: Any, non_spec: Mapping[str, Mapping[str, Any]],
             want: Mapping[str, Any]) -> str:
    if name == CALL_IDS:
        return {"lost": "the span names none of the turn's tool call ids",
                "invented": "the span names tool call ids the turn did not ask for"}.get(
                    effect, f"the span's tool call ids {now} are not the turn's {was}")
    if name == FINISH:
        return ("the span gives no finish reason" if effect == "lost" else
                f"the span's finish reason {now} is neither the convention's word for the turn ({was}) nor the "
                "vendor's own value")
    aside = non_spec.get(name) or {}
    where = "; ".join(f"the span has {value} under {other}, a name the convention does not have"
                      for other, value in aside.items())
    if name in COUNTS:
        text = {"lost": f"{name} is missing, though the vendor counted {was}",
                "invented": f"{name} reads {now}, a count the vendor never sent",
                "changed": f"{name} reads {now}; the wire's count is {was}"}[effect]
        cache = sum(want.get(part) or 0 for part in ("gen_ai.usage.cache_read.input_tokens",
                                                     "gen_ai.usage.cache_creation.input_tokens"))
        if name == "gen_ai.usage.input_tokens" and effect == "changed" and cache and now == was - cache:
            text += f": the {cache} cached prompt tokens are left out"
        return f"{text}; {where}" if where else text
    what = "the response id" if name == "gen_ai.response.id" else "the model the vendor named"
    return {"lost": f"{what} is missing", "invented": f"{what} is one the wire never sent",
            "changed": f"{what} reads {now}; the wire's is {was}"}[effect]
