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
from collections.abc import Sequence
from typing import Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

from adk_core.errors import ConfigurationError
from adk_core.tools.mcp import IDEMPOTENCY_META_KEY
from adkt.client import AdkClient
from adkt.web.security import WebAccess, default_hosts
from adkt.web.security.principal import PRINCIPAL_KEY, Principal


def app_mcp_server(
    client: AdkClient, app: str, *, description: str = "", user_id: str = "mcp", host: str = "127.0.0.1", port: int = 8000,
    allowed_hosts: Sequence[str] = (),
) -> FastMCP:
    """A FastMCP server whose one tool sends a message to ``app`` through ``client``. Over HTTP it answers
    only for the loopback names, ``host`` (unless a wildcard) and ``allowed_hosts`` (transport_security);
    ``mcp_http_app`` puts the web app's authentication in front of it."""
    server = FastMCP(f"adk-{app}", host=host, port=port, transport_security=transport_security(host, allowed_hosts))

    async def ask(message: str, ctx: Context, session_id: str | None = None) -> dict[str, Any]:
        session = session_id or uuid.uuid4().hex[:12]
        result = await client.send(app, caller_user(ctx, user_id), session, message, message_id=message_id(ctx))
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


def caller_user(ctx: Context, default: str) -> str:
    """The authenticated caller's user (API key or OIDC, as ``adkt api``), so one caller cannot go on with
    another's conversation by its session id; ``default`` (``--user``) over stdio, on loopback without
    authentication and with --insecure."""
    request = ctx.request_context.request
    principal = getattr(request, "scope", {}).get(PRINCIPAL_KEY) if request is not None else None
    return principal.user if isinstance(principal, Principal) and principal.user is not None else default


def transport_security(host: str, allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """The MCP SDK's Host and Origin check (DNS rebinding), always on. FastMCP turns it on by itself only
    for a loopback ``host``: bound to 0.0.0.0 it answered any Host. The SDK matches names exactly
    (``name`` or ``name:*``), so a domain (``.example.com``) cannot be given here; ``*`` turns the check
    off for a proxy that checks Host itself, as it allows any Host in adkt's own guard."""
    names = [*default_hosts(host), *(h.strip() for h in allowed_hosts if h.strip())]
    if "*" in names:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    domains = [n for n in names if n.startswith(".")]
    if domains:
        raise ConfigurationError(
            f"adkt mcp takes exact host names for --allowed-host and ADK_ALLOWED_HOSTS, not {domains[0]!r} (the MCP "
            "SDK compares Host exactly); list each name, e.g. mcp.example.com"
        )
    hosts = [f"[{n}]" if ":" in n and not n.startswith("[") else n for n in dict.fromkeys(n.lower() for n in names)]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[pattern for h in hosts for pattern in (h, f"{h}:*")],
        allowed_origins=[f"{scheme}://{h}{port}" for h in hosts for scheme in ("http", "https") for port in ("", ":*")],
    )


def mcp_http_app(server: FastMCP, access: WebAccess) -> Starlette:
    """The server's streamable HTTP app behind the web app's guard and authentication (``access``, from
    adkt.web.security.web_access: a non-loopback host needs API keys or OIDC, or --insecure)."""
    app = server.streamable_http_app()
    for middleware in reversed(access.middleware()):  # add_middleware puts each outside the ones before it
        app.add_middleware(middleware.cls, *middleware.args, **middleware.kwargs)
    return app
