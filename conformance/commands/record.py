"""``conformance record``, the command: run cases through a real client and the recording proxy, then write what the
upstream answered as the cases' fixtures (docs/record.md)."""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import threading
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.errors import InputError, Problem
from conformance.replay.modes import MODES as RECORD_MODES

if TYPE_CHECKING:
    from conformance.engine.cases import Case
    from conformance.engine.rows import Mode
    from conformance.kit.adapter import Adapter, Signer, Wire
    from conformance.replay.record import KeySwap, Staged


def _add_targets(parser: Any, provider_help: str) -> None:
    """The case options, and which cases and providers the command acts on."""
    from conformance.commands.options import add_case_options

    add_case_options(parser, size=False)
    parser.add_argument("--case", action="append", required=True, metavar="PATTERN",
                        help="the cases whose id matches this shell pattern (repeatable), e.g. 'http_*'")
    parser.add_argument("--provider", action="append", required=True, metavar="ID", help=provider_help)


def add_parser(commands: Any) -> None:
    """The ``record`` subcommand's arguments."""

    record = commands.add_parser("record", help="record fixtures from real traffic through a loopback proxy")
    _add_targets(record, "a vendor API to record (repeatable)")
    record.add_argument("--upstream", action="append", default=[], metavar="PROVIDER=URL",
                        help="where the provider's requests go, e.g. openai-chat=https://api.openai.com "
                             "({case}, {provider}, {mode} are filled in)")
    record.add_argument("--record-mode", choices=RECORD_MODES, default="once",
                        help="none: replay only; once: record a provider with no turns yet (default); "
                             "new_episodes: record the turns beyond the recorded ones; all: record everything again")
    record.add_argument("--mode", action="append", choices=("body", "stream"), default=[],
                        help="record only this mode (repeatable; default: both)")
    record.add_argument("--variant", metavar="NAME",
                        help="record into <provider>~NAME/ beside the provider's own fixtures: a model variant, run "
                             "and reported as a column of its own (e.g. --variant gpt-5.5-mini); `conformance "
                             "promote` makes it the provider's fixtures")
    record.add_argument("--model", help="the model id the task names in each request (default: the case's); how a "
                                        "variant is recorded against another model")
    record.add_argument("--stack", help="the client that makes the calls (default: the provider's reference SDK "
                                        "stack); a reference stack's lane or module:object")


def add_promote_parser(commands: Any) -> None:
    """The ``promote`` subcommand's arguments."""

    promote = commands.add_parser("promote", help="make a recorded model variant the provider's fixtures")
    _add_targets(promote, "the provider whose variant it is (repeatable)")
    promote.add_argument("--variant", required=True, metavar="NAME",
                         help="the variant: <provider>~NAME/ becomes <provider>/, the old one <provider>~before-NAME/")


def _case_ids(patterns: list[str], known: Any) -> list[str]:
    """The case ids the ``--case`` patterns match, in the cases' order; InputError for a pattern that matches none."""
    unmatched = [pattern for pattern in patterns if not fnmatch.filter(known, pattern)]
    if unmatched:
        raise InputError([Problem("--case", None, f"no case matches {unmatched[0]!r} in the cases folders",
                                  "`conformance list` shows the case ids")])
    return [case_id for case_id in known if any(fnmatch.fnmatchcase(case_id, pattern) for pattern in patterns)]


def _checked_providers(arguments: argparse.Namespace, adapters: Any) -> list[str]:
    from conformance.engine.cases import VARIANT_NAME

    providers = list(dict.fromkeys(arguments.provider))
    unknown = [provider for provider in providers if provider not in adapters]
    if unknown:
        raise InputError([Problem("--provider", None, f"unknown provider {unknown[0]!r}",
                                  f"use one of {', '.join(sorted(adapters))}")])
    if arguments.variant is not None and not VARIANT_NAME.fullmatch(arguments.variant):
        raise InputError([Problem("--variant", None, f"{arguments.variant!r} is not a variant name",
                                  "use letters, digits, '.', '_' and '-' (e.g. gpt-5.5-mini)")])
    return providers


