"""Serving the web app against the sessions database and Temporal (``adkt sim``, ``adkt web``,
``adkt api``, ``adkt dev``)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import socket
from collections.abc import AsyncIterator

import uvicorn
from temporalio.client import Client

from adk_core.errors import ConfigurationError
from adk_core.simulator import SimulatorService
from adk_core.simulator.sql import SqlSimulatorStore

from .api.backend import ApiBackend
from .app import create_app
from .deliver import temporal_deliver
from .security import WebAccess, web_access


def durable_service(database_url: str, client: Client) -> SimulatorService:
    """The simulator as a web server sees it: the store in Postgres, decisions sent by Update."""
    return SimulatorService(SqlSimulatorStore(database_url), deliver=temporal_deliver(client))


def server(
    service: SimulatorService | None, *, host: str = "127.0.0.1", port: int = 8710, api: ApiBackend | None = None,
    page: bool = True, access: WebAccess | None = None,
) -> uvicorn.Server:
    """A uvicorn server for the app; ``await server.serve()``. Open SSE streams end at shutdown.
    With ``api``, the dev page and HTTP API too (the simulator's page moves to /sim); without
    ``service``, no simulator. ``access`` defaults to ``web_access(host)``: the loopback names and
    ``host`` allowed, no authentication."""
    from .site import create_site

    access = access or web_access(host)
    if api is None and service is not None:
        app = create_app(service, access=access)
    else:
        app = create_site(api, service, page=page, access=access)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=1, lifespan="off"
    )
    return uvicorn.Server(config)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket for the app, bound here so that a taken port is our clear error rather
    than uvicorn's ``sys.exit`` inside a task (port 0: any free port)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigurationError(
            f"the web app cannot listen on {host}:{port} ({e.strerror}); pick another port with --sim-port "
            "for `adkt dev`, --port for `adkt sim`, `adkt web` and `adkt api`"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


@contextlib.asynccontextmanager
async def serving(
    service: SimulatorService | None, *, host: str = "127.0.0.1", port: int = 8710, api: ApiBackend | None = None,
    page: bool = True, access: WebAccess | None = None,
) -> AsyncIterator[str]:
    """Serve the app in the background for the duration of the context; yields its URL."""
    sock = bind(host, port)
    web = server(service, host=host, port=port, api=api, page=page, access=access)
    task = asyncio.create_task(web.serve(sockets=[sock]))
    try:
        while not web.started:
            if task.done():
                task.result()
                raise ConfigurationError(f"the web server on {host}:{port} stopped while starting")
            await asyncio.sleep(0.02)
        bound_port = sock.getsockname()[1]
        url = f"http://{host}:{bound_port}"
        if api is not None and page:
            # Conversations started from the page link back to it from the Temporal UI; a copy, so
            # a client shared with other code does not start linking to this page.
            api.client = copy.copy(api.client)
            api.client.page_url = url
        yield url
    finally:
        web.should_exit = True
        await asyncio.gather(task, return_exceptions=True)
        sock.close()
