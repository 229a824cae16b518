"""An agent using the tools of an MCP server, durably.

    python -m examples.mcp_tools                                  # in-process, scripted model
    adkt run examples.mcp_tools:app "Reserve 2 of SKU-7"          # durable, embedded servers

The server (examples/mcp_inventory_server.py, built with the mcp package's FastMCP) keeps a small stock. The agent
reaches it through ``McpToolset``: the worker starts the server as a child process on first use,
lists its tools once, and stops it when the worker stops. In a durable run the list of tools a turn
used and every call are activities, so a replay sees the same tools and a call that lost its worker
runs again elsewhere, with the same idempotency key in the request's ``_meta``. The server uses
that key to reserve once however often the call arrives (docs/tools.md).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from adk_core import App, InMemoryRunner, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import McpToolset, StdioServer

ROOT = Path(__file__).resolve().parents[1]

inventory = McpToolset(
    StdioServer(sys.executable, ["-m", "examples.mcp_inventory_server"], cwd=str(ROOT)),
    name="inventory",
    deny=["restock"],  # an operator's tool: the agent never sees it
)


def script(request: LlmRequest) -> LlmResponse:
    """Stands in for a real model: check stock, reserve, then answer from the results."""
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("stock", {"sku": "SKU-7"})
    if len(done) == 1:
        return function_call_response("reserve", {"sku": "SKU-7", "quantity": 2})
    return text_response(f"Reserved: {done[-1]}")


agent = LlmAgent(
    name="clerk",
    model=ScriptedModel(script),
    instruction="Check the stock before you reserve anything.",
    tools=[inventory],
)
app = App(name="mcp_tools", root_agent=agent)


async def main() -> None:
    try:
        events = await InMemoryRunner(app=app).run("Reserve 2 of SKU-7")
        print(events[-1].text)
    finally:
        await inventory.close()  # in-process the program owns the server's process


if __name__ == "__main__":
    asyncio.run(main())
