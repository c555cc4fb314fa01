"""Call correlation, checked on the requests an adapter built (docs/contract.md, "Correlation").

Id uniqueness is reported here and enforced by the loop (a reuse ends it as ``duplicate_call_id``).
Every follow-up request must keep the static prefix byte-identical, only grow the history at the end,
re-send the prior output items verbatim and in order, and answer each prior call exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from conformance.engine.rows import Correlation
from conformance.kit.adapter import Adapter, RequestParts
from conformance.kit.types import ModelResponse


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def check_correlation(
    adapter: Adapter, requests: Sequence[dict[str, Any]], responses: Sequence[ModelResponse],
    parts: Sequence[RequestParts] | None = None, wire: Sequence[ModelResponse] | None = None,
) -> Correlation:
    """Every correlation rule checked on the requests an adapter built and the responses it read. ``parts``: the
    requests as the adapter reads them, when the caller has read them already (the request checks read the same).
    ``wire``: for a real client's requests, the adapter's own reading of each turn the client was served; the calls
    are then the wire's, which the results must answer (a client may show its users other ids), while the output
    items to re-send stay the client's."""
    problems: list[str] = []
    if parts is None:
        parts = [adapter.read_request(request) for request in requests]
    called = responses if wire is None else wire
    calls = sum(len(response.calls) for response in called)
    ids = [call.call_id for response in called for call in response.calls if not call.synthesized_id]
    results = matched = 0
    for index in range(1, len(parts)):
        turn = index + 1
        previous, current = parts[index - 1], parts[index]
        if _canonical(current.prefix) != _canonical(parts[0].prefix):
            changed = _changed_keys(parts[0].prefix, current.prefix)
            problems.append(f"turn {turn}: the static prefix changed ({changed})")
        if list(current.history[: len(previous.history)]) != list(previous.history):
            problems.append(f"turn {turn}: the history of turn {index} was rewritten, not extended")
            continue
        tail = list(current.history[len(previous.history):])
        replayed = list(responses[index - 1].output_items)
        if tail[: len(replayed)] != replayed:
            problems.append(f"turn {turn}: the output items of turn {index} were not re-sent verbatim and in order")
        new_results = list(current.results[len(previous.results):])
        results += len(new_results)
        matched += _match(turn, called[index - 1], new_results, problems)
    return Correlation(calls=calls, results=results, matched=matched, ids_unique=len(ids) == len(set(ids)),
                       synthesized_ids=sum(call.synthesized_id for response in responses for call in response.calls),
                       problems=problems)


def _match(turn: int, response: ModelResponse, new_results: list[tuple[str | None, str | None]],
           problems: list[str]) -> int:
    """Pair each result with one call of the previous response: by id, or by name and order when synthesized."""
    open_calls = list(response.calls)
    matched = 0
    for call_id, name in new_results:
        found = None
        for call in open_calls:
            if call_id is not None and not call.synthesized_id and call.call_id == call_id:
                found = call
                break
            if call_id is None and call.synthesized_id and call.name == name:
                found = call
                break
        if found is None:
            echoed = call_id if call_id is not None else f"(no id, name {name})"
            problems.append(f"turn {turn}: tool result {echoed} answers no call of turn {turn - 1}")
            continue
        open_calls.remove(found)
        matched += 1
    for call in open_calls:
        problems.append(f"turn {turn}: call {call.call_id} ({call.name}) of turn {turn - 1} got no result")
    return matched


def _changed_keys(first: Any, current: Any) -> str:
    if isinstance(first, dict) and isinstance(current, dict):
        keys = sorted(
            key for key in set(first) | set(current) if _canonical(first.get(key)) != _canonical(current.get(key))
        )
        return "keys: " + ", ".join(keys) if keys else "key order"
    return "not a mapping"

