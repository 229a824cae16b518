"""A real MCP server for the McpToolset tests, built with the mcp package's own FastMCP.

    python tests/mcp_servers/server.py stdio
    python tests/mcp_servers/server.py http PORT

Every call is appended to the file named by MCP_TEST_LOG (if set) as a JSON line
{"tool", "key", "pid"}: the tests read which idempotency keys reached the server, and in which process.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from mcp.server.fastmcp import Context, FastMCP

IDEMPOTENCY_META_KEY = "adk-temporal/idempotency-key"  # adk_core.tools.mcp.IDEMPOTENCY_META_KEY

server = FastMCP("adk-test", host="127.0.0.1", port=int(sys.argv[2]) if len(sys.argv) > 2 else 8000)


def _record(tool: str, ctx: Context) -> str | None:
    meta = ctx.request_context.meta
    key = (meta.model_extra or {}).get(IDEMPOTENCY_META_KEY) if meta is not None else None
    log = os.environ.get("MCP_TEST_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"tool": tool, "key": key, "pid": os.getpid()}) + "\n")
    return key


@server.tool()
def add(a: int, b: int, ctx: Context) -> int:
    """Add two integers."""
    _record("add", ctx)
    return a + b


@server.tool(name="math.double")
def double(x: int, ctx: Context) -> int:
    """Twice x (a name with a dot, as MCP allows and model providers refuse)."""
    _record("math.double", ctx)
    return 2 * x


@server.tool()
def whoami(ctx: Context) -> dict:
    """The idempotency key this call carried and the server's process id."""
    return {"key": _record("whoami", ctx), "pid": os.getpid()}


@server.tool()
def refuse(reason: str, ctx: Context) -> str:
    """Always fails with the given reason."""
    _record("refuse", ctx)
    raise ValueError(f"refused: {reason}")


@server.tool()
def die_once(marker: str, ctx: Context) -> str:
    """Kills this server's process the first time (when ``marker`` does not exist yet)."""
    _record("die_once", ctx)
    path = Path(marker)
    if not path.exists():
        path.write_text(str(os.getpid()))
        os._exit(3)
    return f"survived in {os.getpid()}"


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleeps, then answers."""
    _record("slow", ctx)
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP request header (streamable HTTP only)."""
    _record("header", ctx)
    request = ctx.request_context.request
    return request.headers.get(name, "") if request is not None else ""


@server.tool()
async def slow_once(marker: str, ctx: Context) -> str:
    """Hangs for a minute the first time (writing ``marker`` with this process's id), answers at once after."""
    _record("slow_once", ctx)
    path = Path(marker)
    if not path.exists():
        path.write_text(str(os.getpid()))
        await asyncio.sleep(60)
    return f"done in {os.getpid()}"


@server.tool()
def secret(ctx: Context) -> str:
    """A tool the tests hide with a filter."""
    _record("secret", ctx)
    return "hidden"


if __name__ == "__main__":
    server.run(transport="streamable-http" if sys.argv[1] == "http" else "stdio")
