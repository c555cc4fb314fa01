"""Stream assembly speed and memory: our assemblers against the official SDKs' stream machinery.

Run: ``.venv/bin/python benchmarks/stream_bench.py``. Prints events per second per vendor for our
assembly and, where the vendor's SDK can replay a recorded stream offline (OpenAI Responses, Anthropic),
for the SDK with a mock transport over the same bytes; then peak memory while assembling a generated
50 MB transcript. Medians of several repetitions. Not a test: figures depend on the machine.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.engine.registry import builtin_adapters
from conformance.kit.sse import read_chunks

EVENTS = 1200
REPEATS = 7


def _j(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def responses_transcript(deltas: int) -> bytes:
    response = {"id": "resp_b", "object": "response", "created_at": 1764403200, "model": "gpt-5.5", "output": [],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
                "incomplete_details": None, "usage": None, "status": "in_progress"}
    lines = []
    sequence = 0

    def event(kind: str, **data: object) -> None:
        nonlocal sequence
        lines.append(f"event: {kind}\ndata: {_j({'type': kind, 'sequence_number': sequence, **data})}\n\n")
        sequence += 1

    event("response.created", response=response)
    event("response.output_item.added", output_index=0,
          item={"type": "message", "id": "msg_b", "role": "assistant", "status": "in_progress", "content": []})
    event("response.content_part.added", item_id="msg_b", output_index=0, content_index=0,
          part={"type": "output_text", "text": "", "annotations": []})
    for _ in range(deltas):
        event("response.output_text.delta", item_id="msg_b", output_index=0, content_index=0, delta="tok ",
              logprobs=[])
    text = "tok " * deltas
    item = {"type": "message", "id": "msg_b", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
    event("response.output_item.done", output_index=0, item=item)
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": deltas,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 10 + deltas}
    event("response.completed", response=dict(response, status="completed", output=[item], usage=usage))
    return "".join(lines).encode()


def chat_transcript(deltas: int) -> bytes:
    base = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1764403200, "model": "gpt-5.5"}
    chunks = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])]
    chunks += [dict(base, choices=[{"index": 0, "delta": {"content": "tok "}, "finish_reason": None}])] * deltas
    chunks.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    chunks.append(dict(base, choices=[], usage={"prompt_tokens": 10, "completion_tokens": deltas,
                                                "total_tokens": 10 + deltas}))
    return ("".join(f"data: {_j(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n").encode()


def anthropic_transcript(deltas: int) -> bytes:
    def event(kind: str, **data: object) -> str:
        return f"event: {kind}\ndata: {_j({'type': kind, **data})}\n\n"

    message = {"id": "msg_b", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [],
               "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                         "output_tokens": 1}}
    parts = [event("message_start", message=message),
             event("content_block_start", index=0, content_block={"type": "text", "text": ""})]
    parts += [event("content_block_delta", index=0, delta={"type": "text_delta", "text": "tok "})] * deltas
    parts += [event("content_block_stop", index=0),
              event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
                    usage={"output_tokens": deltas}),
              event("message_stop")]
    return "".join(parts).encode()


def gemini_transcript(deltas: int) -> bytes:
    meta = {"modelVersion": "gemini-3.5-flash", "responseId": "b1"}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": "tok "}]}, "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}, **meta}
    last = {"candidates": [{"content": {"role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": deltas,
                              "totalTokenCount": 10 + deltas}, **meta}
    return ("".join(f"data: {_j(chunk)}\n\n" for _ in range(deltas)) + f"data: {_j(last)}\n\n").encode()


def bedrock_transcript(deltas: int) -> bytes:
    lines = [{"messageStart": {"role": "assistant"}}]
    lines += [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "tok "}}}] * deltas
    lines += [{"contentBlockStop": {"contentBlockIndex": 0}}, {"messageStop": {"stopReason": "end_turn"}},
              {"metadata": {"usage": {"inputTokens": 10, "outputTokens": deltas, "totalTokens": 10 + deltas},
                            "metrics": {"latencyMs": 100}}}]
    return "".join(_j(line) + "\n" for line in lines).encode()


TRANSCRIPTS: dict[str, Callable[[int], bytes]] = {
    "openai-responses": responses_transcript,
    "openai-chat": chat_transcript,
    "anthropic-messages": anthropic_transcript,
    "gemini": gemini_transcript,
    "bedrock-converse": bedrock_transcript,
}


def sdk_openai_responses(data: bytes) -> object:
    import httpx2
    import openai

    transport = httpx2.MockTransport(lambda request: httpx2.Response(
        200, content=data, headers={"content-type": "text/event-stream"}))
    client = openai.OpenAI(api_key="bench-key", base_url="http://localhost/v1",
                           http_client=httpx2.Client(transport=transport))
    with client.responses.stream(model="gpt-5.5", input="x") as stream:
        return stream.get_final_response()


def sdk_anthropic(data: bytes) -> object:
    import anthropic
    import httpx2

    transport = httpx2.MockTransport(lambda request: httpx2.Response(
        200, content=data, headers={"content-type": "text/event-stream"}))
    client = anthropic.Anthropic(api_key="bench-key", base_url="http://localhost",
                                 http_client=httpx2.Client(transport=transport))
    with client.messages.stream(model="claude-sonnet-5", max_tokens=10, messages=[]) as stream:
        return stream.get_final_message()


SDK_PATHS: dict[str, Callable[[bytes], object]] = {
    "openai-responses": sdk_openai_responses,
    "anthropic-messages": sdk_anthropic,
}


def median_seconds(work: Callable[[], object]) -> float:
    work()  # warm up imports and caches
    timings = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        work()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def _joined_per_chunk(chunks: list[bytes]) -> int:
    """The line splitting this project used before: the unfinished line joined to every new chunk. Kept here
    only as the baseline the long-line figures compare against."""
    pending, count = b"", 0
    for chunk in chunks:
        chunk = pending + chunk
        lines = chunk.splitlines(keepends=True)
        pending = b"" if lines[-1].endswith(b"\n") else lines.pop()
        count += len(lines)
    return count + (1 if pending else 0)


def long_line_figures() -> dict[str, object]:
    """One SSE event whose data line is megabytes long, fed in small and large chunks: line assembly must be
    linear in the line's length whatever the chunk size."""
    print("\none long data line, split into chunks: seconds to assemble (ours vs joining per chunk)")
    print(f"{'line':>8}{'chunk':>9}{'ours s':>10}{'per-chunk s':>13}{'ratio':>9}")
    figures: dict[str, object] = {}
    chat = builtin_adapters()["openai-chat"].assemble_stream
    assert chat is not None
    for megabytes, chunk_size in ((1, 256), (2, 256), (2, 65536), (16, 4096)):
        text = "x" * (megabytes * 1_000_000)
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}
        data = f"data: {_j(chunk)}\n\ndata: [DONE]\n\n".encode()
        pieces = [data[index:index + chunk_size] for index in range(0, len(data), chunk_size)]
        start = time.perf_counter()
        result = chat(pieces)
        ours = time.perf_counter() - start
        assert result.response.kind == "text"
        baseline: float | None = None
        if megabytes <= 2:  # quadratic: larger lines take minutes
            start = time.perf_counter()
            _joined_per_chunk(pieces)
            baseline = time.perf_counter() - start
        ratio = f"{baseline / ours:>8.0f}x" if baseline else f"{'—':>9}"
        shown = f"{baseline:>13.2f}" if baseline is not None else f"{'(skipped)':>13}"
        print(f"{megabytes:>6}MB{chunk_size:>9}{ours:>10.3f}{shown}{ratio}")
        figures[f"{megabytes}MB/{chunk_size}B"] = {"ours_s": ours, "joined_per_chunk_s": baseline}
    return figures


