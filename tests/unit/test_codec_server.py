"""The codec server as `adkt codec-server` and `adkt dev --encrypt` serve it: behind the web app's
Host allowlist, so a DNS-rebinding page (its own name as Host, same-origin to itself, CORS never
asked) cannot POST /decode and read the plaintext, while the Temporal UI's cross-origin calls still
work; and its body read is bounded (413 before reading a declared oversize body) with bad bytes a 400."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.converter import default
from typer.testing import CliRunner

from adk_core.encryption import KeyRing
from adk_temporal.codec_server import MAX_BODY_BYTES, codec_server_app
from adk_temporal.encryption import KEYS_ENV, EncryptionCodec, new_key_line
from adkt.commands.encryption import guarded_codec_app

UI = "http://localhost:8233"
SECRET = "the patient's diagnosis"


@pytest.fixture
def codec() -> EncryptionCodec:
    return EncryptionCodec(KeyRing.from_keys({"k1": os.urandom(32)}))


async def _sealed(codec: EncryptionCodec) -> str:
    sealed = await codec.encode(default().payload_converter.to_payloads([SECRET]))
    return json_format.MessageToJson(Payloads(payloads=sealed))


async def _decode(app: Any, base_url: str, body: str | bytes, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url) as http:
        return await http.post("/decode", content=body, headers={"content-type": "application/json",
                                                                 "x-namespace": "default", **headers})  # fmt: skip


@pytest.mark.parametrize("host", ["rebind.attacker.example:8081", "127.0.0.1.attacker.example", "localhost.evil"])
async def test_a_rebinding_host_decrypts_nothing(codec: EncryptionCodec, host: str) -> None:
    app = guarded_codec_app(codec, bind_host="127.0.0.1", origins=[UI])
    r = await _decode(app, f"http://{host}", await _sealed(codec))
    assert r.status_code == 400 and r.json()["error"] == "HostNotAllowed", r.text
    assert "--allowed-host" in r.json()["message"] and SECRET not in r.text


@pytest.mark.parametrize(
    ("bind_host", "allowed", "host"),
    [
        ("127.0.0.1", [], "127.0.0.1:8081"),
        ("127.0.0.1", [], "localhost:8081"),
        ("127.0.0.1", [], "[::1]:8081"),
        ("10.0.0.5", [], "10.0.0.5:8081"),  # the bound address
        ("0.0.0.0", ["codec.example.com"], "codec.example.com"),  # --allowed-host
        ("0.0.0.0", [".corp.example"], "codec.corp.example:443"),
    ],
)
async def test_the_temporal_uis_cross_origin_decode_still_works(
    codec: EncryptionCodec, bind_host: str, allowed: list[str], host: str
) -> None:
    # The UI calls from its own origin: a same-origin rule (adkt web's CrossSiteGuard) would refuse it.
    app = guarded_codec_app(codec, bind_host=bind_host, allowed_hosts=allowed, origins=[UI])
    r = await _decode(app, f"http://{host}", await _sealed(codec), origin=UI, **{"sec-fetch-site": "same-site"})
    assert r.status_code == 200, r.text
    assert default().payload_converter.from_payloads(json_format.Parse(r.text, Payloads()).payloads) == [SECRET]
    assert r.headers["access-control-allow-origin"] == UI


def test_the_wildcard_bind_address_is_not_a_host_name(codec: EncryptionCodec) -> None:
    app = guarded_codec_app(codec, bind_host="0.0.0.0", origins=[UI])
    assert "0.0.0.0" not in app.hosts.names  # type: ignore[attr-defined]


async def test_adkt_dev_serves_the_guarded_codec_server(monkeypatch: pytest.MonkeyPatch, codec: EncryptionCodec) -> None:
    from adkt.commands.dev import _codec_server

    monkeypatch.setenv(KEYS_ENV, new_key_line("k1"))
    async with _codec_server(8233) as url, httpx.AsyncClient(base_url=url) as http:
        refused = await http.post("/decode", content="{}", headers={"host": "rebind.attacker.example",
                                                                    "content-type": "application/json"})  # fmt: skip
        assert refused.status_code == 400 and refused.json()["error"] == "HostNotAllowed"
        served = await http.post("/decode", content='{"payloads": []}', headers={"content-type": "application/json"})
        assert served.status_code == 200, served.text


def test_adkt_codec_server_takes_allowed_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    from adkt.main import app

    served: list[Any] = []

    class _Server:  # uvicorn.Server, without listening: what it would serve
        def __init__(self, config: uvicorn.Config) -> None:
            served.append(config.app)

        async def serve(self) -> None:
            return None

    monkeypatch.setattr(uvicorn, "Server", _Server)
    env = {KEYS_ENV: new_key_line("k1"), "ADK_ALLOWED_HOSTS": "ui.example.com"}
    result = CliRunner().invoke(app, ["codec-server", "--allowed-host", "codec.example.com"], env=env)
    assert result.exit_code == 0, result.output
    assert served[0].hosts.names == ("localhost", "127.0.0.1", "::1", "ui.example.com", "codec.example.com")


# --- the body (adk_temporal's app itself) -----------------------------------------------------------------


async def test_a_declared_oversize_body_is_refused_before_it_is_read(codec: EncryptionCodec) -> None:
    sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        sent += 1
        yield b"{}"

    app = codec_server_app(codec, origins=[UI])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        r = await http.post("/decode", content=body(), headers={"content-type": "application/json",
                                                                "content-length": str(MAX_BODY_BYTES + 1)})  # fmt: skip
    assert r.status_code == 413 and sent == 0, r.text


async def test_a_streamed_oversize_body_stops_being_read_at_the_limit(codec: EncryptionCodec) -> None:
    chunk, chunks, sent = 2**20, MAX_BODY_BYTES // 2**20 + 8, 0

    async def body() -> AsyncIterator[bytes]:  # chunked: no Content-Length
        nonlocal sent
        for _ in range(chunks):
            sent += 1
            yield b" " * chunk

    app = codec_server_app(codec, origins=[UI])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        r = await http.post("/decode", content=body(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and sent * chunk <= MAX_BODY_BYTES + chunk < chunks * chunk, r.text


@pytest.mark.parametrize("body", [b'{"payloads": "\xff"}', b"[" * 100_000, b'{"payloads": ['], ids=["utf-8", "deep", "cut"])
async def test_a_body_that_is_not_protobuf_json_is_a_400(codec: EncryptionCodec, body: bytes) -> None:
    app = codec_server_app(codec, origins=[UI])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        r = await http.post("/decode", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400 and "protobuf JSON" in r.json()["error"], r.text
