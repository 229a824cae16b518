"""Users and credentials on the real stack (issue 24, item 2): the HTTP API on a real uvicorn server
over real Temporal and Postgres, with API keys. A user's turn runs and streams; another user's
credentials reach none of it (session, events, pending requests, stream, reply); a cross-site
text/plain POST runs nothing."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import pytest_asyncio
from httpx_sse import aconnect_sse

from adkt.settings import WebSettings
from adkt.web.api.backend import ApiBackend
from adkt.web.api.models import AppInfo
from adkt.web.security import web_access
from adkt.web.serve import serving
from tests.browser import dev_app
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

ANA = {"Authorization": "Bearer ana-key-0123456789abcdefghijklmnop"}
BOB = {"Authorization": "Bearer bob-key-0123456789abcdefghijklmnop"}
OPS = {"Authorization": "Bearer ops-key-0123456789abcdefghijklmnop"}
KEYS = ",".join(f"{who}:{h['Authorization'].split()[1]}" for who, h in (("ana", ANA), ("bob", BOB))) + (
    f",ops:{OPS['Authorization'].split()[1]}:operator"
)


@dataclass
class Served:
    http: httpx.AsyncClient
    app: str
    stack: DurableStack


@pytest_asyncio.fixture(loop_scope="session")
async def served(durable_stack: DurableStack) -> AsyncIterator[Served]:
    app = durable_stack.register(dev_app.teller(f"auth_teller_{uuid.uuid4().hex[:6]}")).name
    backend = ApiBackend.open(durable_stack.client, durable_stack.database_url, apps=[AppInfo(name=app)])
    access = web_access("127.0.0.1", WebSettings(api_keys=KEYS))
    try:
        async with serving(None, port=0, api=backend, page=False, access=access) as url:
            async with httpx.AsyncClient(base_url=url, timeout=60) as http:
                yield Served(http, app, durable_stack)
    finally:
        await backend.close()


@pytest.mark.asyncio(loop_scope="session")
async def test_a_user_runs_a_turn_and_another_reaches_none_of_it(served: Served) -> None:
    http, app = served.http, served.app
    session = f"/api/v1/apps/{app}/users/ana/sessions/{uuid.uuid4().hex[:8]}"

    # Ana streams a turn; it stops at the confirmation of send_money.
    async with aconnect_sse(
        http, "POST", session + "/messages/stream", json={"text": "send 50"}, headers=ANA
    ) as source:
        assert source.response.status_code == 200
        kinds = [sse.event async for sse in source.aiter_sse()]
    assert kinds[0] == "start" and kinds[-1] == "done", kinds
    pending = (await http.get(session + "/pending", headers=ANA)).json()["pending"]
    assert [p["name"] for p in pending] == ["send_money"]
    call_id = pending[0]["call_id"]

    # Bob, with his own valid key, reaches none of it.
    attempts = [
        ("GET", session, None),
        ("GET", session + "/pending", None),
        ("POST", session + "/messages", {"text": "send 5000 to bob"}),
        ("POST", session + "/messages/stream", {"text": "send 5000 to bob"}),
        ("POST", session + f"/pending/{call_id}", {"response": {"confirmed": True}}),
        ("DELETE", session, None),
    ]
    for method, path, body in attempts:
        refused = await http.request(method, path, json=body, headers=BOB)
        assert refused.status_code == 403, (method, path, refused.text)
        assert "send 50" not in refused.text
    listed = (await http.get(f"/api/v1/apps/{app}/sessions", headers=BOB)).json()["sessions"]
    assert all(s["user_id"] == "bob" for s in listed)
    assert (await http.get(f"/api/v1/apps/{app}/sessions?user_id=ana", headers=BOB)).status_code == 403

    # Nothing Bob tried changed Ana's conversation: it still waits for her confirmation alone.
    still = (await http.get(session + "/pending", headers=ANA)).json()["pending"]
    assert [p["call_id"] for p in still] == [call_id]
    texts = [e.get("content") for e in (await http.get(session, headers=ANA)).json()["events"]]
    assert "send 5000 to bob" not in str(texts)

    # A page on another site cannot answer for her either, even with her key in hand.
    cross = await http.post(session + f"/pending/{call_id}", content=b'{"response": {"confirmed": true}}',
                            headers={**ANA, "Content-Type": "text/plain"})  # fmt: skip
    assert cross.status_code == 415
    assert (await http.get(session + "/pending", headers=ANA)).json()["pending"][0]["call_id"] == call_id

    # Ana confirms; the operator reads her finished session.
    done = await http.post(
        session + f"/pending/{call_id}", json={"response": {"confirmed": True}}, headers=ANA
    )
    assert done.status_code == 200 and done.json()["final_text"].startswith("Done: sent 50"), done.text
    seen = await http.get(session, headers=OPS)
    assert seen.status_code == 200 and seen.json()["user_id"] == "ana"
    assert (await http.get(session)).status_code == 401
