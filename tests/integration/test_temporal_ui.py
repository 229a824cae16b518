"""What the Temporal UI and `temporal workflow list` show of ADK workflows: search attributes
AdkApp / AdkUser, summaries and details, and model-call activity summaries that say who asked what."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.service import RPCError, RPCStatusCode

from adk_core import AgentExecution, App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import AgentTool
from adk_temporal.workflows import session_workflow_id
from adk_temporal.workflows.summaries import session_summary
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer, temporal_binary
from adkt.search_attributes import ADK_APP, ADK_USER, SearchAttributesMissingError, create_command
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

LIST_WAIT_SECONDS = 10.0
"""Visibility is eventually consistent: a new workflow is listed within moments on the dev server."""


def _support_agent() -> LlmAgent:
    helper = LlmAgent(
        name="invoice_helper", description="Finds invoices.",
        model=ScriptedModel(lambda request: text_response("invoice 42 is paid")),
        execution=AgentExecution(child_workflow=True),
    )

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        return text_response(f"found: {done[0]['result']}") if done else function_call_response(
            "invoice_helper", {"request": "invoice 42"}
        )

    return LlmAgent(name="support_agent", model=ScriptedModel(script), tools=[AgentTool(helper)])


async def _listed(client: Client, query: str, expected: set[str]) -> set[str]:
    deadline = time.monotonic() + LIST_WAIT_SECONDS
    while True:
        found = {w.id async for w in client.list_workflows(query)}
        if expected <= found or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.1)


async def test_conversation_is_listed_by_app_and_user_and_summarised(durable_stack: DurableStack) -> None:
    app = durable_stack.register(App(name=f"shop_{uuid.uuid4().hex[:6]}", root_agent=_support_agent()))
    message = "Where is my invoice? " + "It was due last week and I still have not seen it. " * 3
    result = await durable_stack.client.send(app.name, "u1", "s1", message)
    assert result.final_text == "found: invoice 42 is paid"

    client = durable_stack.client.client
    parent = session_workflow_id(app.name, "u1", "s1")
    call_id = next(call.id for event in result.events if event.content for call in event.content.function_calls())
    child = f"{parent}/tool/{call_id}"
    found = await _listed(client, f"AdkApp='{app.name}' AND AdkUser='u1'", {parent, child})
    assert found == {parent, child}, "the conversation and its agent-tool child, nothing else"
    assert not await _listed(client, f"AdkApp='{app.name}' AND AdkUser='someone_else'", set())

    handle = client.get_workflow_handle(parent)
    description = await handle.describe()
    assert description.typed_search_attributes[ADK_APP] == app.name
    assert description.typed_search_attributes[ADK_USER] == "u1"
    assert await description.static_summary() == session_summary(app.name, "u1", "s1")
    assert "`s1`" in (await description.static_details() or "")

    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    details = metadata.current_details
    assert details.startswith("**Turn 1** (done)"), details
    assert "Where is my invoice? It was due last week" in details and "…" in details

    summaries = await _activity_summaries(client, parent)
    assert summaries[0].startswith("support_agent: Where is my invoice? It was due"), summaries
    assert summaries[0].endswith("… (scripted)"), summaries
    assert summaries[1] == "support_agent: result of invoice_helper (scripted)", summaries


async def test_one_shot_run_is_listed_and_summarised(durable_stack: DurableStack) -> None:
    agent = LlmAgent(name="greeter", model=ScriptedModel(lambda request: text_response("hello")))
    app = durable_stack.register(App(name=f"once_{uuid.uuid4().hex[:6]}", root_agent=agent))
    workflow_id = f"once-{uuid.uuid4().hex[:8]}"
    await durable_stack.client.run_once(app.name, "u7", "s1", "hi there", workflow_id=workflow_id)
    client = durable_stack.client.client
    assert await _listed(client, f"AdkApp='{app.name}' AND AdkUser='u7'", {workflow_id}) == {workflow_id}
    description = await client.get_workflow_handle(workflow_id).describe()
    assert await description.static_summary() == f"{app.name} · user u7 · session s1: hi there"


async def test_a_namespace_without_the_search_attributes_says_how_to_register_them(
    durable_stack: DurableStack, temporal_server: TemporalDevServer
) -> None:
    namespace = f"bare-{uuid.uuid4().hex[:8]}"
    client = durable_stack.client.client
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period={"seconds": 86400})
    )
    bare = await _connect_when_ready(temporal_server.address, namespace)
    adk = AdkClient(bare, task_queue=f"nobody-{uuid.uuid4().hex[:8]}", retry_seconds=5)
    with pytest.raises(SearchAttributesMissingError) as raised:
        await adk.send("shop", "u1", "s1", "hi")
    assert create_command(namespace) in str(raised.value)
    assert "--name AdkApp --type Keyword --name AdkUser --type Keyword" in create_command(namespace)
    with pytest.raises(SearchAttributesMissingError):
        await adk.run_once("shop", "u1", "s1", "hi")
    # Without them, the start is accepted (nobody serves the queue: the send waits, and is cancelled).
    plain = AdkClient(bare, task_queue=adk.task_queue, search_attributes=False)
    sending = asyncio.ensure_future(plain.send("shop", "u1", "s1", "hi"))
    handle = bare.get_workflow_handle(session_workflow_id("shop", "u1", "s1"))
    try:
        description = await _described(handle)
        assert await description.static_summary() == session_summary("shop", "u1", "s1")
        assert not sending.done(), "the send waits for its turn: it was accepted"
    finally:
        sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)
        await handle.terminate("test over")


async def _described(handle: WorkflowHandle) -> WorkflowExecutionDescription:
    deadline = time.monotonic() + LIST_WAIT_SECONDS
    while True:
        try:
            return await handle.describe()
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.05)


async def _connect_when_ready(address: str, namespace: str) -> Client:
    """A new namespace takes a moment to reach the frontend's cache: NOT_FOUND until then."""
    deadline = time.monotonic() + LIST_WAIT_SECONDS
    while True:
        client = await connect(address, namespace=namespace)
        try:
            await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
            async for _ in client.list_workflows(limit=1):
                pass
            return client
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)


async def _activity_summaries(client: Client, workflow_id: str) -> list[str]:
    """The summaries of the workflow's scheduled activities, in order."""
    converter = DataConverter.default.payload_converter
    summaries = []
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED and event.user_metadata.HasField("summary"):
            summaries.append(converter.from_payload(event.user_metadata.summary, str))
    return summaries


async def test_a_dev_database_made_before_the_attributes_gets_them(tmp_path: Path) -> None:
    """`.adk/temporal.db` from an earlier release: start-dev registers --search-attribute only when it
    creates its database, so TemporalDevServer adds them itself."""
    old = subprocess.Popen(
        [temporal_binary(), "server", "start-dev", "--headless", "--port", str(_free_port()),
         "--db-filename", str(tmp_path / "temporal.db"), "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        await _answering(f"127.0.0.1:{old.args[5]}")
    finally:
        old.terminate()
        await asyncio.to_thread(old.wait, 30)
    async with TemporalDevServer(port=0, headless=True, data_dir=tmp_path) as server:
        client = await Client.connect(server.address)
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default")
        )
        assert {ADK_APP.name, ADK_USER.name} <= set(listed.custom_attributes)


async def _answering(address: str) -> None:
    deadline = time.monotonic() + LIST_WAIT_SECONDS
    while True:
        try:
            client = await Client.connect(address)
            await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace="default"))
            return
        except (RuntimeError, RPCError):  # not listening yet, or the namespace is not loaded yet
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