def run(arguments: argparse.Namespace) -> int:
    """Record each case, write its fixtures (all or nothing per provider folder), say what was written."""
    import dataclasses

    from conformance.commands.options import configured
    from conformance.engine.cases import load_cases
    from conformance.engine.registry import select_adapters

    config = configured(arguments)
    # The configured adapters too: a team's adapter records its own folder against the vendor API it speaks.
    adapters = select_adapters(None, config.adapters)
    providers = _checked_providers(arguments, adapters)
    upstreams = upstreams_from(arguments.upstream)
    missing = [provider for provider in providers
               if provider not in upstreams and vendor_of(provider, adapters[provider]) not in upstreams]
    if arguments.record_mode != "none" and missing:
        raise InputError([Problem("--upstream", None, f"no upstream for {missing[0]}",
                                  f"pass --upstream {missing[0]}=URL (the vendor's API base)")])
    cases = {case.id: case for case in load_cases(config.roots, unrecorded=True, known_providers=adapters)}
    from conformance.engine.rows import MODES

    modes = tuple(mode for mode in MODES if mode in arguments.mode or not arguments.mode)
    chosen = [cases[case_id] for case_id in _case_ids(arguments.case, cases)]
    if arguments.model:
        chosen = [dataclasses.replace(case, task=dataclasses.replace(case.task, model=arguments.model))
                  for case in chosen]
    for provider in providers:
        for line in record_cases(chosen, provider, upstreams, arguments.record_mode, modes, arguments.stack,
                                 arguments.variant, adapters[provider]):
            print(line)
    return 0


def promote(arguments: argparse.Namespace) -> int:
    """``conformance promote``: each provider's variant made its fixtures (``_promote``)."""
    from conformance.commands.options import configured
    from conformance.engine.cases import load_cases
    from conformance.engine.registry import select_adapters

    config = configured(arguments)
    adapters = select_adapters(None, None)
    providers = _checked_providers(arguments, adapters)
    cases = {case.id: case for case in load_cases(config.roots, known_providers=select_adapters(None,
                                                                                                   config.adapters))}
    case_ids = _case_ids(arguments.case, cases)
    for provider in providers:
        _promote(arguments.variant, provider, [cases[case_id] for case_id in case_ids])
    return 0


def record_cases(cases: list[Case], provider: str, upstreams: dict[str, str], record_mode: str,
                 modes: tuple[Mode, ...] = ("body", "stream"), stack_spec: str | None = None,
                 variant: str | None = None, adapter: Adapter | None = None,
                 keep_errors: bool = False, server_key: str | None | bool = True) -> list[str]:
    """Record each case's ``provider`` turns through the stack and the proxy, write them (all or nothing per
    provider folder; a ``variant`` into ``<provider>~<variant>/``), and return one line per case saying what was
    written. ``keep_errors``: an error turn the case does not expect is written too, with a line naming it, instead
    of refusing the recording (``conformance probe``: a server's refusal is what it is scored on). ``server_key``:
    True, the user's key for the vendor from the vendor's own variable (``credentials_for``); a string, the key to
    send instead of the placeholder; None, the placeholder as it is (a server that needs no key)."""
    import dataclasses

    from conformance.engine.cases import ProviderFixtures
    from conformance.engine.registry import builtin_adapters
    from conformance.engine.rows import VARIANT
    from conformance.replay.record import write_fixtures

    adapter = adapter or builtin_adapters()[provider]
    vendor = vendor_of(provider, adapter)
    upstreams = {**upstreams, provider: upstreams.get(provider) or upstreams.get(vendor, "")}
    stack = _stack(stack_spec, vendor)
    target = provider if variant is None else f"{provider}{VARIANT}{variant}"
    lines = []
    for listed in cases:
        case = _with_provider(listed, provider)
        if variant is not None:  # the variant's own turns are the recorded ones `once`/`new_episodes` replay
            case = dataclasses.replace(case, providers={
                **case.providers, provider: listed.providers.get(target, ProviderFixtures(turns=()))})
        staged = _record_one(case, provider, stack, modes, upstreams, record_mode, adapter, vendor, server_key)
        folder = Path(case.path).parent / target
        if not staged:
            lines.append(f"conformance record: {case.id} [{provider}]: nothing forwarded "
                         f"(--record-mode {record_mode}); fixtures unchanged")
            continue
        if keep_errors:
            staged, split = _one_answer_per_turn(staged)
            lines += [f"conformance record: {case.id} [{target}]: {line}" for line in split]
        unexpected = unexpected_errors(listed, provider, staged, adapter)
        if unexpected and keep_errors:
            lines += [f"conformance record: {case.id} [{target}]: recorded anyway: {problem}" for problem in unexpected]
        elif unexpected:
            raise InputError([Problem(str(folder), None, f"case {listed.id} [{provider}]: {problem}; nothing was "
                                      "written, the recorded files are kept", "fix what the upstream says (a key, a "
                                      "quota, an outage) and record again") for problem in unexpected])
        replace = modes if record_mode == "all" else ()
        staged = [*staged, _provenance(folder, staged, replace, case, stack, upstreams.get(provider, ""), adapter.wire)]
        before = _vocabulary(listed, target, adapter)  # read before the files it reads are replaced
        written = write_fixtures(folder, staged, replace=replace)
        lines.append(f"conformance record: {case.id} [{provider}]: wrote {len(written)} file(s) in {folder}")
        lines += _drift_lines(before, listed, target, adapter, folder)
        if provider not in listed.providers:
            lines.append(f"  add `{provider}: {{}}` under providers: in {case.path} to run them"
                         + (" (and its variants)" if variant else ""))
    return lines


