"""Starting the test MCP server (tests/mcp_servers/server.py) and scripting a model that calls its tools."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from adk_core.models import (
    LlmRequest,
    LlmResponse,
    ScriptedModel,
    function_call_response,
    text_response,
    tool_responses_this_turn,
)
from adk_core.tools.mcp import HttpServer, StdioServer

SERVER = str(Path(__file__).with_name("server.py"))


def stdio_server(log: Path) -> StdioServer:
    return StdioServer(sys.executable, [SERVER, "stdio"], env={"MCP_TEST_LOG": str(log)})


def calls_logged(log: Path) -> list[dict[str, Any]]:
    """What the server recorded, one dict per call: tool, key (the idempotency key), pid."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def http_server(
    log: Path, headers: dict[str, str] | None = None, port: int | None = None
) -> AsyncIterator[HttpServer]:
    """The test server on streamable HTTP on a loopback port (default: a free one), stopped (bounded) at the end."""
    port = port or free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)],
        env={"MCP_TEST_LOG": str(log), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):  # up to 20 s
            if process.poll() is not None:
                raise AssertionError(f"the MCP test server exited with {process.returncode}")
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the MCP test server did not listen within 20 s")
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", headers=headers or {})
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def calling(calls: Sequence[tuple[str, dict[str, Any]]], final: str = "done") -> ScriptedModel:
    """A model that makes ``calls`` one per model call, then answers ``final``. A function of the
    request, so a retried or relocated model activity gives the same answer."""

    def answer(request: LlmRequest) -> LlmResponse:
        made = len(tool_responses_this_turn(request))
        if made < len(calls):
            name, args = calls[made]
            return function_call_response(name, args)
        return text_response(final)

    return ScriptedModel(answer)
