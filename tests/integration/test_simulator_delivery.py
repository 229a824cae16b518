"""A decision for a durable run whose workers are all down: the Update is bounded, the person gets
a clear error (HTTP 504 from the API), and the request stays pending to be answered again."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import httpx
import pytest

from adk_core.simulator import AskerGoneError, ReplyTo, SimulatorDeliveryTimeoutError, SimulatorService
from adkt.client import connect
from adkt.embedded import TemporalDevServer
from adkt.web.app import create_app
from adkt.web.deliver import temporal_deliver

pytestmark = pytest.mark.integration


async def test_a_decision_for_a_run_with_no_worker_times_out_and_stays_pending(temporal_server: TemporalDevServer) -> None:
    client = await connect(temporal_server.address, namespace=temporal_server.namespace)
    workflow_id = f"sim-no-worker-{uuid.uuid4().hex[:8]}"
    # A run on a task queue no worker polls: Temporal would hold an Update for it indefinitely.
    handle = await client.start_workflow("AgentRunWorkflow", {}, id=workflow_id, task_queue=f"nobody-{uuid.uuid4().hex[:8]}")
    service = SimulatorService(deliver=temporal_deliver(client, timeout=timedelta(seconds=2)))
    try:
        turn_id = str(uuid.uuid4())
        request = await service.submit_request(
            app_name="a", user_id="u", adk_session_id="s", agent_name="weather", turn_id=turn_id,
            event_id=str(uuid.uuid4()), timestamp=time.time(), llm_request={"contents": []},
            reply_to=ReplyTo(workflow_id=workflow_id),
        )
        started = time.monotonic()
        with pytest.raises(SimulatorDeliveryTimeoutError) as raised:
            await service.submit_decision(request.session_id, turn_id, {"text": "hello"})
        assert time.monotonic() - started < 10
        message = str(raised.value)
        assert "no worker accepted the decision" in message and "is not stored" in message
        assert workflow_id in message and "answer it again" in message
        view = await service.view(request.session_id)
        assert view.head is not None and view.head.turn_id == turn_id  # still pending, nothing lost

        transport = httpx.ASGITransport(app=create_app(service))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            answer = await http.post(f"/api/sessions/{request.session_id}/turns/{turn_id}/decision", json={"text": "x"})
        assert answer.status_code == 504
        assert answer.json()["error"] == "SimulatorDeliveryTimeoutError"
    finally:
        await handle.terminate("test over")


async def test_a_decision_for_a_run_that_ended_closes_its_request(temporal_server: TemporalDevServer) -> None:
    """The run that asked ended without an answer (cancelled, terminated): the person hears so, the
    request is closed, and the request behind it becomes the head instead of waiting for good."""
    client = await connect(temporal_server.address, namespace=temporal_server.namespace)
    workflow_id = f"sim-ended-{uuid.uuid4().hex[:8]}"
    handle = await client.start_workflow("AgentRunWorkflow", {}, id=workflow_id, task_queue=f"nobody-{uuid.uuid4().hex[:8]}")
    await handle.terminate("the run ended before anyone answered")
    service = SimulatorService(deliver=temporal_deliver(client, timeout=timedelta(seconds=5)))
    common = {"app_name": "a", "user_id": "u", "adk_session_id": "s", "agent_name": "weather",
              "llm_request": {"contents": []}, "reply_to": ReplyTo(workflow_id=workflow_id)}
    orphan, next_turn = str(uuid.uuid4()), str(uuid.uuid4())
    request = await service.submit_request(turn_id=orphan, event_id=str(uuid.uuid4()), timestamp=time.time(), **common)
    await service.submit_request(turn_id=next_turn, event_id=str(uuid.uuid4()), timestamp=time.time(), **common)
    with pytest.raises(AskerGoneError, match="no longer running.*closed"):
        await service.submit_decision(request.session_id, orphan, {"text": "too late"})
    view = await service.view(request.session_id)
    assert view.head is not None and view.head.turn_id == next_turn