def _vocabulary(case: Case, target: str, adapter: Adapter) -> Any:
    """What the provider's previous recordings of the case say (``conformance.engine.drift``), None when it had
    none."""
    from conformance.engine.drift import vocabulary

    shape = adapter.wire.shape if adapter.wire is not None else None
    fixtures = case.providers.get(target)
    if shape is None or fixtures is None or not fixtures.turns:
        return None
    return vocabulary([case], target, shape)


def _drift_lines(before: Any, case: Case, target: str, adapter: Adapter, folder: Path) -> list[str]:
    """What the new recordings of the case carry that its previous ones never had (docs/record.md, "Drift")."""
    import dataclasses

    from conformance.engine.cases import ProviderFixtures
    from conformance.engine.drift import drift_from
    from conformance.engine.fixtures import conventional_turns, load_turn

    if before is None:
        return []
    problems: list[Any] = []
    entries = conventional_turns(Path(case.path), target, "", lambda *problem: problems.append(problem)) or []
    turns = [turn for entry in entries if (turn := load_turn(entry, Path(case.path), folder.parent.parent.resolve(),
                                                             "", lambda *problem: problems.append(problem),
                                                             10 * 2**20)) is not None]
    if problems or not turns:
        return []
    again = dataclasses.replace(case, providers={**case.providers, target: ProviderFixtures(turns=tuple(turns))})
    return [f"  drift: {entry.line()}" for entry in drift_from(before, [again], target, adapter)]


def _provenance(folder: Path, staged: list[Staged], replace: tuple[Mode, ...] | tuple[()], case: Case, stack: Any,
                upstream: str, wire: Wire | None) -> Staged:
    """The provider folder's ``provenance.json``: an entry for each turn file recorded now, and the entries of the
    turn files the recording keeps (docs/record.md, "Provenance and age")."""
    from conformance import __version__
    from conformance.engine.fixtures import CONVENTION
    from conformance.engine.provenance import SIDECAR, entry, read, served_model
    from conformance.replay.record import MODE_FILES, Staged

    kept: dict[str, Any] = {}
    try:
        old = read(folder / SIDECAR) if (folder / SIDECAR).is_file() else {}
    except (OSError, ValueError):
        old = {}
    replaced = [pattern for mode in replace for pattern in MODE_FILES[mode]] + (["turn*.error.json"] if replace else [])
    if isinstance(old, dict) and isinstance(old.get("turns"), dict):
        kept = {name: value for name, value in old["turns"].items() if (folder / name).is_file()
                and not any(fnmatch.fnmatchcase(name, pattern) for pattern in replaced)}
    versions = ", ".join(f"{name} {version}" for name, version in stack.versions().items() if version)
    now = entry(case.task.model, upstream, f"{stack.row_id}" + (f" ({versions})" if versions else ""), __version__)
    shape = wire.shape if wire is not None else None
    turns = dict(kept)
    for item in staged:
        if CONVENTION.fullmatch(item.name):
            served = served_model(item.name, item.data, shape.model) if shape is not None else None
            turns[item.name] = {**now, "served_model": served} if served and served != now["model"] else now
    return Staged(SIDECAR, (json.dumps({"turns": dict(sorted(turns.items()))}, indent=2) + "\n").encode())


