"""A worker SIGKILLed inside a tool activity, or inside a model activity: a fresh worker process
finishes the run, and the session in Postgres holds every event exactly once.

The [tool-session] case runs on the default timeouts (a 10 s heartbeat timeout notices the dead
worker); the others on crash_app.fast_heartbeat (3 s). The fresh worker is started with the first and
held (imports done, not connected) until the kill, so its start overlaps the heartbeat wait."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from temporalio.client import Client

from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from adkt.services import open_services
from tests.integration import crash_app
from tests.integration.processes import forget_sticky_queues, release, worker_script

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _start_worker(
    address: str, database_url: str, task_queue: str, marker_dir: Path, log: Path,
    app: str = "tests.integration.crash_app:app", *, held_until: Path | None = None,
) -> subprocess.Popen:  # fmt: skip
    """``python worker.py`` for ``app``; with ``held_until``, a standby worker
    (tests/integration/standby_worker.py) that imports now and starts once that file exists."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRASH_MARKER_DIR": str(marker_dir)}
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                *worker_script(held_until),
                "--app",
                app,
                "--address",
                address,
                "--database-url",
                database_url,
                "--task-queue",
                task_queue,
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )



async def _wait_for(path: Path, worker: subprocess.Popen, log: Path, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not path.exists():
        if worker.poll() is not None:
            raise AssertionError(f"worker exited with {worker.returncode}:\n{log.read_text()[-3000:]}")
        if loop.time() > deadline:
            raise AssertionError(f"{path.name} never appeared; worker log:\n{log.read_text()[-3000:]}")
        await asyncio.sleep(0.05)



async def _no_task_running(client: Client, *workflow_ids: str, activities: bool = False) -> bool:
    """None of these workflows has a workflow task (with ``activities``, nor an activity) scheduled or
    running: a worker killed now dies outside workflow code (a workflow task it had started would wait
    out its 10 s start-to-close timeout)."""
    for workflow_id in workflow_ids:
        description = (await client.get_workflow_handle(workflow_id).describe()).raw_description
        if description.HasField("pending_workflow_task") or (activities and description.pending_activities):
            return False
    return True


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


@pytest.mark.parametrize(
    ("crash_in", "via", "app"),
    [
        ("tool", "agent_run", "fast_heartbeat"),
        ("model", "agent_run", "fast_heartbeat"),
        # The defaults: a 10 s heartbeat timeout notices the dead worker.
        ("tool", "session", "app"),
    ],
)
async def test_worker_killed_mid_activity_run_completes_once(
    crash_in: str, via: str, app: str, temporal_server: TemporalDevServer, database_url: str, tmp_path: Path
) -> None:
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    # Only one phase hangs: the other's marker is there from the start.
    hang, skip = (
        (crash_app.TOOL_MARKER, crash_app.MODEL_MARKER)
        if crash_in == "tool"
        else (crash_app.MODEL_MARKER, crash_app.TOOL_MARKER)
    )
    (marker_dir / skip).write_text("pre-set")
    log = tmp_path / "worker.log"
    task_queue = f"crash-{uuid.uuid4().hex[:8]}"
    session_id = f"s-{crash_in}-{uuid.uuid4().hex[:6]}"
    adk = AdkClient(
        await connect(temporal_server.address, namespace=temporal_server.namespace), task_queue=task_queue
    )
    name = crash_app.app.name  # both apps' name
    start = [temporal_server.address, database_url, task_queue, marker_dir, log]
    app_spec = f"tests.integration.crash_app:{app}"
    go = tmp_path / "go"
    # The second is the fresh worker that takes over after the kill, held until then.
    workers = [_start_worker(*start, app_spec), _start_worker(*start, app_spec, held_until=go)]
    try:
        if via == "session":
            # A conversation: the update in flight survives the worker's death with its workflow.
            workflow_id = session_workflow_id(name, "u1", session_id)
            run = asyncio.create_task(adk.send(name, "u1", session_id, crash_app.USER_MESSAGE))
        else:
            workflow_id = f"crash-run/{session_id}"
            run = asyncio.create_task(
                adk.run_once(name, "u1", session_id, crash_app.USER_MESSAGE, workflow_id=workflow_id)
            )
        await _wait_for(marker_dir / hang, workers[0], log)
        assert not run.done()
        os.kill(workers[0].pid, signal.SIGKILL)
        killed_at = time.monotonic()
        workers[0].wait(timeout=10)
        await forget_sticky_queues(adk.client, workflow_id)
        release(workers[1], go, log)
        result = await asyncio.wait_for(run, timeout=60)
        # On default settings (10 min start-to-close) only the activity's heartbeat timeout (10 s, or
        # the fast app's 3 s) can have noticed the dead worker this soon.
        assert time.monotonic() - killed_at < 30
    finally:
        for worker in workers:
            _stop(worker)

    assert result.final_text == "done"
    effects = (marker_dir / crash_app.EFFECTS).read_text().splitlines()
    # Once: a killed tool attempt never gets past its sleep; in the model case the tool ran before the kill.
    assert effects == [f"step 1 pid {workers[1 if crash_in == 'tool' else 0].pid}"], effects

    async with open_services(database_url) as services:
        session = await services["session_service"].get_session(
            app_name=name, user_id="u1", session_id=session_id
        )
    assert session is not None
    ids = [e.id for e in session.events]
    assert len(ids) == len(set(ids)), Counter(ids).most_common(3)
    # user, call slow_step, its result, call add, its result, "done"
    assert [e.author for e in session.events] == ["user"] + ["crasher"] * 5
    assert ids == [e.id for e in result.events] or ids[1:] == [e.id for e in result.events]
    responses = [r for e in session.events for r in e.function_responses()]
    assert [(r.name, r.response) for r in responses] == [
        ("slow_step", {"step": 1, "ok": True}),
        ("add", {"sum": 3}),
    ]
    assert len({r.id for r in responses}) == 2
    assert session.events[-1].text == "done"
