"""`adkt sessions delete` and `adkt users delete` against the real stack: the workflow and the rows go,
other sessions stay, and running it again is fine."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode
from typer.testing import CliRunner, Result

from adk_core import App, LlmAgent, ScriptedModel
from adk_temporal.workflows import session_workflow_id
from adkt.embedded import TemporalDevServer
from adkt.main import app as cli
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def invoke(stack: DurableStack, server: TemporalDevServer, *args: str) -> Result:
    env = {"TEMPORAL_ADDRESS": server.address, "TEMPORAL_NAMESPACE": server.namespace,
           "ADK_DATABASE_URL": stack.database_url, "COLUMNS": "200", "NO_COLOR": "1"}  # fmt: skip
    # On a thread: the command runs its own event loop (asyncio.run), which must not be this one.
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args), env=env)


async def _gone(stack: DurableStack, workflow_id: str) -> bool:
    """Whether the workflow is stopped for good: terminated, or its history already deleted (with
    --no-wait the history goes in the background; test_deletion_marker.py waits for it)."""
    try:
        described = await stack.client.client.get_workflow_handle(workflow_id).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return True
        raise
    return described.status == WorkflowExecutionStatus.TERMINATED


async def test_sessions_delete_then_users_delete(durable_stack: DurableStack, temporal_server: TemporalDevServer) -> None:
    app = durable_stack.register(App(name=f"cli_del_{uuid.uuid4().hex[:6]}",
                                     root_agent=LlmAgent(name="a", model=ScriptedModel(lambda r: "ok"))))  # fmt: skip
    for sid in ("s1", "s2"):
        await asyncio.wait_for(durable_stack.client.send(app.name, "u", sid, "hi"), timeout=60)

    result = await invoke(durable_stack, temporal_server, "sessions", "delete", app.name, "u", "s1", "--yes", "--no-wait")
    assert result.exit_code == 0, result.output
    assert "1 workflow(s)" in result.output and "adk_sessions 1" in result.output
    assert await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s1") is None
    assert await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s2") is not None
    assert await _gone(durable_stack, session_workflow_id(app.name, "u", "s1"))
    assert not await _gone(durable_stack, session_workflow_id(app.name, "u", "s2"))

    refused = await invoke(durable_stack, temporal_server, "users", "delete", app.name, "u")
    assert refused.exit_code != 0 and "Aborted" in refused.output  # asked, and no answer is no
    result = await invoke(durable_stack, temporal_server, "users", "delete", app.name, "u", "--yes", "--no-wait")
    assert result.exit_code == 0, result.output
    assert (await durable_stack.sessions.list_sessions(app_name=app.name, user_id="u")).sessions == []
    assert await _gone(durable_stack, session_workflow_id(app.name, "u", "s2"))
    again = await invoke(durable_stack, temporal_server, "users", "delete", app.name, "u", "--yes", "--no-wait")
    assert again.exit_code == 0 and "rows: none" in again.output, again.output
