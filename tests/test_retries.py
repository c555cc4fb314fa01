"""The retry lane (docs/retries.md): scripted answers over loopback, each client at its library's default retry
policy, the waits recorded and never slept. The SDK stacks' lines of the docs' table are asserted here, the
gateways' in tests/e2e/test_gateways.py."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.kit.task import Task
from conformance.kit.types import ModelResponse, RetryableError
from conformance.report.build import retry_cell
from conformance.report.diff import retry_changes
from conformance.session import Run
from conformance.stacks import retries
from conformance.stacks.stack import Endpoint, Stack
from tests.helpers import CASES, cli

DOC = (Path(__file__).parent.parent / "docs/retries.md").read_text(encoding="utf-8")
CASE_LIST = load_cases([CASES])


def doc_table() -> dict[str, dict[str, str]]:
    """docs/retries.md's table: lane → script → cell text."""
    table = re.search(r"^\| lane \|.*?\n\|---.*?\n((?:\|.*\n)+)", DOC, re.M)
    assert table is not None
    scripts = [cell.strip(" `") for cell in table[0].splitlines()[0].strip("|").split("|")[1:]]
    rows = {}
    for line in table[1].splitlines():
        lane, *cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[lane.strip("`")] = dict(zip(scripts, cells, strict=True))
    return rows


def lanes_of(section: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {lane: {script: retry_cell(cell) for script, cell in cells.items()}
            for lane, cells in section["lanes"].items()}


@pytest.fixture(scope="module")
def sdk_section() -> dict[str, Any]:
    for module in ("openai", "anthropic", "google.genai", "boto3"):
        pytest.importorskip(module)
    run = Run.configure(stacks=["sdks"])
    return retries.run_lanes(run.stacks, run.adapters, CASE_LIST)


def test_every_sdk_line_of_the_docs_table_is_what_the_lane_measures(sdk_section: dict[str, Any]) -> None:
    measured, documented = lanes_of(sdk_section), doc_table()
    assert sorted(measured) == ["anthropic-messages@anthropic-sdk", "bedrock-converse@boto3", "gemini@google-genai",
                                "openai-chat@openai-sdk", "openai-responses@openai-sdk"]
    for lane, cells in measured.items():
        expected = {script: text for script, text in documented[lane].items() if text != "—"}
        assert cells == expected, lane


def test_the_waits_are_the_libraries_own_recorded_not_slept(sdk_section: dict[str, Any]) -> None:
    """The delay each SDK asked for is the vendor's, to the millisecond, and the lane took far less than it."""
    anthropic = sdk_section["lanes"]["anthropic-messages@anthropic-sdk"]["rate_limit"]
    assert anthropic["waits"] == [14.0] and anthropic["asked"] == 14.0 and anthropic["seconds"] < 14
    openai = sdk_section["lanes"]["openai-chat@openai-sdk"]["rate_limit"]
    assert openai["waits"] == [2.0] and openai["sent"] == 2 and openai["same_body"]
    dated = sdk_section["lanes"]["openai-chat@openai-sdk"]["rate_limit.date"]
    assert 2.0 <= dated["waits"][0] <= 3.0  # an HTTP date one second ahead of the delay: what is left of it
    assert sdk_section["lanes"]["gemini@google-genai"]["rate_limit"]["asked"] == 27.0  # RetryInfo.retryDelay
    assert "rate_limit.date" not in sdk_section["lanes"]["bedrock-converse@boto3"]  # Bedrock sends no Retry-After


def _stack(call: Any, stack_id: str) -> Stack:
    return Stack(id=stack_id, provider="openai-chat", call=call, requires=("openai",))


def _team_client(endpoint: Endpoint) -> Any:
    import openai

    return openai.OpenAI(base_url=endpoint.base_url + "/v1", api_key="sk-replay", max_retries=0)


def _chat(endpoint: Endpoint, task: Task) -> Any:
    return _team_client(endpoint).chat.completions.create(
        model=task.model, messages=[{"role": "user", "content": task.input}], stream=endpoint.stream)


def retries_everything(task: Task, transcript: Any, endpoint: Endpoint) -> ModelResponse:
    """A team's loop: any API error retried three times a second apart (tenacity, as many teams write it)."""
    import openai
    import tenacity

    @tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_fixed(1),
                    retry=tenacity.retry_if_exception_type(openai.APIError), reraise=True)
    def attempt() -> Any:
        return _chat(endpoint, task)

    try:
        attempt()
    except openai.APIStatusError as error:
        return RetryableError(raw=f"http={error.status_code}", reason="server_error", http_status=error.status_code)
    return _answered()


def _answered() -> ModelResponse:
    from conformance.kit.types import Text

    return Text(raw="answered", text="answered")


def ignores_the_delay(task: Task, transcript: Any, endpoint: Endpoint) -> ModelResponse:
    """A team's loop that retries a 429 after a fixed half second, whatever the vendor asked."""
    import openai

    for _ in range(3):
        try:
            _chat(endpoint, task)
            return _answered()
        except openai.RateLimitError:
            time.sleep(0.5)
        except openai.APIStatusError as error:
            return RetryableError(raw=f"http={error.status_code}", reason="server_error")
    return RetryableError(raw="gave up", reason="rate_limit")


