"""Finding, loading and validating case files and the fixtures they name, collecting every problem."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.engine.fixtures import (
    CONVENTION,
    RecordedTurn,
    conventional_turns,
    forget_folders,
    load_turn,
    shown_path,
)
from conformance.engine.provenance import SIDECAR, check
from conformance.engine.pytool import PythonTool, python_tool_problem
from conformance.engine.registry import BUILTIN
from conformance.engine.rows import VARIANT, Lane
from conformance.engine.schemas import schema_definition_problems, schema_errors
from conformance.engine.world import Principal, World
from conformance.engine.yamlfile import MAX_FILE_BYTES, escape_pointer, line_for, load_yaml
from conformance.errors import InputError, Problem
from conformance.kit.task import Task

CASE_FILE = "case.yaml"
WORLD_FILE = "world.yaml"


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectation:
    """What the business expects: an outcome and, optionally, the kind of every turn."""

    outcome: str
    turns: tuple[str, ...] | None = None
    reason: str | None = None
    """The reason or refusal source the last turn must carry."""
    retry_after: bool | None = None
    """Whether the last turn must keep the vendor's retry delay."""
    usage_reported: tuple[str, ...] | None = None
    """Usage totals that must be reported as positive counts."""
    why: str | None = None
    """Set when a provider override replaced the case's expectation."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderFixtures:
    """A provider's recorded turns for one case, and its expectation override if it honestly differs."""

    turns: tuple[RecordedTurn, ...]
    override: Expectation | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One task, the outcome the business expects, and per provider the wire turns that replay it."""

    id: str
    scenario: str
    title: str
    proves: str
    path: str
    task: Task
    principal: Principal
    max_turns: int
    max_tool_calls: int
    approvals: frozenset[str]
    expect: Expectation
    answer_contains: tuple[str, ...]
    providers: Mapping[str, ProviderFixtures]
    world: World = field(repr=False)

    def expectation_for(self, provider: str) -> Expectation:
        """The expectation for ``provider``: the case's own, with the provider's override applied."""
        fixtures = self.providers.get(provider)
        override = fixtures.override if fixtures else None
        if override is None:
            return self.expect
        base = self.expect
        return Expectation(
            outcome=override.outcome or base.outcome,
            turns=override.turns if override.turns is not None else base.turns,
            reason=override.reason if override.reason is not None else base.reason,
            retry_after=override.retry_after if override.retry_after is not None else base.retry_after,
            usage_reported=override.usage_reported if override.usage_reported is not None else base.usage_reported,
            why=override.why,
        )


def discover(roots: list[Path]) -> list[Path]:
    """Every case file under the case folders, in path order."""
    files: list[Path] = []
    for root in roots:
        if not root.is_dir():
            raise InputError([Problem(str(root), None, "cases folder not found", "pass an existing folder to --cases")])
        files.extend(sorted(root.rglob(CASE_FILE)))
    return files


def load_cases(roots: list[Path], *, max_file_bytes: int = MAX_FILE_BYTES,
               known_providers: Collection[str] | None = None, seen: dict[str, str] | None = None,
               unrecorded: bool = False) -> list[Case]:
    """Every case under ``roots``, sorted by id; raises InputError listing every problem found.

    ``unrecorded`` (what ``conformance record`` loads with): a case may list no provider yet (``providers: {}``)
    and a listed provider may have no turns yet; the recording fills them in (docs/record.md).

    ``known_providers``: the provider ids a case may name (default: the built-in adapters); a key outside them is
    an error with the nearest known id suggested. ``seen`` (case id → path) carries ids across calls, so case
    folders loaded one at a time still cannot repeat an id."""
    problems: list[Problem] = []
    cases: list[Case] = []
    seen = {} if seen is None else seen
    forget_folders()
    known = frozenset(BUILTIN if known_providers is None else known_providers)
    for root in roots:
        world = _load_world(root, problems, max_file_bytes)
        _check_root_sidecar(root, problems)
        for path in discover([root]):
            case = _load_case(path, root, world, problems, max_file_bytes, known, unrecorded)
            if case is None:
                continue
            if case.id in seen:
                problems.append(Problem(case.path, 1, f"duplicate case id '{case.id}' (also in {seen[case.id]})",
                                        "give every case a unique id"))
                continue
            seen[case.id] = case.path
            cases.append(case)
    if problems:
        raise InputError(problems)
    return sorted(cases, key=lambda case: case.id)


def _check_root_sidecar(root: Path, problems: list[Problem]) -> None:
    """A cases folder's ``provenance.json`` says its fixtures are hand-written, and why."""
    sidecar = root / SIDECAR
    if sidecar.is_file():
        shown = shown_path(sidecar)
        document = check(sidecar, [], lambda pointer, message, fix: problems.append(
            Problem(shown, None, message, fix, pointer)))
        if document is not None and document.get("hand_written") is not True:
            problems.append(Problem(shown, None, "a cases folder's provenance.json only says hand_written",
                                    'write {"hand_written": true, "why": "..."}; recordings keep theirs in each '
                                    "provider folder"))


