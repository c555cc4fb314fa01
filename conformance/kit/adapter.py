"""What an adapter is: the record of its pure functions, how its API travels over HTTP (``Wire``), and its readings
of its own requests (``RequestParts``, ``Sent*``); the task and transcript it is handed are ``conformance.kit.task``.

An adapter never does I/O. The engine hands it a task and a transcript and gets a wire request back;
it hands it a status, headers and a body (or a stream) and gets one contract kind back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.kit.stream import StreamResult
from conformance.kit.task import Task, ToolChoice, TranscriptEntry
from conformance.kit.types import ModelResponse
from conformance.kit.usage import Billing
from conformance.kit.waiver import Waiver


@dataclass(frozen=True, slots=True, kw_only=True)
class SentTool:
    """A tool as a request offers it, read back into neutral form."""

    name: str
    parameters: Any
    """The parameter schema as JSON Schema, after undoing any documented vendor transformation."""
    description: str | None = None
    """The description sent ("" when the request carries none); None when the reader does not read it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SentPrefix:
    """What the static prefix of a request carries, each read from the vendor's own slot (docs/contract.md,
    "Requests"). A value the request does not send is None."""

    instructions: str | None
    """The text of the system/developer slot (Responses ``instructions``, a Chat ``system`` message, Messages and
    Converse ``system``, Gemini ``systemInstruction``)."""
    tools: tuple[SentTool, ...]
    """The tools offered, in order."""
    tool_choice: ToolChoice | None
    """The tool choice the vendor will apply (its documented default when the request leaves it out)."""
    forced_tool: str | None
    """The one tool a ``tool`` choice forces."""
    output_schema: Any
    """The JSON Schema sent in the vendor's structured-output slot, parsed when the vendor wants a string."""
    max_output_tokens: int | None
    """The output token cap."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SentResult:
    """One tool result as a request sends it."""

    call_id: str | None
    """The call id echoed, or None when the result carries none."""
    name: str | None = None
    """The tool name, when the vendor's result slot carries it."""
    is_error: bool | None = None
    """The vendor's error flag, or None when its result slot has none (Chat, Responses)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SentEntry:
    """One entry of a request's conversation, read by the vendor's slots: a user message, a model turn re-sent, or
    the results answering one model turn. A reader names anything else by what it is (e.g. ``"function"``
    for a role the vendor does not use for results), so the engine can show it."""

    role: str
    """``user``, ``model`` or ``results``, or what the entry is when it is none of these."""
    text: str | None = None
    """A user entry's text."""
    results: tuple[SentResult, ...] = ()
    """A results entry's results, in order."""
    signatures: tuple[str, ...] = ()
    """A model entry's opaque reasoning signatures (encrypted reasoning, thinking signatures, thought
    signatures), in order: what the vendor needs back to continue from its own reasoning."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestParts:
    """An adapter's reading of one of its own requests, for the correlation and request checks."""

    prefix: Any
    """The static prefix (instructions, tools, tool choice, output schema): must not change."""
    history: Sequence[Any]
    """The conversation entries, in order: must only grow at the end."""
    results: Sequence[tuple[str | None, str | None]]
    """Every tool result in the history, in order, as (echoed call id or None, tool name or None)."""
    sent: SentPrefix | None = None
    """What the prefix carries, slot by slot; None when the adapter does not read it (those checks are then
    reported as not checked)."""


SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"


