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
    allowed_host: Annotated[
        list[str] | None,
        typer.Option("--allowed-host", help="a Host name to answer for besides the loopback names and --host "
                     "(repeatable; also ADK_ALLOWED_HOSTS)"),
    ] = None,
    insecure: Annotated[
        bool,
        typer.Option("--insecure", help="serve a non-loopback --host without authentication (anyone who reaches the "
                     "port is an operator; docs/security.md)"),
    ] = False,
    export: Annotated[
        str | None,
        typer.Option("--export", metavar="SESSION_ID", help="print a simulator session as JSON for an eval case, and exit"),
    ] = None,
) -> None:
    """Serve the simulator: sessions whose agents wait for a person, and the page to answer them.

    With --export SESSION_ID, print that session's answered turns instead (a SimulatorExport:
    `adk_core.simulator.eval_case(SimulatorExport.model_validate_json(...), app)` replays it).
    """
    if export is not None:
        run_async(_export(export, database_url))
        return
    run_async(_sim(host, port, address, database_url, allowed_host or [], insecure))


async def _export(session_id: str, database_url: str | None) -> None:
    from adk_core.simulator import SimulatorService, export_session
    from adk_core.simulator.sql import SqlSimulatorStore
    from adkt.commands._devstate import resolve_database_url

    url = _require_url(resolve_database_url(Settings.load(), database_url))
    store = SqlSimulatorStore(url)
    try:
        exported = await export_session(SimulatorService(store), session_id)
    finally:
        await store.close()
    print(exported.model_dump_json(indent=2))


async def _sim(
    host: str, port: int, address: str | None, database_url: str | None, allowed_hosts: list[str], insecure: bool
) -> None:
    from adk_core.sql import migrate
    from adkt.client import connect
    from adkt.commands._devstate import resolve
    from adkt.web.security import web_access
    from adkt.web.serve import durable_service, server

    settings = Settings.load()
    access = web_access(host, settings.web, allowed_hosts=allowed_hosts, insecure=insecure)
    target = resolve(settings, address=address, database_url=database_url)
    url = _require_url(target.database_url)
    await migrate(url)
    client = await connect(target.address, namespace=target.namespace)
    service = durable_service(url, client)
    err.print(f"simulator on http://{host}:{port} (Temporal at {target.address}; {access.describe()})")
    try:
        await server(service, host=host, port=port, access=access).serve()
    finally:
        await service.store.close()