def _load_world(root: Path, problems: list[Problem], max_file_bytes: int) -> World | None:
    path = root / WORLD_FILE
    shown = shown_path(path)
    if not path.is_file():
        problems.append(Problem(shown, None, "world file not found",
                                f"create {WORLD_FILE} in the cases folder with the tools and data"))
        return None
    valid = _valid_document(path, shown, "world.schema.json", problems, max_file_bytes)
    if valid is None:
        return None
    document, lines = valid
    for name, tool in document["tools"].items():
        pointer = f"/tools/{escape_pointer(name)}/parameters"
        problems.extend(Problem(shown, line_for(lines, pointer), f"tool parameters are not a valid JSON Schema: "
                                f"{message}", "fix the schema (draft 2020-12); $ref may only point inside it", pointer)
                        for message in schema_definition_problems(tool["parameters"]))
    callables = [(f"/tools/{escape_pointer(name)}/callable", tool["callable"])
                 for name, tool in document["tools"].items() if tool.get("kind") == "python"]
    loaded: dict[str, Any] = {}
    for pointer, spec in callables:
        # Named, never imported here: a python tool is imported the first time it runs, and only where the
        # repository's owner allowed python tools (conformance.engine.pytool; docs/world.md, "Trust").
        problem = python_tool_problem(spec, root)
        if problem is not None:
            problems.append(Problem(shown, line_for(lines, pointer), problem, "name module:function or "
                                    "path/to/file.py:function, a file inside the cases folder", pointer))
            continue
        loaded[spec] = PythonTool(spec, root, shown, line_for(lines, pointer))
    if len(loaded) != len(callables):
        return None
    return World.from_document(document, loaded.__getitem__)


VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def base_provider(provider: str) -> str:
    """The provider id of a fixture set: ``openai-chat`` for ``openai-chat~gpt-5.5-mini`` (its variant)."""
    return Lane.parse(provider).provider


def _variant_folders(case_path: Path, provider: str) -> list[str]:
    """The variant folders of ``provider`` beside a case file (``<provider>~<name>/``), by name."""
    names = sorted(entry.name for entry in case_path.parent.glob(f"{provider}{VARIANT}*") if entry.is_dir())
    return [name for name in names if VARIANT_NAME.fullmatch(name[len(provider) + 1:])]


def _valid_document(path: Path, shown: str, schema: str, problems: list[Problem],
                    max_file_bytes: int) -> tuple[Any, Any] | None:
    """The YAML document and its lines, when it loads and meets ``schema``; else None, its problems added."""
    try:
        document, lines = load_yaml(path, shown, max_bytes=max_file_bytes)
    except InputError as error:
        problems.extend(error.problems)
        return None
    found = [Problem(shown, line_for(lines, pointer), message, fix, pointer)
             for pointer, message, fix in schema_errors(schema, document)]
    if found:
        problems.extend(found)
        return None
    return document, lines


