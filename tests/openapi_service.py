"""A local HTTP service that serves its own OpenAPI 3 document, for the OpenApiToolset tests.

Pets by id; creating one needs an OAuth2 client-credentials token and is deduplicated by the
Idempotency-Key header; /keyed needs an API key; /flaky answers 503 to the first call of each
Idempotency-Key. ``Service.seen`` records (path, Idempotency-Key) of every call. Any other path
answers ``{"path": ...}`` and is recorded in ``Service.requests`` as it arrived (method, path, query,
content type, body), for tests of how requests are built.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.mcp_servers.helpers import free_port

TOKEN = "tok-secret"
CLIENT = ("agent", "s3cret")
API_KEY = "k-123"


def document() -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "paths": {
            "/pets/{pet_id}": {
                "parameters": [{"name": "pet_id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                "get": {
                    "operationId": "getPet",
                    "summary": "One pet by id.",
                    "parameters": [{"name": "verbose", "in": "query", "schema": {"type": "boolean"}}],
                    "responses": {"200": {"description": "the pet"}},
                },
            },
            "/pets": {
                "post": {
                    "operationId": "createPet",
                    "description": "Add a pet.",
                    "security": [{"oauth": []}],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}},
                    },
                    "responses": {"201": {"description": "created"}},
                }
            },
            "/keyed": {"get": {"operationId": "keyed", "security": [{"key": []}], "responses": {}}},
            "/flaky": {"get": {"operationId": "flaky", "responses": {}}},
            "/admin/reset": {"post": {"operationId": "adminReset", "responses": {}}},
        },
        "components": {
            "schemas": {
                "NewPet": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "owner": {"$ref": "#/components/schemas/Owner"}},
                },
                "Owner": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "securitySchemes": {
                "oauth": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/token", "scopes": {}}}},
                "key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
            },
        },
    }


@dataclass
class Service:
    url: str = ""
    pets: dict[int, dict[str, Any]] = field(default_factory=lambda: {1: {"id": 1, "name": "Rex"}})
    by_key: dict[str, dict[str, Any]] = field(default_factory=dict)
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    tokens_issued: int = 0
    tokens: set[str] = field(default_factory=set)
    revoked: set[str] = field(default_factory=set)
    """Tokens the service stopped taking before they expired."""
    requests: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> Starlette:
        async def doc(request: Request) -> JSONResponse:
            return JSONResponse({**document(), "servers": [{"url": self.url}]})

        async def token(request: Request) -> JSONResponse:
            form = await request.form()
            if (form.get("client_id"), form.get("client_secret")) != CLIENT:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            self.tokens_issued += 1
            issued = TOKEN if self.tokens_issued == 1 else f"{TOKEN}-{self.tokens_issued}"
            self.tokens.add(issued)
            return JSONResponse({"access_token": issued, "token_type": "bearer", "expires_in": 3600})

        def record(request: Request) -> str | None:
            key = request.headers.get("idempotency-key")
            self.seen.append((request.url.path, key))
            return key

        async def get_pet(request: Request) -> JSONResponse:
            record(request)
            pet = self.pets.get(int(request.path_params["pet_id"]))
            if pet is None:
                return JSONResponse({"detail": f"no pet {request.path_params['pet_id']}"}, status_code=404)
            verbose = request.query_params.get("verbose") == "true"
            return JSONResponse({**pet, "verbose": verbose})

        async def create_pet(request: Request) -> JSONResponse:
            key = record(request)
            held = request.headers.get("authorization", "").removeprefix("Bearer ")
            if held not in self.tokens or held in self.revoked:
                return JSONResponse({"detail": "unauthorized"}, status_code=401)
            if key and key in self.by_key:
                return JSONResponse(self.by_key[key], status_code=201)
            body = await request.json()
            pet = {"id": max(self.pets) + 1, **body}
            self.pets[pet["id"]] = pet
            if key:
                self.by_key[key] = pet
            return JSONResponse(pet, status_code=201)

        async def keyed(request: Request) -> JSONResponse:
            record(request)
            ok = request.headers.get("x-api-key") == API_KEY
            return JSONResponse({"ok": ok}, status_code=200 if ok else 403)

        async def flaky(request: Request) -> JSONResponse:
            key = record(request)
            if sum(1 for path, k in self.seen if path == "/flaky" and k == key) == 1:
                return JSONResponse({"detail": "busy"}, status_code=503)
            return JSONResponse({"ok": True})

        async def anything(request: Request) -> JSONResponse:
            self.requests.append({
                "method": request.method, "path": request.url.path, "query": request.url.query,
                "content_type": request.headers.get("content-type"), "body": (await request.body()).decode(),
            })  # fmt: skip
            return JSONResponse({"path": request.url.path})

        return Starlette(routes=[
            Route("/openapi.json", doc), Route("/token", token, methods=["POST"]),
            Route("/pets/{pet_id:int}", get_pet), Route("/pets", create_pet, methods=["POST"]),
            Route("/keyed", keyed), Route("/flaky", flaky),
            Route("/{rest:path}", anything, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
        ])  # fmt: skip


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[Service]:
    """The service on a free loopback port in this event loop, stopped (bounded) at the end."""
    service = Service()
    port = free_port()
    service.url = f"http://127.0.0.1:{port}"
    server = uvicorn.Server(uvicorn.Config(service.app(), host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(200):
            if server.started:
                break
            if task.done():
                task.result()
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the OpenAPI test service did not start within 10 s")
        yield service
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=10)