Signer = Callable[[str, str, dict[str, str], bytes], dict[str, str]]
"""Re-signs one forwarded request: (method, url, headers, body) → the headers to send."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Credential:
    """Where an API's clients put their key, for the recording proxy (docs/record.md): the user's key, read from the
    first of ``env`` that is set, replaces whatever the client sent in ``header`` (a reference stack sends a
    placeholder), and is never written anywhere."""

    env: tuple[str, ...]
    """The environment variables the vendor's own SDK reads the key from, in its order."""
    header: str
    """The request header that carries it (lower case)."""
    template: str = "{}"
    """How the header's value is spelled around the key (``Bearer {}``)."""
    placeholder: str = ""
    """The fake key the reference stacks send (``conformance.replay.server.client_environment``): only a request
    carrying it gets the user's key; a client that sends its own (a gateway, a compatible server's key) is forwarded as
    it is."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One thing the vendor checks before it answers: a request that breaks it is refused with a 400, however well
    the suite's own checks think of it (docs/contract.md, "Requests")."""

    id: str
    """A short name (``tool-result-first``)."""
    source: str
    """Where the vendor says so: a documentation page or an SDK type a reader can open."""
    check: Callable[[Mapping[str, Any]], Iterable[tuple[str, str]]]
    """A request body → each place that breaks the rule: (JSON pointer, what is wrong)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    """Where an API's responses keep what its next release may add to (docs/forward.md): the places the
    forward-compatibility mutants change. JSON pointers (RFC 6901) into a success body, or into a stream event's
    data; every field is optional, and a family with no place here makes no mutant for the API."""

    stop: str | None = None
    """The stop value of a body (``/choices/0/finish_reason``)."""
    items: str | None = None
    """The list of output items, content blocks or parts of a body."""
    item_type: str | None = None
    """The key naming an item's type (``type``); None: an item is an object with one member naming it (``{"text":
    ...}``, ``{"toolUse": {...}}``)."""
    usage: str | None = None
    """The usage object of a body."""
    optional: tuple[str, ...] = ()
    """Pointers a body may lack and still be the same answer (its id, its model, its usage)."""
    opaque: tuple[str, ...] = ()
    """Object levels whose content is not the vendor's shape but the model's or the request's (a tool call's
    arguments, the tools echoed back): no unknown field goes there or below (``*`` for any array index)."""
    unions: tuple[str, ...] = ()
    """Object levels that are unions, exactly one member set (``/output`` of Bedrock's ``ConverseOutput``; ``*`` for
    any array index): an unknown field there is not a valid shape, so none is added. Union items are too."""
    error_code: tuple[str, ...] = ()
    """Pointers in an error body that name the error's code or type."""
    error_header: str | None = None
    """The response header (lower case) that names the error's type, for an API that sends it there."""
    event_type: str | None = None
    """The key of a stream event's data naming its type (``type``); ``member``: the event is an object with one member
    naming it (Bedrock's ``.jsonl``); None: the stream's chunks have no type."""
    stream_stop: tuple[tuple[str | None, str], ...] = ()
    """Where a stream says why it stopped: (the event type, or None for any chunk; the pointer in its data)."""
    stream_usage: tuple[tuple[str | None, str], ...] = ()
    """Where a stream carries its usage object, as ``stream_stop``."""
    event_sequence: str | None = None
    """The key of a stream event's data that numbers the events in order, when the API numbers them."""
    stream_item: tuple[Mapping[str, Any], ...] = ()
    """The events that carry one whole output item, content block or part in a stream, as templates: the string
    ``"{item}"`` stands for the unseen item (the one a body's ``items`` gets), ``"{index}"`` for the next free index
    (one above the largest ``stream_index`` value of the stream). They go in before the event that says why the
    stream stopped."""
    stream_index: str | None = None
    """The key that numbers a stream's items, at any depth of an event's data (``index``, ``output_index``)."""
    stream_envelope: tuple[str, ...] = ()
    """Top-level keys every event of the stream repeats (a chunk's ``id``, ``model``): an added event copies them
    from the event before it, as the vendor's own would carry them."""
    stream_final_items: tuple[tuple[str | None, str], ...] = ()
    """Where a stream's last events repeat the whole output (Responses' ``response.completed``): an added item is
    appended there too, as ``stream_stop``."""
    stream_optional: tuple[tuple[str | None, str], ...] = ()
    """Fields of stream events that may be missing and the answer still be the same, as ``stream_stop``."""
    stream_calls: str | None = None
    """Where a stream chunk's data lists the deltas of the tool calls it carries, each numbered by ``stream_index``
    (Chat Completions' ``/choices/0/delta/tool_calls``), for an API whose parallel calls may stream interleaved: one
    call's fragments between another's, or several calls' fragments in one chunk (the ``frame.interleaved``
    mutants). None: the API streams one call after another."""
    model: tuple[str, ...] = ()
    """Where a response names the model that answered, in a body or in a stream event's data: what a recording's
    provenance keeps beside the model the request asked for (docs/record.md, "Provenance and age")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Wire:
    """How an API travels over HTTP, for the replay server that serves its fixtures to real clients (docs/serve.md):
    the paths its clients call, where they read the request id, and how a recorded stream goes back on the wire."""

    paths: tuple[tuple[re.Pattern[str], bool | None], ...]
    """Each path the API answers (matched whole, after the session prefix) and whether it streams; None when the
    request body's ``"stream": true`` decides."""
    request_id_header: str = "x-request-id"
    """The response header the API's clients read the request id from."""
    stream_content_type: str = SSE_CONTENT_TYPE
    """The content type of a streamed reply."""
    encode_stream: Callable[[bytes], Iterable[bytes]] | None = None
    """A recorded stream transcript → the chunks to send, each flushed on its own; None: server-sent events, one
    chunk per event, the bytes unchanged."""
    credential: Credential | None = None
    """Where the user's key goes when ``conformance record`` forwards to the real vendor; None: the API signs its
    requests another way (Bedrock's SigV4, re-signed by the proxy)."""
    error_reply: Callable[[int, str], tuple[Mapping[str, str], Any]] | None = None
    """The replay server's own error (no recorded turn, no such case) in this API's error shape, so its clients print
    the message: (status, message) → (extra headers, JSON body). None: the OpenAI shape ``{"error": {…}}``."""
    decode_stream: Callable[[bytes], bytes] | None = None
    """The inverse of ``encode_stream``, for ``conformance record``: a streamed reply as it came off the wire (its
    content type ``stream_content_type``) → the transcript stored as ``turnN.jsonl``; ValueError when it does not
    decode. None: the stream is server-sent events, stored as it came (``turnN.sse``)."""
    kept_headers: frozenset[str] = frozenset()
    """Response headers (lower case) a recorded fixture keeps besides those every client reads (``content-type``, the
    retry hints: ``conformance.replay.record.KEPT_HEADERS``): rate-limit counters, an error type; a name ending in
    ``-`` keeps every header it begins. Every other response header is dropped (docs/record.md, "Redaction, on by
    default")."""
    resign: Callable[[Mapping[str, str]], Signer] | None = None
    """For an API whose requests are signed over the host (SigV4): the environment → the re-signer the recording
    proxy applies to each forwarded request, with the recorder's own credentials; InputError when they are not set."""
    client_environment: Callable[[str], Mapping[str, str]] | None = None
    """The environment that points this API's official client at a session root URL, with fake keys and retries off
    (what ``conformance serve`` prints)."""
    shape: Shape | None = None
    """Where its responses keep what a next release may add to, for the forward-compatibility mutants (``Shape``)."""
    acceptance: tuple[Rule, ...] = ()
    """What the vendor checks in a request before it answers (``Rule``): each request a lane sends is held to them."""
    semconv_provider: str | None = None
    """The OpenTelemetry GenAI convention's ``gen_ai.provider.name`` for this API (``openai``, ``aws.bedrock``), for
    ``conformance export`` (docs/telemetry.md); None: the provider id is used as it is."""
    reasoning: Callable[[Sequence[Any]], Mapping[str, str]] | None = None
    """A recorded answer's ``output_items`` → each piece of the vendor's reasoning in them (a signature, encrypted
    reasoning, its text: ``kit.values``), with what it is: what another vendor must never be sent
    (``conformance.stacks.switch``); None: the answers carry none."""
    billing: Callable[[Any], Billing] | None = None
    """The turn's raw usage (``Usage.raw``) → what it says of the charge beyond the contract's counts (``Billing``:
    longer-lived cache writes, the last pass of a compacted request, a cost the wire reports); None: nothing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Adapter:
    """One vendor API's pure functions, registered under a provider id."""

    id: str
    """The provider id, e.g. ``openai-responses``."""
    build_request: Callable[[Task, Sequence[TranscriptEntry]], dict[str, Any]]
    """Neutral task + transcript → the wire request body."""
    read_request: Callable[[Mapping[str, Any]], RequestParts]
    """A wire request this adapter built → its prefix, history and echoed call ids."""
    classify_body: Callable[[Any], ModelResponse]
    """A successful (HTTP 2xx) JSON body → one contract kind."""
    classify_error: Callable[[int, Any, Mapping[str, str]], ModelResponse]
    """HTTP status, error body (JSON, text or None) and lower-cased headers → one contract kind."""
    assemble_stream: Callable[[Iterable[bytes]], StreamResult] | None = None
    """A raw stream transcript, as byte chunks → the same kind a body gives, plus a stream summary."""
    description: str = ""
    """One line for listings: the API the adapter speaks."""
    read_history: Callable[[Sequence[Any]], Sequence[SentEntry]] | None = None
    """A list of the vendor's conversation entries (a request's history, or a response's ``output_items``) → the
    neutral entries; None when the adapter does not read them (those checks are then reported as not checked)."""
    wire: Wire | None = None
    """How the API travels over HTTP, for ``conformance serve`` and the stack lane; None when the replay server
    cannot serve it."""
    waivers: tuple[Waiver, ...] = ()
    """What does not apply to this adapter's rows, each with its reason (``conformance.kit.waiver``)."""


