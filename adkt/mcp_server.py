"""An app served as an MCP server: MCP clients (another agent's McpToolset, a desktop assistant)
call a durable conversation as a tool. ``adkt mcp APP`` runs it (stdio, or streamable HTTP).

The app is one tool, named after it: ``message`` (and optionally ``session_id``, to go on with a
conversation) in, the turn's final text and the session id out. The turn runs in the app's
SessionWorkflow, so it survives worker restarts. When the caller sends an idempotency key in the
request's ``_meta`` (McpToolset does, under adk_core.tools.mcp.IDEMPOTENCY_META_KEY), it becomes
the message's id: a call the caller repeats gets the first turn's result instead of a second turn.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

from mcp.server.fastmcp import Context, FastMCP

from adk_core.tools.mcp import IDEMPOTENCY_META_KEY
from adkt.client import AdkClient


def app_mcp_server(
    client: AdkClient, app: str, *, description: str = "", user_id: str = "mcp", host: str = "127.0.0.1", port: int = 8000
) -> FastMCP:
    """A FastMCP server whose one tool sends a message to ``app`` through ``client``."""
    server = FastMCP(f"adk-{app}", host=host, port=port)

    async def ask(message: str, ctx: Context, session_id: str | None = None) -> dict[str, Any]:
        session = session_id or uuid.uuid4().hex[:12]
        result = await client.send(app, user_id, session, message, message_id=message_id(ctx))
        return {"text": result.final_text, "session_id": session}

    server.add_tool(
        ask,
        name=re.sub(r"[^A-Za-z0-9_-]+", "_", app)[:64],  # what every model provider accepts
        description=description or f"Ask the agent app {app!r}. Pass session_id from an earlier answer to go on with that conversation.",
    )
    return server


def message_id(ctx: Context) -> str | None:
    """The message id for the caller's idempotency key (a digest: keys are the caller's own format)."""
    meta = ctx.request_context.meta
    key = (meta.model_extra or {}).get(IDEMPOTENCY_META_KEY) if meta is not None else None
    if not isinstance(key, str) or not key:
        return None
    return "mcp-" + hashlib.sha256(key.encode()).hexdigest()[:32]
