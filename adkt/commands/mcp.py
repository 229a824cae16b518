"""`adkt mcp APP`: serve an app as an MCP server (adkt/mcp_server.py), over stdio or streamable HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from adkt.commands._common import app_ref, run_async
from adkt.commands.run import Address, AppArg, DatabaseUrl
from adkt.commands.web import AllowedHosts, Insecure

if TYPE_CHECKING:
    from adkt.web.security import WebAccess


def mcp(
    app: AppArg,
    user: Annotated[str, typer.Option("--user", "-u", help="the user id the conversations belong to")] = "mcp",
    http: Annotated[int | None, typer.Option("--http", help="serve streamable HTTP on this port (default: stdio)")] = None,
    host: Annotated[str, typer.Option("--host", help="the address to listen on with --http")] = "127.0.0.1",
    address: Address = None,
    database_url: DatabaseUrl = None,
    allowed_host: AllowedHosts = None,
    insecure: Insecure = False,
) -> None:
    """Serve APP as an MCP server: one tool, named after the app, that sends a message to a durable
    conversation and answers with its final text. stdout carries the protocol (stdio); messages go to stderr.
    Over --http, callers authenticate as on `adkt api` (ADK_API_KEYS, OIDC: docs/security.md) and an
    authenticated caller's conversations are their own user's; beyond loopback, authentication or
    --insecure is required."""
    access = None
    hosts: list[str] = []
    if http is not None:
        from adk_core.errors import ConfigurationError
        from adkt.mcp_server import transport_security
        from adkt.settings import Settings
        from adkt.web.security import web_access

        settings = Settings.load().web
        hosts = [*settings.allowed_hosts, *(allowed_host or [])]
        try:  # the rule of adkt web/api/sim/a2a: no open server beyond loopback unless --insecure says so
            access = web_access(host, settings, allowed_hosts=allowed_host or [], insecure=insecure)
            transport_security(host, hosts)  # refuses what the MCP SDK's Host check cannot express
        except ConfigurationError as error:
            raise typer.BadParameter(str(error)) from None
    run_async(_serve(app, user, http, host, address, database_url, access, hosts))


async def _serve(spec: str, user: str, http: int | None, host: str, address: str | None, database_url: str | None,
                 access: WebAccess | None, allowed_hosts: list[str]) -> None:  # fmt: skip
    from adkt.commands._conversation import open_connection
    from adkt.commands._render import err
    from adkt.mcp_server import app_mcp_server, mcp_http_app

    loaded, name, parsed = app_ref(spec)
    async with open_connection(loaded, parsed, name, address=address, database_url=database_url) as connection:
        description = loaded.root_agent.description if loaded is not None else ""
        server = app_mcp_server(connection.client, name, description=description, user_id=user, host=host,
                                port=http or 8000, allowed_hosts=allowed_hosts)  # fmt: skip
        if http is not None and access is not None:
            import uvicorn

            err.print(f"serving {name!r} over MCP at http://{host}:{http}/mcp; {access.describe()}", markup=False)
            config = uvicorn.Config(mcp_http_app(server, access), host=host, port=http, log_level="warning")
            await uvicorn.Server(config).serve()
        else:
            await server.run_stdio_async()
