"""Which items a run has: one plan, read by ``conformance run`` and by the pytest plugin's collector alike, so an
item exists, and is named, the same way in both (``normal[openai-chat-body]``, ``normal[openai-chat@litellm-body]``,
``normal[gemini]`` for a required provider with no recording)."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from conformance.engine.cases import Case, base_provider
from conformance.engine.rows import Mode
from conformance.engine.runner import modes_for
from conformance.kit.adapter import Adapter


class StackLane(Protocol):
    """What the plan reads of a stack (``conformance.stacks.stack.Stack``)."""

    @property
    def provider(self) -> str:
        """The vendor API whose fixtures the stack's client is served."""

    @property
    def row_id(self) -> str:
        """Its lane, ``<provider>@<stack>``."""

    @property
    def streams(self) -> bool:
        """Whether its code streams: False plans no stream row."""

    @property
    def cases(self) -> tuple[str, ...]:
        """Shell patterns on the case ids it runs."""


@dataclass(frozen=True, slots=True)
class Planned:
    """One item: a case in a lane and a mode (no mode: a required provider the case has no recording for)."""

    case: Case
    lane: str
    mode: Mode | None
    stack: Any = None
    """The stack whose client runs it; None for the adapter alone."""

    @property
    def name(self) -> str:
        """The item's id, as ``-k`` matches it and pytest shows it."""
        return f"{self.case.id}[{self.lane}-{self.mode}]" if self.mode else f"{self.case.id}[{self.lane}]"


def plan_case(case: Case, adapters: Mapping[str, Adapter], stacks: Sequence[StackLane] = (),
              required: Collection[str] = ()) -> Iterator[Planned]:
    """The case's items: each recorded provider (and model variant, read by its provider's adapter) in every mode its
    fixtures allow, a not-recorded item per required provider it lacks, then each stack of a provider it has."""
    for provider in sorted(set(case.providers) | set(required)):
        if provider not in case.providers:
            yield Planned(case, provider, None)
            continue
        adapter = adapters.get(base_provider(provider))
        if adapter is not None:
            for mode in modes_for(case, provider, adapter):
                yield Planned(case, provider, mode)
    for stack in stacks:
        if stack.provider in case.providers and stack.provider in adapters and any(
                fnmatch.fnmatchcase(case.id, pattern) for pattern in stack.cases):
            for mode in modes_for(case, stack.provider, adapters[stack.provider]):
                if mode == "body" or stack.streams:
                    yield Planned(case, stack.row_id, mode, stack)
