"""Property tests: whatever JSON or transcript an adapter is fed, it answers with a contract kind and never raises.

CI runs a bounded number of examples; benchmarks/fuzz.py drives hundreds of thousands.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.engine.registry import builtin_adapters
from conformance.kit.types import KINDS
from conformance.report.html import _embedded_json
from tests.mutations import body_fixtures, mutate_json, mutate_stream, stream_fixtures

ADAPTERS = builtin_adapters()
PROVIDERS = sorted(ADAPTERS)
BODIES = {provider: body_fixtures(provider) for provider in PROVIDERS}
STREAMS = {provider: stream_fixtures(provider) for provider in PROVIDERS}
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=25,
)


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(value=json_values)
def test_any_json_body_is_a_kind(provider: str, value: object) -> None:
    assert ADAPTERS[provider].classify_body(value).kind in KINDS


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(status=st.integers(min_value=400, max_value=599), value=json_values | st.text(),
       headers=st.dictionaries(st.sampled_from(["retry-after", "retry-after-ms", "x-should-retry", "x-amzn-errortype"]),
                               st.text(max_size=30)))
def test_any_error_is_an_error_kind(provider: str, status: int, value: object, headers: dict[str, str]) -> None:
    kind = ADAPTERS[provider].classify_error(status, value, headers).kind
    assert kind in ("retryable_error", "fatal_error", "refusal")


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_mutated_real_bodies_are_a_kind(provider: str, seed: int) -> None:
    rng = random.Random(seed)
    body = mutate_json(rng.choice(BODIES[provider]), rng, mutations=rng.randint(1, 4))
    assert ADAPTERS[provider].classify_body(body).kind in KINDS


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_mutated_real_streams_are_a_kind(provider: str, seed: int) -> None:
    rng = random.Random(seed)
    data = rng.choice(STREAMS[provider])
    for _ in range(rng.randint(1, 3)):
        data = mutate_stream(data, rng)
    assemble = ADAPTERS[provider].assemble_stream
    assert assemble is not None
    chunk = rng.randint(1, 4096)
    result = assemble([data[index:index + chunk] for index in range(0, len(data), chunk)])
    assert result.response.kind in KINDS
    if not result.summary.terminal:
        assert result.response.kind == "retryable_error" and result.response.calls == ()


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(value=json_values)
def test_reading_any_request_never_raises(provider: str, value: object) -> None:
    parts = ADAPTERS[provider].read_request(value)  # type: ignore[arg-type]
    assert isinstance(list(parts.results), list)


_page_text = st.text(alphabet=st.sampled_from(["<", "/", "s", "!", "-", "\u2028", "\u2029", "é", "🦜", '"', "\\"]))
_page_values = st.recursive(st.none() | st.booleans() | st.integers() | _page_text,
                            lambda children: st.lists(children, max_size=4)
                            | st.dictionaries(_page_text, children, max_size=4), max_leaves=20)


@SETTINGS
@given(data=st.dictionaries(st.sampled_from(["differs", "findings", "measured", "providers", "summary", "forward"]),
                            _page_values)
       | st.just({}),
       rows=st.lists(st.dictionaries(_page_text, _page_values, max_size=4), max_size=5))
def test_report_pages_data_is_one_escaped_dump_whatever_the_rows_hold(data: dict[str, object],
                                                                        rows: list[object]) -> None:
    page = {**data, "results": rows}
    embedded = _embedded_json(page)
    whole = json.dumps(page, ensure_ascii=False, sort_keys=True, allow_nan=False)
    assert embedded == whole.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    assert not {"<", "\u2028", "\u2029"} & set(embedded)
    assert json.loads(embedded) == page


@given(request=st.dictionaries(st.text(max_size=12), json_values, max_size=8))
def test_a_request_spelled_from_its_fields_is_one_sorted_dump(request: dict[str, object]) -> None:
    """The request check puts a request's canonical text together from its fields' texts (each value spelled once):
    the same text, and the same field texts, as dumping the whole request and each field."""
    from conformance.engine.request_check import _spelled_request, canonical

    text, fields = _spelled_request(request)
    assert text == canonical(request)
    assert list(fields) == sorted(request) and fields == {key: canonical(request[key]) for key in request}


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.dictionaries(st.sampled_from(["case", "provider", "mode", "outcome", "turns", "waived", "x"]),
                                     json_values, max_size=6), max_size=4),
       extra=st.dictionaries(st.sampled_from(["summary", "providers", "findings", "measured"]), json_values))
def test_the_reports_written_in_pieces_are_the_texts_rendered_whole(rows: list[dict[str, object]],
                                                                   extra: dict[str, object]) -> None:
    """The report writer encodes report.json and report.html piece by piece (``write_reports``): the bytes are
    those of the whole texts, spelled here at once (report.json: one sorted dump per row, a line each; report.html:
    the page's data dumped once and escaped)."""
    from conformance.report.build import render_json_chunks
    from conformance.report.html import DATA_MARK, _dumped, _page_data, page_template, render_html_chunks

    report = {"summary": {}, "providers": [], **extra,
              "results": [{**row, "turns": row["turns"] if isinstance(row.get("turns"), list) and all(
                  isinstance(turn, dict) for turn in row["turns"]) else []} for row in rows]}
    lines = ["{", *(f"  {json.dumps(key)}: {json.dumps(report[key], sort_keys=True, ensure_ascii=False)},"
                    for key in sorted(report) if key != "results")]
    texts = [json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")) for row in report["results"]]
    lines += ['  "results": [', ",\n".join(f"    {text}" for text in texts), "  ]"] if texts else ['  "results": []']
    whole = "\n".join([*lines, "}"]) + "\n"
    assert b"".join(piece.encode("utf-8") for piece in render_json_chunks(report)) == whole.encode("utf-8")
    page = page_template().replace(DATA_MARK, _dumped(_page_data(report)))
    assert b"".join(piece.encode("utf-8") for piece in render_html_chunks(report)) == page.encode("utf-8")


_python_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    | st.dictionaries(st.integers(-20, 20), inner, max_size=3), max_leaves=12)


@given(requests=st.lists(st.dictionaries(st.text(max_size=6), _python_values, max_size=4), max_size=3))
def test_a_request_snapshot_matched_before_its_trip_through_json_is_the_entry(
        requests: list[dict[str, object]]) -> None:
    """The plugin tries the requests' canonical text before their trip through JSON (tuples, integer keys) against the
    stored one: whenever that text can be written, it reads back as the entry the trip makes, so a match on it is a
    match of the entry (``conformance.report.syrupy_store.check``)."""
    from conformance.report.snapshot import raw_request_entry, request_entry
    from conformance.report.syrupy_store import _text

    try:
        quick = _text(raw_request_entry(requests))
    except TypeError:  # integer and string keys side by side do not sort: the entry is used instead
        return
    assert json.loads(quick) == request_entry(requests)
