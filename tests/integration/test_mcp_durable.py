"""McpToolset in durable runs (real Temporal dev server + Postgres) against a real MCP server
(tests/mcp_servers/server.py, FastMCP, over stdio): listing and calls are adk.run_tool activities,
the history records the list a turn used, a server that dies mid-call is retried with the same
idempotency key, the worker stops its servers when it closes its apps, and a server that never
answers tools/list fails the turn within the call timeouts (tests/mcp_servers/odd_listing.py)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from adk_core import App, LlmAgent
from adk_core.tools import McpToolset, StdioServer
from adk_core.types import Event
from adk_temporal.activities.contracts import RUN_TOOL
from adk_temporal.replay import replayer
from adk_temporal.workflows import session_workflow_id
from adkt.client import TurnFailedError
from tests.integration.conftest import DurableStack
from tests.mcp_servers.helpers import calling, calls_logged, stdio_server

pytestmark = pytest.mark.integration


def _app(server: StdioServer, calls: list[tuple[str, dict[str, Any]]], name: str) -> App:
    tools = McpToolset(server, name="calc", deny=["secret"])
    return App(name=name, root_agent=LlmAgent(name="assistant", model=calling(calls), tools=[tools]))


def _responses(events: list[Event]) -> list[tuple[str | None, dict[str, Any]]]:
    return [(p.function_response.id, p.function_response.response) for e in events if e.content
            for p in e.content.parts if p.function_response is not None]  # fmt: skip


async def _tool_activities(stack: DurableStack, app: str) -> list[str]:
    history = await stack.client.client.get_workflow_handle(session_workflow_id(app, "u", "s")).fetch_history()
    return [e.user_metadata.summary.data.decode().strip('"') for e in history.events
            if e.activity_task_scheduled_event_attributes.activity_type.name == RUN_TOOL]  # fmt: skip


async def test_listing_and_calls_are_activities_and_the_history_keeps_the_list(
    durable_stack: DurableStack, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    calls = [("add", {"a": 2, "b": 3}), ("whoami", {}), ("refuse", {"reason": "not today"}), ("math_double", {"x": 4})]
    app = durable_stack.register(_app(stdio_server(log), calls, f"mcp_{uuid.uuid4().hex[:8]}"))
    await durable_stack.client.send(app.name, "u", "s", "go")
    await durable_stack.client.send(app.name, "u", "s", "again")

    session = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert session is not None
    first_turn = [e for e in session.events if e.invocation_id == session.events[0].invocation_id]
    (_, added), (whoami_id, whoami), (_, refused), (_, doubled) = _responses(first_turn)
    assert added == {"result": 5} and doubled == {"result": 8}  # math.double, by its provider-safe name
    assert whoami["key"] == f"{first_turn[0].invocation_id}:{whoami_id}"
    assert refused["error"].startswith("Tool 'refuse' failed: McpCallError:") and "not today" in refused["error"]
    assert len(_responses(session.events)) == 8

    # One listing per turn, each call one activity; the refused call is not retried (one log line).
    per_turn = ["assistant -> calc.list_tools", "assistant -> add", "assistant -> whoami", "assistant -> refuse",
                "assistant -> math_double"]
    assert await _tool_activities(durable_stack, app.name) == per_turn * 2
    assert [c["tool"] for c in calls_logged(log)] == ["add", "whoami", "refuse", "math.double"] * 2

    # The history holds the lists: it replays with a toolset whose server cannot even start.
    history = await durable_stack.client.client.get_workflow_handle(
        session_workflow_id(app.name, "u", "s")).fetch_history()  # fmt: skip
    unreachable = _app(StdioServer("/bin/false"), calls, app.name)
    result = await replayer([unreachable]).replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None

    # The worker owns the server's process: closing its apps (as it does when it stops) ends it.
    pid = int(whoami["pid"])
    os.kill(pid, 0)
    await durable_stack.worker.apps.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_server_that_dies_mid_call_is_retried_with_the_same_key(
    durable_stack: DurableStack, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    marker = tmp_path / "died"
    app = durable_stack.register(_app(stdio_server(log), [("die_once", {"marker": str(marker)})],
                                      f"mcp_die_{uuid.uuid4().hex[:8]}"))  # fmt: skip
    await durable_stack.client.send(app.name, "u", "s", "go")

    session = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert session is not None
    [(_, answer)] = _responses(session.events)
    first, retry = calls_logged(log)
    assert first["pid"] == int(marker.read_text()) and retry["pid"] != first["pid"]
    assert answer == {"result": f"survived in {retry['pid']}"}
    assert first["key"] == retry["key"] and first["key"].startswith(session.events[0].invocation_id)
    assert await _tool_activities(durable_stack, app.name) == ["assistant -> calc.list_tools", "assistant -> die_once"]


async def test_a_server_that_never_answers_tools_list_fails_the_turn_within_its_call_timeout(
    durable_stack: DurableStack,
) -> None:
    # tools/list had no read timeout: each attempt of the list activity waited for its start_to_close
    # (connect_timeout + call_timeout, 22 s here), three times. Now each attempt ends after call_timeout.
    server = StdioServer(sys.executable, [str(Path(__file__).parents[1] / "mcp_servers" / "odd_listing.py"), "hang"])
    tools = McpToolset(server, name="calc", call_timeout=timedelta(seconds=2), connect_timeout=timedelta(seconds=20))
    agent = LlmAgent(name="assistant", model=calling([("add", {"a": 1, "b": 2})]), tools=[tools])
    app = durable_stack.register(App(name=f"mcp_hung_{uuid.uuid4().hex[:8]}", root_agent=agent))
    started = time.monotonic()
    try:
        with pytest.raises(TurnFailedError) as failed:
            await asyncio.wait_for(durable_stack.client.send(app.name, "u", "s", "go"), timeout=60)
    finally:
        await tools.close()
    assert "did not list its tools within 0:00:02" in failed.value.reason, failed.value.reason
    assert time.monotonic() - started < 40  # 3 attempts of 2 s, after 1 s and 2 s
    assert await _tool_activities(durable_stack, app.name) == ["assistant -> calc.list_tools"]
