"""OpenApiToolset in-process against a local service that serves its own OpenAPI document
(tests/openapi_service.py): tools and schemas from the document, parameters in path, query and
body, API key / bearer / OAuth2 client-credentials auth, errors the model sees; requests built as
the document says (server variables, JSON and form bodies, path segments, null arguments) and
schemas that refer to each other inlined within a bound."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adk_core import InMemoryRunner, LlmAgent
from adk_core.errors import ConfigurationError
from adk_core.tools.openapi import ApiKeyAuth, BearerAuth, OAuth2ClientCredentials, OpenApiToolset
from adk_core.types import Event
from tests.mcp_servers.helpers import calling
from tests.openapi_service import API_KEY, CLIENT, TOKEN, Service, document, serving


@pytest.fixture(scope="module")
async def service() -> AsyncIterator[Service]:
    async with serving() as running:
        yield running


async def _document(service: Service) -> dict[str, Any]:
    async with httpx.AsyncClient() as client:
        return (await client.get(f"{service.url}/openapi.json")).json()


def _responses(events: list[Event]) -> list[Any]:
    return [p.function_response.response for e in events if e.content for p in e.content.parts
            if p.function_response is not None]  # fmt: skip


async def _run(toolset: OpenApiToolset, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    try:
        return _responses(await InMemoryRunner(LlmAgent(name="a", model=calling(calls), tools=[toolset])).run("go"))
    finally:
        await toolset.close()


async def test_operations_become_tools_with_schemas_from_parameters_and_bodies(service: Service) -> None:
    tools = OpenApiToolset(await _document(service), deny=["admin*"])
    assert [t.name for t in tools.tools] == ["getPet", "createPet", "keyed", "flaky"]
    get_pet, create_pet = (t.declaration() for t in tools.tools[:2])
    assert get_pet.description == "One pet by id."
    assert get_pet.parameters == {
        "type": "object",
        "properties": {"pet_id": {"type": "integer"}, "verbose": {"type": "boolean"}},
        "required": ["pet_id"],
    }
    body = create_pet.parameters["properties"]["body"]  # type: ignore[index]
    assert body["properties"]["owner"] == {"type": "object", "properties": {"name": {"type": "string"}}}
    assert create_pet.parameters["required"] == ["body"]  # type: ignore[index]
    assert tools.base_url == service.url


async def test_a_call_fills_path_and_query_and_sends_the_idempotency_key(service: Service) -> None:
    tools = OpenApiToolset(await _document(service), allow=["getPet"])
    runner = InMemoryRunner(LlmAgent(name="a", model=calling([("getPet", {"pet_id": 1, "verbose": True})]), tools=[tools]))
    events = await runner.run("go")
    await tools.close()
    assert _responses(events) == [{"id": 1, "name": "Rex", "verbose": True}]
    call = next(e for e in events if e.function_calls()).function_calls()[0]
    assert service.seen[-1] == ("/pets/1", f"{events[0].invocation_id}:{call.id}")


async def test_oauth2_client_credentials_fetch_one_token_for_many_calls(service: Service) -> None:
    issued = service.tokens_issued
    auth = OAuth2ClientCredentials(*CLIENT)  # the token URL comes from the document
    tools = OpenApiToolset(await _document(service), auth=auth, allow=["createPet"])
    calls = [("createPet", {"body": {"name": "Tom"}}), ("createPet", {"body": {"name": "Kit", "owner": {"name": "Al"}}})]
    tom, kit = await _run(tools, calls)
    assert tom["name"] == "Tom" and kit["owner"] == {"name": "Al"} and kit["id"] == tom["id"] + 1
    assert service.tokens_issued == issued + 1


async def test_api_key_and_bearer(service: Service) -> None:
    doc = await _document(service)
    assert await _run(OpenApiToolset(doc, auth=ApiKeyAuth(API_KEY)), [("keyed", {})]) == [{"ok": True}]
    [created] = await _run(OpenApiToolset(doc, auth=BearerAuth(TOKEN)), [("createPet", {"body": {"name": "Bo"}})])
    assert created["name"] == "Bo"


async def test_refusals_and_outages_reach_the_model(service: Service) -> None:
    doc = await _document(service)
    calls = [("getPet", {"pet_id": 99}), ("createPet", {"body": {"name": "x"}}), ("flaky", {}), ("getPet", {})]
    missing, unauthorized, busy, no_id = await _run(OpenApiToolset(doc), calls)
    assert missing["error"].startswith("Tool 'getPet' failed: OpenApiCallError: GET ") and "no pet 99" in missing["error"]
    assert "OpenApiCallError" in unauthorized["error"] and "401" in unauthorized["error"]
    assert "OpenApiUnavailableError" in busy["error"] and "503" in busy["error"]  # in-process: one attempt
    assert "needs the argument(s) ['pet_id']" in no_id["error"]
    bad = OpenApiToolset(doc, auth=OAuth2ClientCredentials("agent", "wrong"), allow=["createPet"])
    [refused] = await _run(bad, [("createPet", {"body": {"name": "x"}})])
    assert "refused the client credentials" in refused["error"]


def test_documents_it_cannot_use_are_refused_with_what_to_do() -> None:
    with pytest.raises(ConfigurationError, match="OpenAPI 3.x"):
        OpenApiToolset({"swagger": "2.0", "paths": {}}, base_url="http://x")
    with pytest.raises(ConfigurationError, match="absolute base_url"):
        OpenApiToolset(document())
    with pytest.raises(ConfigurationError, match="no apiKey security scheme"):
        OpenApiToolset({"openapi": "3.1.0", "paths": {}}, base_url="http://x", auth=ApiKeyAuth("k"))


def _one_operation(path: str, method: str, op: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {path: {method: op}}, **extra}


async def test_a_dot_dot_path_argument_stays_in_its_segment(service: Service) -> None:
    # httpx removes "." and ".." path segments: unescaped, account_id=".." would reach /statements/s1,
    # another endpoint (here one the toolset denies).
    doc = _one_operation("/accounts/{account_id}/statements/{statement_id}", "get", {
        "operationId": "getStatement", "responses": {},
        "parameters": [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                       for n in ("account_id", "statement_id")],
    })  # fmt: skip
    doc["paths"]["/statements/{statement_id}"] = {"get": {"operationId": "adminGetStatement", "responses": {}}}
    tools = OpenApiToolset(doc, base_url=service.url, deny=["admin*"])
    before = len(service.requests)
    await _run(tools, [("getStatement", {"account_id": "..", "statement_id": "s1"}),
                       ("getStatement", {"account_id": ".", "statement_id": "s2"})])  # fmt: skip
    assert [r["path"] for r in service.requests[before:]] == ["/accounts/../statements/s1", "/accounts/./statements/s2"]


async def test_the_documents_server_url_takes_its_variables_defaults(service: Service) -> None:
    port = service.url.rsplit(":", 1)[1]
    servers = [{"url": "http://127.0.0.1:{port}/{version}", "variables": {"port": {"default": port}, "version": {"default": "v2"}}}]
    doc = _one_operation("/ping", "get", {"operationId": "ping", "responses": {}}, servers=servers)
    tools = OpenApiToolset(doc)
    assert tools.base_url == f"{service.url}/v2"
    assert await _run(tools, [("ping", {})]) == [{"path": "/v2/ping"}]


async def test_json_media_types_and_form_bodies_are_sent_as_documented(service: Service) -> None:
    def body_op(name: str, media_type: str) -> dict[str, Any]:
        schema = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
        return {"operationId": name, "responses": {},
                "requestBody": {"required": True, "content": {media_type: {"schema": schema}}}}  # fmt: skip

    doc = _one_operation("/pets/merge", "patch", body_op("mergePet", "application/merge-patch+json"))
    doc["paths"]["/pets/charset"] = {"put": body_op("putPet", "application/json; charset=utf-8")}
    doc["paths"]["/login"] = {"post": body_op("login", "application/x-www-form-urlencoded")}
    tools = OpenApiToolset(doc, base_url=service.url)
    for tool in tools.tools:
        assert tool.declaration().parameters["required"] == ["body"], tool.name  # type: ignore[index]
    before = len(service.requests)
    await _run(tools, [("mergePet", {"body": {"name": "Rex"}}), ("putPet", {"body": {"name": "Bo"}}),
                       ("login", {"body": {"name": "al", "tags": ["a", "b"], "age": 3}})])  # fmt: skip
    assert [(r["path"], r["content_type"], r["body"]) for r in service.requests[before:]] == [
        ("/pets/merge", "application/merge-patch+json", '{"name":"Rex"}'),
        ("/pets/charset", "application/json; charset=utf-8", '{"name":"Bo"}'),
        ("/login", "application/x-www-form-urlencoded", "name=al&tags=a&tags=b&age=3"),
    ]


async def test_null_arguments_are_left_out(service: Service) -> None:
    doc = _one_operation("/pets/{kind}", "get", {"operationId": "listPets", "responses": {}, "parameters": [
        {"name": "kind", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
        {"name": "tag", "in": "query", "schema": {"type": "string"}}]})  # fmt: skip
    tools = OpenApiToolset(doc, base_url=service.url)
    before = len(service.requests)
    _, no_kind = await _run(tools, [("listPets", {"kind": "cats", "limit": 5, "tag": None}),
                                    ("listPets", {"kind": None})])  # fmt: skip
    assert [(r["path"], r["query"]) for r in service.requests[before:]] == [("/pets/cats", "limit=5")]
    assert "needs the argument(s) ['kind']" in no_kind["error"]  # not sent as /pets/None


async def test_a_request_that_cannot_be_sent_is_refused_as_the_call_as_made(service: Service) -> None:
    # httpx.InvalidURL (a URL over 64 kB) is no outage: OpenApiCallError, which no durable run retries
    # (tests/integration/test_openapi_durable.py checks the single attempt).
    tools = OpenApiToolset(await _document(service), allow=["getPet"])
    [too_long] = await _run(tools, [("getPet", {"pet_id": 1, "verbose": "x" * 70_000})])
    assert too_long["error"].startswith("Tool 'getPet' failed: OpenApiCallError: GET ")
    assert "cannot be sent: InvalidURL" in too_long["error"]


def test_schemas_that_refer_to_each_other_are_inlined_within_a_bound() -> None:
    # Twelve schemas each referring to the eleven others (as large APIs' schemas do): inlining every
    # path through them grows factorially, and building the toolset never ended. In a child process, so a
    # regression ends at the timeout instead of holding the test run and its memory.
    code = """
