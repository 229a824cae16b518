"""A worker SIGKILLed inside the summarizing step, after the turn answered: a fresh worker writes the
summary before the next turn runs, and the session holds exactly one compaction event for the turn,
written by the retry."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from pathlib import Path

import pytest

from adk_core.compaction import compaction_event_id
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from adkt.services import open_services
from tests.integration import compaction_crash_app as crash_app
from tests.integration.processes import forget_sticky_queues, release
from tests.integration.test_crash import _start_worker, _stop, _wait_for

pytestmark = pytest.mark.integration

APP = "tests.integration.compaction_crash_app:app"


async def test_worker_killed_mid_summary_stores_one_compaction(
    temporal_server: TemporalDevServer, database_url: str, tmp_path: Path
) -> None:
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    log = tmp_path / "worker.log"
    task_queue = f"compaction-crash-{uuid.uuid4().hex[:8]}"
    session_id = f"s-{uuid.uuid4().hex[:6]}"
    name = crash_app.app.name
    adk = AdkClient(await connect(temporal_server.address, namespace=temporal_server.namespace), task_queue=task_queue)
    start = [temporal_server.address, database_url, task_queue, marker_dir, log, APP]
    go = tmp_path / "go"
    # The second is the fresh worker that takes over after the kill, held until then.
    workers = [_start_worker(*start), _start_worker(*start, held_until=go)]
    try:
        first = await adk.send(name, "u1", session_id, "one")
        # A compaction is due after the second turn, which answers before its summary is written.
        second = await adk.send(name, "u1", session_id, "two")
        await _wait_for(marker_dir / crash_app.SUMMARY_MARKER, workers[0], log)
        third_turn = asyncio.create_task(adk.send(name, "u1", session_id, "three"))  # waits for the summary
        os.kill(workers[0].pid, signal.SIGKILL)
        workers[0].wait(timeout=10)
        await forget_sticky_queues(adk.client, session_workflow_id(name, "u1", session_id))
        # The summarizing activity's heartbeat timeout (10 s, fixed: workflows/_compaction.py) notices the kill.
        release(workers[1], go, log)
        third = await asyncio.wait_for(third_turn, timeout=60)
    finally:
        for worker in workers:
            _stop(worker)

    assert first.final_text == second.final_text == third.final_text == "ok"
    async with open_services(database_url) as services:
        session = await services["session_service"].get_session(app_name=name, user_id="u1", session_id=session_id)
    assert session is not None
    ids = [e.id for e in session.events]
    assert len(ids) == len(set(ids))
    compactions = [e for e in session.events if e.actions.compaction is not None]
    assert [e.id for e in compactions] == [compaction_event_id(second.invocation_id)]
    assert compactions[0].actions.compaction.compacted_content.text == f"summary written by pid {workers[1].pid}"
    assert [e.text for e in session.events if e.actions.compaction is None] == ["one", "ok", "two", "ok", "three", "ok"]
