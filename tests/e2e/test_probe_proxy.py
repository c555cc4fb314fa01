"""``conformance probe`` through a LiteLLM proxy (docs/probe.md, "A gateway's proxy"): the proxy started here on
loopback, in a process of its own under the session's network guard, in front of the replay server, once over the
frozen cases and once over a copy whose first Chat turn of ``normal`` carries a server's finish-reason quirk."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from conformance.replay.server import BackgroundServer
from tests.helpers import CASES, cli
from tests.test_probe import _tool_call_finish

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent
PROXY_SECONDS = 240
"""The proxy's process is stopped after this long whatever the tests do."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, BackgroundServer]]]:
    """The proxy's base URL and the replay servers behind it, by name; the proxy's models: ``<server>-<mode>`` for
    the servers ``vendor`` (the frozen cases as recorded) and ``quirk`` (the changed copy), each pointing at the
    replay's ``normal`` Chat session of that mode."""
    for module in ("litellm", "fastapi", "uvicorn", "mcp"):
        pytest.importorskip(module, reason=f"{module} is not installed (the LiteLLM proxy's dependencies: pip "
                                           "install -e '.[test]')")
    folder = tmp_path_factory.mktemp("proxy")
    servers: dict[str, BackgroundServer] = {}
    models = []
    for name, change in (("vendor", None), ("quirk", _tool_call_finish)):
        cases = folder / name
        shutil.copytree(CASES, cases, ignore=shutil.ignore_patterns("__snapshots__"))
        if change is not None:
            change(cases)
        server = BackgroundServer(load_cases([cases]), max_seconds=PROXY_SECONDS).__enter__()
        servers[name] = server
        models += [{"model_name": f"{name}-{mode}",
                    "litellm_params": {"model": "openai/model-under-test", "api_key": "sk-replay",
                                       "api_base": f"{server.base}/s/normal/openai-chat/{mode}/v1"}}
                   for mode in ("body", "stream")]
    config = folder / "config.yaml"
    config.write_text(json.dumps({"model_list": models, "litellm_settings": {"num_retries": 0}}), encoding="utf-8")
    port = _free_port()
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true", "AWS_EC2_METADATA_DISABLED": "true",
           "LITELLM_EVENT_LOOP": "asyncio"}  # the guard sees asyncio's sockets, not uvloop's (loopback_only.py)
    log = (folder / "proxy.log").open("w", encoding="utf-8")
    process = subprocess.Popen([sys.executable, str(HERE / "loopback_only.py"), "litellm.proxy.proxy_cli:run_server",
                                "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
                                "--telemetry", "False"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health/liveliness", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the LiteLLM proxy did not start: " + (folder / "proxy.log").read_text()[-3000:])
            time.sleep(0.5)
        yield base, servers
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        for server in servers.values():
            server.__exit__(None, None, None)


def _probe(proxy: tuple[str, dict[str, BackgroundServer]], model: str, mode: str, out: Path) -> Any:
    """A probe of ``normal`` through the proxy's ``model`` (``<server>-<mode>``), its replay session started over."""
    base, servers = proxy
    servers[model.split("-")[0]].replay.reset("normal", "openai-chat", mode)
    return cli("probe", "--no-config", "--cases", str(CASES), "--server", f"proxy={base}", "--api", "openai-chat",
               "--model", model, "--case", "normal", "--mode", mode, "--out", str(out))


def _turn1(out: Path, mode: str) -> str:
    suffix = "json" if mode == "body" else "sse"
    return (out / f"cases/frozen_cases/normal/openai-chat~proxy/turn1.{suffix}").read_text(encoding="utf-8")


@pytest.mark.parametrize("mode", ["body", "stream"])
def test_the_proxy_in_front_of_the_vendors_answers_passes_and_names_its_own_model(proxy: Any, tmp_path: Path,
                                                                                 mode: str) -> None:
    result = _probe(proxy, f"vendor-{mode}", mode, tmp_path / "probe")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 of 1 proxy rows passed" in result.stdout
    # The proxy answers with its own model alias where the vendor named the model that answered.
    recorded = CASES / "normal/openai-chat" / ("turn1.json" if mode == "body" else "turn1.sse")
    assert '"gpt-5.5-2026-04-23"' in recorded.read_text(encoding="utf-8").replace(" ", "")
    assert f'"model":"vendor-{mode}"' in _turn1(tmp_path / "probe", mode).replace(" ", "")


def test_the_proxy_hides_the_finish_reason_of_the_server_behind_it(proxy: Any, tmp_path: Path) -> None:
    """Probed directly, the server with the quirk fails (tests/test_probe.py); behind the proxy it passes: LiteLLM
    answers the server's unknown ``tool_call`` as ``stop``, and the gate between the two probes through the proxy finds
    nothing. What a team learns is which layer to probe: the proxy its code calls, or the server behind it."""
    before, after = _probe(proxy, "vendor-body", "body", tmp_path / "before"), _probe(proxy, "quirk-body", "body",
                                                                                       tmp_path / "after")
    assert before.returncode == 0, before.stdout + before.stderr
    assert after.returncode == 0, after.stdout + after.stderr
    served = proxy[1]["quirk"].replay.cases["normal"].providers["openai-chat"].turns[0].body
    assert served["choices"][0]["finish_reason"] == "tool_call"
    # LiteLLM answers `stop` for a finish reason it does not know; the Chat reading takes the calls the message
    # carries first (as OpenAI's own models may answer `stop` with calls), so the row passes.
    answered = json.loads(_turn1(tmp_path / "after", "body"))["choices"][0]
    assert answered["finish_reason"] == "stop" and answered["message"]["tool_calls"]
    gate = cli("diff", str(tmp_path / "before/report/report.json"), str(tmp_path / "after/report/report.json"))
    assert gate.returncode == 0 and "**0 regression(s)**" in gate.stdout


def _reach_out() -> int:
    """Run by ``loopback_only.py`` in the test below: 0 when uvloop cannot load and a connection beyond loopback is
    refused by the guard."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        pass
    else:
        return 1
    try:
        socket.create_connection(("192.0.2.1", 80), timeout=1)  # TEST-NET-1 (RFC 5737): never routed
    except RuntimeError as error:
        return 0 if "loopback only" in str(error) else 2
    except OSError:
        return 3
    return 4


def test_the_proxys_process_is_under_the_loopback_guard() -> None:
    completed = subprocess.run([sys.executable, str(HERE / "loopback_only.py"),
                                "tests.e2e.test_probe_proxy:_reach_out"], cwd=HERE.parent.parent,
                               capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