import json
from adk_core.tools.openapi import OpenApiToolset
names = [f"S{i}" for i in range(12)]
schemas = {n: {"type": "object", "description": f"schema {n}",
               "properties": {f"to_{o}": {"$ref": f"#/components/schemas/{o}"} for o in names if o != n}}
           for n in names}
schemas["S0"]["properties"]["kind"] = {"$ref": "#/components/schemas/Kind"}
schemas["Kind"] = {"type": "string", "enum": ["a", "b"]}
doc = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "components": {"schemas": schemas},
       "paths": {"/x": {"post": {"operationId": "x", "responses": {}, "requestBody": {"content": {
           "application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}}}}}
print(json.dumps(OpenApiToolset(doc, base_url="http://127.0.0.1:9").tools[0].declaration().parameters))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, cwd=Path.cwd())
    assert done.returncode == 0, done.stderr[-2000:]
    from adk_core.tools.openapi._spec import MAX_INLINED_NODES  # noqa: PLC0415
    body = json.loads(done.stdout)["properties"]["body"]

    def objects(node: Any) -> int:
        if isinstance(node, list):
            return sum(objects(v) for v in node)
        return 1 + sum(objects(v) for v in node.values()) if isinstance(node, dict) else 0

    def leaves(node: dict[str, Any]) -> list[dict[str, Any]]:  # the enum, and the $refs not inlined
        inner = node.get("properties")
        return [leaf for value in inner.values() for leaf in leaves(value)] if inner else [node]

    enum = {"type": "string", "enum": ["a", "b"]}
    assert objects(body) <= MAX_INLINED_NODES
    assert body["description"] == "schema S0" and body["properties"]["kind"] == enum
    assert "properties" in body["properties"]["to_S1"]["properties"]["to_S2"]  # three levels fit
    assert all(leaf == enum or leaf == {"type": "object", "description": leaf["description"]} for leaf in leaves(body))
    assert {leaf.get("description") for leaf in leaves(body)} >= {"schema S3", "schema S11"}


def test_properties_named_like_schema_keywords_stay() -> None:
    """Documentation keywords (example, xml) are left out of a declaration; a property of that name is data."""
    schema = {"type": "object", "example": {"name": "x"}, "properties": {
        "example": {"type": "string", "example": "e"}, "xml": {"type": "boolean"}, "name": {"type": "string"}}}
    doc = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/x": {"post": {
        "operationId": "x", "responses": {}, "requestBody": {"content": {"application/json": {"schema": schema}}}}}}}
    body = OpenApiToolset(doc, base_url="http://127.0.0.1:9").tools[0].declaration().parameters["properties"]["body"]  # type: ignore[index]
    assert body == {"type": "object", "properties": {
        "example": {"type": "string"}, "xml": {"type": "boolean"}, "name": {"type": "string"}}}


async def test_a_token_revoked_before_it_expires_is_replaced_once(service: Service) -> None:
    """The API answers 401 to a cached OAuth2 token it revoked: the call fetches a new token and is sent
    once more, instead of every call failing until the old token's expiry."""
    auth = OAuth2ClientCredentials(*CLIENT)
    tools = OpenApiToolset(await _document(service), auth=auth, allow=["createPet"])
    issued = service.tokens_issued
    (first,) = await _run(tools, [("createPet", {"body": {"name": "Ada"}})])
    service.revoked.update(service.tokens)
    tools = OpenApiToolset(await _document(service), auth=auth, allow=["createPet"])  # the same cached token
    (second,) = await _run(tools, [("createPet", {"body": {"name": "Bo"}})])
    assert first["name"] == "Ada" and second["name"] == "Bo"
    assert service.tokens_issued == issued + 2
    service.revoked.clear()
