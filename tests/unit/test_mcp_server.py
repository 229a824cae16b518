"""`adkt mcp APP --http PORT` (adkt/mcp_server.py) follows the web app's rules: the MCP SDK's Host check
is always on (FastMCP turns it on by itself only for a loopback --host), a non-loopback --host without
API keys or OIDC refuses to start unless --insecure, and with authentication configured every call needs
credentials and runs as the caller's own user."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from adk_core.errors import ConfigurationError
from adkt.mcp_server import app_mcp_server, mcp_http_app, transport_security
from adkt.settings import WebSettings
from adkt.web.security import web_access

ANA_KEY = "ana-key-0123456789abcdefghijklmnop"
ACCEPT = {"accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}  # fmt: skip


@dataclass
class _Client:
    """AdkClient as the tool uses it: who each message was sent as."""

    sent: list[tuple[str, str]] = field(default_factory=list)

    async def send(self, app: str, user: str, session: str, message: str, *, message_id: str | None) -> Any:
        self.sent.append((user, message))
        return SimpleNamespace(final_text=f"hello {user}")


@contextlib.asynccontextmanager
async def _serving(app: Any, server: Any, host: str) -> AsyncIterator[httpx.AsyncClient]:
    async with server.session_manager.run():  # what the app's lifespan does under uvicorn
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"http://{host}") as http:
            yield http


async def _call(http: httpx.AsyncClient, headers: dict[str, str]) -> list[httpx.Response]:
    """initialize, then (when it was answered) one call of the app's tool."""
    init = await http.post("/mcp", json=INIT, headers={**ACCEPT, **headers})
    if init.status_code != 200:
        return [init]
    session = {**ACCEPT, **headers, "mcp-session-id": init.headers["mcp-session-id"]}
    await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shop", "arguments": {"message": "hi"}}}
    return [init, await http.post("/mcp", json=call, headers=session)]


def _result(response: httpx.Response) -> dict[str, Any]:
    data = next(line[5:] for line in response.text.splitlines() if line.startswith("data:"))
    return json.loads(data)["result"]["structuredContent"]


@pytest.mark.parametrize("bind", ["0.0.0.0", "::", "192.168.1.20", "127.0.0.1"])
@pytest.mark.parametrize("host", ["evil.example:8765", "rebind.attacker.example", "localhost.evil:8765"])
async def test_a_foreign_host_is_refused_whatever_the_bind_address(bind: str, host: str) -> None:
    server = app_mcp_server(_Client(), "shop", host=bind, port=8765)  # type: ignore[arg-type]
    async with _serving(server.streamable_http_app(), server, host) as http:
        [refused] = await _call(http, {"origin": f"http://{host}"})
    assert refused.status_code == 421, refused.text


@pytest.mark.parametrize(("allowed", "host"), [([], "127.0.0.1:8765"), ([], "localhost"), ([], "[::1]:8765"),
                                               (["mcp.example.com"], "mcp.example.com:8765")])  # fmt: skip
async def test_the_loopback_names_and_the_allowed_hosts_are_served(allowed: list[str], host: str) -> None:
    client = _Client()
    server = app_mcp_server(client, "shop", host="0.0.0.0", port=8765, allowed_hosts=allowed)  # type: ignore[arg-type]
    async with _serving(server.streamable_http_app(), server, host) as http:
        init, call = await _call(http, {})
    assert init.status_code == 200 and _result(call) == {"text": "hello mcp", "session_id": _result(call)["session_id"]}


def test_the_sdks_host_check_takes_exact_names_or_any() -> None:
    with pytest.raises(ConfigurationError, match="exact host names"):
        transport_security("0.0.0.0", [".example.com"])
    assert not transport_security("0.0.0.0", ["*"]).enable_dns_rebinding_protection
    assert "10.0.0.5:*" in transport_security("10.0.0.5", []).allowed_hosts  # the bound address


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20"])
def test_adkt_mcp_beyond_loopback_without_auth_refuses_to_start(host: str) -> None:
    from adkt.main import app

    env = {"ADK_API_KEYS": "", "ADK_API_KEYS_FILE": "", "ADK_OIDC_ISSUER": "", "COLUMNS": "300"}
    refused = CliRunner().invoke(app, ["mcp", "shop", "--http", "0", "--host", host], env=env)
    assert refused.exit_code == 2, refused.output
    assert f"refusing to serve on '{host}' without authentication" in refused.output and "--insecure" in refused.output
    domain = CliRunner().invoke(app, ["mcp", "shop", "--http", "0", "--allowed-host", ".example.com"], env=env)
    assert domain.exit_code == 2 and "exact host names" in domain.output, domain.output


async def test_with_api_keys_a_caller_needs_one_and_talks_as_its_user() -> None:
    client = _Client()
    server = app_mcp_server(client, "shop", host="0.0.0.0", port=8765)  # type: ignore[arg-type]
    access = web_access("0.0.0.0", WebSettings(api_keys=f"ana:{ANA_KEY}"))
    async with _serving(mcp_http_app(server, access), server, "127.0.0.1:8765") as http:
        [anonymous] = await _call(http, {})
        assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Bearer")
        [wrong] = await _call(http, {"authorization": "Bearer not-a-key-0123456789abcdef"})
        assert wrong.status_code == 401
        [rebound] = await _call(http, {"authorization": f"Bearer {ANA_KEY}", "host": "evil.example"})
        assert rebound.status_code == 400 and rebound.json()["error"] == "HostNotAllowed"  # adkt's guard, first
        init, call = await _call(http, {"authorization": f"Bearer {ANA_KEY}"})
    assert init.status_code == 200 and _result(call)["text"] == "hello ana"
    assert client.sent == [("ana", "hi")]  # ana's conversation, not the shared --user's
