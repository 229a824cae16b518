"""A 10-case eval suite whose worker is SIGKILLed mid-suite: a fresh worker finishes it and the
persisted results are complete. With model calls as activities, no completed model call (or mocked
tool call) runs twice; with local model calls (the default), only the trials in flight at the kill run
their calls again (their workflow task was never recorded), finished trials never."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from adk_core.eval.store import EvalResultStore
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import migrate
from adk_temporal.workflows.eval import EvalSuiteInput, EvalSuiteRunResult, EvalSuiteWorkflow
from adkt.client import connect
from adkt.embedded import TemporalDevServer
from tests.integration import eval_crash_app as app
from tests.integration.processes import forget_sticky_queues, release, wait_until, worker_script
from tests.integration.test_crash import _no_task_running

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SUITE = "tests.integration.eval_crash_app:cases"


def _start_worker(
    address: str, database_url: str, task_queue: str, folder: Path, log: Path, *,
    held_until: Path | None = None,
) -> subprocess.Popen:  # fmt: skip
    """``python worker.py`` serving the suite; with ``held_until``, a standby worker
    (tests/integration/standby_worker.py) that imports now and starts once that file exists."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVAL_CRASH_DIR": str(folder)}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *worker_script(held_until), "--eval", SUITE, "--address", address, "--database-url", database_url,
             "--task-queue", task_queue],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip


async def _until(check, worker: subprocess.Popen, log: Path, what: str, timeout: float = 60.0) -> None:  # noqa: ANN001
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if worker.poll() is not None:
            raise AssertionError(f"worker exited with {worker.returncode}:\n{log.read_text()[-3000:]}")
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what} never happened; worker log:\n{log.read_text()[-3000:]}")
        await asyncio.sleep(0.05)



def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("model_calls", ["activity", "local_activity"])
async def test_a_suite_survives_its_worker_being_killed(
    temporal_server: TemporalDevServer, database_url: str, tmp_path: Path, model_calls: str
) -> None:
    await migrate(database_url)
    folder = tmp_path / "crash"
    folder.mkdir()
    (folder / "armed").write_text("")
    log = tmp_path / "worker.log"
    task_queue = f"eval-crash-{uuid.uuid4().hex[:8]}"
    run_id = f"crash-{uuid.uuid4().hex[:6]}"
    client = await connect(temporal_server.address, namespace=temporal_server.namespace, database_url=database_url)
    hung = [folder / f"hang-case{i}" for i in range(app.HANG_FROM, app.HANG_FROM + 4)]

    go = tmp_path / "go"
    # The second is the fresh worker that takes over after the kill, held until then.
    workers = [_start_worker(temporal_server.address, database_url, task_queue, folder, log),
               _start_worker(temporal_server.address, database_url, task_queue, folder, log, held_until=go)]
    try:
        suite_id = f"adk-eval/{run_id}"
        handle = await client.start_workflow(
            EvalSuiteWorkflow.run, EvalSuiteInput(suite=SUITE, run_id=run_id, max_concurrency=4, model_calls=model_calls),
            id=suite_id, task_queue=task_queue, result_type=EvalSuiteRunResult,
        )
        # Cases 0-3 finish; 4-7 then take every slot and hang in their second model call, so nothing
        # else is in flight when the worker dies; 8 and 9 have not started.
        await _until(lambda: all(p.exists() for p in hung), workers[0], log, "four hanging model calls")
        children = [c.workflow_id for c in (await handle.describe()).raw_description.pending_children]
        if model_calls == "activity":  # local calls hang inside their trial's workflow task: it stays in flight
            await wait_until(lambda: _no_task_running(client, suite_id, *children), "no workflow task in flight",
                             timeout=30, logs=[log], procs=[workers[0]], interval=0.05)  # fmt: skip
        before = _lines(folder / app.CALLS_LOG)
        assert {line.split()[0] for line in before} == {f"case{i}" for i in range(app.HANG_FROM + 4)}
        os.kill(workers[0].pid, signal.SIGKILL)
        workers[0].wait(timeout=10)
        (folder / "armed").unlink()
        # The suite's and its running cases' workflows, each of which would wait out its sticky queue in turn.
        await forget_sticky_queues(client, suite_id, *children)
        release(workers[1], go, log)
        result = await asyncio.wait_for(handle.result(), timeout=120)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait(timeout=10)

    assert result.summary.total == app.N_CASES and result.summary.passed == app.N_CASES, result.summary
    calls = _lines(folder / app.CALLS_LOG)
    keys = Counter(" ".join(line.split()[:2]) for line in calls)
    in_flight = {f"case{i}" for i in range(app.HANG_FROM, app.HANG_FROM + 4)}
    twice = {k for k, n in keys.items() if n > 1}
    if model_calls == "activity":
        assert twice == set(), "a completed model call ran twice"
    else:  # the trials in flight ran their first call again on the fresh worker; no finished trial ran again
        assert {k.split()[0] for k in twice} <= in_flight, twice
    assert len(keys) == 3 * app.N_CASES
    # Calls of finished trials were not run again; those hanging at the kill completed once, on the
    # fresh worker.
    pid = {" ".join(line.split()[:2]): int(line.split()[-1]) for line in calls}
    assert all(pid[" ".join(line.split()[:2])] == workers[0].pid for line in before if line.split()[0] not in in_flight)
    assert {pid[f"case{i} call2"] for i in range(app.HANG_FROM, app.HANG_FROM + 4)} == {workers[1].pid}
    tools = Counter(line.split()[0] for line in _lines(folder / app.TOOLS_LOG))
    if model_calls == "activity":
        assert tools == Counter({f"k{i}": 1 for i in range(app.N_CASES)})
    else:
        assert set(tools) == {f"k{i}" for i in range(app.N_CASES)}
        assert {f"case{k[1:]}" for k, n in tools.items() if n > 1} <= in_flight, tools

    store = EvalResultStore(database_url)
    try:
        detail = await store.get_run(run_id)
        assert detail is not None
        assert detail.run.status == "passed" and detail.run.mode == "durable"
        assert detail.run.summary is not None and detail.run.summary.passed == app.N_CASES
        assert sorted(c.case_name for c in detail.cases) == sorted(f"case-{i}" for i in range(app.N_CASES))
        assert [(t.status, t.turns, sorted(t.metrics)) for t in detail.trials] == [("passed", 2, ["doubled", "looked_up"])] * 10
        sessions = DatabaseSessionService(store.engine)
        for trial in detail.trials:
            ref = trial.session
            assert ref is not None
            session = await sessions.get_session(app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id)
            assert session is not None
            ids = [e.id for e in session.events]
            assert len(ids) == len(set(ids))
            assert session.events[-1].text.startswith("doubled ")
    finally:
        await store.close()
