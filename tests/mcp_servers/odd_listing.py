"""A real MCP server (the mcp package's FastMCP, stdio) whose tools/list misbehaves; its tools still
answer tools/call.

    python tests/mcp_servers/odd_listing.py hang       tools/list never answers (a hung server)
    python tests/mcp_servers/odd_listing.py once       tools/list answers once, then hangs (the server
                                                       itself lists once, for its first tools/call)
    python tests/mcp_servers/odd_listing.py endless    every page of tools/list names a next page
"""

from __future__ import annotations

import asyncio
import sys

from mcp import types
from mcp.server.fastmcp import FastMCP

MODE = sys.argv[1] if len(sys.argv) > 1 else "hang"


class OddListing(FastMCP):
    listed = 0

    async def list_tools(self) -> list[types.Tool]:  # FastMCP registers this as the tools/list handler
        self.listed += 1
        if MODE == "hang" or (MODE == "once" and self.listed > 1):
            await asyncio.sleep(3600)
        return await super().list_tools()


server = OddListing("odd-listing")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if MODE == "endless":

    @server._mcp_server.list_tools()  # noqa: SLF001  (a handler that pages: FastMCP's does not)
    async def endless(request: types.ListToolsRequest) -> types.ListToolsResult:
        tools = await FastMCP.list_tools(server)
        return types.ListToolsResult(tools=tools, nextCursor="more")


if __name__ == "__main__":
    server.run("stdio")
