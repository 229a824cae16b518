"""The other direction: an app served as an MCP server (adkt.mcp_server, what `adkt mcp` runs),
called by another agent through McpToolset over streamable HTTP. The served turn is durable (a
SessionWorkflow on the stack's worker), and the caller's idempotency key makes a repeated call
return the first turn instead of running a second one."""

from __future__ import annotations

import asyncio
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from adk_core import App, InMemoryRunner, LlmAgent, ScriptedModel
from adk_core.tools import HttpServer, McpToolset, StdioServer
from adk_core.tools.mcp import IDEMPOTENCY_META_KEY
from adkt.mcp_server import app_mcp_server
from tests.integration.conftest import DurableStack
from tests.mcp_servers.helpers import calling, free_port

pytestmark = pytest.mark.integration


async def test_an_agent_calls_a_durable_app_through_mcp(durable_stack: DurableStack) -> None:
    name = f"served_{uuid.uuid4().hex[:8]}"
    answers = ScriptedModel(lambda request: f"turn {sum(1 for c in request.contents if c.role == 'user')}")
    durable_stack.register(App(name=name, root_agent=LlmAgent(name="oracle", model=answers)))
    port = free_port()
    server = app_mcp_server(durable_stack.client, name, description="Answers questions.", port=port)
    serving = asyncio.create_task(server.run_streamable_http_async())
    tools = McpToolset(HttpServer(f"http://127.0.0.1:{port}/mcp"), connect_timeout=timedelta(seconds=20))
    try:
        for _ in range(100):  # the server listens within a few seconds
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        caller = LlmAgent(name="caller", model=calling([(name, {"message": "hello"})]), tools=[tools])
        events = await InMemoryRunner(caller).run("ask the oracle")
        [answer] = [p.function_response.response for e in events if e.content for p in e.content.parts
                    if p.function_response is not None]  # fmt: skip
        assert answer["text"] == "turn 1"
        session = await durable_stack.sessions.get_session(app_name=name, user_id="mcp", session_id=answer["session_id"])
        assert session is not None and [e.author for e in session.events] == ["user", "oracle"]

        # The same idempotency key again (a retried call): the first turn's answer, no new turn.
        again = await tools.connection.call_tool(
            name, {"message": "hello", "session_id": answer["session_id"]},
            meta={IDEMPOTENCY_META_KEY: "retry-key"}, timeout=timedelta(seconds=30),
        )  # fmt: skip
        repeat = await tools.connection.call_tool(
            name, {"message": "hello", "session_id": answer["session_id"]},
            meta={IDEMPOTENCY_META_KEY: "retry-key"}, timeout=timedelta(seconds=30),
        )  # fmt: skip
        assert again.structuredContent == repeat.structuredContent
        assert again.structuredContent is not None and again.structuredContent["text"] == "turn 2"
        session = await durable_stack.sessions.get_session(app_name=name, user_id="mcp", session_id=answer["session_id"])
        assert session is not None and len(session.events) == 4
    finally:
        await tools.close()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


async def test_adkt_mcp_serves_an_app_over_stdio(durable_stack: DurableStack, tmp_path: Path) -> None:
    """`adkt mcp NAME` as a worker-owned stdio server of another agent's McpToolset; the app is
    served by the stack's worker, found by name (the command only sends messages)."""
    name = f"stdio_served_{uuid.uuid4().hex[:8]}"
    durable_stack.register(App(name=name, root_agent=LlmAgent(name="oracle", model=ScriptedModel(lambda r: "42"))))
    namespace = durable_stack.client.client.namespace
    server = StdioServer(
        str(Path(sys.executable).with_name("adkt")), ["mcp", name, "--address", durable_stack.address],
        env={"ADK_TASK_QUEUE": durable_stack.task_queue, "TEMPORAL_NAMESPACE": namespace},
        cwd=str(tmp_path),  # no .adk/dev.json of a running `adkt dev` to find instead
    )  # fmt: skip
    tools = McpToolset(server, connect_timeout=timedelta(seconds=30))
    try:
        caller = LlmAgent(name="caller", model=calling([(name, {"message": "meaning of life?"})]), tools=[tools])
        events = await InMemoryRunner(caller).run("ask")
        [answer] = [p.function_response.response for e in events if e.content for p in e.content.parts
                    if p.function_response is not None]  # fmt: skip
        assert answer["text"] == "42"
    finally:
        await tools.close()
