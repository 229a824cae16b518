"""An agent calling an HTTP API through its OpenAPI document.

    python -m examples.openapi_tools      # starts a small local API, then runs the agent in-process

``OpenApiToolset`` turns each operation of the document into a tool (its parameters and JSON body
become the tool's arguments). The document is read once, so the tools are the same on every worker
and in every replay; each call is an activity in a durable run, sent with the call's idempotency
key as the ``Idempotency-Key`` header (docs/tools.md). Against a real API:

    tools = OpenApiToolset(json.loads(Path("api.json").read_text()), base_url="https://api.example.com",
                           auth=OAuth2ClientCredentials(client_id, client_secret))
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from adk_core import InMemoryRunner, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import OpenApiToolset
from adk_core.tools.openapi import BearerAuth

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Weather", "version": "1"},
    "paths": {
        "/forecast/{city}": {
            "get": {
                "operationId": "forecast",
                "summary": "Tomorrow's forecast for a city.",
                "parameters": [
                    {"name": "city", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "units", "in": "query", "schema": {"type": "string", "enum": ["C", "F"]}},
                ],
                "responses": {"200": {"description": "the forecast"}},
            }
        }
    },
}


async def forecast(request: Request) -> JSONResponse:
    if request.headers.get("authorization") != "Bearer demo-token":
        return JSONResponse({"detail": "unauthorized"}, status_code=401)
    units = request.query_params.get("units", "C")
    return JSONResponse({"city": request.path_params["city"], "high": 21 if units == "C" else 70, "units": units})


api = Starlette(routes=[
    Route("/openapi.json", lambda request: JSONResponse(DOCUMENT)), Route("/forecast/{city}", forecast),
])  # fmt: skip


def script(request: LlmRequest) -> LlmResponse:
    """Stands in for a real model: ask for the forecast, then answer from it."""
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("forecast", {"city": "Lisbon", "units": "C"})
    return text_response(f"Tomorrow in {done[0]['city']}: {done[0]['high']}°{done[0]['units']}.")


async def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.05)
        base_url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient() as client:
            document = (await client.get(f"{base_url}/openapi.json")).json()
        weather = OpenApiToolset(document, base_url=base_url, name="weather", auth=BearerAuth("demo-token"))
        agent = LlmAgent(name="forecaster", model=ScriptedModel(script), tools=[weather])
        events = await InMemoryRunner(agent, app_name="openapi_tools").run("Weather in Lisbon tomorrow?")
        print(events[-1].text)
        await weather.close()
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, timeout=10)


if __name__ == "__main__":
    asyncio.run(main())
