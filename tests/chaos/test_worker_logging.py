"""Worker logging (hardening item 9): a worker process, started either way, logs with time, level
and logger, and a failing workflow task shows up in its log instead of vanishing.

Both failures are ones chaos brings out: workflow code that depends on process memory (here an
environment variable) replays differently on another worker (the Rust core reports that
nondeterminism error), and workflow code that blocks the worker (temporalio reports a deadlock from
Python).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from adk_core import App, LlmAgent, ScriptedModel
from adk_core.models import text_response
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from tests.integration.processes import forget_sticky_queues

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MODE_ENV = "LOGGING_TEST_MODE"
LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")


def _misbehave(callback_context, llm_request):  # noqa: ANN001
    # Deliberately wrong workflow code: it reads process memory that differs between workers.
    mode = os.environ.get(MODE_ENV)
    if mode == "skip-model":
        return text_response("skipped")
    if mode == "block" and callback_context.user_content.parts[0].text == "block":
        time.sleep(3)  # longer than temporalio's 2 s deadlock detection
    return None


app = App(
    name="logging_test",
    root_agent=LlmAgent(
        name="a", model=ScriptedModel(lambda request: text_response("hello")), before_model_callback=_misbehave
    ),
)


def _start(entry: str, address: str, database_url: str, task_queue: str, log: Path, mode: str) -> subprocess.Popen:
    args = ["--app", "tests.chaos.test_worker_logging:app", "--address", address, "--database-url", database_url,
            "--task-queue", task_queue]  # fmt: skip
    command = [sys.executable, "worker.py", *args] if entry == "worker.py" else [sys.executable, "-m", "adkt.main", "worker", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT), MODE_ENV: mode}
    env.pop("ADK_LOG_LEVEL", None)
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


async def _wait_for_line(log: Path, proc: subprocess.Popen, needle: str, timeout: float) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        content = log.read_text(errors="replace")
        found = [line for line in content.splitlines() if needle in line]
        if found:
            return found[0]
        if proc.poll() is not None:
            raise AssertionError(f"worker exited with {proc.returncode}:\n{content[-3000:]}")
        if loop.time() > deadline:
            raise AssertionError(f"{needle!r} not logged within {timeout:g}s:\n{content[-3000:]}")
        await asyncio.sleep(0.1)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


@pytest.mark.parametrize("entry", ["worker.py", "adkt"])
@pytest.mark.parametrize("failure", ["nondeterminism", "deadlock"])
async def test_a_failing_workflow_task_is_logged(
    entry: str, failure: str, temporal_server: TemporalDevServer, database_url: str, tmp_path: Path
) -> None:
    task_queue = f"logging-{uuid.uuid4().hex[:8]}"
    session_id = f"s-{uuid.uuid4().hex[:6]}"
    workflow_id = session_workflow_id(app.name, "u1", session_id)
    adk = AdkClient(await connect(temporal_server.address, namespace=temporal_server.namespace), task_queue=task_queue)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    procs = [_start(entry, temporal_server.address, database_url, task_queue, first_log, mode="block")]
    try:
        turn = await asyncio.wait_for(adk.send(app.name, "u1", session_id, "hi"), timeout=30)
        assert turn.final_text == "hello"
        if failure == "nondeterminism":
            # A second worker answers the first turn from the callback when it replays it: no model
            # activity where the history has one.
            _kill(procs[0])
            await forget_sticky_queues(adk.client, workflow_id)
            procs.append(_start(entry, temporal_server.address, database_url, task_queue, second_log, mode="skip-model"))
            log, needle = second_log, "Failing workflow task"
        else:
            log, needle = first_log, "Failed handling activation on workflow"
        stuck = asyncio.create_task(adk.send(app.name, "u1", session_id, "block"))
        try:
            line = await _wait_for_line(log, procs[-1], needle, 30)
        finally:
            stuck.cancel()
            await asyncio.gather(stuck, return_exceptions=True)
            await adk.client.get_workflow_handle(workflow_id).terminate("test over")
    finally:
        for proc in procs:
            _kill(proc)

    assert LINE.match(line), line
    if failure == "nondeterminism":
        assert " WARNING temporalio.core: " in line and "Nondeterminism" in line, line
    else:
        assert " ERROR temporalio.worker._workflow: " in line, line
        assert "Potential deadlock detected" in log.read_text()
    started = first_log.read_text()
    # Both entry points are one command (worker.main runs `adkt worker`): the same start line.
    assert "worker for logging_test on task queues" in started, started[-2000:]
    # Library chatter stays out at INFO: alembic logs a dozen lines per migration check.
    assert " INFO alembic" not in started, started[-2000:]
