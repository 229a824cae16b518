"""Encryption (issue #24, item 1): a user's codec is kept by the client, the worker and the payload
store, so a marker sent in a message and returned by a tool (large enough to be stored in Postgres
out of band) appears in no Temporal history, read raw with `temporal workflow show`, and in no
stored payload; the codec server shows it to the UI; after a key rotation the old conversation
still reads. Without a codec the same check finds the marker: the check can fail."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import subprocess
import uuid

import httpx
import pytest
import sqlalchemy as sa
import uvicorn

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import LlmResponse, function_call_response, text_response, tool_responses_this_turn
from adk_core.sql import open_engine
from adk_core.tools import FunctionTool
from adk_core.tools.execution import RetryOptions, ToolExecution
from adk_temporal.codec_server import codec_server_app
from adk_temporal.encryption import ENCODING, KEY_ID, EncryptionCodec, KeyRing
from adk_temporal.worker import build_worker
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from adkt.embedded.temporal import temporal_binary
from adkt.services import open_services
from adkt.web.api.timeline_history import read_history

pytestmark = pytest.mark.integration

MARKER = "ZEBRA-7731-CONFIDENTIAL"
K1 = KeyRing.from_keys({"k1": b"\x01" * 32})
K2_THEN_K1 = KeyRing.from_keys([("k2", b"\x02" * 32), ("k1", b"\x01" * 32)])


def secret_lookup(patient: str) -> dict:
    """Look up a patient's record."""
    return {"patient": patient, "note": MARKER, "scan": MARKER + "x" * 300_000}  # stored out of band (> 256 KiB)


def _script(request: LlmRequest) -> LlmResponse:
    done = tool_responses_this_turn(request)
    return text_response(f"the note says {done[-1]['note']}") if done else function_call_response(
        "secret_lookup", {"patient": "p1"})


def _app() -> App:
    name = f"enc_{uuid.uuid4().hex[:6]}"
    return App(name=name, root_agent=LlmAgent(name="clinic", model=ScriptedModel(_script),
                                               tools=[FunctionTool(secret_lookup)]))  # fmt: skip


