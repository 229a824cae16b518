"""Encryption at rest and deletion (issue #24, items 1 and 4), end to end on the real dev server and
Postgres: a marker sent in a message, returned by a tool (large enough to go out of band), written
to an artifact (two versions) and to memory, and streamed, is in no Postgres row in clear while keys
are configured, and reads back (after a key rotation too). After `delete_user` the user's workflows
are gone from Temporal (listed, and `temporal workflow show` finds none) and nothing of theirs is in
any table, decrypted or not; another user of the same app keeps everything."""

from __future__ import annotations

import asyncio
import base64
import re
import subprocess
import uuid

import pytest
import sqlalchemy as sa
from temporalio.service import RPCError, RPCStatusCode

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.artifacts.sql import DatabaseArtifactService
from adk_core.encryption import KEYS_ENV, KEYS_FILE_ENV, KeyRing, Sealer
from adk_core.models import LlmResponse, function_call_response, text_response, tool_responses_this_turn
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import open_engine
from adk_core.tools import FunctionTool
from adk_core.tools.tool_context import ToolContext
from adk_core.types import Content, Part
from adk_temporal.deletion import delete_user
from adk_temporal.encryption import EncryptionCodec
from adk_temporal.worker import build_worker
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from adkt.embedded.temporal import temporal_binary
from adkt.services import open_services

pytestmark = pytest.mark.integration

MARKER = f"OKAPI-{uuid.uuid4().hex[:10]}"
K1 = ("k1", b"\x11" * 32)
K2 = ("k2", b"\x22" * 32)


def _keys(*keys: tuple[str, bytes]) -> str:
    return ",".join(f"{kid}:{base64.b64encode(key).decode()}" for kid, key in keys)


async def secret_lookup(patient: str, tool_context: ToolContext) -> dict:
    """Look up a patient's record."""
    for version in range(2):
        await tool_context.save_artifact("record.txt", Part(text=f"{MARKER} v{version}"))
    return {"patient": patient, "note": MARKER, "scan": MARKER + "x" * 300_000}  # > 256 KiB: out of band


def _script(request: LlmRequest) -> LlmResponse | list[LlmResponse]:
    asked = request.contents[-1].parts[0].text if request.contents and request.contents[-1].parts else ""
    done = tool_responses_this_turn(request)
    if done:  # streamed: the marker travels as a partial too
        return [LlmResponse(content=Content.model("the note says "), partial=True),
                LlmResponse(content=Content.model(MARKER), partial=True),
                text_response(f"the note says {done[-1]['note']}")]  # fmt: skip
    if asked and "record" in asked:
        return function_call_response("secret_lookup", {"patient": "p1"})
    return text_response("hello")


def _app() -> App:
    return App(name=f"del_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(
        name="clinic", model=ScriptedModel(_script), tools=[FunctionTool(secret_lookup)]))  # fmt: skip


async def _rows(url: str) -> list[tuple[str, str]]:
    """Every row of every table, as (table, row cast to text)."""
    engine = open_engine(url)
    try:
        async with engine.connect() as conn:
            tables = (await conn.execute(sa.text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))).scalars().all()
            return [(t, row) for t in tables for row in (await conn.execute(sa.text(f'SELECT x::text FROM "{t}" x'))).scalars()]
    finally:
        await engine.dispose()


def _holding(rows: list[tuple[str, str]], needle: str) -> list[str]:
    return [f"{t}: {r[:100]}" for t, r in rows if needle in r or needle.encode().hex() in r]


def _decrypted(rows: list[tuple[str, str]], sealer: Sealer) -> str:
    """Everything sealed in the rows, decrypted: what someone with the keys reads."""
    opened = []
    for _, row in rows:
        for blob in re.findall(r'adk_sealed\\?"?:\s*\\?"?([A-Za-z0-9+/=]{16,})', row):
            try:
                opened.append(sealer.open(base64.b64decode(blob)).decode("utf-8", "replace"))
            except Exception:  # noqa: BLE001  (stream chunks use the Temporal codec's format: skipped here)
                continue
    return "\n".join(opened)


def _shown(server: TemporalDevServer, workflow_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(temporal_binary()), "workflow", "show", "--workflow-id", workflow_id, "--output", "json",
         "--address", server.address, "--namespace", server.namespace],
        capture_output=True, text=True, timeout=60,
    )


