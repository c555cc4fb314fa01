"""A new user's journey, end to end (docs/glue.md, docs/ci.md): a support agent's repository on the ``openai`` and
``anthropic`` SDKs, its own request building, response reading and tool loop, with three bugs planted —
Anthropic ``max_tokens`` read as a final answer, a loop that sends the tool's name as the result id, and a
``complete()`` that never streams. ``conformance init``, the documented glue, the bundled task set through it,
then the fixes one by one, then a pull request that touches only the application's package.

Stages, each a ``pytest`` run in the repository as the team runs it:

1. ``planted``: the three bugs, no waivers. Each bug is a named red item (the loop's in the lane of the team's
   own loop, ``openai-chat@acme-loop``).
2. ``waived``: the documented waivers added, ``max_tokens`` and the loop fixed. The not-applicable rows are
   waived; the stream rows still fail, because the code does not stream.
3. ``streaming``: ``complete()`` streams when asked. Its stream rows pass.
4. The repository committed on ``main``; a pull request changes only the application's package
   (``support_agent/``) back to the planted max_tokens reading and result id. The workflow ``init`` wrote finds the
   change relevant, and its gate fails on those rows.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.installed import run, shared_wheel

# End-to-end: it starts processes, builds wheels, runs gates or a browser (pytest -m "not e2e" skips it).
pytestmark = pytest.mark.e2e

pytest.importorskip("openai")
pytest.importorskip("anthropic")

ROOT = Path(__file__).parent.parent.parent
DOC = (ROOT / "docs/glue.md").read_text(encoding="utf-8")
BLOCKS = dict(re.findall(r"```python\n# (\S+\.py)\n(.*?)```", DOC, re.S))
WAIVERS = re.search(r"```python\n(from conformance.kit import Waiver\n.*?)```", DOC, re.S)

# What the application adds to the documented modules: one way to send a request, whichever SDK.
NEVER_STREAMS = '''

def complete(client, params, stream=False):
    """Send one request (streaming is not wired in yet: the flag is ignored)."""
    return client.{create}(**params)
'''
STREAMS = {
    "openai": '''

def complete(client, params, stream=False):
    """Send one request; with ``stream``, stream it and gather the completion as the SDK does."""
    if not stream:
        return client.chat.completions.create(**params)
    with client.chat.completions.stream(**params, stream_options={"include_usage": True}) as events:
        return events.get_final_completion()
''',
    "anthropic": '''

def complete(client, params, stream=False):
    """Send one request; with ``stream``, stream it and gather the message as the SDK does."""
    if not stream:
        return client.messages.create(**params)
    with client.messages.stream(**params) as events:
        return events.get_final_message()
''',
}
CREATE = {"openai": "chat.completions.create", "anthropic": "messages.create"}

# The application's own loop on the openai SDK (planted bug: the tool's name sent as the result id).
AGENT = '''"""The support agent's tool loop: ask, run the tools the model calls, send their results back."""

import importlib.machinery
import importlib.util
import json

from support_agent import openai_llm


def answer(client, model, system, question, tools, run_tool, max_tokens, max_steps=5):
    history = [{"role": "user", "content": question}]
    for _ in range(max_steps):
        request = openai_llm.build_request(system, history, tools, max_tokens, model)
        step = openai_llm.parse_response(openai_llm.complete(client, request))
        if step.kind != "tools":
            return step.text or ""
        history.append(step.message)
        for call_id, name, arguments in step.tool_calls:
            output = run_tool(name, json.loads(arguments))
            history.append({"role": "tool", "tool_call_id": RESULT_ID, "content": json.dumps(output)})
    return ""
'''
# The team's loop as a lane of the report, through the suite's replay of the cases (docs/glue.md, "Your own loop").
AGENT_STACK = '''import openai

from conformance.stacks.agent import agent_stack
from support_agent import agent


