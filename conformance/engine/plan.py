"""Which items a run has: one plan, read by ``conformance run`` and by the pytest plugin's collector alike, so an
item exists, and is named, the same way in both (``normal[openai-chat-body]``, ``normal[openai-chat@litellm-body]``,
``normal[gemini]`` for a required provider with no recording)."""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from conformance.engine.cases import Case, base_provider
from conformance.engine.rows import Lane, Mode
from conformance.engine.runner import modes_for
from conformance.kit.adapter import Adapter


class StackLane(Protocol):
    """What the plan reads of a stack (``conformance.stacks.stack.Stack``)."""

    @property
    def provider(self) -> str:
        """The vendor API whose fixtures the stack's client is served."""

    @property
    def fixtures(self) -> str:
        """The fixture set it replays: the provider's, or a variant's (``openai-chat~deepseek-v4``)."""

    @property
    def row_id(self) -> str:
        """Its lane, ``<provider>@<stack>`` (``<provider>~<variant>@<stack>``)."""

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
            for lane in _stack_variants(case, stack):
                for mode in modes_for(case, lane.fixtures, adapters[stack.provider]):
                    if mode == "body" or stack.streams:
                        yield Planned(case, lane.row_id, mode, lane)


def _stack_variants(case: Case, stack: StackLane) -> Iterator[StackLane]:
    """The stack on its provider's fixtures, then on each recorded model variant of them (a variant's wire shapes
    reach the team's client as they reach the adapter). A team's own loop runs the provider's fixtures only."""
    yield stack
    if getattr(stack, "loop", None) is not None or getattr(stack, "variant", True) is not None:
        return
    for fixtures in sorted(case.providers):
        lane = Lane.parse(fixtures)
        if lane.provider == stack.provider and lane.variant is not None:
            yield dataclasses.replace(stack, variant=lane.variant)  # type: ignore[type-var]
