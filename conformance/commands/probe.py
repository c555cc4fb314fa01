"""``conformance probe``: score a server that claims vendor APIs (vLLM, SGLang, Ollama, llama.cpp, LM Studio, a
gateway's proxy) on the task set (docs/probe.md).

The only command meant to leave loopback. It copies the cases into a new folder, records each case's turns against
the server through the redacting recorder (``conformance record``) as a variant of each API it claims
(``openai-chat~vllm``), and then runs everything else offline on the copy: classification, request acceptance, stream
framing, usage, and the report, where the server's column stands beside the vendor's recordings. Two probes of two
server versions under one name are gated with ``conformance diff``.
"""

from __future__ import annotations

import argparse
import fnmatch
import shutil
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.errors import InputError, Problem

if TYPE_CHECKING:
    from conformance.engine.cases import Case

ERROR_KINDS = frozenset({"retryable_error", "fatal_error"})
"""A case that expects one of these of some turn asks the upstream to fail on cue, which a server is not asked to do:
it is left out of a probe, and said so."""
EXIT_FAILED = 1


def add_parser(commands: Any) -> None:
    """The ``probe`` subcommand's arguments."""
    from conformance.commands.options import add_case_options

    probe = commands.add_parser("probe", help="score a server that claims vendor APIs (vLLM, Ollama, a proxy): "
                                              "record the cases against it, then judge it offline")
    add_case_options(probe, size=False)
    probe.add_argument("--server", required=True, metavar="NAME=URL",
                       help="the server's name (its column: <api>~NAME) and base URL, as a vendor's SDK takes it "
                            "(e.g. vllm=http://127.0.0.1:8000; {case}, {provider}, {mode} are filled in)")
    probe.add_argument("--api", action="append", required=True, metavar="API",
                       help="a built-in API the server claims, e.g. openai-chat (repeatable; an API whose requests are "
                            "signed for its vendor's host, as Bedrock's, is not probed)")
    probe.add_argument("--model", required=True, help="the model id the server serves, sent in every request")
    probe.add_argument("--case", action="append", default=[], metavar="PATTERN",
                       help="only the cases whose id matches this shell pattern (repeatable; default: all)")
    probe.add_argument("--mode", action="append", choices=("body", "stream"), default=[],
                       help="only this mode (repeatable; default: both)")
    probe.add_argument("--key-env", metavar="VAR",
                       help="the variable that holds the server's key (default: none; the placeholder key the "
                            "reference clients send goes as it is, and no vendor key is read)")
    probe.add_argument("--out", required=True, type=Path,
                       help="a new folder: the recorded copy of the cases (cases/) and the report (report/)")


def _server(value: str) -> tuple[str, str]:
    from conformance.engine.cases import VARIANT_NAME

    name, separator, url = value.partition("=")
    if not separator or not VARIANT_NAME.fullmatch(name) or not url.startswith(("http://", "https://")):
        raise InputError([Problem("--server", None, f"{value!r} is not NAME=URL",
                                  "write e.g. --server vllm=http://127.0.0.1:8000 (a name of letters, digits, '.', "
                                  "'_' and '-')")])
    return name, url


def probed_apis(names: list[str], adapters: Any) -> list[str]:
    """The ``--api`` values, each a built-in API a server can claim: one whose requests are not signed for the
    vendor's own host (``Wire.resign``). InputError naming the value otherwise."""
    claimable = sorted(api for api, adapter in adapters.items() if adapter.wire is not None
                       and adapter.wire.resign is None and adapter.wire.credential is not None)
    for name in names:
        if name not in claimable:
            raise InputError([Problem("--api", None, f"{name!r} is not an API a server can claim here",
                                      f"use one of {', '.join(claimable)}")])
    return list(dict.fromkeys(names))


def probed(cases: list[Case], api: str, patterns: list[str]) -> tuple[list[Case], list[str]]:
    """The cases a probe of ``api`` records (those that list it, match ``patterns`` and expect no error turn), and a
    line for each it leaves out with the reason."""
    chosen, left = [], []
    for case in cases:
        if patterns and not any(fnmatch.fnmatchcase(case.id, pattern) for pattern in patterns):
            continue
        if api not in case.providers:
            left.append(f"{case.id} [{api}]: the case records no {api} turns")
            continue
        expected = case.expectation_for(api)
        kinds = set(expected.turns or ()) | {expected.outcome}
        if kinds & ERROR_KINDS:
            left.append(f"{case.id} [{api}]: it expects {'/'.join(sorted(kinds & ERROR_KINDS))}, which a server is "
                        "not asked to answer")
            continue
        chosen.append(case)
    return chosen, left


def _copy_cases(roots: list[Path], into: Path) -> list[Path]:
    """Each cases folder copied under ``into`` (without snapshots, variants or stack recordings): the probe records
    into the copy, never into the team's folder."""
    copied = []
    ignore = shutil.ignore_patterns("__snapshots__", "*~*", "__pycache__")
    for index, root in enumerate(roots):
        target = into / (root.name if len(roots) == 1 else f"{index + 1}-{root.name}")
        shutil.copytree(root, target, ignore=ignore, symlinks=False)
        copied.append(target)
    return copied


NOT_THE_SERVER = frozenset({401, 403, 404, 405, 407})
"""Statuses that say the probe reached the wrong place or without the server's key, not how the server answers a
request: the probe stops on them (exit 2) instead of scoring the server on them."""


