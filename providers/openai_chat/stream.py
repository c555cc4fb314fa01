"""A Chat Completions SSE transcript (``data:`` chunks ended by ``data: [DONE]``) → the kind its body gives.

Tool-call fragments are joined per ``index`` (the id and name come only in the first fragment); usage comes
from the extra ``choices: []`` chunk that ``stream_options.include_usage`` asks for
(openai.types.chat.ChatCompletionChunk; platform.openai.com/docs/api-reference/chat-streaming).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterable
from typing import Any

from conformance.kit.sse import iter_events
from conformance.kit.stream import StreamResult, StreamSummary, interrupted, parse_event
from conformance.providers.openai_chat.response import classify_body
from conformance.providers.openai_common.errors import classify_stream_error

DONE = "[DONE]"
# Perplexity ends its stream with one object of this type in place of [DONE]: the whole answer again in
# `choices[].message`, its finish reason and usage. Its content is not appended a second time.
DONE_OBJECT = "chat.completion.done"


class _Assembly:
    def __init__(self) -> None:
        self.response_id: str | None = None
        self.model: str | None = None
        # StringIO, not a list of deltas: thousands of small strings would cost ~50 bytes each.
        self.content = io.StringIO()
        self.other_content: Any = None
        self.refusal = io.StringIO()
        self.calls: dict[int, dict[str, Any]] = {}
        self.arguments: dict[int, list[str]] = {}
        self.function_call: dict[str, Any] | None = None
        self.reasoning: dict[str, io.StringIO] = {}
        self.details: dict[int, dict[str, Any]] = {}
        self.finish: Any = None
        self.usage: Any = None

    def apply(self, chunk: dict[str, Any]) -> str:
        """Fold one chunk in; returns the summary name of what it carried."""
        if isinstance(chunk.get("id"), str):
            self.response_id = chunk["id"]
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if choice is None:
            return "chunk:usage" if chunk.get("usage") is not None else "chunk:empty"
        carried = []
        delta: dict[str, Any] = choice["delta"] if isinstance(choice.get("delta"), dict) else {}
        if chunk.get("object") == DONE_OBJECT:
            delta = {}  # a summary of what the chunks before it carried, not more of it
        if self._content(delta.get("content")):
            carried.append("content")
        if isinstance(delta.get("refusal"), str) and delta["refusal"]:
            self.refusal.write(delta["refusal"])
            carried.append("refusal")
        if isinstance(delta.get("tool_calls"), list):
            self._tool_calls(delta["tool_calls"])
            carried.append("tool_calls")
        if isinstance(delta.get("function_call"), dict):
            self._function_call(delta["function_call"])
            carried.append("function_call")
        if self._reasoning(delta):
            carried.append("reasoning")
        # null, "" or a missing finish_reason all mean "not finished" (compatible servers, docs/contract.md, "OpenAI-
        # compatible servers").
        if choice.get("finish_reason"):
            self.finish = choice["finish_reason"]
            carried.append("finish")
        return "chunk:" + ("+".join(carried) if carried else "role" if "role" in delta else "empty")

    def _content(self, piece: Any) -> bool:
        """Fold one ``delta.content`` in; True when it carried something."""
        if isinstance(piece, str):
            self.content.write(piece)
            return bool(piece)
        if piece is None:
            return False
        # Not a string: kept for the body's reader to name (docs/contract.md), never dropped.
        if self.other_content is None:
            self.other_content = piece
        return True

    def _tool_calls(self, fragments: list[Any]) -> None:
        for fragment in fragments:
            if not isinstance(fragment, dict):
                continue
            index = fragment.get("index")
            if not isinstance(index, int) or isinstance(index, bool):
                # Servers that omit `index` send whole calls, one per fragment (ollama/ollama#7881).
                index = len(self.calls) if fragment.get("id") or not self.calls else max(self.calls)
            call = self.calls.setdefault(index, {"id": None, "type": "function", "function": {"name": None}})
            if isinstance(fragment.get("id"), str) and fragment["id"]:
                call["id"] = fragment["id"]
            if isinstance(fragment.get("type"), str):
                call["type"] = fragment["type"]
            function = fragment.get("function")
            if isinstance(function, dict):
                if isinstance(function.get("name"), str) and function["name"]:
                    call["function"]["name"] = function["name"]
                if isinstance(function.get("arguments"), str):
                    self.arguments.setdefault(index, []).append(function["arguments"])

    def _reasoning(self, delta: dict[str, Any]) -> bool:
        """Fold the reasoning a compatible server streams beside the content: DeepSeek's ``reasoning_content``
        (api-docs.deepseek.com/guides/thinking_mode), vLLM's ``reasoning``, and OpenRouter's ``reasoning_details``
        (openrouter.ai/docs/use-cases/reasoning-tokens), whose pieces are joined per ``index``. The assembled message
        keeps them under the names they came with, so a turn goes back carrying what the server needs."""
        carried = False
        for field in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(field), str):
                self.reasoning.setdefault(field, io.StringIO()).write(delta[field])
                carried = True
        details = delta.get("reasoning_details")
        for piece in details if isinstance(details, list) else ():
            if not isinstance(piece, dict):
                continue
            index: int = piece["index"] if isinstance(piece.get("index"), int) else len(self.details)
            detail = self.details.setdefault(index, {})
            for key, value in piece.items():
                if key in ("text", "summary", "data") and isinstance(value, str) and isinstance(detail.get(key), str):
                    detail[key] += value
                elif value is not None or key not in detail:
                    detail[key] = value
            carried = True
        return carried

    def _function_call(self, fragment: dict[str, Any]) -> None:
        if self.function_call is None:
            self.function_call = {"name": None, "arguments": ""}
        if isinstance(fragment.get("name"), str):
            self.function_call["name"] = fragment["name"]
        if isinstance(fragment.get("arguments"), str):
            self.function_call["arguments"] += fragment["arguments"]

    def body(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.content.getvalue() or self.other_content,
            "refusal": self.refusal.getvalue() or None,
        }
        if self.calls:
            message["tool_calls"] = []
            for index in sorted(self.calls):
                call = self.calls[index]
                call["function"]["arguments"] = "".join(self.arguments.get(index, []))
                message["tool_calls"].append(call)
        if self.function_call is not None:
            message["function_call"] = self.function_call
        for field, text in self.reasoning.items():
            message[field] = text.getvalue()
        if self.details:
            message["reasoning_details"] = [self.details[index] for index in sorted(self.details)]
        return {
            "id": self.response_id,
            "object": "chat.completion",
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
            "usage": self.usage,
        }


def assemble_stream(chunks: Iterable[bytes]) -> StreamResult:
    """A raw Chat Completions stream transcript, as byte chunks → the kind its body gives, plus the stream summary."""
    summary = StreamSummary()
    assembly = _Assembly()
    for event in iter_events(chunks):
        if summary.terminal:
            summary.count("after [DONE]")
            continue
        if event.data.strip() == DONE:
            summary.count(DONE)
            summary.terminal = True
            continue
        try:
            chunk = parse_event(event.data)
        except ValueError:
            summary.count("unparsable")
            return interrupted(summary, [assembly.content.getvalue()], response_id=assembly.response_id,
                               model=assembly.model, detail="an event that is not JSON")
        if not isinstance(chunk, dict):
            summary.count("not-an-object")
            continue
        if "error" in chunk:
            summary.count("error")
            summary.terminal = True
            result = dataclasses.replace(classify_stream_error(chunk["error"]), response_id=assembly.response_id,
                                         model=assembly.model)
            return StreamResult(response=result, summary=summary)
        summary.count(assembly.apply(chunk))
    if not summary.terminal and assembly.finish is None:
        # With neither [DONE] nor a finish reason nobody said the answer was complete. A finish reason followed by
        # the end of the body is a complete answer (Hugging Face's router, Perplexity's chat.completion.done end
        # without [DONE]); [DONE] with no finish_reason before it is one too: some gateways never send one. In
        # both the content decides (docs/contract.md, "Streams that end without [DONE]").
        return interrupted(summary, [assembly.content.getvalue()], response_id=assembly.response_id,
                           model=assembly.model)
    # A finish reason then the end of the body: the stream ended complete, as [DONE] says.
    summary.terminal = True
    return StreamResult(response=classify_body(assembly.body()), summary=summary)
