"""McpToolset in-process (InMemoryRunner) against a real MCP server (tests/mcp_servers/server.py, FastMCP),
over stdio and streamable HTTP: listing, filters, calls, server errors, a server that dies, and one
whose listing hangs or never ends (tests/mcp_servers/odd_listing.py)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from adk_core import InMemoryRunner, LlmAgent
from adk_core.agents.context import ReadonlyContext
from adk_core.errors import ToolError
from adk_core.eval.interception import InterceptedTool, InterceptedToolset, Interception
from adk_core.tools import McpToolset
from adk_core.tools.lookup import find_tool
from adk_core.tools.mcp import McpCallError, McpListTools, McpTool, McpUnavailableError, StdioServer
from adk_core.types import Event
from tests.mcp_servers.helpers import calling, calls_logged, free_port, http_server, stdio_server

ODD_LISTING = str(Path(__file__).parents[2] / "mcp_servers" / "odd_listing.py")


def responses(events: list[Event]) -> list[dict[str, Any]]:
    return [p.function_response.response for e in events if e.content for p in e.content.parts
            if p.function_response is not None]  # fmt: skip


@pytest.fixture(scope="module")
async def toolset(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[McpToolset]:
    """One server process for the module (starting one takes seconds): the tests share it."""
    tools = McpToolset(stdio_server(tmp_path_factory.mktemp("mcp") / "calls.jsonl"), deny=["secret"])
    yield tools
    await tools.close()


async def test_the_model_sees_the_filtered_tools_with_the_servers_schemas(toolset: McpToolset) -> None:
    model = calling([])
    await InMemoryRunner(LlmAgent(name="a", model=model, tools=[toolset])).run("hi")
    declared = model.requests[0].tools_dict
    exposed = ["add", "die_once", "header", "math_double", "refuse", "slow", "slow_once", "whoami"]
    assert sorted(declared) == exposed
    assert sorted(await toolset.refresh_tools()) == exposed
    add = declared["add"].declaration()
    assert add is not None and add.description == "Add two integers."
    assert add.parameters is not None and sorted(add.parameters["properties"]) == ["a", "b"]


async def test_allow_patterns_and_a_prefix(tmp_path: Path) -> None:
    tools = McpToolset(stdio_server(tmp_path / "calls.jsonl"), allow=["a*", "who*"], deny=["whoami"],
                       tool_name_prefix="calc")  # fmt: skip
    try:
        model = calling([("calc_add", {"a": 2, "b": 3})])
        events = await InMemoryRunner(LlmAgent(name="a", model=model, tools=[tools])).run("add")
        assert sorted(model.requests[0].tools_dict) == ["calc_add"]
        assert responses(events) == [{"result": 5}]
        assert await tools.tool_named("calc_secret") is None and await tools.tool_named("add") is None
    finally:
        await tools.close()


async def test_a_name_providers_refuse_is_made_safe_and_mapped_back(toolset: McpToolset) -> None:
    events = await InMemoryRunner(LlmAgent(name="a", model=calling([("math_double", {"x": 21})]), tools=[toolset])).run("x")
    assert responses(events) == [{"result": 42}]
    assert calls_logged(_log(toolset))[-1]["tool"] == "math.double"
    found = await toolset.tool_named("math_double")  # as a worker's tool activity finds it
    assert isinstance(found, McpTool) and found.remote_name == "math.double"


async def test_a_call_carries_the_calls_idempotency_key_in_meta(toolset: McpToolset) -> None:
    runner = InMemoryRunner(LlmAgent(name="a", model=calling([("whoami", {})]), tools=[toolset]))
    events = await runner.run("who")
    call = next(e for e in events if e.function_calls()).function_calls()[0]
    [answer] = responses(events)
    assert answer["key"] == f"{events[0].invocation_id}:{call.id}"
    assert calls_logged(_log(toolset))[-1] == {"tool": "whoami", "key": answer["key"], "pid": answer["pid"]}


async def test_a_server_error_reaches_the_model_as_the_tools_error(toolset: McpToolset) -> None:
    calls = [("refuse", {"reason": "closed on sundays"}), ("add", {"a": "x", "b": 1})]
    events = await InMemoryRunner(LlmAgent(name="a", model=calling(calls), tools=[toolset])).run("go")
    refused, invalid = responses(events)
    assert refused["error"].startswith("Tool 'refuse' failed: McpCallError:")
    assert "refused: closed on sundays" in refused["error"]
    assert "McpCallError" in invalid["error"] and "add" in invalid["error"]  # the server's argument validation


async def test_a_server_that_dies_mid_call_fails_that_call_and_is_started_again(
    toolset: McpToolset, tmp_path: Path
) -> None:
    marker = str(tmp_path / "died")
    starts = toolset.connection.starts
    calls = [("die_once", {"marker": marker}), ("die_once", {"marker": marker})]
    events = await InMemoryRunner(LlmAgent(name="a", model=calling(calls), tools=[toolset])).run("go")
    died, survived = responses(events)
    assert "McpUnavailableError" in died["error"] and "went away" in died["error"]
    dead_pid = int(Path(marker).read_text())
    assert survived == {"result": f"survived in {_pid_of(toolset)}"} and _pid_of(toolset) != dead_pid
    assert toolset.connection.starts == starts + 1


async def test_a_server_that_cannot_start_is_unavailable_with_what_to_check(tmp_path: Path) -> None:
    tools = McpToolset(StdioServer("/bin/false"))
    with pytest.raises(McpUnavailableError, match="could not connect to MCP server '/bin/false'"):
        await tools.refresh_tools()
    await tools.close()


async def test_streamable_http_with_headers(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with http_server(log, headers={"X-Api-Key": "k-123"}) as server:
        tools = McpToolset(server, allow=["header", "refuse"])
        try:
            calls = [("header", {"name": "x-api-key"}), ("refuse", {"reason": "no"})]
            model = calling(calls)
            events = await InMemoryRunner(LlmAgent(name="a", model=model, tools=[tools])).run("go")
            assert sorted(model.requests[0].tools_dict) == ["header", "refuse"]
            header, refused = responses(events)
            assert header == {"result": "k-123"}
            assert "McpCallError" in refused["error"] and "refused: no" in refused["error"]
            assert [c["tool"] for c in calls_logged(log)] == ["header", "refuse"]
            assert all(c["key"] for c in calls_logged(log))
        finally:
            await tools.close()


async def test_eval_interception_wraps_the_tools_but_not_the_listing(toolset: McpToolset) -> None:
    """A durable eval's tool activity finds the intercepted MCP tools by name, and the toolset's own
    listing unwrapped (the listing is not a tool call of the system under test)."""
    agent = LlmAgent(name="a", model=calling([]), tools=[InterceptedToolset(toolset, Interception("case", {}))])
    runner = InMemoryRunner(agent)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    ctx = ReadonlyContext(runner.new_invocation_context(session))
    assert isinstance(await find_tool(agent, "add", ctx), InterceptedTool)
    assert isinstance(await find_tool(agent, f"{toolset.name}.list_tools", ctx), McpListTools)
    assert await find_tool(agent, "secret", ctx) is None  # denied: neither named nor listed


def _odd_listing(mode: str) -> McpToolset:
    """tests/mcp_servers/odd_listing.py: a server whose tools/list hangs or pages forever."""
    return McpToolset(StdioServer(sys.executable, [ODD_LISTING, mode]), call_timeout=timedelta(seconds=2))


async def test_a_server_that_never_answers_tools_list_fails_the_turn_within_call_timeout() -> None:
    # The SDK's tools/list has no read timeout: unbounded, the turn waited for ever (durably: every
    # attempt until the list activity's start_to_close). Bounded by call_timeout (2 s here).
    tools = _odd_listing("hang")
    try:
        runner = InMemoryRunner(LlmAgent(name="a", model=calling([("add", {"a": 1, "b": 2})]), tools=[tools]))
        with pytest.raises(ToolError, match="did not list its tools within 0:00:02") as raised:
            await asyncio.wait_for(runner.run("go"), timeout=30)
        assert isinstance(raised.value.__cause__, McpUnavailableError)
    finally:
        await tools.close()


async def test_a_listing_that_pages_forever_is_refused() -> None:
    endless = _odd_listing("endless")
    try:
        with pytest.raises(McpCallError, match="lists its tools in more than 100 pages"):
            await asyncio.wait_for(endless.refresh_tools(), timeout=30)
    finally:
        await endless.close()


async def test_a_call_does_not_wait_for_ever_for_the_listing_that_checks_its_answer() -> None:
    # A session that has not listed the tools lists them after a call, to check its answer against
    # the tool's output schema (the mcp client does, without a timeout): that listing is bounded too.
    once = _odd_listing("once")
    try:
        with pytest.raises(McpUnavailableError, match="did not list its tools to check the answer of tool 'add'"):
            await asyncio.wait_for(once.connection.call_tool("add", {"a": 1, "b": 2}, meta={},
                                                             timeout=timedelta(seconds=2)), timeout=30)  # fmt: skip
    finally:
        await once.close()


# Last: it stops the module's server.
async def test_close_stops_the_servers_process(toolset: McpToolset) -> None:
    await InMemoryRunner(LlmAgent(name="a", model=calling([("whoami", {})]), tools=[toolset])).run("who")
    pid = _pid_of(toolset)
    os.kill(pid, 0)  # running
    await toolset.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    await InMemoryRunner(LlmAgent(name="a", model=calling([("whoami", {})]), tools=[toolset])).run("again")
    assert _pid_of(toolset) != pid  # the next call started it again


async def test_an_http_server_that_went_away_fails_the_call_fast_and_is_reached_again(tmp_path: Path) -> None:
    log, port = tmp_path / "calls.jsonl", free_port()
    args: dict[str, Any] = {"meta": {}, "timeout": timedelta(seconds=30)}
    async with http_server(log, port=port) as server:
        tools = McpToolset(server)
        assert (await tools.connection.call_tool("add", {"a": 1, "b": 2}, **args)).structuredContent == {"result": 3}
    try:
        with pytest.raises(McpUnavailableError, match="went away"):  # at once, not after the 30 s timeout
            await asyncio.wait_for(tools.connection.call_tool("add", {"a": 1, "b": 2}, **args), timeout=10)
        async with http_server(log, port=port):
            assert (await tools.connection.call_tool("add", {"a": 2, "b": 2}, **args)).structuredContent == {"result": 4}
        assert tools.connection.starts == 2
    finally:
        await tools.close()


def _log(toolset: McpToolset) -> Path:
    assert isinstance(toolset.server, StdioServer)
    return Path(toolset.server.env["MCP_TEST_LOG"])


def _pid_of(toolset: McpToolset) -> int:
    return int(calls_logged(_log(toolset))[-1]["pid"])

