"""A rolling upgrade on the real dev server (issue #25, item 3; docs/versioning.md).

v1 workers (processes, as deployed) serve 20 conversations (idle ones, some in the middle of a slow
tool, some waiting on a tool confirmation), one conversation whose model call waits for a person in
the agent simulator, and an eval suite whose trial is mid-tool. v2 workers start
(a changed instruction, a new tool, a removed tool, and a callback that would be non-deterministic
replaying v1 histories) and v2 is promoted. Then: every mid-turn run completes on v1; every
conversation's next turn runs v2 code; confirmations answered after the switch complete; no workflow
failed and no workflow task failed; v1 drains and its workers stop. The times are printed (-s).
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

import httpx
import pytest

from adk_core.simulator import SimulatorService
from adk_core.simulator.sql import SqlSimulatorStore
from adk_core.sql import migrate
from adk_temporal.deployments import pinned_runs, promote, run_version
from adk_temporal.worker import WorkerVersion
from adk_temporal.workflows.eval import EvalSuiteInput, EvalSuiteRunResult, EvalSuiteWorkflow
from adkt.client import AdkClient, connect, workflow_task_failure
from adkt.embedded import TemporalDevServer
from adkt.web.api.backend import ApiBackend
from adkt.web.api.models import AppInfo
from adkt.web.deliver import temporal_deliver
from adkt.web.serve import serving
from tests.integration.processes import stop_process, wait_until
from tests.integration.test_simulator_durable import wait_for_head
from tests.integration.upgrade_app import APP_NAME, SIM_APP_NAME

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
IDLE, SLOW, CONFIRM = range(0, 12), range(12, 16), range(16, 20)
SUITE = "tests.integration.upgrade_app:slow_cases"


def _worker(build: str, deployment: str, server: TemporalDevServer, database_url: str, release: Path,
            log: Path) -> subprocess.Popen:  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    env |= {"PYTHONPATH": str(REPO), "UPGRADE_RELEASE_FILE": str(release)}
    command = [
        sys.executable, "-m", "adkt.main", "worker", "--app", f"tests.integration.upgrade_app:{build}",
        "--app", f"tests.integration.upgrade_app:sim_{build}",
        "--eval", SUITE, "--address", server.address, "--database-url", database_url,
        "--deployment-name", deployment, "--build-id", build, "--graceful-timeout", "5",
        "--task-queue", f"q-{deployment}",  # its own queue: no other test's worker ever takes its tasks
    ]
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


async def _adkt(*args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))} | {"COLUMNS": "200"}
    env |= extra_env
    command = [sys.executable, "-m", "adkt.main", *args]
    return await asyncio.to_thread(subprocess.run, command, cwd=REPO, env=env, capture_output=True, text=True,
                                   timeout=120)  # fmt: skip


async def test_rolling_upgrade_moves_conversations_at_turn_boundaries(
    temporal_server: TemporalDevServer, database_url: str, tmp_path: Path
) -> None:
    await migrate(database_url)
    deployment = f"desk-{uuid.uuid4().hex[:6]}"
    release = tmp_path / "release"
    logs = [tmp_path / "v1.log", tmp_path / "v2.log"]
    client = await connect(temporal_server.address, namespace=temporal_server.namespace)
    adk = AdkClient(client, task_queue=f"q-{deployment}")
    v1 = _worker("v1", deployment, temporal_server, database_url, release, logs[0])
    v2: subprocess.Popen | None = None
    slow: list[asyncio.Future] = []
    suite: asyncio.Future = asyncio.get_running_loop().create_future()
    asking: asyncio.Future = asyncio.get_running_loop().create_future()
    try:
        await promote(client, WorkerVersion(deployment, "v1"))

        # --- v1 serves 20 conversations -------------------------------------------------------
        first = await asyncio.gather(*(adk.send(APP_NAME, "u", f"c{n}", "hi") for n in (*IDLE, *CONFIRM)))
        assert {t.final_text for t in first} == {"v1: hi"}
        asked = await asyncio.gather(*(adk.send(APP_NAME, "u", f"c{n}", "pay") for n in CONFIRM))
        assert all(t.events[-1].long_running_tool_ids for t in asked)
        slow = [asyncio.ensure_future(adk.send(APP_NAME, "u", f"c{n}", "slow")) for n in SLOW]
        suite = asyncio.ensure_future(client.execute_workflow(
            EvalSuiteWorkflow.run, EvalSuiteInput(suite=SUITE, record=False), id=f"adk-eval/{deployment}",
            task_queue=f"q-{deployment}", result_type=EvalSuiteRunResult,
        ))

        simulator = SimulatorService(SqlSimulatorStore(database_url), deliver=temporal_deliver(client))
        asking = asyncio.ensure_future(adk.send(SIM_APP_NAME, "u", "sim", "is it sunny?"))
        question = await wait_for_head(simulator, "sim", timeout=30)
        await asyncio.sleep(1.0)  # the slow turns and the eval trial reach their tool
        assert not any(t.done() for t in slow) and not suite.done()

        # --- v2 starts and becomes current ------------------------------------------------------
        v2 = _worker("v2", deployment, temporal_server, database_url, release, logs[1])
        promoted = await _adkt("deployment", "promote", deployment, "v2", "--address", temporal_server.address)
        switched = time.monotonic()
        assert promoted.returncode == 0, promoted.stdout + promoted.stderr
        nudged = int(re.search(r"; (\d+) open conversations told to move", promoted.stdout).group(1))  # type: ignore[union-attr]
        assert nudged >= 20, promoted.stdout

        turn = await adk.send(APP_NAME, "u", f"c{IDLE[0]}", "hi")
        first_v2_turn = time.monotonic() - switched
        assert turn.final_text == "v2: hi (callback)"

        # Idle conversations move when nudged; mid-turn runs stay on v1 (the confirmations wait there
        # too), whatever v2 changed.
        held = {f"adk-session/{APP_NAME}/u/c{n}" for n in (*SLOW, *CONFIRM)} | {f"adk-eval/{deployment}"}
        held |= {f"adk-session/{SIM_APP_NAME}/u/sim"}
        on_v1: list[str] = []

        async def only_held_left() -> bool:
            on_v1[:] = await pinned_runs(client, WorkerVersion(deployment, "v1"))
            return {i for i in on_v1 if "/eval/" not in i and "adk-eval/" not in i} | {f"adk-eval/{deployment}"} == held

        await wait_until(only_held_left, "the idle conversations' move", timeout=30, logs=logs)
        idle_moved = time.monotonic() - switched
        assert held <= set(on_v1), on_v1
        status = await _adkt("deployment", "status", deployment, "v1", "--address", temporal_server.address)
        assert status.returncode == 0 and f"{len(on_v1)} runs still on {deployment}:v1" in status.stdout, status.stdout
        release.touch()
        finished = await asyncio.wait_for(asyncio.gather(*slow), timeout=60)
        assert {t.final_text for t in finished} == {"v1: done ['done', 'job']"}
        result = await asyncio.wait_for(suite, timeout=60)
        assert result.summary.passed == 1, result

        # The person's answer reaches the v1 run that asked; then that conversation moves too.
        await simulator.submit_decision(question.session.id, question.head.turn_id, {"text": "Sunny (a person)."})
        assert (await asyncio.wait_for(asking, timeout=60)).final_text == "Sunny (a person)."

        # Confirmations asked by v1 are answered by v1 code, after the switch.
        for n in CONFIRM:
            request = (await adk.pending(APP_NAME, "u", f"c{n}"))[0]
            answered = await adk.reply(APP_NAME, "u", f"c{n}", request.call_id, {"confirmed": True})
            assert answered.final_text == "v1: done ['sent']"

        # Every conversation's next turn runs v2 code.
        after = await asyncio.gather(*(adk.send(APP_NAME, "u", f"c{n}", "hi") for n in range(20)))
        assert [t.final_text for t in after] == ["v2: hi (callback)"] * 20
        for n in range(20):
            assert await run_version(client, f"adk-session/{APP_NAME}/u/c{n}") == f"{deployment}:v2"

        async def simulated_moved() -> bool:
            return await run_version(client, f"adk-session/{SIM_APP_NAME}/u/sim") == f"{deployment}:v2"

        await wait_until(simulated_moved, "the simulated conversation's move", timeout=30, logs=logs)
        # The dev page's API says where the conversation runs (the page shows it beside the workflow link).
        backend = ApiBackend.open(adk, database_url, apps=[AppInfo(name=APP_NAME)])
        try:
            async with serving(None, port=0, api=backend, page=False) as url:
                async with httpx.AsyncClient(base_url=url, timeout=30) as http:
                    detail = (await http.get(f"/api/v1/apps/{APP_NAME}/users/u/sessions/c0")).json()
        finally:
            await backend.close()
        assert detail["worker_version"] == f"{deployment}:v2", detail
        shown = await _adkt("sessions", "show", APP_NAME, "u", "c0", "--database-url", database_url,
                            TEMPORAL_ADDRESS=temporal_server.address)  # fmt: skip
        assert f"adk-session/{APP_NAME}/u/c0: running on {deployment}:v2" in shown.stdout, shown.stdout + shown.stderr

        # v1 drains: no run is left on it, so its workers stop.
        async def drained() -> bool:
            return await pinned_runs(client, WorkerVersion(deployment, "v1")) == []

        last_pinned_done = time.monotonic()
        await wait_until(drained, "v1 drained", timeout=60, logs=logs)
        drain = time.monotonic() - switched
        drain_after_last = time.monotonic() - last_pinned_done
        assert stop_process(v1, sig=signal.SIGTERM, timeout=30) == 0

        failed = [w.id async for w in client.list_workflows('ExecutionStatus="Failed"')
                  if APP_NAME in w.id or deployment in w.id]  # fmt: skip
        assert failed == []
        for n in range(20):
            assert await workflow_task_failure(client, f"adk-session/{APP_NAME}/u/c{n}") is None
        text = "".join(log.read_text() for log in logs)
        assert "NondeterminismError" not in text and "nondetermin" not in text.lower(), text[-3000:]
        print(f"\nrolling upgrade: switch -> first v2 turn {first_v2_turn:.2f} s; all 12 idle moved {idle_moved:.2f} s; "
              f"switch -> v1 drained {drain:.2f} s "
              f"({drain_after_last:.2f} s after its last pinned run ended)")
    finally:
        release.touch()
        for pending in (*slow, suite, asking):
            pending.cancel()
        await asyncio.gather(*slow, suite, asking, return_exceptions=True)
        for proc in (v2, v1):
            if proc is not None and proc.poll() is None:
                stop_process(proc, sig=signal.SIGTERM, timeout=30)
