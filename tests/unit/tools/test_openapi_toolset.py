"""OpenApiToolset in-process against a local service that serves its own OpenAPI document
(tests/openapi_service.py): tools and schemas from the document, parameters in path, query and
body, API key / bearer / OAuth2 client-credentials auth, errors the model sees."""

from __future__ import annotations

from collections.abc import AsyncIterator
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
