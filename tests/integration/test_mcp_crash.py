"""A worker SIGKILLed while its MCP server runs a slow call: the call runs again on a fresh worker
(with its own server process) under the same idempotency key, and the session holds one result."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from adkt.services import open_services
from tests.integration import mcp_crash_app
from tests.integration.processes import forget_sticky_queues, release
from tests.integration.test_crash import _start_worker, _stop, _wait_for
from tests.mcp_servers.helpers import calls_logged

pytestmark = pytest.mark.integration


def _gone(pid: int) -> bool:
    """Exited (a zombie left for a reaper that never comes, in a container, counts as exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def test_worker_killed_during_a_slow_mcp_call_completes_once_elsewhere(
    temporal_server: TemporalDevServer, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("MCP_TEST_LOG", str(calls))  # the workers inherit it, and their servers from them
    log = tmp_path / "worker.log"
    task_queue = f"mcp-crash-{uuid.uuid4().hex[:8]}"
    session_id = f"s-{uuid.uuid4().hex[:6]}"
    app = "tests.integration.mcp_crash_app:app"
    adk = AdkClient(await connect(temporal_server.address, namespace=temporal_server.namespace), task_queue=task_queue)
    name = mcp_crash_app.app.name

    start = [temporal_server.address, database_url, task_queue, marker_dir, log, app]
    go = tmp_path / "go"
    # The second is the fresh worker that takes over after the kill, held until then.
    workers = [_start_worker(*start), _start_worker(*start, held_until=go)]
    try:
        run = asyncio.create_task(adk.send(name, "u1", session_id, "go"))
        await _wait_for(marker_dir / mcp_crash_app.MARKER, workers[0], log, timeout=60)
        first_server = int((marker_dir / mcp_crash_app.MARKER).read_text())
        assert _parent(first_server) == workers[0].pid  # the worker's own server process
        os.kill(workers[0].pid, signal.SIGKILL)
        killed_at = time.monotonic()
        workers[0].wait(timeout=10)
        await forget_sticky_queues(adk.client, session_workflow_id(name, "u1", session_id))
        release(workers[1], go, log)
        result = await asyncio.wait_for(run, timeout=90)
        assert time.monotonic() - killed_at < 60  # a worker's start, its server's, a 3 s heartbeat timeout
        # The killed worker's server saw its stdin close and exited: no orphan keeps running.
        for _ in range(100):
            if _gone(first_server):
                break
            await asyncio.sleep(0.1)
        assert _gone(first_server)
        retry_server = calls_logged(calls)[-1]["pid"]
        assert _parent(retry_server) == workers[1].pid  # the new worker started its own server
    finally:
        for worker in workers:
            _stop(worker)

    assert result.final_text == "done"
    first, retry = calls_logged(calls)
    assert (first["pid"], first["tool"]) == (first_server, "slow_once") and retry["pid"] != first_server
    assert first["key"] == retry["key"]  # at least once, with one key: the server can tell
    async with open_services(database_url) as services:
        session = await services["session_service"].get_session(app_name=name, user_id="u1", session_id=session_id)
    assert session is not None
    responses = [r for e in session.events for r in e.function_responses()]
    assert [(r.name, r.response) for r in responses] == [("slow_once", {"result": f"done in {retry['pid']}"})]
    assert first["key"] == f"{session.events[0].invocation_id}:{responses[0].id}"