def request_history(request: Any, key: str) -> list[Any]:
    """The conversation list under ``key`` of a wire request, or [] when the request holds none."""
    history = request.get(key) if isinstance(request, Mapping) else None
    return list(history) if isinstance(history, list) else []


TOOL_CHOICE_SLOT: tuple[tuple[str, ...], ...] = (("tool_choice",),)
"""Where Chat, Responses and Messages requests carry the tool choice."""


def request_prefix(request: Any, key: str, per_turn: tuple[tuple[str, ...], ...] = TOOL_CHOICE_SLOT) -> dict[str, Any]:
    """Everything of a wire request but its conversation list and its per-turn slots (each a path of keys; the tool
    choice, which a loop resets to ``auto`` after a forced call, ``task_for_turn``): the part that must never
    change."""
    if not isinstance(request, Mapping):
        return {}
    prefix = {name: value for name, value in request.items() if name != key}
    for path in per_turn:
        _drop(prefix, path)
    return prefix


def _drop(container: dict[str, Any], path: tuple[str, ...]) -> None:
    """``container`` without the value at ``path``; the mappings on the way are copied, never changed in place."""
    head, rest = path[0], path[1:]
    if head not in container:
        return
    if not rest:
        del container[head]
    elif isinstance(container[head], Mapping):
        inner = dict(container[head])
        _drop(inner, rest)
        container[head] = inner


def merged(entries: Iterable[SentEntry]) -> list[SentEntry]:
    """Adjacent entries of one role as one entry: the results of a Chat or Responses turn travel as one message or
    item each, but answer one model turn together; a model turn spread over several items is one turn."""
    out: list[SentEntry] = []
    for entry in entries:
        last = out[-1] if out else None
        if last is None or last.role != entry.role or entry.role not in ("user", "model", "results"):
            out.append(entry)
            continue
        texts = [text for text in (last.text, entry.text) if text is not None]
        # Joined as `text_of` joins the blocks of one message: a text split over blocks reads the same everywhere.
        out[-1] = SentEntry(role=entry.role, text="".join(texts) if texts else None,
                            results=last.results + entry.results, signatures=last.signatures + entry.signatures)
    return out


def result_pairs(entries: Iterable[SentEntry]) -> list[tuple[str | None, str | None]]:
    """Every result of a conversation, in order, as ``RequestParts.results`` wants them."""
    return [(result.call_id, result.name) for entry in entries if entry.role == "results" for result in entry.results]