def resends_a_broken_stream(task: Task, transcript: Any, endpoint: Endpoint) -> ModelResponse:
    """A team's loop that starts the turn again whenever its stream breaks."""
    import openai

    for _ in range(2):
        try:
            for _chunk in _chat(endpoint, task):
                pass
            return _answered()
        except openai.APIStatusError as error:
            return RetryableError(raw=f"http={error.status_code}", reason="server_error")
        except Exception:  # noqa: BLE001 - the team's loop: any broken stream, the turn again
            continue
    return RetryableError(raw="gave up", reason="interrupted")


@pytest.mark.parametrize(("call", "script", "why"), [
    (retries_everything, "quota", "the quota error retried: 2 requests, 1.0 s waited"),
    (retries_everything, "auth", "the auth error retried: 2 requests, 1.0 s waited"),
    (ignores_the_delay, "rate_limit", "retried after 0.50 s, sooner than the 2 s the vendor asked"),
    (resends_a_broken_stream, "reset.mid_stream", "the turn was sent 2 times: again after a part of its answer "
                                                   "arrived"),
])
def test_a_stack_that_retries_wrong_fails_its_script_by_name(call: Any, script: str, why: str) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("tenacity")
    run = Run.configure()
    stack = _stack(call, call.__name__.replace("_", "-"))
    started = time.monotonic()
    section = retries.run_lanes([stack], run.adapters, CASE_LIST)
    cell = section["lanes"][f"openai-chat@{stack.id}"][script]
    assert (cell["verdict"], cell["why"]) == ("wrong", why)
    assert time.monotonic() - started < 5  # the second and the half second were recorded, not slept


@pytest.mark.parametrize(("rule", "result", "verdict"), [
    ("retry_after", {"sent": 2, "waits": [1.9], "asked": 2.0, "kind": "text"}, "wrong"),
    ("retry_after", {"sent": 2, "waits": [2.0], "asked": 2.0, "kind": "text"}, "right"),
    ("retry_after", {"sent": 1, "waits": [], "asked": 2.0, "kind": "retryable_error"}, "right"),
    ("retry_after", {"sent": 1, "waits": [], "asked": 2.0, "kind": "fatal_error"}, "wrong"),
    ("retry_after", {"sent": 3, "waits": [2.0, 4.0], "asked": 2.0, "kind": "retryable_error"}, "wrong"),
    ("backoff", {"sent": 2, "waits": [0.0], "asked": None, "kind": "text"}, "wrong"),
    ("backoff", {"sent": 2, "waits": [0.4], "asked": None, "kind": "text"}, "right"),
    ("once", {"sent": 1, "waits": [], "asked": None, "kind": "fatal_error"}, "right"),
    ("once", {"sent": 1, "waits": [], "asked": None, "kind": "retryable_error"}, "wrong"),
    ("once", {"sent": 2, "waits": [0.4], "asked": None, "kind": "fatal_error"}, "wrong"),
    ("no_resend", {"sent": 1, "waits": [], "asked": None, "kind": "retryable_error"}, "right"),
    ("no_resend", {"sent": 2, "waits": [], "asked": None, "kind": "text"}, "wrong"),
])
def test_each_rule_tells_right_from_wrong(rule: str, result: dict[str, Any], verdict: str) -> None:
    script = next(script for script in retries.SCRIPTS if script.rule == rule)
    assert retries.judge(script, result)[0] == verdict


def _report(base: dict[str, Any], tmp_path: Path, name: str, cell: dict[str, Any]) -> Path:
    report = json.loads(json.dumps(base))
    report["retries"] = {"rules": {"quota": "…"}, "lanes": {"openai-chat@openai-sdk": {"quota": cell}}}
    path = tmp_path / name
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def test_the_diff_gates_a_cell_that_turns_wrong(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert cli("run", "--no-config", "--cases", str(CASES), "--provider", "openai-chat", "--case", "normal",
               "--report-dir", str(out)).returncode == 0
    base = json.loads((out / "report.json").read_text(encoding="utf-8"))
    right = {"sent": 1, "waits": [], "asked": None, "kind": "fatal_error", "verdict": "right", "why": "one request"}
    wrong = {**right, "sent": 2, "waits": [0.4], "verdict": "wrong", "why": "the quota error retried"}
    old, new = _report(base, tmp_path, "old.json", right), _report(base, tmp_path, "new.json", wrong)
    changes = retry_changes(old, new)
    assert [(change.label, change.key) for change in changes] == [
        ("regression", ("retries quota", "openai-chat@openai-sdk", "retries"))]
    assert retry_changes(new, old)[0].label == "improvement"
    result = cli("diff", str(old), str(new))
    assert result.returncode == 1 and "retries quota" in result.stdout


def test_run_retries_writes_the_section_and_the_table(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    result = cli("run", "--no-config", "--cases", str(CASES), "--provider", "openai-chat", "--case", "normal",
                 "--stack", "openai-chat@openai-sdk", "--retries", "--report-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    section = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["retries"]
    assert sorted(section["lanes"]) == ["openai-chat@openai-sdk"]
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Retries" in markdown and "the quota error retried" in markdown
    assert '"retries"' in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_without_a_stack_the_lane_says_it_runs_none(tmp_path: Path) -> None:
    result = cli("run", "--no-config", "--cases", str(CASES), "--provider", "openai-chat", "--case", "normal",
                 "--retries", "--report-dir", str(tmp_path))
    assert result.returncode == 0 and "no retry lane ran" in result.stderr
    assert "## Retries" not in (tmp_path / "report.md").read_text(encoding="utf-8")