def _raw_history(server: TemporalDevServer, workflow_id: str) -> dict:
    shown = subprocess.run(
        [str(temporal_binary()), "workflow", "show", "--workflow-id", workflow_id, "--output", "json",
         "--address", server.address, "--namespace", server.namespace],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return json.loads(shown.stdout)


def _payloads(node: object) -> list[dict]:
    """Every payload object ({"metadata": ..., "data": ...}) anywhere in a history's JSON."""
    found: list[dict] = []
    if isinstance(node, dict):
        if "data" in node and "metadata" in node:
            found.append(node)
        for value in node.values():
            found += _payloads(value)
    elif isinstance(node, list):
        for value in node:
            found += _payloads(value)
    return found


def _plain_text(history: dict) -> str:
    """All the payload bytes of a history, decoded from base64: what anyone with the history reads."""
    return "".join(base64.b64decode(p["data"]).decode("utf-8", "replace") for p in _payloads(history))


async def _turn(server: TemporalDevServer, url: str, app: App, ring: KeyRing | None, session: str) -> str:
    codec = EncryptionCodec(ring) if ring else None
    client = await connect(server.address, namespace=server.namespace, database_url=url, payload_codec=codec)
    queue = f"q-{app.name}"  # the same for a conversation's later turns: its workflow stays on it
    async with open_services(url) as services:
        worker = build_worker(client, [app], task_queue=queue, **services)
        async with worker:
            send = AdkClient(client, task_queue=queue).send(app.name, "u", session, f"what is {MARKER}?")
            turn = await asyncio.wait_for(send, timeout=60)
    return turn.final_text


async def _stored_payloads(url: str) -> list[bytes]:
    engine = open_engine(url)
    try:
        async with engine.connect() as conn:
            return [bytes(r[0]) for r in await conn.execute(sa.text("SELECT data FROM adk_payloads"))]
    finally:
        await engine.dispose()


async def test_the_marker_is_in_clear_without_a_codec(temporal_server: TemporalDevServer, database_url: str) -> None:
    app = _app()
    assert await _turn(temporal_server, database_url, app, None, "plain") == f"the note says {MARKER}"
    history = _raw_history(temporal_server, session_workflow_id(app.name, "u", "plain"))
    assert MARKER in _plain_text(history)  # what the encrypted run below must not show


async def test_encrypted_everywhere_readable_through_the_codec_server_and_after_rotation(
    temporal_server: TemporalDevServer, database_url: str
) -> None:
    app = _app()
    before = set(await _stored_payloads(database_url))
    assert await _turn(temporal_server, database_url, app, K1, "s1") == f"the note says {MARKER}"
    workflow_id = session_workflow_id(app.name, "u", "s1")
    history = _raw_history(temporal_server, workflow_id)
    payloads = _payloads(history)
    assert payloads and MARKER not in _plain_text(history)
    assert MARKER not in json.dumps(history)
    encrypted = [p for p in payloads if base64.b64decode(p["metadata"].get("encoding", "")) == ENCODING]
    assert encrypted, "no payload is encrypted"
    stored = set(await _stored_payloads(database_url)) - before
    assert stored, "the large tool result was not stored out of band"
    assert not any(MARKER.encode() in data for data in stored)

    # The UI's codec server decrypts for the allowed origin, with the token.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(
        codec_server_app(EncryptionCodec(K1), origins=["http://localhost:8233"], token="t0k"),
        log_level="warning", lifespan="off",
    ))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), task
            await asyncio.sleep(0.02)
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        body = {"payloads": encrypted}
        async with httpx.AsyncClient(timeout=10) as http:
            decoded = await http.post(f"{base}/decode", json=body, headers={
                "Authorization": "Bearer t0k", "X-Namespace": temporal_server.namespace})
            assert decoded.status_code == 200, decoded.text
            assert MARKER in "".join(base64.b64decode(p["data"]).decode("utf-8", "replace")
                                     for p in decoded.json()["payloads"])  # fmt: skip
            assert (await http.post(f"{base}/decode", json=body)).status_code == 401
            preflight = await http.options(f"{base}/decode", headers={
                "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
            assert preflight.headers.get("access-control-allow-origin") is None
            allowed = await http.options(f"{base}/decode", headers={
                "Origin": "http://localhost:8233", "Access-Control-Request-Method": "POST"})
            assert allowed.headers.get("access-control-allow-origin") == "http://localhost:8233"
    finally:
        server.should_exit = True
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), timeout=10)
        sock.close()

    # Rotation: k2 encrypts from now on, k1 still decrypts the conversation so far.
    assert await _turn(temporal_server, database_url, app, K2_THEN_K1, "s1") == f"the note says {MARKER}"
    keys = {base64.b64decode(p["metadata"][KEY_ID]).decode()
            for p in _payloads(_raw_history(temporal_server, workflow_id)) if KEY_ID in p["metadata"]}  # fmt: skip
    assert keys == {"k1", "k2"}


def failing_lookup(patient: str) -> dict:
    """Look up a patient's record."""
    raise LookupError(f"patient {patient} has diagnosis {MARKER}")


def _answer_the_error(request: LlmRequest) -> LlmResponse:
    done = tool_responses_this_turn(request)
    return text_response(f"the tool said {done[-1]}") if done else function_call_response(
        "failing_lookup", {"patient": "p1"})


async def test_an_errors_message_is_encrypted_in_the_history_and_readable_to_the_workflow(
    temporal_server: TemporalDevServer, database_url: str
) -> None:
    """A tool's error may quote a user's data: with a codec, the failure's message and stack trace go
    into the history encoded too (Temporal's default writes them in clear), and the workflow, the
    model and the sender still read them."""
    execution = ToolExecution(retry_errors=True, retry=RetryOptions(maximum_attempts=1))
    app = App(name=f"enc_err_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(
        name="clinic", model=ScriptedModel(_answer_the_error), tools=[FunctionTool(failing_lookup, execution=execution)]))
    client = await connect(temporal_server.address, namespace=temporal_server.namespace, database_url=database_url,
                           payload_codec=EncryptionCodec(K1))
    queue = f"q-{app.name}"
    async with open_services(database_url) as services, build_worker(client, [app], task_queue=queue, **services):
        turn = await asyncio.wait_for(AdkClient(client, task_queue=queue).send(app.name, "u", "s1", "look p1 up"), 60)
    assert MARKER in turn.final_text  # the model read the error's message
    history = _raw_history(temporal_server, session_workflow_id(app.name, "u", "s1"))
    assert MARKER not in json.dumps(history)
    # The dev page's timeline, reading the history with the key, shows the tool's error as it was.
    timeline = await read_history(client, session_workflow_id(app.name, "u", "s1"))
    assert timeline is not None and any(MARKER in (a.failure or "") for a in timeline.activities)
