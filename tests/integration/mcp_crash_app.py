"""The app tests/integration/test_mcp_crash.py runs in worker subprocesses it SIGKILLs: one call of
the MCP test server's ``slow_once`` (over stdio, a process of each worker), then "done".

$CRASH_MARKER_DIR holds the marker the first attempt writes before it hangs; $MCP_TEST_LOG is
where the server records each call (tool, idempotency key, pid).
"""

from __future__ import annotations

import dataclasses
import os
from datetime import timedelta
from pathlib import Path

from adk_core import App, LlmAgent
from adk_core.tools import McpToolset, ToolExecution
from adk_core.tools.mcp import DEFAULT_EXECUTION
from tests.mcp_servers.helpers import calling, stdio_server

MARKER = "mcp.marker"

toolset = McpToolset(
    stdio_server(Path(os.environ.get("MCP_TEST_LOG", os.devnull))),
    name="slow",
    allow=["slow_once"],
    # A short heartbeat timeout: the dead worker's call is noticed in 3 s, not 10, and retried after
    # 0.2 s, not 1 s (tests/integration/test_crash.py keeps one crash on the defaults).
    execution=ToolExecution(
        heartbeat_timeout=timedelta(seconds=3), retry_errors=True,
        retry=dataclasses.replace(DEFAULT_EXECUTION.retry, initial_interval=timedelta(milliseconds=200)),
    ),
)
marker = str(Path(os.environ.get("CRASH_MARKER_DIR", ".")) / MARKER)
app = App(
    name="mcp_crash",
    root_agent=LlmAgent(name="crasher", model=calling([("slow_once", {"marker": marker})]), tools=[toolset]),
)