async def _until_gone(client, workflow_id: str, timeout: float = 180) -> None:  # noqa: ANN001
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            await client.get_workflow_handle(workflow_id).describe()
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                return
            raise
        assert asyncio.get_running_loop().time() < deadline, f"{workflow_id}'s history is still there after {timeout} s"
        await asyncio.sleep(0.5)


async def test_marker_encrypted_at_rest_then_deleted_everywhere(
    temporal_server: TemporalDevServer, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEYS_FILE_ENV, raising=False)
    monkeypatch.setenv(KEYS_ENV, _keys(K1))  # every store this process opens seals with k1
    app = _app()
    codec = EncryptionCodec(KeyRing.from_keys([K1]))
    client = await connect(temporal_server.address, namespace=temporal_server.namespace, database_url=database_url,
                           payload_codec=codec)  # fmt: skip
    queue = f"q-{app.name}"
    async with open_services(database_url) as services, build_worker(client, [app], task_queue=queue, **services):
        adk = AdkClient(client, task_queue=queue, database_url=database_url)
        streamed = [e async for e in adk.stream(app.name, "victim", "s1", f"read the record of {MARKER}", partial=True)]
        # The marker streams as partials (sealed at rest: test_stream_chunks checks the rows); the client
        # shows partials read before the call's response and drops later ones, so under load it may
        # show only the answer: what must hold is that the turn carries the marker.
        assert any(MARKER in (e.text or "") for e in streamed)
        ran = await asyncio.wait_for(adk.run_once(app.name, "victim", "s2", "read the record"), timeout=60)
        assert ran.final_text == f"the note says {MARKER}"
        await asyncio.wait_for(adk.send(app.name, "bystander", "b1", "hi"), timeout=60)
        session = await services["session_service"].get_session(app_name=app.name, user_id="victim", session_id="s1")
        await services["memory_service"].add_session_to_memory(session)

        rows = await _rows(database_url)
        assert _holding(rows, MARKER) == []
        assert MARKER in _decrypted(rows, Sealer(KeyRing.from_keys([K1])))  # the check can find it
        found = await services["memory_service"].search_memory(app_name=app.name, user_id="victim", query=MARKER)
        assert found.memories and MARKER in (found.memories[0].content.text or "")

        # Rotated: k2 first; what k1 sealed still reads.
        monkeypatch.setenv(KEYS_ENV, _keys(K2, K1))
        rotated = DatabaseSessionService(database_url)
        artifacts = DatabaseArtifactService(database_url)
        try:
            old = await rotated.get_session(app_name=app.name, user_id="victim", session_id="s1")
            assert old is not None and any(MARKER in e.text for e in old.events)
            part = await artifacts.load_artifact(app_name=app.name, user_id="victim", session_id="s1",
                                                 filename="record.txt", version=0)  # fmt: skip
            assert part is not None and part.text == f"{MARKER} v0"
        finally:
            await rotated.close()
            await artifacts.close()

        # Waits until Temporal has removed the histories (milliseconds with the embedded server's settings).
        report = await asyncio.wait_for(delete_user(client, services["session_service"].engine, app.name, "victim"),
                                        timeout=120)  # fmt: skip
        conversation = session_workflow_id(app.name, "victim", "s1")
        for workflow_id in report.histories_pending:  # a busy dev server may take longer than the wait
            await _until_gone(client, workflow_id)
        assert conversation in report.workflows and any(w.startswith("adk-run/") for w in report.workflows)
        assert report.rows["adk_payloads"] >= 1  # the large tool results only the victim's runs referenced
        again = await delete_user(client, services["session_service"].engine, app.name, "victim")
        assert again.workflows == [] and not any(again.rows.values())  # idempotent

    rows = await _rows(database_url)
    assert _holding(rows, MARKER) == []
    assert MARKER not in _decrypted(rows, Sealer(KeyRing.from_keys([K2, K1])))
    assert not [r for t, r in rows if "victim" in r], "a row of the deleted user is left"
    assert [r for t, r in rows if t == "adk_sessions" and "bystander" in r], "the other user's session is gone"
    listed = [w.id async for w in client.list_workflows(f"AdkApp = '{app.name}' AND AdkUser = 'victim'")]
    assert listed == []
    shown = _shown(temporal_server, conversation)
    assert shown.returncode != 0 and "not found" in (shown.stderr + shown.stdout).lower()
    assert _shown(temporal_server, session_workflow_id(app.name, "bystander", "b1")).returncode == 0
