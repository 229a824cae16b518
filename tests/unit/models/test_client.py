"""Each model keeps one httpx client per event loop and reuses it; an injected client is left alone."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from model_wire import SECRET, Wire, collect, payload, simple_request

from adk_core.models.gemini import GeminiModel


def _answer(request: httpx.Request) -> httpx.Response:
    if request.url.path.endswith(":streamGenerateContent"):
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=payload("gemini_stream.sse").encode()
        )
    return httpx.Response(
        200, headers={"content-type": "application/json"}, content=payload("gemini_text.json")
    )


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[httpx.AsyncClient]:
    """Every client the model builds itself, answering from the recorded payloads instead of the network."""
    clients: list[httpx.AsyncClient] = []

    class RecordedClient(httpx.AsyncClient):
        def __init__(self, **kwargs: Any) -> None:
            self.options = kwargs
            super().__init__(transport=httpx.MockTransport(_answer), **kwargs)
            clients.append(self)

    monkeypatch.setattr(httpx, "AsyncClient", RecordedClient)
    return clients


def _gemini(**kwargs: Any) -> GeminiModel:
    return GeminiModel("gemini-2.5-flash", api_key=SECRET, timeout=30, **kwargs)


async def test_calls_on_one_loop_share_one_client_until_aclose(built: list[httpx.AsyncClient]) -> None:
    model = _gemini()

    await collect(model, simple_request())
    await collect(model, simple_request(), stream=True)

    [client] = built
    assert client.options["timeout"] == 30 and client.options["limits"].max_connections == 1000
    assert not client.is_closed

    await model.aclose()
    assert client.is_closed

    # Still usable after aclose: the next call opens a fresh client.
    await collect(model, simple_request())
    assert len(built) == 2 and not built[1].is_closed
    await model.aclose()


def test_each_event_loop_gets_its_own_client(built: list[httpx.AsyncClient]) -> None:
    model = _gemini()

    async def call_twice() -> None:
        await collect(model, simple_request())
        await collect(model, simple_request())

    asyncio.run(call_twice())
    asyncio.run(call_twice())

    # One client per loop, never one carried over from a loop that has gone; the dead loop's is forgotten.
    assert len(built) == 2 and built[0] is not built[1]
    assert list(model._clients.values()) == [built[1]]


async def test_an_injected_client_is_used_as_given_and_never_closed(wire: Wire) -> None:
    model = _gemini(http_client=wire.client)
    wire.reply("gemini_text.json")
    wire.reply("gemini_stream.sse")

    await collect(model, simple_request())
    await collect(model, simple_request(), stream=True)
    await model.aclose()

    assert len(wire.requests) == 2 and not wire.client.is_closed
