"""`adkt run agent.yaml "..."`: an agent declared in YAML, its tools bound by name on the worker, runs
durably (real Temporal and Postgres); the instruction the workflow builds never names the tool the
agent was built without."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adk_temporal.workflows import session_workflow_id
from adkt.commands._apps import load_app
from adkt.main import app as cli
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
CONFIG = "tests/integration/yaml_durable.yaml"


async def test_adkt_run_runs_a_yaml_agent_durably(durable_stack: DurableStack) -> None:
    app = load_app(str(ROOT / CONFIG))  # what `adkt worker --app` does with the file
    if app.name not in durable_stack.worker.apps.names():
        durable_stack.register(app)
    session = f"yaml-{uuid.uuid4().hex[:8]}"
    # The real command, in this process (on a thread: it runs its own event loop), as test_cli does:
    # a subprocess would add seconds of imports and test nothing more.
    args = ["run", str(ROOT / CONFIG), "What's the weather in Paris?", "--json", "--address", durable_stack.address,
            "--database-url", durable_stack.database_url, "--session", session]  # fmt: skip
    env = {"ADK_TASK_QUEUE": durable_stack.task_queue, "COLUMNS": "200", "NO_COLOR": "1"}
    result = await asyncio.wait_for(asyncio.to_thread(CliRunner().invoke, cli, args, env=env), timeout=60)
    assert result.exit_code == 0, result.output
    stdout = result.stdout
    turn = json.loads(stdout)
    assert turn["final_text"] == (
        "Paris: sunny, 21 °C. | tools=['get_weather'] | names send_sms: False | names get_weather: True"
    )
    # The tool ran as an activity on the worker, which found it by the name the YAML gave.
    handle = durable_stack.client.client.get_workflow_handle(session_workflow_id(app.name, "user", session))
    activities = [e.activity_task_scheduled_event_attributes.activity_type.name
                  async for e in handle.fetch_history_events() if e.HasField("activity_task_scheduled_event_attributes")]  # fmt: skip
    assert "adk.run_tool" in activities
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="user", session_id=session)
    assert stored is not None
    assert [r.response for e in stored.events for r in e.function_responses()] == [
        {"city": "Paris", "sky": "sunny", "celsius": 21}
    ]