def unexpected_errors(case: Case, provider: str, staged: list[Staged], reader: Adapter | None = None) -> list[str]:
    """The error turns of a recording that the case does not expect, each named with its status and message
    (redacted): such a recording must never replace what is there (docs/record.md). An error turn is expected when
    the provider's adapter reads it as the kind the case expects of that turn (and, for the last turn, with the
    reason or source the case names): a 401 where the case expects a rate limit is not; a redirect never is."""
    from conformance.engine.registry import builtin_adapters
    from conformance.engine.rows import Lane
    from conformance.replay.hygiene import redact

    expected = case.expectation_for(provider)
    adapter = reader or builtin_adapters().get(Lane.parse(provider).provider)
    kinds = expected.turns or ()
    problems = []
    for item in staged:
        match = re.fullmatch(r"turn(\d+)\.error\.json", item.name)
        if match is None:
            continue
        number = int(match[1])
        try:
            error = json.loads(item.data)
        except ValueError:
            error = {}
        error = error if isinstance(error, dict) else {}
        status: int = error["status"] if isinstance(error.get("status"), int) else 0
        last = number == (len(kinds) if kinds else number)
        wanted = kinds[number - 1] if number <= len(kinds) else (expected.outcome if not kinds else None)
        got = adapter.classify_error(status, error.get("body"), error.get("headers") or {}).to_dict() \
            if adapter is not None and status >= 400 else {}
        reason = got.get("reason") or got.get("source")
        if got.get("kind") == wanted and (not last or expected.reason is None or expected.reason == reason):
            continue
        message = " ".join(redact(json.dumps(error.get("body"), ensure_ascii=False)).split())[:300]
        read = f"read as {got.get('kind')}/{reason}" if got else "a redirect, never a vendor's answer"
        problems.append(f"turn {number}: the upstream answered HTTP {status} ({message}; {read}), which the case "
                        f"does not expect (it expects {wanted or 'no such turn'}"
                        + (f"/{expected.reason}" if last and expected.reason else "") + ")")
    return problems


def credentials_for(provider: str, upstream: str) -> dict[str, KeySwap]:
    """The user's key for the provider's upstream, from the environment the vendor's SDK reads (``Wire.credential``):
    it replaces the placeholder a reference stack sends, never a key the client sent itself, and is never written.
    Without it, a placeholder request to a host that is not loopback is refused, naming the variable."""
    from conformance.engine.registry import builtin_adapters
    from conformance.replay.record import KeySwap

    wire = builtin_adapters()[provider].wire
    credential = wire.credential if wire is not None else None
    if credential is None:
        return {}
    value = next((os.environ[name] for name in credential.env if os.environ.get(name)), None)
    host = urllib.parse.urlsplit(upstream).hostname or ""
    placeholder = credential.template.format(credential.placeholder)
    if value is None and host in ("127.0.0.1", "::1", "localhost"):
        return {}  # a replay server or a test double: the client's own header goes as it is
    missing = str(Problem(credential.env[0], None, f"recording {provider} from {host} needs your key: the reference "
                          "stack sends a placeholder", f"set {' or '.join(credential.env)} (it is sent upstream only, "
                          "never written), or record with a --stack that sends its own key"))
    return {provider: KeySwap(credential.header, placeholder,
                              credential.template.format(value) if value is not None else None, missing)}


def _server_swap(vendor: str, key: str) -> KeySwap:
    """The placeholder a reference stack sends replaced by a probed server's own key, in the vendor's header."""
    from conformance.engine.registry import builtin_adapters
    from conformance.replay.record import KeySwap

    wire = builtin_adapters()[vendor].wire
    credential = wire.credential if wire is not None else None
    assert credential is not None  # every API a server can claim has one (``conformance.commands.probe``)
    return KeySwap(credential.header, credential.template.format(credential.placeholder),
                   credential.template.format(key))


