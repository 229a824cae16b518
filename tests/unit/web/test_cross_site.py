"""Cross-site requests are refused on the whole web app (issue 24, item 2): a page on another site
cannot make the developer's browser POST to the API or the simulator (no Origin of another site, no
``text/plain`` or form body, no bodyless POST), and DNS rebinding (a Host this server does not
answer for) reads nothing, on any route. Same-origin requests, as the pages make them, still work."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace

import httpx
import pytest
import pytest_asyncio

from adk_core import App, FunctionTool, InMemoryRunner, LlmAgent, ScriptedModel
from adk_core.sessions import InMemorySessionService
from adk_core.simulator import SimulatorPlugin, SimulatorService
from adkt.web.api.backend import ApiBackend
from adkt.web.api.errors import NoWorkerError
from adkt.web.api.models import AppInfo
from adkt.web.site import create_site

BASE = "http://127.0.0.1:8710"
SAME_ORIGIN = {"Origin": BASE, "Sec-Fetch-Site": "same-origin"}


def get_weather(city: str) -> dict:
    """Weather forecast for a city."""
    return {"city": city, "sky": "sunny"}


@dataclass
class _Backend(ApiBackend):
    """The API's backend with the Temporal side replaced by a log: a message that got through to
    sending shows up in ``reached`` (and is answered 503, as with no worker)."""

    reached: list[str] = field(default_factory=list)

    async def require_worker(self, app: str) -> None:
        self.reached.append(app)
        raise NoWorkerError(f"test: the message for {app!r} got through to sending")


@dataclass
class Site:
    http: httpx.AsyncClient
    backend: _Backend
    simulator: SimulatorService
    decision: str  # the decision endpoint of a request that waits for a person
    session_id: str
    run: asyncio.Task

    async def still_pending(self) -> bool:
        view = await self.simulator.view(self.session_id)
        return view.head is not None and f"/turns/{view.head.turn_id}/" in self.decision


MESSAGES = "/api/v1/apps/shop/users/ana/sessions/s1/messages"
CREATE = "/api/v1/apps/shop/users/ana/sessions"


@pytest_asyncio.fixture
async def site() -> AsyncIterator[Site]:
    simulator = SimulatorService()
    agent = LlmAgent(name="weather", model=ScriptedModel([]), tools=[FunctionTool(get_weather)])
    runner = InMemoryRunner(
        app=App(name="sim", root_agent=agent, plugins=[SimulatorPlugin(service=simulator)])
    )
    fake_temporal = SimpleNamespace(client=SimpleNamespace(namespace="default"))
    backend = _Backend(client=fake_temporal, sessions=InMemorySessionService(), apps=[AppInfo(name="shop")])  # type: ignore[arg-type]
    app = create_site(backend, simulator)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        async with simulator.store.changes() as changes:
            run = asyncio.create_task(runner.run("Weather in Rome?"))
            while (
                not await simulator.list_sessions() or not (await simulator.list_sessions())[0].pending_count
            ):
                await asyncio.wait_for(anext(changes), 5)
        [summary] = await simulator.list_sessions()
        view = await simulator.view(summary.session.id)
        assert view.head is not None
        decision = f"/api/sessions/{summary.session.id}/turns/{view.head.turn_id}/decision"
        yield Site(http, backend, simulator, decision, summary.session.id, run)
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)


DECISION = {"text": "Sunny."}
MESSAGE = {"text": "hello"}


@pytest.mark.parametrize(
    ("headers", "kind"),
    [
        ({"Origin": "https://evil.example", "Content-Type": "application/json"}, "CrossSiteRequest"),
        ({"Origin": "http://127.0.0.1:9999", "Content-Type": "application/json"}, "CrossSiteRequest"),
        ({"Origin": "null", "Content-Type": "application/json"}, "CrossSiteRequest"),
        ({"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, "CrossSiteRequest"),
        ({"Sec-Fetch-Site": "same-site", "Content-Type": "application/json"}, "CrossSiteRequest"),
        ({**SAME_ORIGIN, "Content-Type": "text/plain"}, "UnsupportedMediaType"),
        ({"Content-Type": "text/plain;charset=UTF-8"}, "UnsupportedMediaType"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, "UnsupportedMediaType"),
        ({"Content-Type": "multipart/form-data; boundary=x"}, "UnsupportedMediaType"),
        ({}, "UnsupportedMediaType"),
    ],
)
async def test_cross_site_writes_are_refused_and_run_nothing(
    site: Site, headers: dict[str, str], kind: str
) -> None:
    message = await site.http.post(MESSAGES, content=json.dumps(MESSAGE), headers=headers)
    assert message.status_code in (403, 415), message.text
    assert message.json()["error"] == kind
    assert site.backend.reached == []  # nothing was sent to the conversation

    decided = await site.http.post(site.decision, content=json.dumps(DECISION), headers=headers)
    assert decided.status_code in (403, 415), decided.text
    assert decided.json()["error"] == kind
    assert await site.still_pending()  # the agent still waits: no decision was made
    assert not site.run.done()


async def test_a_bodyless_post_needs_json_too(site: Site) -> None:
    # A cross-site page can POST without a body and without preflight: it must not create a session.
    created = await site.http.post(CREATE)
    assert created.status_code == 415, created.text
    assert "Content-Type: application/json" in created.json()["message"]
    assert (await site.backend.sessions.list_sessions(app_name="shop", user_id="ana")).sessions == []
    completed = await site.http.post(f"/api/sessions/{site.session_id}/complete")
    assert completed.status_code == 415
    assert (await site.simulator.view(site.session_id)).session.status == "active"


async def test_same_origin_requests_as_the_pages_make_them_still_work(site: Site) -> None:
    # The dev page: fetch() with a JSON body from the page's own origin.
    created = await site.http.post(CREATE, json={}, headers=SAME_ORIGIN)
    assert created.status_code == 201, created.text
    sent = await site.http.post(MESSAGES, json=MESSAGE, headers=SAME_ORIGIN)
    assert sent.status_code == 503 and site.backend.reached == ["shop"]  # got through to sending
    # A client that is not a browser (no Origin, no Sec-Fetch-Site) and a typed-in URL ("none").
    assert (await site.http.post(MESSAGES, json=MESSAGE)).status_code == 503
    assert (
        await site.http.post(MESSAGES, json=MESSAGE, headers={"Sec-Fetch-Site": "none"})
    ).status_code == 503
    assert (await site.http.get("/api/v1/apps/shop/sessions?user_id=ana")).json()["sessions"][0][
        "user_id"
    ] == "ana"
    # The simulator's page answering its head request.
    decided = await site.http.post(
        site.decision, json=DECISION, headers={**SAME_ORIGIN, "Content-Type": "application/json"}
    )
    assert decided.status_code == 200, decided.text
    # Reads stay open to a navigation from another site (a link to the page).
    page = await site.http.get("/", headers={"Sec-Fetch-Site": "cross-site"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")


REBINDING_ROUTES = [
    "/",
    "/sim",
    "/static/dev.js",
    "/api/v1/apps",
    "/api/v1/openapi.json",
    "/api/v1/apps/shop/sessions",
    "/api/v1/apps/shop/users/ana/sessions/s1",
    "/api/sessions",
    "/api/events",
]


@pytest.mark.parametrize(
    "host", ["evil.example:8710", "evil.example", "127.0.0.1.evil.example:8710", "10.0.0.7:8710"]
)
@pytest.mark.parametrize("path", REBINDING_ROUTES)
async def test_a_host_not_in_the_allowlist_is_refused_on_every_route(
    site: Site, host: str, path: str
) -> None:
    # asyncio.wait_for: without the guard, /api/events streams forever.
    response = await asyncio.wait_for(site.http.get(path, headers={"Host": host}), 5)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "HostNotAllowed"
    assert "--allowed-host" in body["message"] and "ADK_ALLOWED_HOSTS" in body["message"]


async def test_rebinding_writes_are_refused_before_anything_runs(site: Site) -> None:
    headers = {"Host": "evil.example:8710", "Origin": "http://evil.example:8710"}
    assert (await site.http.post(MESSAGES, json=MESSAGE, headers=headers)).status_code == 400
    assert (await site.http.post(site.decision, json=DECISION, headers=headers)).status_code == 400
    assert site.backend.reached == [] and await site.still_pending()


@pytest.mark.parametrize("host", ["localhost:8710", "127.0.0.1:8710", "[::1]:8710", "LOCALHOST", "127.0.0.1"])
async def test_the_loopback_names_are_allowed(site: Site, host: str) -> None:
    assert (await site.http.get("/api/v1/apps", headers={"Host": host})).status_code == 200


async def test_a_websocket_from_a_rebinding_host_is_closed() -> None:
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.testclient import TestClient
    from starlette.websockets import WebSocket, WebSocketDisconnect

    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text("open")
        await websocket.close()

    from adkt.web.security import WebAccess

    app = Starlette(routes=[WebSocketRoute("/ws", echo)], middleware=WebAccess.local().middleware())
    with TestClient(app, base_url="http://127.0.0.1") as client:
        with client.websocket_connect("/ws", headers={"Host": "127.0.0.1:8710"}) as ws:
            assert ws.receive_text() == "open"
        with pytest.raises(WebSocketDisconnect) as closed:
            with client.websocket_connect("/ws", headers={"Host": "evil.example"}):
                pass
        assert closed.value.code == 1008 and "DNS rebinding" in closed.value.reason