def main() -> int:
    adapters = builtin_adapters()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"\n{EVENTS}-event transcripts, median of {REPEATS} runs")
    print(f"{'provider':<20}{'ours ev/s':>14}{'SDK ev/s':>14}{'ratio':>9}")
    results: dict[str, object] = {}
    for provider, make in TRANSCRIPTS.items():
        data = make(EVENTS)
        assemble = adapters[provider].assemble_stream
        if assemble is None:
            continue
        result = assemble([data])
        assert result.summary.terminal, provider
        ours = median_seconds(lambda: assemble([data]))  # noqa: B023
        events = sum(result.summary.events.values())
        row = {"ours_events_per_s": events / ours}
        line = f"{provider:<20}{events / ours:>14,.0f}"
        if provider in SDK_PATHS:
            sdk = median_seconds(lambda: SDK_PATHS[provider](data))  # noqa: B023
            row.update(sdk_events_per_s=events / sdk, ratio=sdk / ours)
            line += f"{events / sdk:>14,.0f}{sdk / ours:>8.1f}x"
        print(line)
        results[provider] = row

    print("\npeak memory while assembling a generated 50 MB transcript (read in 64 KiB chunks)")
    memory: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as folder:
        for provider, make in TRANSCRIPTS.items():
            assemble = adapters[provider].assemble_stream
            if assemble is None:
                continue
            one = len(make(1000)) / 1000
            path = Path(folder) / f"{provider}.stream"
            path.write_bytes(make(int(50_000_000 / one)))
            size = path.stat().st_size
            tracemalloc.start()
            result = assemble(read_chunks(str(path)))
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert result.summary.terminal, provider
            memory[provider] = {"file_bytes": size, "peak_bytes": peak}
            print(f"{provider:<20}{size / 1e6:>8.1f} MB file  peak {peak / 1e6:>7.2f} MB  ({peak / size:.1%})")
    long_lines = long_line_figures()
    report = Path("reports") / "stream_benchmark.json"
    report.parent.mkdir(exist_ok=True)
    report.write_text(json.dumps({"assembly": results, "memory": memory, "long_lines": long_lines}, indent=2) + "\n")
    print(f"\nwrote {report}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
