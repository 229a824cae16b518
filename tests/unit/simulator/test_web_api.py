"""The JSON API over an in-process service: list, view, decide, errors as JSON (never a 500), SSE."""

from __future__ import annotations

import asyncio
import json
import socket

import httpx
from httpx_sse import aconnect_sse

from adk_core import App, FunctionTool, InMemoryRunner, LlmAgent, ScriptedModel
from adk_core.simulator import SimulatorPlugin, SimulatorService
from adkt.web.app import create_app
from adkt.web.serve import server


def get_weather(city: str, days: int = 1) -> dict:
    """Weather forecast for a city."""
    return {"city": city, "days": days, "sky": "sunny"}


async def test_api_end_to_end() -> None:
    service = SimulatorService()
    agent = LlmAgent(name="weather", model=ScriptedModel([]), tools=[FunctionTool(get_weather)])
    runner = InMemoryRunner(app=App(name="api", root_agent=agent, plugins=[SimulatorPlugin(service=service)]))
    transport = httpx.ASGITransport(app=create_app(service))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        assert (await http.get("/api/sessions")).json() == {"sessions": []}
        async with service.store.changes() as changes:
            run = asyncio.create_task(runner.run("Weather in Rome?"))
            await asyncio.wait_for(anext(changes), 5)
            while not (await http.get("/api/sessions")).json()["sessions"][0]["pending_count"]:
                await asyncio.wait_for(anext(changes), 5)
        [summary] = (await http.get("/api/sessions")).json()["sessions"]
        session_id = summary["session"]["id"]
        view = (await http.get(f"/api/sessions/{session_id}")).json()
        turn = view["head"]["turn_id"]
        decide = f"/api/sessions/{session_id}/turns/{turn}/decision"

        bad = await http.post(decide, json={"function_calls": [{"name": "get_weather", "args": {"days": "x"}}]})
        assert bad.status_code == 422 and bad.json()["error"] == "SimulatorInputError"
        assert "'city' is a required property" in bad.json()["message"] or "days" in bad.json()["message"]
        assert (await http.post(decide, content=b"{nope", headers={"Content-Type": "application/json"})).status_code == 400
        assert (await http.post(decide, json={"text": 3})).status_code == 422
        assert (await http.get("/api/sessions/3c9f0d7e-1d3b-4b8e-9d55-1f2a4c7b8e90")).status_code == 404
        other = f"/api/sessions/{session_id}/turns/3c9f0d7e-1d3b-4b8e-9d55-1f2a4c7b8e90/decision"
        assert (await http.post(other, json={"text": "x"})).status_code == 404

        ok = await http.post(decide, json={"function_calls": [{"name": "get_weather", "args": {"city": "Rome"}}]})
        assert ok.status_code == 200, ok.text
        again = await http.post(decide, json={"text": "twice"})
        assert again.status_code == 409 and again.json()["error"] in ("TurnAlreadyAnsweredError", "SimulatorConflictError")

        async with service.store.changes() as changes:
            while (await http.get(f"/api/sessions/{session_id}")).json().get("head", {}).get("turn_id", turn) == turn:
                await asyncio.wait_for(anext(changes), 5)
        view = (await http.get(f"/api/sessions/{session_id}")).json()
        await http.post(f"/api/sessions/{session_id}/turns/{view['head']['turn_id']}/decision", json={"text": "Sunny."})
        events = await asyncio.wait_for(run, 5)
        assert events[-1].content.text == "Sunny."
        assert (await http.post(f"/api/sessions/{session_id}/complete", json={})).json() == {"status": "completed"}
        assert (await http.get("/")).headers["content-type"].startswith("text/html")
        assert (await http.get("/static/app.js")).status_code == 200


async def test_sse_announces_changes() -> None:
    # Through a real server: httpx's ASGI transport collects whole responses, so it cannot stream.
    service = SimulatorService()
    web = server(service, port=_free_port())
    serving = asyncio.create_task(web.serve())
    try:
        while not web.started:
            await asyncio.sleep(0.01)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{web.config.port}") as http:
            async with aconnect_sse(http, "GET", "/api/events") as source:
                events = source.aiter_sse()
                made = asyncio.create_task(service.store.session_for("a", "u", "s"))
                event = await asyncio.wait_for(anext(events), 5)
                assert event.event == "change" and json.loads(event.data)["session_id"] == (await made).id
    finally:
        web.should_exit = True
        await serving


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
