"""`adkt sim`: the agent simulator's web page, where a person answers agents' model requests."""

from __future__ import annotations

from typing import Annotated

import typer

from adkt.commands._common import run_async
from adkt.commands._render import err
from adkt.commands.serve import DatabaseUrl, _require_url
from adkt.settings import Settings


def sim(
    host: Annotated[str, typer.Option("--host", help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="port of the page and API")] = 8710,
    address: Annotated[str | None, typer.Option("--address", help="Temporal address (default: TEMPORAL_ADDRESS)")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve the simulator: sessions whose agents wait for a person, and the page to answer them."""
    run_async(_sim(host, port, address, database_url))


async def _sim(host: str, port: int, address: str | None, database_url: str | None) -> None:
    from adk_core.sessions.sql import migrate
    from adkt.client import connect
    from adkt.commands._devstate import resolve
    from adkt.web.serve import durable_service, server

    target = resolve(Settings.load(), address=address, database_url=database_url)
    url = _require_url(target.database_url)
    await migrate(url)
    client = await connect(target.address, namespace=target.namespace)
    service = durable_service(url, client)
    err.print(f"simulator on http://{host}:{port} (Temporal at {target.address})")
    try:
        await server(service, host=host, port=port).serve()
    finally:
        await service.store.close()
