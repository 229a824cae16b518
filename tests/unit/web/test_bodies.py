"""Request bodies (adkt/web/body.py): the HTTP API and the simulator's decisions read at most
MAX_BODY_BYTES, refusing a larger declared Content-Length before reading anything and a larger
streamed body as soon as it passes the limit (413), and JSON they cannot parse (bad bytes, nesting
too deep) is the caller's 400, never a 500. A message with a full-size inline blob still fits."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest

from adk_core.sessions import InMemorySessionService
from adk_core.simulator import SimulatorService
from adk_core.types import MAX_INLINE_DATA_SIZE
from adkt.web.api.backend import ApiBackend
from adkt.web.api.errors import NoWorkerError
from adkt.web.api.models import AppInfo
from adkt.web.body import MAX_BODY_BYTES, MAX_JSON_DEPTH
from adkt.web.site import create_site

MESSAGES = "/api/v1/apps/shop/users/ana/sessions/s1/messages"
CREATE = "/api/v1/apps/shop/users/ana/sessions"
SIM = "3c9f0d7e-1d3b-4b8e-9d55-1f2a4c7b8e90"
DECISION = f"/api/sessions/{SIM}/turns/{SIM}/decision"
JSON = {"content-type": "application/json"}


@dataclass
class _Backend(ApiBackend):
    """Sending goes no further than the worker check, which logs who got there."""

    reached: list[str] = field(default_factory=list)

    async def require_worker(self, app: str) -> None:
        self.reached.append(app)
        raise NoWorkerError("test: got through to sending")


def _site() -> tuple[httpx.AsyncClient, _Backend]:
    backend = _Backend(client=None, sessions=InMemorySessionService(), apps=[AppInfo(name="shop")])  # type: ignore[arg-type]
    app = create_site(backend, SimulatorService())
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"), backend


async def test_a_message_with_a_full_size_inline_blob_fits() -> None:
    blob = base64.b64encode(b"\0" * MAX_INLINE_DATA_SIZE).decode()
    content = {"role": "user", "parts": [{"text": "what is in this file?"},
                                         {"inline_data": {"mime_type": "application/pdf", "data": blob}}]}  # fmt: skip
    http, backend = _site()
    async with http:
        r = await http.post(MESSAGES, json={"content": content})
    assert r.status_code == 503 and backend.reached == ["shop"], r.text[:300]  # read, parsed, sent on


@pytest.mark.parametrize("path", [MESSAGES, DECISION], ids=["messages", "decision"])
async def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(path: str) -> None:
    sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        sent += 1
        yield b"{}"

    http, backend = _site()
    async with http:
        headers = {**JSON, "content-length": str(MAX_BODY_BYTES + 1)}
        r = await http.post(path, content=body(), headers=headers)
    assert r.status_code == 413, r.text[:300]
    assert r.json()["error"] == "BodyTooLarge" and f"limit of {MAX_BODY_BYTES} bytes" in r.json()["message"]
    assert sent == 0 and backend.reached == []


@pytest.mark.parametrize("path", [MESSAGES, DECISION], ids=["messages", "decision"])
async def test_a_streamed_body_stops_being_read_past_the_limit(path: str) -> None:
    chunk, chunks, sent = 2**20, MAX_BODY_BYTES // 2**20 + 8, 0

    async def body() -> AsyncIterator[bytes]:  # no Content-Length: chunked
        nonlocal sent
        yield b'{"text": "'
        for _ in range(chunks):
            sent += 1
            yield b"a" * chunk

    http, backend = _site()
    async with http:
        r = await http.post(path, content=body(), headers=JSON)
    assert r.status_code == 413, r.text[:300]
    assert sent * chunk <= MAX_BODY_BYTES + chunk < chunks * chunk  # it stopped reading at the limit
    assert backend.reached == []


NOT_JSON = [
    pytest.param(b'{"text": "\xff"}', "utf-8", id="not UTF-8"),
    pytest.param(b"[" * 100_000, "nested too deeply", id="deeper than the parser"),
    pytest.param(b'{"text": "hi"', "Expecting", id="truncated"),
]


@pytest.mark.parametrize("path", [CREATE, MESSAGES, DECISION], ids=["create", "messages", "decision"])
@pytest.mark.parametrize(("body", "says"), NOT_JSON)
async def test_a_body_that_is_not_json_is_a_400(path: str, body: bytes, says: str) -> None:
    http, backend = _site()
    async with http:
        r = await http.post(path, content=body, headers=JSON)
    assert r.status_code == 400 and r.json()["error"] == "InvalidJson", r.text[:300]
    assert says in r.json()["message"]
    assert backend.reached == [] and (await backend.sessions.list_sessions(app_name="shop", user_id="ana")).sessions == []


async def test_state_nested_deeper_than_the_limit_is_refused_not_stored() -> None:
    # The parser takes ~1000 levels; pydantic serializes ~250: stored, the session could not be read back.
    deep = "[" * 300 + "]" * 300
    http, backend = _site()
    async with http:
        r = await http.post(CREATE, content=f'{{"session_id": "x", "state": {{"a": {deep}}}}}', headers=JSON)
        assert r.status_code == 400 and f"deeper than {MAX_JSON_DEPTH}" in r.json()["message"], r.text[:300]
        fits = "[" * 40 + "]" * 40
        ok = await http.post(CREATE, content=f'{{"session_id": "y", "state": {{"a": {fits}}}}}', headers=JSON)
        assert ok.status_code == 201, ok.text[:300]
    assert [s.id for s in (await backend.sessions.list_sessions(app_name="shop", user_id="ana")).sessions] == ["y"]
