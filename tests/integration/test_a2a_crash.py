"""The delegating worker SIGKILLed while its RemoteA2aAgent waits for a slow remote task: the poll
runs again on a fresh worker (same task, the message is not sent again), the task completes, and
both sessions hold one answer. The remote (specialist) runs on the durable stack behind a real
a2a-sdk server (adkt.a2a_server); the front app runs in worker subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType

from adk_temporal.workflows import session_workflow_id
from adkt.a2a_server import app_a2a_server
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from adkt.services import open_services
from tests.a2a_servers.helpers import serving
from tests.integration import a2a_apps
from tests.integration.conftest import DurableStack
from tests.integration.processes import forget_sticky_queues
from tests.integration.test_crash import _start_worker, _stop, _wait_for
from tests.mcp_servers.helpers import free_port

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def _activities(adk: AdkClient, workflow_id: str) -> list[tuple[str, int]]:
    """(summary, attempt) of each activity the workflow scheduled so far; attempt 0 while it runs
    (Temporal writes an activity's started event, with its attempt, only when the activity ends)."""
    handle = adk.client.get_workflow_handle(workflow_id)
    scheduled: dict[int, list] = {}
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = [event.user_metadata.summary.data.decode(), 0]
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            scheduled[attrs.scheduled_event_id][1] = attrs.attempt
    return [(summary, attempt) for summary, attempt in scheduled.values()]


def _recording_pids(app: Any, pids: list[int]) -> Any:
    """``app``, noting the worker pid each JSON-RPC request comes from (a header the front app sends)."""

    async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            if b"x-test-worker-pid" in headers:
                pids.append(int(headers[b"x-test-worker-pid"]))
        await app(scope, receive, send)

    return recording


async def test_delegating_worker_killed_mid_task_completes_once_elsewhere(
    durable_stack: DurableStack, temporal_server: TemporalDevServer, database_url: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    hold, log, worker_log = tmp_path / "hold", tmp_path / "answers.jsonl", tmp_path / "worker.log"
    hold.mkdir()
    monkeypatch.setenv("A2A_HOLD_DIR", str(hold))  # the specialist runs in this process (the stack's worker)
    monkeypatch.setenv("A2A_TEST_LOG", str(log))
    specialist = durable_stack.register(a2a_apps.specialist_app(f"a2a_specialist_{uuid.uuid4().hex[:6]}"))
    port = free_port()
    monkeypatch.setenv("A2A_REMOTE_URL", f"http://127.0.0.1:{port}/")  # the front workers inherit it
    task_queue = f"a2a-crash-{uuid.uuid4().hex[:8]}"
    session = f"s-{uuid.uuid4().hex[:6]}"
    front = a2a_apps.app.name
    workflow_id = session_workflow_id(front, "u1", session)
    adk = AdkClient(await connect(temporal_server.address, namespace=temporal_server.namespace), task_queue=task_queue)
    server = app_a2a_server(durable_stack.client, specialist.name, url=f"http://127.0.0.1:{port}/")
    callers: list[int] = []

    async with serving(_recording_pids(server, callers), port):
        # Both workers from the start (a worker's start is the slow part); the one that polls is killed.
        workers = [_start_worker(temporal_server.address, database_url, task_queue, tmp_path, worker_log,
                                 app="tests.integration.a2a_apps:app") for _ in range(2)]  # fmt: skip
        try:
            run = asyncio.create_task(adk.send(front, "u1", session, "go"))
            await _wait_for(hold / "started", workers[0], worker_log, timeout=60)
            callers.clear()
            for _ in range(200):  # the front polls the held task (bounded 10 s)
                if callers:
                    break
                await asyncio.sleep(0.05)
            assert callers, f"no poll reached the remote in 10 s; worker log:\n{worker_log.read_text()[-3000:]}"
            poller = next(w for w in workers if w.pid == callers[-1])
            assert any("a2a_poll" in summary for summary, _ in await _activities(adk, workflow_id))
            os.kill(poller.pid, signal.SIGKILL)
            killed_at = time.monotonic()
            poller.wait(timeout=10)
            await forget_sticky_queues(adk.client, workflow_id)
            (hold / "release").write_text("go on")
            result = await asyncio.wait_for(run, timeout=90)
            assert time.monotonic() - killed_at < 30  # a 3 s heartbeat timeout, then the other worker polls
        finally:
            run.cancel() if not run.done() else None
            for worker in workers:
                _stop(worker)
    survivor = next(w for w in workers if w is not poller)
    assert survivor.pid in callers  # the task was finished by the worker that was not killed

    assert result.final_text == "specialist says: go"
    activities = await _activities(adk, workflow_id)
    sends = [a for a in activities if "a2a_send" in a[0]]
    polls = [a for a in activities if "a2a_poll" in a[0]]
    assert len(sends) == 1, activities  # the message went out once ...
    assert polls[-1][1] >= 2, activities  # ... and the killed worker's poll ran again elsewhere
    answers = [json.loads(line) for line in log.read_text().splitlines()]
    assert [a["text"] for a in answers] == ["go"]  # the remote turn ran once
    async with open_services(database_url) as services:
        stored = await services["session_service"].get_session(app_name=front, user_id="u1", session_id=session)
    assert stored is not None
    assert [e.content.text for e in stored.events if e.author == "specialist_remote"] == ["specialist says: go"]
