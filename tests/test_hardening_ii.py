"""Hostile input, environment failures and signals: one section per break an adversarial review found.

Each test fails on the code before the fix (crash, hang, wrong verdict, injected markup or a lost report) and
passes after. Hang-prone inputs run in a subprocess with a generous time bound: a guard against hanging, not a
speed measurement (speed lives in benchmarks/).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.engine.cases import load_cases
from conformance.engine.registry import builtin_adapters
from conformance.engine.world import World
from conformance.engine.yamlfile import load_yaml
from conformance.errors import InputError
from conformance.kit.sse import iter_lines
from tests.helpers import CASES, FIXTURES, OWN, CliResult, cli
from tests.slow_adapter import wait_until_started

ROOT = Path(__file__).parent.parent
ADAPTERS = builtin_adapters()


def run_cli(*arguments: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
            command: list[str] | None = None) -> CliResult | subprocess.CompletedProcess[str]:
    """In process, unless the test is about the installed script (``command``) and what it imports."""
    if command is None:
        return cli(*arguments, cwd=cwd, env=env)
    return subprocess.run([*command, *arguments], capture_output=True, text=True, cwd=cwd, timeout=120, check=False,
                          env=env)


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    """A private copy of the bundled cases, to break."""
    folder = tmp_path / "cases"
    shutil.copytree(CASES, folder)
    return folder


def _edit_json(path: Path, edit: Any) -> None:
    body = json.loads(path.read_text())
    edit(body)
    path.write_text(json.dumps(body))


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"non-standard JSON constant {constant}")
    return json.loads(text, parse_constant=refuse)


# ---- 1, 2. Lone surrogates and non-finite numbers reach the report safely -------------------------------------

def test_a_lone_surrogate_in_a_fixture_still_gives_every_report(cases: Path, tmp_path: Path) -> None:
    fixture = cases / "normal/openai-chat/turn2.json"
    fixture.write_text(fixture.read_text().replace("Order ORD-1001", "Order \\ud800 ORD-1001", 1))
    completed = run_cli("run", "--cases", str(cases), "--report-dir", str(tmp_path / "r"))
    assert completed.returncode in (0, 1) and "Traceback" not in completed.stderr
    report = _strict_json((tmp_path / "r/report.json").read_text(encoding="utf-8"))
    texts = [turn["text"] for row in report["results"] if row["case"] == "normal" and row["provider"] == "openai-chat"
             and row["mode"] == "body" for turn in row["turns"]]
    assert any(text and "\ufffd" in text for text in texts)
    assert (tmp_path / "r/report.html").stat().st_size > 1000


def test_inspect_prints_a_lone_surrogate_as_valid_utf8(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    text = (FIXTURES / "openai-chat/body-text.json").read_text()
    body.write_text(text.replace('"content": "', '"content": "\\udfff', 1))
    completed = subprocess.run([sys.executable, "-m", "conformance", "inspect", "--provider", "openai-chat", str(body)],
                               capture_output=True, cwd=ROOT, timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr
    assert "\ufffd" in completed.stdout.decode("utf-8")


def test_nan_and_infinity_in_usage_keep_report_json_standard(cases: Path, tmp_path: Path) -> None:
    fixture = cases / "normal/openai-chat/turn2.json"
    fixture.write_text(fixture.read_text().replace('"prompt_tokens": ', '"prompt_tokens": NaN, "x_cost": Infinity, '
                                                                         '"x_was": ', 1))
    completed = run_cli("run", "--cases", str(cases), "--report-dir", str(tmp_path / "r"))
    assert "Traceback" not in completed.stderr
    report = _strict_json((tmp_path / "r/report.json").read_text())
    raw = [turn["raw_usage"] for row in report["results"] if row["case"] == "normal"
           and row["provider"] == "openai-chat" and row["mode"] == "body" for turn in row["turns"]]
    assert {"prompt_tokens": "NaN", "x_cost": "Infinity"}.items() <= raw[-1].items()
    html = (tmp_path / "r/report.html").read_text()
    data = html.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert _strict_json(data)["summary"]["rows"] == report["summary"]["rows"]


# ---- 3. Deep nesting and odd types ----------------------------------------------------------------------------

DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
def test_deeply_nested_arguments_are_an_invalid_call_not_a_crash(provider: str) -> None:
    if provider == "openai-chat":
        body = json.loads((FIXTURES / provider / "body-tool-call.json").read_text())
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = DEEP
    else:
        body = json.loads((FIXTURES / provider / "body-parallel-calls.json").read_text())
        body["output"][0]["arguments"] = DEEP
    assert ADAPTERS[provider].classify_body(body).kind == "invalid_tool_call"


@pytest.mark.parametrize("provider", sorted(ADAPTERS))
def test_a_deeply_nested_stream_event_cuts_the_stream(provider: str) -> None:
    deep = '{"a":' * 3000 + "1" + "}" * 3000
    data = f"{deep}\n".encode() if provider == "bedrock-converse" else f"data: {deep}\n\n".encode()
    assemble = ADAPTERS[provider].assemble_stream
    assert assemble is not None
    assert assemble([data]).response.kind == "retryable_error"


def test_anthropic_delta_type_of_another_json_type_is_tolerated() -> None:
    assemble = ADAPTERS["anthropic-messages"].assemble_stream
    assert assemble is not None
    text = (FIXTURES / "anthropic-messages/stream-text.sse").read_text()
    for hostile in ('["text_delta"]', '{"t":1}'):
        data = text.replace('"type":"text_delta"', f'"type":{hostile}').encode()
        assert assemble([data]).response.kind in ("text", "empty", "unsupported")


def test_inspect_and_diff_refuse_deep_json_with_exit_2(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    inspected = run_cli("inspect", "--provider", "openai-chat", str(deep))
    assert inspected.returncode == 2 and "nested deeper" in inspected.stderr and "Traceback" not in inspected.stderr
    diffed = run_cli("diff", str(deep), str(deep))
    assert diffed.returncode == 2 and "Traceback" not in diffed.stderr


# ---- 4. Case files that would exhaust memory or hang -----------------------------------------------------------

def _case_yaml(cases: Path) -> Path:
    return cases / "normal/case.yaml"


def _validate(cases: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("validate", "--cases", str(cases))


def test_billion_laughs_yaml_is_refused(cases: Path) -> None:
    laughs = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    laughs += [f"a{n}: &a{n} [" + ",".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 9)]
    _case_yaml(cases).write_text("\n".join(laughs) + "\n")
    completed = _validate(cases)
    assert completed.returncode == 2 and "expands to more than" in completed.stderr
    assert "normal/case.yaml:" in completed.stderr


@pytest.mark.parametrize(("text", "message"), [
    ("a: &x [*x]\n", "self-referencing alias"),
    ("a: " + "[" * 998 + "]" * 998 + "\n", "nested more than"),
])
def test_self_reference_and_deep_nesting_are_refused(cases: Path, text: str, message: str) -> None:
    _case_yaml(cases).write_text(text)
    completed = _validate(cases)
    assert completed.returncode == 2 and message in completed.stderr and "Traceback" not in completed.stderr


@pytest.mark.parametrize("kind", ["device", "fifo", "folder"])
def test_a_case_file_that_is_not_a_regular_file_is_refused(cases: Path, kind: str) -> None:
    target = _case_yaml(cases)
    target.unlink()
    if kind == "device":
        target.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    completed = _validate(cases)
    assert completed.returncode == 2 and "not a regular file" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_inspect_of_a_device_is_refused() -> None:
    completed = run_cli("inspect", "--provider", "openai-chat", "/dev/zero")
    assert completed.returncode == 2 and "not a regular file" in completed.stderr


def test_a_nul_byte_in_a_fixture_path_is_refused(cases: Path) -> None:
    path = _case_yaml(cases)
    path.write_text(path.read_text().replace("  openai-chat: {}", '  openai-chat:\n    turns:\n'
                                                                   '      - body: "openai-chat/turn1\\0.json"', 1))
    completed = _validate(cases)
    assert completed.returncode == 2 and "NUL byte" in completed.stderr


def test_a_deeply_nested_json_fixture_is_refused(cases: Path) -> None:
    (cases / "normal/openai-chat/turn1.json").write_text("[" * 200_000 + "]" * 200_000)
    completed = _validate(cases)
    assert completed.returncode == 2 and "nested deeper" in completed.stderr and "line None" not in completed.stderr


# ---- 5. Linear line assembly -----------------------------------------------------------------------------------

def test_a_long_line_in_small_chunks_is_assembled_in_linear_time() -> None:
    # 4 MB in 64-byte chunks: joining the unfinished line to every chunk copies ~130 GB (hours); linear
    # assembly copies it once. The subprocess bound only guards against the quadratic path hanging the suite.
    script = ("from conformance.kit.sse import iter_lines\n"
              "data = b'data: ' + b'x' * 4_000_000 + b'\\n\\n'\n"
              "lines = list(iter_lines(data[i:i + 64] for i in range(0, len(data), 64)))\n"
              "assert len(lines[0]) == 4_000_006, len(lines[0])\n")
    completed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=120, capture_output=True,
                               text=True, check=False)
    assert completed.returncode == 0, completed.stderr


def test_line_assembly_keeps_a_crlf_split_across_chunks() -> None:
    chunks = [b"data: a", b"b\r", b"\ndata: c\r", b"\r\n"]
    assert list(iter_lines(chunks)) == [b"data: ab", b"data: c", b""]


# ---- 6. The gate never misses a failing row --------------------------------------------------------------------

def _report(tmp_path: Path) -> dict[str, Any]:
    completed = run_cli("run", *OWN, "--provider", "openai-chat", "--report-dir", str(tmp_path / "base"))
    assert completed.returncode == 0, completed.stderr
    return json.loads((tmp_path / "base/report.json").read_text())


def test_diff_refuses_duplicate_rows_other_versions_and_malformed_rows(tmp_path: Path) -> None:
    report = _report(tmp_path)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(report))
    failing = {**report["results"][0], "passed": False, "failures": ["outcome: broken"]}
    variants = {
        "duplicate": {**report, "results": [*report["results"], failing]},
        "version": {**report, "schema_version": 99},
        "malformed": {**report, "results": [{k: v for k, v in report["results"][0].items() if k != "passed"}]},
    }
    for name, document in variants.items():
        new = tmp_path / f"{name}.json"
        new.write_text(json.dumps(document))
        completed = run_cli("diff", str(old), str(new))
        assert completed.returncode == 2, (name, completed.stdout, completed.stderr)
        assert "Traceback" not in completed.stderr


# ---- 7. Free-text verification ---------------------------------------------------------------------------------

WORLD = World.from_document(load_yaml(CASES / "world.yaml", "world.yaml")[0])
SHIPPED = [{"order_id": "ORD-1001", "status": "shipped"}]


@pytest.mark.parametrize(("text", "verified"), [
    ("Order ORD-1001 has shipped.", True),
    ("No worries, ORD-1001 has shipped and is on its way.", True),
    ("Good news: ORD-1001 shipped, not delivered yet.", True),
    ("ORD-1001 has NOT shipped.", False),
    ("ORD-1001 hasn't shipped yet.", False),
    ("ORD-1001 is yet to be shipped.", False),
    ("ORD-1001 was never shipped.", False),
    ("ORD-1001 shipped, or maybe it is cancelled.", False),
    ("ORD-1001 is processing; ORD-1002 has shipped.", False),
    ("ORD-10011 has shipped.", False),
    ("Order ORD-1001 is unshipped.", False),
])
def test_free_text_verification_rejects_negated_and_contradicted_claims(text: str, verified: bool) -> None:
    from conformance.engine.evidence import verify_text

    problems = verify_text(text, None, False, SHIPPED, (), WORLD, ["get_order"])
    assert (problems == []) is verified, problems


def test_structured_answers_are_still_compared_exactly() -> None:
    from conformance.engine.evidence import verify_text

    parsed = {"order_id": "ORD-1001", "status": "shipped"}
    assert verify_text("", parsed, True, SHIPPED, (), WORLD, ["get_order"]) == []
    assert verify_text("", {**parsed, "status": "delivered"}, True, SHIPPED, (), WORLD, ["get_order"])


# ---- 8, 9. Case schemas, ids and provider keys ------------------------------------------------------------------

@pytest.mark.parametrize(("schema", "message"), [
    ("{type: banana}", "output_schema is not a valid JSON Schema"),
    ("{type: string, pattern: '('}", "is not a 'regex'"),
    ("{$ref: '#/$defs/missing'}", "points at nothing"),
])
def test_an_invalid_output_schema_is_a_case_error(cases: Path, schema: str, message: str) -> None:
    path = cases / "structured_output_valid/case.yaml"
    lines = path.read_text().splitlines()
    start = next(index for index, line in enumerate(lines) if line.strip().startswith("output_schema:"))
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(index for index in range(start + 1, len(lines))
               if lines[index].strip() and len(lines[index]) - len(lines[index].lstrip()) <= indent)
    lines[start:end] = [" " * indent + f"output_schema: {schema}"]
    path.write_text("\n".join(lines) + "\n")
    completed = _validate(cases)
    assert completed.returncode == 2 and message in completed.stderr
    assert f"structured_output_valid/case.yaml:{start + 1}:" in completed.stderr


def test_a_case_id_with_a_trailing_newline_is_refused(cases: Path) -> None:
    path = _case_yaml(cases)
    path.write_text(path.read_text().replace("id: normal\n", 'id: "normal\\n"\n', 1))
    completed = _validate(cases)
    assert completed.returncode == 2 and "/id" in completed.stderr


def test_a_provider_key_typo_is_refused_with_the_near_miss(cases: Path) -> None:
    path = _case_yaml(cases)
    path.write_text(path.read_text().replace("\n  gemini:", "\n  gemnii:", 1))
    completed = _validate(cases)
    assert completed.returncode == 2
    assert "unknown provider 'gemnii'" in completed.stderr and "did you mean 'gemini'?" in completed.stderr


# ---- 10. inspect ------------------------------------------------------------------------------------------------

def test_inspect_of_a_cut_json_body_says_not_json(tmp_path: Path) -> None:
    body = (FIXTURES / "openai-chat/body-text.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(body[: len(body) // 2])
    completed = run_cli("inspect", "--provider", "bedrock-converse", str(cut))
    assert completed.returncode == 2 and "not JSON" in completed.stderr


@pytest.mark.parametrize("status", ["99", "600", "-1"])
def test_inspect_refuses_a_status_outside_http(status: str) -> None:
    assert main(["inspect", "--provider", "openai-chat", "--status", status,
                 str(FIXTURES / "openai-chat/error-500.json")]) == 2


# ---- 11. Terminal escapes --------------------------------------------------------------------------------------

def test_control_sequences_from_a_fixture_never_reach_the_terminal(cases: Path, tmp_path: Path) -> None:
    fixture = cases / "truncation/openai-chat/turn1.json"
    _edit_json(fixture, lambda body: body["choices"][0].update(finish_reason="\x1b[2J\x1b]0;pwned\x07\rlength\x9b"))
    completed = subprocess.run([sys.executable, "-m", "conformance", "run", "--cases", str(cases), "--report-dir",
                                str(tmp_path / "r")], capture_output=True, cwd=ROOT, timeout=120, check=False)
    for stream in (completed.stdout, completed.stderr):
        text = stream.decode("utf-8")
        assert not any(character in text for character in "\x1b\x07\r\x9b")
    inspected = subprocess.run([sys.executable, "-m", "conformance", "inspect", "--provider", "openai-chat",
                                str(fixture)], capture_output=True, cwd=ROOT, timeout=60, check=False)
    assert not any(character in inspected.stdout.decode("utf-8") for character in "\x1b\x07\r\x9b")


# ---- 12. Markdown ----------------------------------------------------------------------------------------------

HOSTILE_MARKDOWN = ("x` [link](https://evil.example/a) ![img](https://evil.example/i.png) @octocat "
                    "<b>bold</b> <img src=x> www.evil.example a@evil.example *em* | cell\r# heading\nrow")


def _rendered(markdown: str) -> str:
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("gfm-like")
    renderer.linkify.set({"fuzzy_link": False})  # GitHub links www. and scheme URLs, not bare domains
    return str(renderer.render(markdown))


def _assert_inert(markdown: str) -> None:
    import re

    html = _rendered(markdown)
    assert "<a " not in html and "<img" not in html and "heading</h" not in html
    tags = set(re.findall(r"</?([a-z0-9]+)", html))
    assert tags <= {"h1", "h2", "p", "table", "thead", "tbody", "tr", "th", "td", "strong", "em", "ul", "li", "br",
                    "code"}
    assert not any("evil" in span for span in re.findall(r"<code>(.*?)</code>", html, re.DOTALL))
    # GitHub autolinks and mentions work on the source text: none of their triggers may survive.
    assert "://" not in markdown.replace("](", "") and "www." not in markdown
    assert not re.search(r"\w@|@\w", markdown)


def test_report_markdown_keeps_hostile_fixture_text_inert(cases: Path, tmp_path: Path) -> None:
    fixture = cases / "truncation/openai-chat/turn1.json"
    _edit_json(fixture, lambda body: body["choices"][0].update(finish_reason=HOSTILE_MARKDOWN))
    run_cli("run", "--cases", str(cases), "--report-dir", str(tmp_path / "r"))
    markdown = (tmp_path / "r/report.md").read_text()
    assert "evil" in markdown
    _assert_inert(markdown)


def test_diff_markdown_keeps_hostile_report_text_inert(tmp_path: Path) -> None:
    report = _report(tmp_path)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(report))
    row = report["results"][0]
    row.update(passed=False, failures=[HOSTILE_MARKDOWN], outcome=HOSTILE_MARKDOWN)
    row["turns"][0]["raw"] = HOSTILE_MARKDOWN
    row["turns"][0][HOSTILE_MARKDOWN] = 1  # a DeepDiff path that holds the hostile text
    new = tmp_path / "new.json"
    new.write_text(json.dumps(report))
    completed = run_cli("diff", str(old), str(new), "--output", str(tmp_path / "diff.md"))
    assert completed.returncode == 1
    markdown = (tmp_path / "diff.md").read_text()
    assert "evil" in markdown
    _assert_inert(markdown)


# ---- 13. No code from the working directory ----------------------------------------------------------------------

def test_commands_never_import_code_from_the_working_directory(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    for package in ("providers", "conformance_extra"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('{package}')\n")
    script = Path(sys.executable).parent / "conformance"
    completed = run_cli("list", cwd=tmp_path, command=[str(script)])
    assert completed.returncode == 0, completed.stderr
    run_cli("validate", cwd=tmp_path, command=[str(script)])
    assert not marker.exists(), marker.read_text()


def test_an_adapter_can_be_named_by_its_file(tmp_path: Path) -> None:
    adapter = tmp_path / "my_adapter.py"
    adapter.write_text("import dataclasses\nfrom conformance.providers.openai_chat import ADAPTER as CHAT\n"
                       "ADAPTER = dataclasses.replace(CHAT, id='openai-chat')\n")
    completed = run_cli("run", *OWN, "--adapter", f"{adapter}:ADAPTER", "--provider", "openai-chat", "--report-dir",
                        str(tmp_path / "r"), cwd=tmp_path, command=[str(Path(sys.executable).parent / "conformance")])
    assert completed.returncode == 0, completed.stderr


# ---- 15. A stopped pytest session keeps the previous reports -------------------------------------------------------

def _pytest(cases: Path, report: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conformance.pytest_plugin",
                           "-p", "no:cacheprovider", str(cases), f"--conformance-report={report}",
                           "--conformance-cases", str(cases), "-o", "conformance_snapshots=false",
                           "--rootdir", str(cases.parent), *extra],
                          capture_output=True, text=True, cwd=cases.parent, timeout=300, check=False)


# ---- 16, 17. The report set: one unit, one writer, clear environment errors ------------------------------------

def _texts(label: str) -> dict[str, str]:
    return {name: f"{label} {name}\n" for name in ("report.json", "report.md", "report.html")}


def test_the_three_reports_always_come_from_one_set(tmp_path: Path) -> None:
    from conformance.report.files import write_reports

    folder = tmp_path / "reports"
    write_reports(_texts("first"), folder)
    write_reports(_texts("second"), folder)
    assert {name: (folder / name).read_text() for name in _texts("")} == _texts("second")
    targets = {os.path.realpath(folder / name).rsplit("/", 1)[0] for name in _texts("")}
    assert len(targets) == 1  # all three resolve into one set folder
    assert len(list((folder / ".sets").iterdir())) == 1  # older sets removed


def test_a_write_that_fails_before_the_swap_leaves_the_old_set(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.report import files as reportfiles

    folder = tmp_path / "reports"
    reportfiles.write_reports(_texts("old"), folder)

    def full_disk(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(reportfiles, "_write_file", full_disk)
    with pytest.raises(InputError, match="No space left on device"):
        reportfiles.write_reports(_texts("new"), folder)
    assert {name: (folder / name).read_text() for name in _texts("")} == _texts("old")
    assert len(list((folder / ".sets").iterdir())) == 1


def test_a_report_written_in_pieces_is_whole_or_not_there(tmp_path: Path) -> None:
    """report.json and report.html are written piece by piece as they are rendered: the pieces make the file, and a
    rendering that fails half-way (the error raised to the caller) leaves the previous set, with no part of the
    new one left behind."""
    from conformance.report import files as reportfiles

    folder = tmp_path / "reports"
    reportfiles.write_reports({**_texts("old"), "report.json": iter(["{", '"é": 1', "}\n"])}, folder)
    assert (folder / "report.json").read_bytes() == '{"é": 1}\n'.encode()

    def broken() -> Iterator[str]:
        yield "half a report"
        raise ValueError("cannot render")

    with pytest.raises(ValueError, match="cannot render"):
        reportfiles.write_reports({**_texts("new"), "report.html": broken()}, folder)
    assert (folder / "report.md").read_text() == "old report.md\n"
    assert (folder / "report.json").read_bytes() == '{"é": 1}\n'.encode()
    assert len(list((folder / ".sets").iterdir())) == 1


def test_a_second_writer_is_refused_while_the_first_holds_the_folder(tmp_path: Path) -> None:
    from filelock import FileLock

    from conformance.report.files import LOCK, write_reports

    folder = tmp_path / "reports"
    write_reports(_texts("first"), folder)
    with FileLock(str(folder / LOCK)), pytest.raises(InputError, match="another run is writing"):
        write_reports(_texts("second"), folder)
    assert (folder / "report.md").read_text() == "first report.md\n"


def test_sigterm_during_a_run_keeps_the_previous_reports_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    from conformance.report.files import write_reports

    write_reports(_texts("previous"), reports)
    before = sorted(path.name for path in reports.rglob("*"))
    process = subprocess.Popen(
        [sys.executable, "-m", "conformance", "run", "--report-dir", str(reports),
         "--adapter", "tests.slow_adapter:ADAPTER", "--provider", "openai-chat"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "SLOW_ADAPTER_STARTED": str(tmp_path / "started")})
    wait_until_started(tmp_path / "started")
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143 and "Traceback" not in stderr
    assert {name: (reports / name).read_text() for name in _texts("")} == _texts("previous")
    assert sorted(path.name for path in reports.rglob("*")) == before


@pytest.mark.parametrize("blocker", ["file", "inside-a-file"])
def test_an_unwritable_report_folder_exits_2_with_a_message(tmp_path: Path, blocker: str) -> None:
    (tmp_path / "taken").write_text("not a folder")
    target = tmp_path / "taken" if blocker == "file" else tmp_path / "taken" / "reports"
    completed = run_cli("run", *OWN, "--provider", "openai-chat", "--report-dir", str(target))
    assert completed.returncode == 2 and "cannot write the reports" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_an_unwritable_step_summary_warns_and_keeps_the_verdict(tmp_path: Path) -> None:
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path)}  # a folder: cannot be appended to
    completed = run_cli("run", *OWN, "--provider", "openai-chat", "--report-dir", str(tmp_path / "r"), env=env)
    assert completed.returncode == 0, completed.stderr
    assert "warning: GITHUB_STEP_SUMMARY" in completed.stderr and "Traceback" not in completed.stderr


# ---- 19. YAML details --------------------------------------------------------------------------------------------

def _yaml(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "doc.yaml"
    path.write_bytes(text.encode("utf-8"))
    return load_yaml(path, "doc.yaml")[0]


def test_a_merge_key_override_is_not_a_duplicate(tmp_path: Path) -> None:
    assert _yaml(tmp_path, "base: &b {x: 1, y: 2}\nk:\n  <<: *b\n  y: 3\n")["k"] == {"x": 1, "y": 3}


@pytest.mark.parametrize("text", ["0x1: a\n1: b\n", "yes: a\ntrue: b\n", "1.0: a\n1: b\n"])
def test_keys_equal_as_values_are_duplicates(tmp_path: Path, text: str) -> None:
    with pytest.raises(InputError, match="duplicate key"):
        _yaml(tmp_path, text)


def test_a_control_character_is_one_line_with_its_line_number(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        _yaml(tmp_path, "a: 1\nb: \x07\n")
    message = str(caught.value)
    assert message.startswith("doc.yaml:2: ") and "\n" not in message and "U+0007" in message


def test_the_bundled_cases_still_load(cases: Path) -> None:
    assert len(load_cases([cases])) == len(load_cases([CASES])) > 30


# ---- 20. Found by the structure-aware fuzzer ---------------------------------------------------------------------

def test_an_sse_retry_field_of_thousands_of_digits_is_ignored() -> None:
    from conformance.kit.sse import iter_events

    events = list(iter_events([b"retry: " + b"9" * 5000 + b"\ndata: {}\n\n"]))
    assert [(event.data, event.retry) for event in events] == [("{}", None)]