def support_agent(session):
    client = openai.OpenAI(base_url=f"{session.base_url}/v1", api_key="sk-test", max_retries=0)
    task = session.task
    tools = [{"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
             for tool in task.tools]
    return agent.answer(client, task.model, task.instructions, task.input, tools,
                        lambda name, arguments: session.tools[name](**arguments), task.max_output_tokens)


STACK = agent_stack("acme-loop", "openai-chat", support_agent, requires=("openai",),
                    cases=("normal", "parallel_tool_calls", "multi_turn_history"))
'''
GLUE = {"openai": "conformance_stack.py", "anthropic": "conformance_stack_anthropic.py"}
APP = {"openai": "support_agent/openai_llm.py", "anthropic": "support_agent/anthropic_llm.py"}
STACKS = ('conformance_stacks = ["conformance_stack:STACK", "conformance_stack_anthropic:STACK", '
          '"conformance_agent:STACK"]\n'
          'conformance_bundled = "conformance_bundled"\n')


def git(repo: Path, *arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=repo, check=True, capture_output=True, text=True).stdout


def glue(sdk: str, waived: bool) -> str:
    """The documented glue, with the team's two choices: its ``complete()`` sends the request (so that the stream
    rows see whether it streams, the stack does not say ``streams=False``), and, once reviewed, the documented
    waivers."""
    assert WAIVERS is not None
    module = APP[sdk].split("/")[1].removesuffix(".py")
    text = BLOCKS[GLUE[sdk]].replace(f"client.{CREATE[sdk]}(**params)", f"{module}.complete(client, params, "
                                                                        "endpoint.stream)")
    body, stack = text.split("\nSTACK = ")
    if waived:
        body += "\n" + WAIVERS[1].split("\nSTACK = ")[0] + "\n"
    return body + "\nSTACK = " + stack.replace(", streams=False)", ", waivers=WAIVERS)" if waived else ")")


def app_module(sdk: str, *, max_tokens_bug: bool = False, streams: bool = False) -> str:
    text = BLOCKS[APP[sdk]]
    if max_tokens_bug:
        assert '"max_tokens": "truncated"' in text
        text = text.replace('"max_tokens": "truncated"', '"max_tokens": "final"')
    return text + (STREAMS[sdk] if streams else NEVER_STREAMS.format(create=CREATE[sdk]))


def write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")


def stage(repo: Path, *, planted: bool, waived: bool, streams: bool) -> None:
    write(repo, {
        APP["openai"]: app_module("openai", streams=streams),
        APP["anthropic"]: app_module("anthropic", max_tokens_bug=planted, streams=streams),
        "support_agent/agent.py": AGENT.replace("RESULT_ID", "name" if planted else "call_id"),
        **{GLUE[sdk]: glue(sdk, waived) for sdk in GLUE},
    })


def run_pytest(repo: Path, bin_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    """The team's ``pytest`` (snapshots written, then reviewed in the pull request), its report and output."""
    completed = run(str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                    "--snapshot-update", "-rfE", cwd=repo, env=env, timeout=900)
    report = json.loads((repo / "reports/report.json").read_text())
    return {"code": completed.returncode, "out": completed.stdout + completed.stderr, "report": report,
            "rows": {(row["case"], row["provider"], row["mode"]): row for row in report["results"]}}


def _gate_script() -> Any:
    """scripts/run-gate-locally as a module: its workflow runner and loopback GitHub stand-in."""
    loader = importlib.machinery.SourceFileLoader("run_gate_locally", str(ROOT / "scripts/run-gate-locally"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The repository through the stages; each stage's pytest run, the init output, the gate's run."""
    base = tmp_path_factory.mktemp("journey")
    bin_dir, env = shared_wheel(tmp_path_factory)
    repo = base / "support-agent"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.invalid")
    git(repo, "config", "user.name", "CI")
    init = run(str(bin_dir / "conformance"), "init", cwd=repo, env=env)
    assert init.returncode == 0, init.stderr
    # The team's configuration: its two stacks, and the bundled task set through them (docs/glue.md, docs/cli.md).
    (repo / "pyproject.toml").write_text((repo / "pyproject.toml").read_text() + STACKS)
    write(repo, {"support_agent/__init__.py": '"""The support agent."""\n', "conformance_agent.py": AGENT_STACK})
    stages = {}
    for name, flags in (("planted", {"planted": True, "waived": False, "streams": False}),
                        ("waived", {"planted": False, "waived": True, "streams": False}),
                        ("streaming", {"planted": False, "waived": True, "streams": True})):
        stage(repo, **flags)
        stages[name] = run_pytest(repo, bin_dir, env)
    # The reviewed state goes to main; a pull request brings the max_tokens reading back, in the app's package only.
    (repo / ".gitignore").write_text("reports/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the support agent with its conformance glue")
    git(repo, "update-ref", "refs/remotes/origin/main", "main")
    git(repo, "checkout", "-q", "-b", "app-change")
    (repo / APP["anthropic"]).write_text(app_module("anthropic", max_tokens_bug=True, streams=True))
    (repo / "support_agent/agent.py").write_text(AGENT.replace("RESULT_ID", "name"))
    git(repo, "commit", "-q", "-am", "read every stop as an answer; key tool results by tool name")
    script = _gate_script()
    with script.FakeGitHub() as github:
        gate = script.run_workflow(repo, bin_dir / "python", "app-change", "main", 21, github, base)
    return {"init": init.stdout, "stages": stages, "gate": gate, "repo": repo, "bundled": _bundled(bin_dir, env)}


def _bundled(bin_dir: Path, env: dict[str, str]) -> Path:
    located = run(str(bin_dir / "python"), "-c", "import conformance; print(conformance.BUNDLED_CASES)",
                  cwd=bin_dir, env=env)
    return Path(located.stdout.strip())


def failures(result: dict[str, Any], case: str, lane: str, mode: str) -> list[str]:
    row = result["rows"][(case, lane, mode)]
    return list(row["failures"])


def test_the_documented_glue_is_what_the_team_writes() -> None:
    for sdk in GLUE:
        lines = [line for line in glue(sdk, waived=True).splitlines() if line.strip() and not line.startswith("#")]
        documented = [line for line in BLOCKS[GLUE[sdk]].splitlines() if line.strip() and not line.startswith("#")]
        assert len(documented) <= 25
        # Its two choices: the app's complete() sends the request (the same line), and the documented waivers.
        assert WAIVERS is not None
        waivers = [line for line in WAIVERS[1].split("\nSTACK = ")[0].splitlines() if line.strip()]
        assert len(lines) - len(documented) == len(waivers) == 7


def test_each_planted_bug_is_a_named_red_item(journey: dict[str, Any]) -> None:
    planted = journey["stages"]["planted"]
    assert planted["code"] == 1
    # The max_tokens reading: the truncation row of the Anthropic stack, with the vendor's value that explains it.
    assert failures(planted, "truncation", "anthropic-messages@acme", "body")[0].endswith(
        "turn 1, read as text, had stop_reason=max_tokens")
    assert "FAILED truncation/case.yaml::truncation[anthropic-messages@acme-body]" in planted["out"]
    # The loop's result id: the team's loop, a lane of its own, with the correlation failure named.
    assert "FAILED normal/case.yaml::normal[openai-chat@acme-loop-body]" in planted["out"]
    assert "correlation: turn 2: tool result get_order answers no call of turn 1" in failures(
        planted, "normal", "openai-chat@acme-loop", "body")
    # No streaming: every stream row of both stacks fails, saying so.
    for lane in ("openai-chat@acme", "anthropic-messages@acme"):
        stream_rows = [row for (case, row_lane, mode), row in planted["rows"].items()
                       if row_lane == lane and mode == "stream"]
        assert len(stream_rows) >= 20 and not any(row["passed"] for row in stream_rows)
        assert all(row["failures"][0].startswith("your code did not stream") for row in stream_rows)
    # The reference adapters beside them are green on the same bundled cases.
    assert all(row["passed"] for (_, lane, _), row in planted["rows"].items() if lane == "anthropic-messages")


def test_the_bundled_set_runs_through_the_teams_code_with_its_snapshots_in_its_repository(
        journey: dict[str, Any]) -> None:
    planted = journey["stages"]["planted"]
    lanes = {lane for (_, lane, _) in planted["rows"]}
    assert {"openai-chat@acme", "anthropic-messages@acme"} <= lanes
    cases = {case for (case, lane, _) in planted["rows"] if lane == "anthropic-messages@acme"}
    assert len(cases) == len(list(journey["bundled"].glob("*/case.yaml")))  # the bundled set (Anthropic has all)
    kept = journey["repo"] / "conformance_bundled/__snapshots__/normal"
    # A lane's modes and its recorded requests, for each model variant of its provider (the bundled normal case's
    # openai-chat~deepseek-v4, ...); the team's loop runs the provider's own fixtures only (docs/stacks.md).
    lanes_kept = ["anthropic-messages@acme", "anthropic-messages~redacted-thinking@acme", "openai-chat@acme-loop",
                  "openai-chat@acme", "openai-chat~deepseek-v4@acme", "openai-chat~openrouter@acme"]
    assert sorted(path.name for path in kept.glob("*@acme*")) == sorted(
        f"{lane}{suffix}" for lane in lanes_kept for suffix in (".json", ".requests.json"))
    assert not (journey["bundled"] / "__snapshots__").exists() or not list(
        (journey["bundled"] / "__snapshots__").rglob("*@acme*"))  # never written beside the installed cases


def test_waivers_turn_the_not_applicable_rows_waived_and_the_real_gaps_stay_red(journey: dict[str, Any]) -> None:
    waived = journey["stages"]["waived"]
    summary = waived["report"]["summary"]
    statuses = {key: ("waived" if row.get("waived") and not row["failures"] else
                      "passed" if row["passed"] else "failed")
                for key, row in waived["rows"].items() if key[1].endswith("@acme") and key[2] == "body"}
    assert summary["waived"] == sum(1 for row in waived["rows"].values()
                                   if row.get("waived") and not row["failures"])
    assert sorted(case for (case, _, _), status in statuses.items() if status == "waived") == sorted([
        *(f"{case}" for case in ("forced_tool_choice", "http_auth", "http_context_too_long", "http_overloaded",
                                 "http_quota", "http_rate_limit", "structured_output_contradiction",
                                 "structured_output_schema_invalid", "structured_output_valid")
          for _ in range(2)), "context_window"])
    assert sorted((case, lane) for (case, lane, _), status in statuses.items() if status == "failed") == [
        ("content_filter", "openai-chat@acme"), ("context_window", "anthropic-messages@acme"),
        ("pause_turn", "anthropic-messages@acme"), ("unsupported_item", "anthropic-messages@acme")]
    # The fixed bugs are green: the truncation row and the team's loop.
    assert waived["rows"][("truncation", "anthropic-messages@acme", "body")]["passed"]
    assert all(waived["rows"][(case, "openai-chat@acme-loop", "body")]["passed"]
               for case in ("normal", "parallel_tool_calls", "multi_turn_history"))
    # A waived row is a skip with its reason in pytest, never a pass; the stream rows still fail: no streaming yet.
    assert "the agent offers no structured output" in waived["out"]
    assert not waived["rows"][("normal", "openai-chat@acme", "stream")]["passed"]


def test_the_stream_rows_pass_once_the_code_streams(journey: dict[str, Any]) -> None:
    streaming = journey["stages"]["streaming"]
    for lane in ("openai-chat@acme", "anthropic-messages@acme"):
        for case in ("normal", "parallel_tool_calls", "multi_turn_history", "cached_usage", "refusal"):
            row = streaming["rows"][(case, lane, "stream")]
            assert row["passed"], (case, lane, row["failures"])
        assert not any("did not stream" in failure for (_, row_lane, _), row in streaming["rows"].items()
                       if row_lane == lane for failure in row["failures"])
    # What streaming shows of the openai SDK's own stream helper: it raises on a cut or filtered answer
    # (docs/glue.md), where the body call returns it.
    assert "raised LengthFinishReasonError" in failures(streaming, "truncation", "openai-chat@acme", "stream")[0]
    assert streaming["rows"][("truncation", "openai-chat@acme", "body")]["passed"]


def test_a_change_in_the_apps_package_alone_runs_the_workflow_and_the_gate_fails_on_the_row(
        journey: dict[str, Any]) -> None:
    gate = journey["gate"]
    assert gate["changed"] == ["support_agent/agent.py", "support_agent/anthropic_llm.py"]
    assert gate["relevant"] and gate["result"] == "failure", gate["steps"]
    failed = [step["name"] for step in gate["steps"] if step["outcome"] == "failure"]
    assert failed == ["Upgrade gate (base and head reports, their diff)"]
    summary = gate["summary"].replace("\u2060", "")  # the word joiners that keep "@acme" from being a mention
    for mode in ("body", "stream"):
        assert f"| ❌ regression | truncation | anthropic-messages@acme | {mode} | new finding" in summary
    (loop,) = [line for line in summary.splitlines()
               if line.startswith("| ❌ regression | normal | openai-chat@acme-loop | body | ")]
    # the loop's broken request is a finding of the loop (the vendor would refuse it) and a failure of its row
    assert "new finding, not accepted: turn 2 request.tool-message-after-tool-calls" in loop
    assert "passed → failed: correlation: turn 2: tool result get\\_order answers no call of turn 1" in loop
    assert "turn 1 kind incomplete → text (stop\\_reason=max\\_tokens)" in summary
