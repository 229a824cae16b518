"""OpenApiToolset in a durable run (real Temporal dev server + Postgres): each call is an
adk.run_tool activity; a 503 is retried with the same Idempotency-Key; OAuth2 on the worker."""

from __future__ import annotations

import uuid

import httpx
import pytest

from adk_core import App, LlmAgent
from adk_core.tools import OpenApiToolset
from adk_core.tools.openapi import OAuth2ClientCredentials
from adk_temporal.activities.contracts import RUN_TOOL
from adk_temporal.workflows import session_workflow_id
from tests.integration.conftest import DurableStack
from tests.mcp_servers.helpers import calling
from tests.openapi_service import CLIENT, serving

pytestmark = pytest.mark.integration


async def test_calls_are_activities_and_a_503_is_retried_with_the_same_key(durable_stack: DurableStack) -> None:
    async with serving() as service:
        async with httpx.AsyncClient() as client:
            doc = (await client.get(f"{service.url}/openapi.json")).json()
        tools = OpenApiToolset(doc, name="pets", auth=OAuth2ClientCredentials(*CLIENT), deny=["admin*"])
        calls = [("flaky", {}), ("createPet", {"body": {"name": "Durable"}})]
        name = f"openapi_{uuid.uuid4().hex[:8]}"
        durable_stack.register(App(name=name, root_agent=LlmAgent(name="clerk", model=calling(calls), tools=[tools])))
        await durable_stack.client.send(name, "u", "s", "go")

    session = await durable_stack.sessions.get_session(app_name=name, user_id="u", session_id="s")
    assert session is not None
    responses = [(r.id, r.response) for e in session.events for r in e.function_responses()]
    (flaky_id, flaky), (_, created) = responses
    assert flaky == {"ok": True} and created["name"] == "Durable"
    key = f"{session.events[0].invocation_id}:{flaky_id}"
    assert [k for path, k in service.seen if path == "/flaky"] == [key, key]  # the 503, then the retry
    history = await durable_stack.client.client.get_workflow_handle(session_workflow_id(name, "u", "s")).fetch_history()
    scheduled = [e for e in history.events if e.activity_task_scheduled_event_attributes.activity_type.name == RUN_TOOL]
    assert len(scheduled) == 2  # one activity per call; the retry is an attempt of the same activity


async def test_a_request_that_cannot_be_sent_fails_at_once_not_after_retries(durable_stack: DurableStack) -> None:
    # httpx.InvalidURL (a URL over 64 kB) is a property of the request: OpenApiCallError, one attempt.
    async with serving() as service:
        async with httpx.AsyncClient() as client:
            doc = (await client.get(f"{service.url}/openapi.json")).json()
        tools = OpenApiToolset(doc, name="pets", allow=["getPet"])
        calls = [("getPet", {"pet_id": 1, "verbose": "x" * 70_000})]
        name = f"openapi_{uuid.uuid4().hex[:8]}"
        durable_stack.register(App(name=name, root_agent=LlmAgent(name="clerk", model=calling(calls), tools=[tools])))
        await durable_stack.client.send(name, "u", "s", "go")

    session = await durable_stack.sessions.get_session(app_name=name, user_id="u", session_id="s")
    assert session is not None
    [refused] = [r.response for e in session.events for r in e.function_responses()]
    assert "OpenApiCallError" in refused["error"] and "cannot be sent: InvalidURL" in refused["error"]
    history = await durable_stack.client.client.get_workflow_handle(session_workflow_id(name, "u", "s")).fetch_history()
    tool_calls = {e.event_id for e in history.events
                  if e.activity_task_scheduled_event_attributes.activity_type.name == RUN_TOOL}  # fmt: skip
    attempts = [e.activity_task_started_event_attributes.attempt for e in history.events
                if e.activity_task_started_event_attributes.scheduled_event_id in tool_calls]  # fmt: skip
    assert attempts == [1]  # not retried
