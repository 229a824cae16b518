"""`adkt sim --export SESSION_ID` prints a stored simulator session as a SimulatorExport."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from adk_core.simulator import SimulatorExport, SimulatorService
from adk_core.simulator.sql import SqlSimulatorStore
from adk_core.sql import migrate

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


async def test_sim_export_prints_the_session(database_url: str) -> None:
    await migrate(database_url)
    store = SqlSimulatorStore(database_url)
    service = SimulatorService(store)
    turn_id = str(uuid.uuid4())
    try:
        request = await service.submit_request(
            app_name="a", user_id="u", adk_session_id="s", agent_name="weather", turn_id=turn_id,
            event_id=str(uuid.uuid4()), timestamp=1.0,
            llm_request={"contents": [{"role": "user", "parts": [{"text": "Hi?"}]}]},
        )
        await service.record_response(
            session_id=request.session_id, turn_id=turn_id, event_id=str(uuid.uuid4()), timestamp=2.0,
            agent_name="weather", llm_response={"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello."}]}}]},
        )
    finally:
        await store.close()
    done = subprocess.run(
        [sys.executable, "-m", "adkt.main", "sim", "--export", request.session_id, "--database-url", database_url],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    exported = SimulatorExport.model_validate_json(done.stdout)
    assert exported.user_messages == ["Hi?"]
    assert exported.answers["weather"][0]["candidates"][0]["content"]["parts"] == [{"text": "Hello."}]
