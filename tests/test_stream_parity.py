"""Streaming is only transport: every case turn recorded both ways classifies the same way.

For every case × provider × turn that has a body and a stream, the kind, reason or source, raw value,
calls (ids, names, parsed arguments), text and normalized usage must agree; DeepDiff names what differs.
"""

from __future__ import annotations

from typing import Any

import pytest
from deepdiff import DeepDiff

from conformance.engine.cases import base_provider, load_cases
from conformance.engine.classify import classify_response
from conformance.engine.registry import builtin_adapters
from conformance.kit.sse import read_chunks
from conformance.kit.types import ModelResponse
from tests.helpers import BUNDLED as CASES
from tests.helpers import FIXTURES, fixture

ADAPTERS = builtin_adapters()
FAMILIES = ("normal", "refusal", "truncation", "unknown_tool", "cross_tenant", "loop_exhaustion")


def comparable(response: ModelResponse) -> dict[str, Any]:
    result = response.to_dict()
    return {
        "kind": result["kind"],
        "reason": result.get("reason"),
        "source": result.get("source"),
        "raw": result["raw"],
        "calls": [(call.call_id, call.name, call.parsed_arguments, call.synthesized_id) for call in response.calls],
        "text": result["text"],
        "usage": result["usage"],
        "provider_details": result.get("provider_details"),
    }


def _pairs() -> list[Any]:
    params = []
    for case in load_cases([CASES]):
        for provider, fixtures in sorted(case.providers.items()):
            for index, turn in enumerate(fixtures.turns, start=1):
                if turn.has_body and turn.stream is not None and turn.status < 400:
                    params.append(pytest.param(provider, turn, id=f"{case.id}-{provider}-turn{index}"))
    return params


@pytest.mark.parametrize(("provider", "turn"), _pairs())
def test_body_and_stream_classify_identically(provider: str, turn: Any) -> None:
    adapter = ADAPTERS[base_provider(provider)]  # a variant is read by its provider's adapter
    assert adapter.assemble_stream is not None
    body = comparable(classify_response(adapter, turn.status, turn.headers, turn.body))
    assembled = adapter.assemble_stream(read_chunks(str(turn.stream)))
    assert assembled.summary.terminal
    difference = DeepDiff(body, comparable(assembled.response))
    assert not difference, difference.pretty()


# Adapter fixtures recorded both ways (tests/fixtures/<provider>/): body → stream twin.
FIXTURE_PAIRS = [
    ("bedrock-converse", "body-citations.json", "stream-citations.jsonl"),
    ("bedrock-converse", "body-nova-web-grounding.json", "stream-nova-web-grounding.jsonl"),
    ("bedrock-converse", "live-body-tool-use-typed.json", "live-stream-tool-use-typed.jsonl"),
]


@pytest.mark.parametrize(("provider", "body", "stream"), FIXTURE_PAIRS)
def test_fixture_pairs_classify_identically(provider: str, body: str, stream: str) -> None:
    adapter = ADAPTERS[base_provider(provider)]  # a variant is read by its provider's adapter
    assert adapter.assemble_stream is not None
    from_body = comparable(classify_response(adapter, 200, {}, fixture(provider, body)))
    assembled = adapter.assemble_stream(read_chunks(str(FIXTURES / provider / stream)))
    assert assembled.summary.terminal
    difference = DeepDiff(from_body, comparable(assembled.response))
    assert not difference, difference.pretty()


@pytest.mark.parametrize("provider", sorted(ADAPTERS))
def test_every_provider_has_stream_fixtures_for_the_six_families(provider: str) -> None:
    streamed = {case.scenario for case in load_cases([CASES]) if provider in case.providers
                and all(turn.stream is not None or turn.status >= 400 for turn in case.providers[provider].turns)}
    assert set(FAMILIES) <= streamed
