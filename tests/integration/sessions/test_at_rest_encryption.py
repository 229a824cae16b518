"""Encryption at rest in the SQL stores: nothing of a conversation is stored in clear once keys are
configured, it reads back, keys rotate, and rows written before encryption still read."""

from __future__ import annotations

import base64
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from adk_core.artifacts.sql import DatabaseArtifactService
from adk_core.encryption import KeyRing, Sealer
from adk_core.errors import ConfigurationError, EventConflictError
from adk_core.memory.sql import DatabaseMemoryService
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.types import Blob, Content, Event, EventActions, Part

pytestmark = pytest.mark.integration

K1 = ("k1", bytes(range(32)))
K2 = ("k2", bytes(range(32, 64)))


def sealer(*keys: tuple[str, bytes]) -> Sealer:
    return Sealer(KeyRing.from_keys(list(keys)))


async def rows_holding(engine: AsyncEngine, needle: str) -> list[str]:
    """Every row of every table (cast to text) that holds ``needle`` in clear, as text or as the hex a
    bytea column shows."""
    hexed = "\\x" + needle.encode().hex()
    found = []
    async with engine.connect() as conn:
        tables = (
            await conn.execute(sa.text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
        ).scalars().all()
        for table in tables:
            rows = (await conn.execute(sa.text(f'SELECT t::text FROM "{table}" t'))).scalars().all()
            found += [f"{table}: {row[:120]}" for row in rows if needle in row or needle.encode().hex() in row or hexed in row]
    return found


def marked_event(event_id: str, marker: str, ts: float, **delta: object) -> Event:
    return Event(
        id=event_id,
        author="user",
        invocation_id="inv-1",
        timestamp=ts,
        content=Content.user(f"my secret is {marker} ok"),
        actions=EventActions(state_delta=dict(delta)),
    )


async def test_nothing_is_stored_in_clear_and_everything_reads_back(engine: AsyncEngine, app_name: str) -> None:
    marker = f"mk{uuid.uuid4().hex[:12]}"
    keys = sealer(K1)
    sessions = DatabaseSessionService(engine, sealer=keys)
    memory = DatabaseMemoryService(engine, sealer=keys)
    artifacts = DatabaseArtifactService(engine, sealer=keys)

    session = await sessions.create_session(
        app_name=app_name, user_id="u", session_id="s", state={"note": marker, "user:n": marker, "app:a": marker}
    )
    await sessions.append_event(session, marked_event("e1", marker, 1.0, **{"k": marker, "user:k": marker}))
    await sessions.append_events(session, [marked_event("e2", marker, 2.0), marked_event("e3", marker, 3.0)])
    await memory.add_session_to_memory(session)
    for version in range(2):
        await artifacts.save_artifact(
            app_name=app_name, user_id="u", session_id="s", filename="f.txt",
            artifact=Part(inline_data=Blob(mime_type="text/plain", data=f"{marker} v{version}".encode())),
        )
    await artifacts.save_artifact(
        app_name=app_name, user_id="u", session_id="s", filename="user:t", artifact=Part(text=marker)
    )

    assert await rows_holding(engine, marker) == []

    got = await sessions.get_session(app_name=app_name, user_id="u", session_id="s")
    assert got is not None
    assert [e.text for e in got.events] == [f"my secret is {marker} ok"] * 3
    assert got.state == {"note": marker, "k": marker, "user:n": marker, "user:k": marker, "app:a": marker}
    assert await sessions.get_user_state(app_name=app_name, user_id="u") == {"n": marker, "k": marker}
    listed = (await sessions.list_sessions(app_name=app_name, user_id="u")).sessions
    assert listed[0].state["note"] == marker
    found = await memory.search_memory(app_name=app_name, user_id="u", query=f"what is {marker}")
    assert sorted(m.id for m in found.memories) == ["e1", "e2", "e3"]
    assert (await memory.search_memory(app_name=app_name, user_id="u", query="unrelated")).memories == []
    for version in range(2):
        part = await artifacts.load_artifact(
            app_name=app_name, user_id="u", session_id="s", filename="f.txt", version=version
        )
        assert part is not None and part.inline_data is not None
        assert part.inline_data.data == f"{marker} v{version}".encode()
    text = await artifacts.load_artifact(app_name=app_name, user_id="u", session_id="other", filename="user:t")
    assert text is not None and text.text == marker

    # A repeat is recognised through the ciphertext (AES-GCM never encrypts twice alike) ...
    await sessions.append_event(got, marked_event("e1", marker, 1.5, **{"k": marker, "user:k": marker}))
    await sessions.append_events(got, [marked_event("e2", marker, 2.0), marked_event("e4", marker, 4.0)])
    # ... and a conflict too, naming what differs.
    with pytest.raises(EventConflictError, match="e3"):
        await sessions.append_events(got, [marked_event("e3", "other", 3.0)])
    with pytest.raises(EventConflictError, match="e1"):
        await sessions.append_event(got, marked_event("e1", marker, 1.0, k="changed"))
    again = await sessions.get_session(app_name=app_name, user_id="u", session_id="s")
    assert again is not None and [e.id for e in again.events] == ["e1", "e2", "e3", "e4"]


async def test_rotation_and_rows_from_before_encryption(engine: AsyncEngine, app_name: str) -> None:
    plain = DatabaseSessionService(engine, sealer=None)
    old = await plain.create_session(app_name=app_name, user_id="u", session_id="s", state={"a": 1})
    await plain.append_event(old, marked_event("p1", "plain", 1.0, b=2))
    plain_art = DatabaseArtifactService(engine, sealer=None)
    await plain_art.save_artifact(
        app_name=app_name, user_id="u", session_id="s", filename="f", artifact=Part(text="plain text")
    )
    await DatabaseMemoryService(engine, sealer=None).add_session_to_memory(old)

    # Keys turned on: old rows read, new rows are sealed with k1, a repeat of a plain row is a repeat.
    with_k1 = DatabaseSessionService(engine, sealer=sealer(K1))
    session = await with_k1.get_session(app_name=app_name, user_id="u", session_id="s")
    assert session is not None and session.state == {"a": 1, "b": 2}
    await with_k1.append_event(session, marked_event("p1", "plain", 1.0, b=2))
    await with_k1.append_event(session, marked_event("s1", "sealed", 2.0, b=3))
    await DatabaseArtifactService(engine, sealer=sealer(K1)).save_artifact(
        app_name=app_name, user_id="u", session_id="s", filename="f", artifact=Part(text="sealed text")
    )
    memory = DatabaseMemoryService(engine, sealer=sealer(K1))
    await memory.add_session_to_memory(session)
    assert sorted(m.id for m in (await memory.search_memory(app_name=app_name, user_id="u", query="plain sealed")).memories) == ["p1", "s1"]

    # Rotated: k2 first, k1 still decrypts; what is written now uses k2.
    rotated = DatabaseSessionService(engine, sealer=sealer(K2, K1))
    session = await rotated.get_session(app_name=app_name, user_id="u", session_id="s")
    assert session is not None and [e.text for e in session.events] == ["my secret is plain ok", "my secret is sealed ok"]
    await rotated.append_event(session, marked_event("s2", "newer", 3.0, c=4))
    rotated_art = DatabaseArtifactService(engine, sealer=sealer(K2, K1))
    versions = [
        await rotated_art.load_artifact(app_name=app_name, user_id="u", session_id="s", filename="f", version=v)
        for v in (0, 1)
    ]
    assert [p.text for p in versions if p is not None] == ["plain text", "sealed text"]
    async with engine.connect() as conn:
        stored = (
            await conn.execute(
                sa.text("SELECT event FROM adk_events WHERE app_name = :a AND id = 's2'"), {"a": app_name}
            )
        ).scalar_one()
    assert base64.b64decode(stored["adk_sealed"])[5:7] == b"k2"  # ADK1, the id's length, the id

    # Without k1 the old rows fail by the key's id, not with garbage; without keys, with the setting.
    only_k2 = DatabaseSessionService(engine, sealer=sealer(K2))
    with pytest.raises(ConfigurationError, match="'k1'"):
        await only_k2.get_session(app_name=app_name, user_id="u", session_id="s")
    with pytest.raises(ConfigurationError, match="ADK_ENCRYPTION_KEYS"):
        await plain.get_session(app_name=app_name, user_id="u", session_id="s")
