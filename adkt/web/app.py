"""The agent simulator's part of the web app (Starlette): its page and its JSON + SSE API.

    GET  /api/sessions                                  sessions, newest first, with pending counts
    GET  /api/sessions/{id}                             a session: head request, pending queue, timeline
    POST /api/sessions/{id}/turns/{turn_id}/decision    answer the head request (text or function calls)
    POST /api/sessions/{id}/complete                    active -> completed
    GET  /api/sessions/{id}/export                      the answered turns as a SimulatorExport (for an eval case)
    GET  /api/events                                    SSE: `change` with {"session_id"} on every change

Errors are JSON ``{"error": <type>, "message": <what to do>}`` with 400/404/409/422, never a 500
for a broken rule. docs/simulator.md documents the shapes. With authentication configured, every
route here needs the operator role (docs/security.md).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from adk_core.simulator import Decision, SimulatorError, SimulatorService, export_session

from .body import BodyError, read_json
from .security import AuthError, WebAccess, principal_of, require_operator
from .streams import simulator_changes

STATIC = Path(__file__).parent / "static"
KEEPALIVE_SECONDS = 15.0


def create_app(service: SimulatorService, *, access: WebAccess | None = None) -> Starlette:
    """The simulator alone (``adkt sim``), its page at ``/``: ``service`` is its store and, for
    durable runs, its ``deliver``. adkt/web/site.py serves it beside the dev page and API.
    ``access`` (default: loopback only, no authentication) guards every route (adkt/web/security)."""
    routes, handlers = simulator_routes(service)
    page = page_route(STATIC / "index.html")
    access = access or WebAccess.local()
    return Starlette(
        routes=[*routes, Route("/", page), Route("/sessions/{session_id}", page), static_files()],
        exception_handlers=handlers, middleware=access.middleware(),
    )


def static_files() -> Mount:
    return Mount("/static", StaticFiles(directory=STATIC), name="static")


def page_route(path: Path) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint that answers with the HTML file at ``path``."""

    async def page(request: Request) -> Response:
        return FileResponse(path)

    return page


def simulator_routes(service: SimulatorService) -> tuple[list[Route], dict]:
    """The simulator's API routes (``/api/sessions``, ``/api/events``) and its error handlers."""

    async def list_sessions(request: Request) -> Response:
        sessions = await service.list_sessions()
        return JSONResponse({"sessions": [s.model_dump(mode="json") for s in sessions]})

    async def get_session(request: Request) -> Response:
        view = await service.view(request.path_params["session_id"])
        return JSONResponse(view.model_dump(mode="json", exclude_none=True))

    async def submit_decision(request: Request) -> Response:
        try:  # bounded, and bad bytes or deep nesting are a 400 (body.py)
            body = await read_json(request, expected="a Decision object")
        except BodyError as e:
            return _error(e.status, e.kind, str(e))
        try:
            decision = Decision.model_validate(body)
        except ValidationError as e:
            return _error(422, "InvalidDecision", _first_error(e))
        response = await service.submit_decision(
            request.path_params["session_id"], request.path_params["turn_id"], decision
        )
        return JSONResponse({"response": response})

    async def complete(request: Request) -> Response:
        await service.complete(request.path_params["session_id"])
        return JSONResponse({"status": "completed"})

    async def export(request: Request) -> Response:
        exported = await export_session(service, request.path_params["session_id"])
        return JSONResponse(exported.model_dump(mode="json"))

    async def events(request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            async with simulator_changes(service.store) as changes:
                # Read the feed in its own task: timing out a wait on the feed itself would close it.
                queue: asyncio.Queue[str] = asyncio.Queue()

                async def pump() -> None:
                    async for session_id in changes:
                        queue.put_nowait(session_id)

                reader = asyncio.create_task(pump())
                try:
                    yield ": connected\n\n"
                    while True:
                        try:
                            session_id = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                        except TimeoutError:
                            if reader.done():
                                reader.result()  # the feed failed: end the stream with its error
                            yield ": keep-alive\n\n"
                            continue
                        yield f"event: change\ndata: {json.dumps({'session_id': session_id})}\n\n"
                finally:
                    reader.cancel()

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )

    async def simulator_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SimulatorError)
        return _error(exc.http_status, type(exc).__name__, str(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return _error(exc.status_code, "HttpError", exc.detail)

    # The simulator shows and steers every user's runs: all of it is an operator's (docs/security.md).
    op = _operator_only
    routes = [
        Route("/api/sessions", op(list_sessions)),
        Route("/api/sessions/{session_id}", op(get_session)),
        Route("/api/sessions/{session_id}/turns/{turn_id}/decision", op(submit_decision), methods=["POST"]),
        Route("/api/sessions/{session_id}/complete", op(complete), methods=["POST"]),
        Route("/api/sessions/{session_id}/export", op(export)),
        Route("/api/events", op(events)),
    ]
    return routes, {SimulatorError: simulator_error, HTTPException: http_error}


def _operator_only(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            require_operator(principal_of(request), "the simulator's API")
        except AuthError as e:
            return _error(e.status, e.kind, str(e))
        return await handler(request)

    return endpoint


def _error(status: int, kind: str, message: str) -> Response:
    return JSONResponse({"error": kind, "message": message}, status_code=status)


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(body)"
    return f"{where}: {first['msg']}; a decision is {{'text': ...}} or {{'function_calls': [{{'name', 'args'}}]}}"