def _load_case(path: Path, root: Path, world: World | None, problems: list[Problem],
               max_file_bytes: int, known_providers: frozenset[str], unrecorded: bool = False) -> Case | None:
    shown = shown_path(path)
    valid = _valid_document(path, shown, "case.schema.json", problems, max_file_bytes)
    if valid is None:
        return None
    document, lines = valid
    if world is None:
        return None
    found: list[Problem] = []

    def problem(pointer: str, message: str, fix: str) -> None:
        found.append(Problem(shown, line_for(lines, pointer), message, fix, pointer))

    task_doc = document["task"]
    tool_names = task_doc.get("tools", [])
    _check_references(document, world, known_providers, problem)
    choice = task_doc.get("tool_choice", "auto")

    providers: dict[str, ProviderFixtures] = {}
    resolved_root = root.resolve()
    if not document["providers"] and not unrecorded:
        problem("/providers", "the case lists no provider: there is nothing to replay",
                f"record one: conformance record --case {document['id']} --provider ID --upstream ID=URL")
    for provider, spec in document["providers"].items():
        if provider not in known_providers:
            continue
        turns = []
        entries = spec["turns"] if "turns" in spec else [] if unrecorded and not _has_turn_files(
            path, provider) else conventional_turns(path, provider, f"/providers/{escape_pointer(provider)}", problem,
                                                   str(document["id"]))
        for index, turn in enumerate(entries or []):
            pointer = f"/providers/{escape_pointer(provider)}/turns/{index}"
            recorded = load_turn(turn, path, resolved_root, pointer, problem, max_file_bytes)
            if recorded is not None:
                turns.append(recorded)
        if "turns" not in spec:
            _check_sidecar(path.parent / provider, found)
        override = spec.get("expect")
        providers[provider] = ProviderFixtures(
            turns=tuple(turns),
            override=_expectation(override) if override else None,
        )
        for variant in _variant_folders(path, provider):
            entries = conventional_turns(path, variant, f"/providers/{escape_pointer(provider)}", problem)
            turns = [recorded for index, turn in enumerate(entries or [])
                     if (recorded := load_turn(turn, path, resolved_root,
                                               f"/providers/{escape_pointer(provider)}/{variant}/{index}",
                                               problem, max_file_bytes)) is not None]
            providers[variant] = ProviderFixtures(turns=tuple(turns), override=providers[provider].override)
    if found:
        problems.extend(found)
        return None

    expect = document["expect"]
    output_schema = task_doc.get("output_schema")
    task = Task(
        instructions=task_doc["instructions"],
        input=task_doc["input"],
        tools=tuple(world.tools[name].spec() for name in tool_names),
        output_schema=output_schema,
        output_schema_name=task_doc.get("output_schema_name", "answer"),
        max_output_tokens=task_doc.get("max_output_tokens", 1024),
        tool_choice="tool" if isinstance(choice, dict) else choice,
        tool_name=choice["tool"] if isinstance(choice, dict) else None,
        follow_ups=tuple(task_doc.get("follow_ups", ())),
    )
    return Case(
        id=document["id"],
        scenario=document["scenario"],
        title=document["title"],
        proves=document.get("proves", ""),
        path=shown,
        task=task,
        principal=Principal(**document["principal"]),
        max_turns=document["budget"]["max_turns"],
        max_tool_calls=document["budget"]["max_tool_calls"],
        approvals=frozenset(document.get("approvals", [])),
        expect=_expectation(expect),
        answer_contains=tuple(expect.get("answer_contains", ())),
        providers=providers,
        world=world,
    )


def _check_sidecar(folder: Path, found: list[Problem]) -> None:
    """A provider folder's ``provenance.json``, when it has one, is well formed (``conformance.engine.provenance``)."""
    sidecar = folder / SIDECAR
    if not sidecar.is_file():
        return
    shown = shown_path(sidecar)
    turn_files = [entry.name for entry in folder.iterdir() if CONVENTION.fullmatch(entry.name)]
    check(sidecar, turn_files, lambda pointer, message, fix: found.append(Problem(shown, None, message, fix,
                                                                                  pointer)))


def _has_turn_files(case_path: Path, provider: str) -> bool:
    folder = case_path.parent / provider
    return folder.is_dir() and any(folder.iterdir())


def _check_references(document: Mapping[str, Any], world: World, known_providers: frozenset[str],
                      problem: Callable[[str, str, str], None]) -> None:
    """What a case names outside itself: world tools, provider ids, and the JSON Schema its answer must meet."""
    task_doc = document["task"]
    tool_names = task_doc.get("tools", [])
    for index, name in enumerate(tool_names):
        if name not in world.tools:
            problem(f"/task/tools/{index}", f"tool '{name}' is not defined in {WORLD_FILE}",
                    f"use one of: {', '.join(sorted(world.tools))}")
    for index, name in enumerate(document.get("approvals", [])):
        if name not in world.tools:
            problem(f"/approvals/{index}", f"approved tool '{name}' is not defined in {WORLD_FILE}",
                    f"use one of: {', '.join(sorted(world.tools))}")
    if "output_schema" in task_doc:
        for message in schema_definition_problems(task_doc["output_schema"]):
            problem("/task/output_schema", f"output_schema is not a valid JSON Schema: {message}",
                    "fix the schema (draft 2020-12); $ref may only point inside it")
    for provider in document["providers"]:
        if provider not in known_providers:
            near = difflib.get_close_matches(provider, sorted(known_providers), n=1, cutoff=0.6)
            hint = f"did you mean '{near[0]}'? " if near else ""
            problem(f"/providers/{escape_pointer(provider)}", f"unknown provider '{provider}'",
                    f"{hint}use one of: {', '.join(sorted(known_providers))}, or load your adapter with "
                    "--adapter module:object")
    choice = task_doc.get("tool_choice", "auto")
    if isinstance(choice, dict) and choice["tool"] not in tool_names:
        problem("/task/tool_choice/tool", f"forced tool '{choice['tool']}' is not among the offered tools",
                "add it to task.tools or force an offered tool")


def _expectation(document: Mapping[str, Any]) -> Expectation:
    """An expectation, or a provider override of one (then ``why`` is set and absent keys inherit)."""
    return Expectation(
        outcome=document.get("outcome", ""),
        turns=tuple(document["turns"]) if "turns" in document else None,
        reason=document.get("reason"),
        retry_after=document.get("retry_after"),
        usage_reported=tuple(document["usage_reported"]) if "usage_reported" in document else None,
        why=document.get("why"),
    )
