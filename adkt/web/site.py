"""The one web app: the dev chat page and the HTTP API (/api/v1), with the agent simulator beside
them (its page at /sim, its API at /api/sessions and /api/events, as `adkt sim` serves it).

    /                       the dev chat page (static/dev.html)       when an ApiBackend is given
    /api/v1/...             the HTTP API (adkt/web/api; /api/v1/openapi.json)
    /sim, /sim/sessions/ID  the simulator's page                      when a SimulatorService is given
    /api/sessions, /api/events   the simulator's API
    /static/...             the pages' HTML, JS and CSS
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from adk_core.simulator import SimulatorService

from .api.backend import ApiBackend
from .api.dispatch import METHODS, api_endpoint
from .api.routes import PREFIX
from .app import STATIC, page_route, simulator_routes, static_files
from .security import WebAccess

SIMULATOR_PAGE = "/sim"


def create_site(
    api: ApiBackend | None = None, simulator: SimulatorService | None = None, *, page: bool = True,
    access: WebAccess | None = None,
) -> Starlette:
    """The web app with the parts given. ``page=False`` serves the API without the chat page (`adkt api`).
    ``access`` (default: loopback only, no authentication) guards every route (adkt/web/security)."""
    routes: list[BaseRoute] = []
    handlers: dict = {}
    if simulator is not None:
        sim_routes, handlers = simulator_routes(simulator)
        sim_page = page_route(STATIC / "index.html")
        routes += [*sim_routes, Route(SIMULATOR_PAGE, sim_page), Route(SIMULATOR_PAGE + "/sessions/{session_id}", sim_page)]
    if api is not None:
        api.simulator_page = SIMULATOR_PAGE if simulator is not None else None
        routes.append(Route(PREFIX + "/{rest:path}", api_endpoint(api), methods=METHODS))
        routes.append(Route("/", page_route(STATIC / "dev.html") if page else _api_index))
    routes.append(static_files())
    access = access or WebAccess.local()
    return Starlette(routes=routes, exception_handlers=handlers, middleware=access.middleware())


async def _api_index(request: Request) -> Response:
    return JSONResponse({"api": PREFIX, "openapi": f"{PREFIX}/openapi.json", "docs": "docs/web.md"})
