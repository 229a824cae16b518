"""`adkt mcp APP`: serve an app as an MCP server (adkt/mcp_server.py), over stdio or streamable HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from adkt.commands._common import app_ref, run_async
from adkt.commands.run import Address, AppArg, DatabaseUrl


def mcp(
    app: AppArg,
    user: Annotated[str, typer.Option("--user", "-u", help="the user id the conversations belong to")] = "mcp",
    http: Annotated[int | None, typer.Option("--http", help="serve streamable HTTP on this port (default: stdio)")] = None,
    host: Annotated[str, typer.Option("--host", help="the address to listen on with --http")] = "127.0.0.1",
    address: Address = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve APP as an MCP server: one tool, named after the app, that sends a message to a durable
    conversation and answers with its final text. stdout carries the protocol (stdio); messages go to stderr."""
    run_async(_serve(app, user, http, host, address, database_url))


async def _serve(spec: str, user: str, http: int | None, host: str, address: str | None, database_url: str | None) -> None:
    from adkt.commands._conversation import open_connection
    from adkt.mcp_server import app_mcp_server

    loaded, name, parsed = app_ref(spec)
    async with open_connection(loaded, parsed, name, address=address, database_url=database_url) as connection:
        description = loaded.root_agent.description if loaded is not None else ""
        server = app_mcp_server(connection.client, name, description=description, user_id=user, host=host,
                                port=http or 8000)  # fmt: skip
        if http is not None:
            await server.run_streamable_http_async()
        else:
            await server.run_stdio_async()
