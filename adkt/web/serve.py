"""Serving the web app against the sessions database and Temporal (``adkt sim``)."""

from __future__ import annotations

import uvicorn
from temporalio.client import Client

from adk_core.simulator import SimulatorService
from adk_core.simulator.sql import SqlSimulatorStore

from .app import create_app
from .deliver import temporal_deliver


def durable_service(database_url: str, client: Client) -> SimulatorService:
    """The simulator as a web server sees it: the store in Postgres, decisions sent by Update."""
    return SimulatorService(SqlSimulatorStore(database_url), deliver=temporal_deliver(client))


def server(service: SimulatorService, *, host: str = "127.0.0.1", port: int = 8710) -> uvicorn.Server:
    """A uvicorn server for the app; ``await server.serve()``. Open SSE streams end at shutdown."""
    config = uvicorn.Config(
        create_app(service), host=host, port=port, log_level="warning", timeout_graceful_shutdown=1, lifespan="off"
    )
    return uvicorn.Server(config)
