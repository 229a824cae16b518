"""Liveness and readiness for an orchestrator's probes (`adkt worker --health-port`).

    /livez   200 while the process serves requests at all: restart the pod when this fails
    /readyz  200 when every Temporal worker of the process is running and the Temporal service
             answers; 503 with the reason otherwise (starting, stopping, or the service unreachable)

A worker takes its work by polling Temporal, so readiness gates no traffic to the pod; it tells a
rollout when a new version's workers are really polling, and an operator which pod lost its server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client

from adk_temporal.asgi import serving_asgi
from adk_temporal.worker import AdkWorker

SERVICE_CHECK_SECONDS = 2.0
"""How long a readiness probe waits for the Temporal service before it reports it unreachable."""


def health_app(worker: AdkWorker, client: Client) -> Starlette:
    async def livez(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok\n")

    async def readyz(_: Request) -> JSONResponse:
        if worker.stopping:  # draining: its workers still run (is_running) until the drain ends
            return JSONResponse({"ready": False, "reason": "stopping: finishing the tasks in flight"}, status_code=503)
        stopped = [w.task_queue for w in worker.workers if not w.is_running]
        if stopped:
            return JSONResponse({"ready": False, "reason": f"not polling: {', '.join(stopped)}"}, status_code=503)
        try:
            await asyncio.wait_for(
                client.workflow_service.get_system_info(GetSystemInfoRequest()), timeout=SERVICE_CHECK_SECONDS
            )
        except Exception as e:  # noqa: BLE001  (any failure to reach the service is "not ready", said why)
            reason = f"Temporal service unreachable: {type(e).__name__}: {e}"
            return JSONResponse({"ready": False, "reason": reason}, status_code=503)
        return JSONResponse({"ready": True, "task_queues": worker.task_queues})

    return Starlette(routes=[Route("/livez", livez), Route("/readyz", readyz)])


@contextlib.asynccontextmanager
async def serving_health(worker: AdkWorker, client: Client, port: int | None, host: str = "0.0.0.0") -> AsyncIterator[str | None]:
    """Serve the probes on ``port`` (0: any free port) while the block runs; yields the base URL, or
    None (and serves nothing) when ``port`` is None."""
    if port is None:
        yield None
        return
    async with serving_asgi(health_app(worker, client), host=host, port=port, what="health endpoint",
                            fix="pick another --health-port (ADK_HEALTH_PORT)") as url:  # fmt: skip
        yield url
