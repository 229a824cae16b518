"""A worker process stops and starts like a production service (issue #25, item 5): SIGTERM lets the
in-flight tool call finish within the graceful timeout and exits 0 with a clean stderr; the health
endpoint answers liveness and readiness."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from adk_core.sql import migrate
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from tests.integration.processes import forget_sticky_queues, release, wait_exit, wait_until, worker_script

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _start(
    server: TemporalDevServer, database_url: str, folder: Path, log: Path, *extra: str,
    held_until: Path | None = None,
) -> subprocess.Popen:  # fmt: skip
    """``python worker.py`` for the app; with ``held_until``, a standby worker
    (tests/integration/standby_worker.py) that imports now and starts once that file exists."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    env |= {"PYTHONPATH": str(REPO), "LIFECYCLE_DIR": str(folder)}
    command = [sys.executable, *worker_script(held_until), "--app", "tests.integration.lifecycle_app:app", "--address", server.address,
               "--database-url", database_url, *extra]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _get(url: str) -> tuple[int, dict | str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as e:
        body, status = e.read().decode(), e.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body


async def test_sigterm_lets_the_running_tool_finish_and_exits_cleanly(
    temporal_server: TemporalDevServer, database_url: str, tmp_path: Path
) -> None:
    await migrate(database_url)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = _start(temporal_server, database_url, tmp_path, first_log, "--graceful-timeout", "20", "--health-port", "0")
    # The next worker, held (imports done) until the first has exited.
    go = tmp_path / "go"
    second = _start(temporal_server, database_url, tmp_path, second_log, held_until=go)
    try:
        await wait_until(lambda: "health: http" in first_log.read_text(), "the health endpoint", timeout=60, logs=[first_log], interval=0.1)
        base = re.search(r"health: (http://\S+)/livez", first_log.read_text()).group(1)  # type: ignore[union-attr]
        assert _get(f"{base}/livez") == (200, "ok\n")
        status, ready = _get(f"{base}/readyz")
        assert status == 200 and ready == {"ready": True, "task_queues": ["adk.lifecycle"]}, ready

        client = AdkClient(await connect(temporal_server.address, namespace=temporal_server.namespace))
        turn = asyncio.ensure_future(client.send("lifecycle", "u", "s1", "write the q3 report"))
        await wait_until(lambda: (tmp_path / "started").exists(), "the tool's start", timeout=60, logs=[first_log], interval=0.1)

        stopped_at = time.monotonic()
        os.killpg(first.pid, signal.SIGTERM)
        draining = []  # readiness while the worker finishes the tool call in flight
        while first.poll() is None and time.monotonic() - stopped_at < 30:
            with contextlib.suppress(OSError):
                draining.append(_get(f"{base}/readyz"))
            await asyncio.sleep(0.05)
        assert (503, {"ready": False, "reason": "stopping: finishing the tasks in flight"}) in draining, draining
        assert (200, ready) not in draining[1:], draining  # once stopping, never ready again
        code = wait_exit(first, timeout=30)
        waited = time.monotonic() - stopped_at
        output = first_log.read_text()
        assert code == 0, output[-3000:]
        # The tool was not cancelled: it ran to its end before the worker exited.
        assert (tmp_path / "finished").read_text() == "q3\n", output[-3000:]
        assert waited >= 1.0, "the worker exited before the running tool could finish"
        for bad in ("panicked", "Fatal Python error", "Traceback", "CancelledError"):
            assert bad not in output, output[-3000:]

        # The turn goes on with the next worker; the tool's one result stands (it ran once). The turn's
        # next task waits on the stopped worker's sticky queue until its schedule-to-start timeout
        # (3 s) in production; the test skips that wait.
        await forget_sticky_queues(client.client, session_workflow_id("lifecycle", "u", "s1"))
        release(second, go, second_log)
        result = await asyncio.wait_for(turn, timeout=60)
        assert result.final_text == "wrote q3"
        assert (tmp_path / "started").read_text() == "q3\n"
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                wait_exit(proc, timeout=30)
