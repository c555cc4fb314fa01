"""A LiteLLM stream that ends in an error leaves no HTTP stream open for the garbage collector to close later
(``conformance.stacks.gateways.litellm.close_abandoned_streams``): closed inside another request, it would wait on
the connection-pool lock that request holds, and the run would hang."""

from __future__ import annotations

import gc

import pytest

from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.stacks.runner import run_stack_case
from conformance.stacks.stack import gateway_stacks
from tests.helpers import CASES

pytest.importorskip("litellm")


def _open_pool_streams() -> int:
    return sum(1 for value in gc.get_objects() if type(value).__name__ == "PoolByteStream" and not value._closed)


def test_a_litellm_bedrock_stream_that_ends_in_an_error_leaves_no_stream_for_the_collector() -> None:
    case = next(case for case in load_cases([CASES]) if case.id == "mid_stream_error")
    stack = gateway_stacks()["bedrock-converse@litellm"]
    collecting = gc.isenabled()
    gc.disable()  # only the stack's own collection may close it, not one that happens to run
    try:
        gc.collect()
        before = _open_pool_streams()
        row, _, _ = run_stack_case(case, stack, builtin_adapters()["bedrock-converse"], "stream", False)
        left = _open_pool_streams() - before
    finally:
        if collecting:
            gc.enable()
    assert row["turns"][-1]["kind"] == "fatal_error"  # the stream's exception event, as the raw adapter reads it
    assert left == 0
