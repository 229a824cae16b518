"""Two workers on one task queue: activities land on either, each with its own event cache, and
every turn still sees the whole conversation."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.runtime import Runtime, TelemetryConfig

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_temporal.worker import build_worker
from adk_temporal.workflows import AdkPlugin, session_workflow_id
from adkt.client import AdkClient, connect
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def test_two_workers_share_a_conversation(durable_stack: DurableStack) -> None:
    def count(n: int) -> dict:
        """Echo a number."""
        return {"n": n}

    def script(request: LlmRequest) -> Any:
        users = [c for c in request.contents if c.role == "user" and any(p.text for p in c.parts)]
        if not tool_responses_this_turn(request):
            return function_call_response("count", {"n": len(users)})
        return text_response(f"turn {len(users)} saw {len(request.contents)} contents")

    app = App(name=f"multi_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="m", model=ScriptedModel(script), tools=[count]))
    client = await connect(durable_stack.address)
    # Temporal allows one worker per task queue per SDK runtime: the second worker gets its own,
    # as a second process would.
    other = await Client.connect(
        durable_stack.address, plugins=[AdkPlugin()], runtime=Runtime(telemetry=TelemetryConfig())
    )
    task_queue = f"multi-{uuid.uuid4().hex[:8]}"
    workers = [
        build_worker(c, [app], task_queue=task_queue, session_service=durable_stack.sessions, max_cached_workflows=0,
                     identity=f"worker-{i}")
        for i, c in enumerate((client, other))
    ]
    runs = [asyncio.create_task(w.run()) for w in workers]
    try:
        adk = AdkClient(client, task_queue=task_queue)
        for turn in range(1, 7):
            result = await adk.send(app.name, "u1", "s1", f"message {turn}")
            # Each turn adds: user text, call, response, answer (4 contents), so the model saw them all.
            assert result.final_text == f"turn {turn} saw {4 * turn - 1} contents", result.final_text
    finally:
        for w in workers:
            await w.shutdown()
        await asyncio.gather(*runs, return_exceptions=True)
    history = await client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1")).fetch_history()
    identities = {
        e.activity_task_started_event_attributes.identity
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    }
    assert identities == {"worker-0", "worker-1"}, "activities ran on both workers"
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    ids = [e.id for e in stored.events]
    assert len(ids) == len(set(ids)) == 4 * 6
