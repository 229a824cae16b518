"""`adkt dev` serves the agent simulator beside the Temporal UI: a run of an app with a
SimulatorPlugin waits, and its person answers through the dev stack's simulator API."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from httpx_sse import aconnect_sse

from adkt.client import AdkClient, connect
from adkt.commands._devstate import DEV_STATE_FILE
from tests.integration import simulator_app

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _dev_state(process: subprocess.Popen, state_file: Path, timeout: float = 120) -> dict:
    async with asyncio.timeout(timeout):
        while not state_file.exists():
            assert process.poll() is None, "adkt dev exited before it was up"
            await asyncio.sleep(0.2)
    return json.loads(state_file.read_text())


async def _head(http: httpx.AsyncClient, adk_session_id: str, after: str | None) -> dict | None:
    for summary in (await http.get("/api/sessions")).json()["sessions"]:
        if summary["session"].get("adk_session_id") == adk_session_id and summary["pending_count"]:
            view = (await http.get(f"/api/sessions/{summary['session']['id']}")).json()
            if view.get("head") and view["head"]["turn_id"] != after:
                return view
    return None


async def test_adkt_dev_serves_the_simulator(database_url: str, tmp_path: Path) -> None:
    task_queue = f"dev-sim-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "dev.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "adkt.main", "dev", "--app", "tests.integration.simulator_app:single",
             "--port", str(_free_port()), "--ui-port", str(_free_port()), "--sim-port", "0",
             "--data-dir", str(tmp_path / "adk"), "--database-url", database_url],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "ADK_TASK_QUEUE": task_queue, "COLUMNS": "200"},
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        state = await _dev_state(process, tmp_path / "adk" / DEV_STATE_FILE)
        sim_url = state["sim_url"]
        assert sim_url.startswith("http://127.0.0.1:")
        # The panel is printed around when the state file is written: give the log a moment.
        async with asyncio.timeout(20):
            while f"Simulator     {sim_url}" not in log.read_text():
                await asyncio.sleep(0.2)
        adk = AdkClient(await connect(state["address"], namespace=state["namespace"]), task_queue=task_queue)
        session_id = f"s-{uuid.uuid4().hex[:8]}"
        async with httpx.AsyncClient(base_url=sim_url, timeout=30) as http:
            assert (await http.get("/")).headers["content-type"].startswith("text/html")
            async with aconnect_sse(http, "GET", "/api/events") as source:
                changes = source.aiter_sse()
                run = asyncio.create_task(adk.send(simulator_app.single.name, "u", session_id, "Weather in Lima?"))
                answers = [{"function_calls": [{"name": "get_weather", "args": {"city": "Lima"}}]}, {"text": "Sunny."}]
                after = None
                for answer in answers:
                    async with asyncio.timeout(60):
                        while (view := await _head(http, session_id, after)) is None:
                            await anext(changes)
                    after = view["head"]["turn_id"]
                    decided = await http.post(
                        f"/api/sessions/{view['session']['id']}/turns/{after}/decision", json=answer
                    )
                    assert decided.status_code == 200, decided.text
                result = await asyncio.wait_for(run, 60)
        assert result.final_text == "Sunny."
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
        assert not (tmp_path / "adk" / DEV_STATE_FILE).exists()
    except BaseException:
        print(log.read_text()[-4000:])
        raise
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