def _record_one(case: Case, provider: str, stack: Any, modes: tuple[Mode, ...], upstreams: dict[str, str],
                record_mode: str, adapter: Adapter, vendor: str, server_key: str | None | bool = True
                ) -> list[Staged]:
    from conformance.replay.hygiene import redact
    from conformance.replay.record import Recorder, RecordServer, stage_session, upstream_for
    from conformance.replay.router import Replay
    from conformance.stacks.runner import drive_case

    templates = {name: upstream_for(url, case.id, name, "{mode}") for name, url in upstreams.items()}
    if server_key is True:
        swaps = list(credentials_for(vendor, templates.get(provider, "")).values())  # the vendor's key
    else:
        swaps = [_server_swap(vendor, server_key)] if isinstance(server_key, str) else []
    credentials = {provider: swaps[0]} if swaps else {}
    staged: list[Staged] = []
    for mode in modes:
        recorder = Recorder({name: url.replace("{mode}", mode) for name, url in templates.items()}, record_mode,
                            Replay([case]), _signers(vendor, provider), credentials=credentials)
        server = RecordServer(recorder)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            drive_case(case, provider, stack, mode, server.base, adapter)
        except InputError:
            raise
        except Exception as error:  # noqa: BLE001 - the client gave up (a redirect it followed, a reset): one line
            raise InputError([Problem(f"case {case.id} [{provider}, {mode}]", None, f"the client stopped with "
                                      f"{type(error).__name__}: {redact(str(error))[:300]}; nothing was written, the "
                                      "recorded files are kept", "look at what the upstream answered (the proxy "
                                      "follows no redirect; a client may), then record again")]) from None
        finally:
            server.shutdown()
            server.server_close()
        replayed, exchanges = recorder.recorded(case.id, provider, mode)
        staged += stage_session(case.id, mode, exchanges, first_turn=replayed + 1,
                                wire=adapter.wire)
    return _merged(staged)


def _one_answer_per_turn(staged: list[Staged]) -> tuple[list[Staged], list[str]]:
    """A recording where one mode's turn is an HTTP error and the other mode's same turn an answer (a server that
    refuses to stream with tools): the fixture layout holds one error turn for both modes, so the refusing mode is
    left out whole (its files and the error), and a line names it. Its rows are then not run, and a diff against a
    recording that had them lists them as gone."""
    import fnmatch

    from conformance.replay.record import MODE_FILES

    names = {item.name for item in staged}
    dropped: set[str] = set()
    lines = []
    for name in sorted(names):
        match = re.fullmatch(r"turn(\d+)\.error\.json", name)
        if match is None:
            continue
        number = match[1]
        answered = {mode for mode, patterns in MODE_FILES.items()
                    if any(fnmatch.fnmatchcase(other, pattern.replace("*", number)) for other in names
                           for pattern in patterns[:-1] if other != name)}
        refused = [mode for mode in MODE_FILES
                   if mode not in answered and f"requests/turn{number}.{mode}.json" in names]
        if not answered or not refused:
            continue
        for mode in refused:
            dropped |= {other for other in names for pattern in MODE_FILES[mode] if fnmatch.fnmatchcase(other, pattern)}
            lines.append(f"the {mode} request of turn {number} was refused (HTTP error) where the "
                         f"{'/'.join(sorted(answered))} one was answered: its {mode} rows are left out (an error turn "
                         "answers both modes)")
        dropped.add(name)
    return [item for item in staged if item.name not in dropped], lines


def _merged(staged: list[Staged]) -> list[Staged]:
    """One file per name: an error turn recorded in both modes is written once."""

    by_name: dict[str, Staged] = {}
    for item in staged:
        by_name.setdefault(item.name, item)
    return list(by_name.values())


def _with_provider(case: Case, provider: str) -> Case:
    """The case with an (empty) entry for a provider it has no fixtures for yet, so the loop can run it."""
    import dataclasses

    from conformance.engine.cases import ProviderFixtures

    if provider in case.providers:
        return case
    return dataclasses.replace(case, providers={**case.providers, provider: ProviderFixtures(turns=())})


def _promote(name: str, provider: str, cases: list[Case]) -> None:
    """Make a variant the provider's fixtures, case by case: ``<provider>/`` → ``<provider>~before-<variant>/``,
    then ``<provider>~<variant>/`` → ``<provider>/``. Every case is checked before any folder moves, and a move that
    fails puts back the ones already made."""
    from conformance.engine.cases import VARIANT_NAME
    from conformance.engine.rows import VARIANT

    kept_name = f"before-{name}"
    if not VARIANT_NAME.fullmatch(kept_name):
        raise InputError([Problem("--variant", None, f"{name!r} is too long to keep the old fixtures "
                                  f"as {provider}{VARIANT}{kept_name}/",
                                  "use a name of 57 characters or less")])
    variant = f"{provider}{VARIANT}{name}"
    moves: list[tuple[Path, Path, Path]] = []  # (the variant folder, the provider folder, where the old one goes)
    problems = []
    for case in cases:
        folder = Path(case.path).parent
        problem = _promotable(case, folder, provider, variant, folder / f"{provider}{VARIANT}{kept_name}")
        if problem is not None:
            problems.append(problem)
        else:
            moves.append((folder / variant, folder / provider, folder / f"{provider}{VARIANT}{kept_name}"))
    if problems:
        raise InputError(problems)
    done: list[tuple[Path, Path, Path]] = []
    try:
        for move in moves:
            source, target, kept = move
            target.rename(kept)
            try:
                source.rename(target)
            except OSError:
                kept.rename(target)
                raise
            done.append(move)
    except OSError as error:
        for source, target, kept in reversed(done):
            target.rename(source)
            kept.rename(target)
        raise InputError([Problem(str(error.filename or provider), None, f"cannot promote: {error}",
                                  "nothing was moved; check the folders' permissions")]) from None
    for source, target, kept in moves:
        print(f"conformance promote: {target.parent.name}: {source.name}/ is now {target.name}/; the previous "
              f"fixtures are in {kept.name}/")