def run(arguments: argparse.Namespace) -> int:
    """Record, then judge; exit 0 when every server row passed, 1 when one failed or a mode was refused, 2 on bad
    input."""
    import os

    from conformance.commands.options import configured
    from conformance.engine.registry import builtin_adapters, select_adapters
    from conformance.engine.rows import MODES

    name, url = _server(arguments.server)
    out: Path = arguments.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError([Problem(str(out), None, "exists and is not empty: a probe never writes over another",
                                  "pass a new folder to --out")])
    config = configured(arguments)
    inside = [root for root in config.roots if out.resolve().is_relative_to(root.resolve())]
    if inside:
        raise InputError([Problem(str(out), None, f"is inside the cases folder {inside[0]}, which the probe copies",
                                  "pass an --out outside the cases folders")])
    adapters = builtin_adapters()
    apis = probed_apis(arguments.api, adapters)
    key = None
    if arguments.key_env:
        key = os.environ.get(arguments.key_env)
        if not key:
            raise InputError([Problem("--key-env", None, f"{arguments.key_env} is not set",
                                      f"export {arguments.key_env} with the server's key, or leave --key-env out for "
                                      "a server that needs none")])
    modes = tuple(mode for mode in MODES if mode in arguments.mode or not arguments.mode)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        outcome = _probe(arguments, config, name, url, apis, modes, key, adapters,
                         select_adapters(None, config.adapters))
    except BaseException:
        for child in list(out.iterdir()):  # paths in the report name the recorded files where they stay, so the
            shutil.rmtree(child, ignore_errors=True)  # probe writes in place and a probe that fails leaves nothing
        if created:
            out.rmdir()
        raise
    return outcome


def _probe(arguments: argparse.Namespace, config: Any, name: str, url: str, apis: list[str],
           modes: tuple[Any, ...], key: str | None, adapters: Any, known: Any) -> int:
    import dataclasses
    import re

    from conformance.cli import main
    from conformance.commands.record import record_cases
    from conformance.engine.cases import load_cases
    from conformance.engine.rows import VARIANT
    from conformance.report.diff import read_report

    out: Path = arguments.out
    roots = _copy_cases(config.roots, out / "cases")
    cases = load_cases(roots, known_providers=known)
    unmatched = [pattern for pattern in arguments.case
                 if not any(fnmatch.fnmatchcase(case.id, pattern) for case in cases)]
    if unmatched:
        raise InputError([Problem("--case", None, f"no case matches {unmatched[0]!r} in the cases folders",
                                  "`conformance list` shows the case ids")])
    host = urllib.parse.urlsplit(url).hostname or url
    print(f"conformance probe: {name} at {host}, {', '.join(apis)}; model {arguments.model}")
    recorded, refused = 0, []
    for api in apis:
        chosen, left = probed(cases, api, arguments.case)
        for line in left:
            print(f"  not probed: {line}")
        chosen = [dataclasses.replace(case, task=dataclasses.replace(case.task, model=arguments.model))
                  for case in chosen]
        try:
            lines = record_cases(chosen, api, {api: url}, "all", modes, None, name, adapters[api],
                                 keep_errors=True, server_key=key)
        except InputError as error:  # the recorder names its own option: here the server's is --server
            raise InputError([problem._replace(message=problem.message.replace("--upstream", "--server"),
                                               fix=problem.fix.replace("--upstream", "--server"))
                              for problem in error.problems]) from None
        for line in lines:
            status = re.search(r"answered HTTP (\d+)", line)
            if status is not None and int(status[1]) in NOT_THE_SERVER:
                raise InputError([Problem("--server", None, f"{url}: {line.split(': ', 1)[1][:400]}",
                                          "check the URL (the base the vendor's SDK takes: http://host:8000 for the "
                                          "OpenAI APIs, without /v1, which the client adds), the model id, and "
                                          "--key-env for a server that wants a key")])
            print(f"  {line}")
            if "was refused (HTTP error) where" in line:
                refused.append(line.split("conformance record: ", 1)[-1])
        recorded += len(chosen)
    if not recorded:
        raise InputError([Problem("--case", None, "no case to probe: each one left out is listed above",
                                  "pick cases that list the APIs passed with --api and expect no HTTP error")])
    code = main(["run", "--no-config", *[f"--cases={root}" for root in roots],
                 *[f"--adapter={spec}" for spec in config.adapters],
                 *[f"--provider={api}" for api in apis], "--report-dir", str(out / "report")])
    if code not in (0, EXIT_FAILED):
        raise InputError([Problem(str(out / "report"), None, f"the offline run of the recorded cases exited {code}",
                                  "read its message above")])
    report = read_report(out / "report" / "report.json")
    server = [row for row in report["results"] if any(row["provider"] == f"{api}{VARIANT}{name}" for api in apis)]
    failed = [row for row in server if not row["passed"]]
    print(f"conformance probe: {len(server) - len(failed)} of {len(server)} {name} rows passed; recorded cases in "
          f"{out / 'cases'}, the report in {out / 'report'}")
    for row in failed[:20]:
        print(f"  {row['case']} [{row['provider']}, {row['mode']}]: {'; '.join(row['failures'])[:300]}")
    for line in refused:
        print(f"  refused: {line}")
    return EXIT_FAILED if failed or refused else 0