def _promotable(case: Case, folder: Path, provider: str, variant: str, kept: Path) -> Problem | None:
    """Why a case's variant cannot be promoted, or None: the provider must be listed and recorded in its own folder
    (turns listed inline in case.yaml would not be replaced), the variant recorded, the name for the old folder
    free."""
    from conformance.engine.rows import Lane

    own = folder / provider
    turns = case.providers.get(provider)
    if turns is None:
        return Problem(case.path, None, f"the case does not list {provider}",
                       f"add `{provider}: {{}}` under providers: first")
    if not (folder / variant).is_dir() or variant not in case.providers:
        return Problem(str(folder / variant), None, "no such variant folder",
                       f"record it first: conformance record --variant {Lane.parse(variant).variant} ...")
    files = [path for turn in turns.turns for path in (turn.body_path, turn.stream, turn.error_path)
             if path is not None]
    if not own.is_dir() or any(own.resolve() not in path.resolve().parents for path in files) \
            or len(files) < len(turns.turns):
        return Problem(case.path, None, f"{provider}'s turns are not all in {provider}/ (listed under turns: in the "
                                        "case file)", f"move them to {provider}/turnN files, then promote")
    if kept.exists():
        return Problem(str(kept), None, "already exists", "move or delete it, then promote again")
    return None


def upstreams_from(values: list[str]) -> dict[str, str]:
    """``PROVIDER=URL`` values as provider → URL; anything else is a usage error naming the value."""
    upstreams = {}
    for value in values:
        name, separator, url = value.partition("=")
        if not separator or not url.startswith(("http://", "https://")):
            raise InputError([Problem("--upstream", None, f"{value!r} is not PROVIDER=URL",
                                      "write e.g. --upstream openai-chat=https://api.openai.com")])
        upstreams[name] = url
    return upstreams


def _stack(spec: str | None, provider: str) -> Any:
    from conformance.stacks.stack import builtin_stacks, select_stacks

    if spec is None:
        matching = [stack for stack in builtin_stacks().values() if stack.provider == provider]
        if not matching:
            raise InputError([Problem("--stack", None, f"no reference stack speaks {provider}",
                                      "pass --stack module:object")])
        chosen = matching[0]
    else:
        (chosen,) = select_stacks([spec])
    reason = chosen.skip_reason()
    if reason is not None:
        raise InputError([Problem("--stack", None, f"stack {chosen.row_id} cannot run: {reason}",
                                  "install it, or pass another --stack")])
    return chosen


def _signers(vendor: str, session: str | None = None) -> dict[str, Signer]:
    """The vendor's re-signer (``Wire.resign``: an API that signs over the host), built from the environment, for
    the sessions of ``session`` (default: the vendor's own)."""
    from conformance.engine.registry import builtin_adapters

    wire = builtin_adapters()[vendor].wire
    return {session or vendor: wire.resign(os.environ)} if wire is not None and wire.resign is not None else {}


def vendor_of(provider: str, adapter: Adapter) -> str:
    """The built-in vendor API an adapter speaks: itself for a built-in one, else the built-in adapter with the same
    ``Wire`` (a team's adapter made from one with ``dataclasses.replace`` keeps it). InputError when none does."""
    from conformance.engine.registry import builtin_adapters

    builtin = builtin_adapters()
    if provider in builtin:
        return provider
    same = [vendor for vendor, known in builtin.items() if adapter.wire is not None and known.wire == adapter.wire]
    if not same:
        raise InputError([Problem("--provider", None, f"adapter {provider} names no vendor wire: record cannot tell "
                                  "which API to record it against", "give it a built-in adapter's wire "
                                  "(dataclasses.replace(CHAT, id=..., ...) keeps it)")])
    return same[0]
