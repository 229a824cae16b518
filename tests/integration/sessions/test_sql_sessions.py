"""What only the Postgres session store can get wrong: migrations, engines, crashes, big sessions."""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from adk_core.compaction import compaction_event
from adk_core.encryption import KeyRing, Sealer
from adk_core.errors import AdkError, ConfigurationError, EventConflictError, InvalidInputError
from adk_core.sessions import GetSessionConfig, Session
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sessions.sql import _statements as q
from adk_core.sessions.sql.service import _APPEND_PLAIN_SQL, _event_json, _skipping_compacted_sql
from adk_core.sql import MIGRATIONS_DIR, alembic_config, held, is_transient, migrate, upgrade
from adk_core.sql.migrate import HEAD_REVISION, VERSION_TABLE
from adk_core.sql.schema import metadata
from adk_core.types import Content, Event, EventActions, EventCompaction, Part
from adkt.embedded import EmbeddedPostgres

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture
async def service(engine: AsyncEngine) -> DatabaseSessionService:
    return DatabaseSessionService(engine)


def event(event_id: str, ts: float, delta: dict[str, Any] | None = None) -> Event:
    return Event(
        id=event_id,
        author="user",
        invocation_id="inv",
        timestamp=ts,
        content=Content.user(event_id),
        actions=EventActions(state_delta=delta or {}),
    )


async def stored_rows(engine: AsyncEngine, session: Session) -> list[sa.Row[Any]]:
    async with engine.connect() as conn:
        result = await conn.execute(
            sa.text(
                "SELECT id, seq, event FROM adk_events WHERE app_name = :a AND user_id = :u AND session_id = :s "
                "ORDER BY seq"
            ),
            {"a": session.app_name, "u": session.user_id, "s": session.id},
        )
        return list(result.all())


@contextlib.contextmanager
def held_statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """The (sql, params) of each statement run on held connections (adk_core.sql.held) inside the block."""
    run = held._fetchone
    statements: list[tuple[str, dict[str, Any]]] = []

    async def captured(driver: Any, sql: str, params: Any) -> Any:
        statements.append((sql, dict(params)))
        return await run(driver, sql, params)

    monkeypatch.setattr(held, "_fetchone", captured)
    try:
        yield statements
    finally:
        monkeypatch.setattr(held, "_fetchone", run)


async def fill_session(
    engine: AsyncEngine, app_name: str, user_id: str, session_id: str, count: int, *, padding: int = 0,
    prefix: str = "e",
) -> None:
    """Store events {prefix}1..{prefix}{count} in an existing session by bulk SQL (seq 1..count), without
    ANALYZE; each event's JSON carries ``padding`` characters more (rows as long as real events' are)."""
    params = {"a": app_name, "u": user_id, "s": session_id, "n": count, "pad": "x" * padding, "prefix": prefix}
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO adk_events (app_name, user_id, session_id, id, seq, invocation_id, author, timestamp, event) "
                "SELECT :a, :u, :s, :prefix || g, g, 'inv', 'user', g::float8, jsonb_build_object('id', :prefix || g, "
                "'author', 'user', 'invocation_id', 'inv', 'timestamp', g::float8, 'custom_metadata', "
                "jsonb_build_object('pad', CAST(:pad AS text))) FROM generate_series(1, :n) AS g"
            ),
            params,
        )
        await conn.execute(
            sa.text("UPDATE adk_sessions SET last_seq = :n WHERE app_name = :a AND user_id = :u AND id = :s"), params
        )


@contextlib.asynccontextmanager
async def fresh_engine(postgres: EmbeddedPostgres, name: str) -> AsyncIterator[AsyncEngine]:
    """An engine on a new migrated database of its own (Postgres has no statistics for it yet),
    disposed afterwards."""
    url = await postgres.create_database(f"{name}_{uuid.uuid4().hex[:8]}")
    await migrate(url)
    engine = create_async_engine(url)
    try:
        yield engine
    finally:
        await engine.dispose()


# --- migrations and engines ------------------------------------------------------------------------


async def test_migrations_match_the_schema_and_rerun_as_no_ops(
    migrated_url: str, engine: AsyncEngine
) -> None:
    await migrate(migrated_url)  # again: already at head
    await asyncio.to_thread(upgrade, migrated_url)  # the synchronous entry point too

    def diff(conn: sa.Connection) -> list[Any]:
        context = MigrationContext.configure(conn, opts={"version_table": "adk_alembic_version"})
        return compare_metadata(context, metadata)

    async with engine.connect() as conn:
        assert await conn.run_sync(diff) == []
        version = (await conn.execute(sa.text("SELECT version_num FROM adk_alembic_version"))).scalar_one()
    # The newest migration, whichever it is: other migrations get added without touching this test.
    assert version == ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_migrations_ship_inside_the_package() -> None:
    # No alembic.ini and no source checkout needed: the script directory resolves from the package.
    scripts = ScriptDirectory.from_config(alembic_config())
    assert len(scripts.get_heads()) == 1  # one line of migrations, no unmerged branches
    assert (MIGRATIONS_DIR / "script.py.mako").is_file()
    # A database at HEAD_REVISION is taken to be up to date: a new migration must move it.
    assert HEAD_REVISION == scripts.get_current_head()


async def test_a_database_behind_is_upgraded_and_one_at_head_is_checked_without_alembic(
    postgres: EmbeddedPostgres,
) -> None:
    url = await postgres.create_database(f"behind_{uuid.uuid4().hex[:8]}")
    await asyncio.to_thread(upgrade, url, "0006")
    await migrate(url)  # one migration behind: the fast path must not skip it
    engine = create_async_engine(url)
    async with engine.connect() as conn:
        version = (await conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}"))).scalar_one()
    await engine.dispose()
    assert version == HEAD_REVISION
    # At head, a new process (a worker, a CLI command) reads the version and neither imports
    # Alembic nor reads the migration scripts.
    script = (
        "import asyncio, sys\n"
        "from adk_core.sql import migrate\n"
        f"asyncio.run(migrate({url!r}))\n"
        "assert 'alembic' not in sys.modules, 'alembic was imported'\n"
    )
    checked = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stderr


def _compacted_log() -> list[Event]:
    """u1 a1 u2 a2, a compaction of the first three, u3: read skipping compacted, u2 (where the summary shows) a2 C u3."""
    log = [event(name, ts) for name, ts in (("u1", 1.0), ("a1", 2.0), ("u2", 3.0), ("a2", 4.0))]
    summary = EventCompaction(start_timestamp=1.0, end_timestamp=3.0, compacted_content=Content.model("S"))
    return [*log, compaction_event(summary, invocation_id="inv", timestamp=4.5), event("u3", 5.0)]


async def test_migration_0008_copies_plain_compaction_ranges_out_and_marks_sessions_with_sealed_events(
    postgres: EmbeddedPostgres,
) -> None:
    url = await postgres.create_database(f"ranges_{uuid.uuid4().hex[:8]}")
    await asyncio.to_thread(upgrade, url, "0007")
    engine = create_async_engine(url)
    log = _compacted_log()
    sealer = Sealer(KeyRing((("k1", bytes(range(32))),)))
    async with engine.begin() as conn:  # rows as 0007's code stored them: no range columns
        for sid, stored_as in (("plain", None), ("sealed", sealer)):
            await conn.execute(sa.text(
                "INSERT INTO adk_sessions (app_name, user_id, id, create_time, update_time, last_seq) "
                "VALUES ('a', 'u', :s, 0, 0, :n)"), {"s": sid, "n": len(log)})
            for seq, e in enumerate(log, 1):
                await conn.execute(sa.text(
                    "INSERT INTO adk_events (app_name, user_id, session_id, id, seq, invocation_id, author, timestamp, event) "
                    "VALUES ('a', 'u', :s, :id, :seq, :inv, :by, :at, CAST(:json AS jsonb))"),
                    {"s": sid, "id": e.id, "seq": seq, "inv": e.invocation_id, "by": e.author, "at": e.timestamp,
                     "json": _event_json(e, stored_as)})
    await migrate(url)
    async with engine.connect() as conn:
        ranges = (await conn.execute(sa.text(
            "SELECT session_id, id, covers_from, covers_to FROM adk_events WHERE covers_from IS NOT NULL ORDER BY 1"))).all()
        complete = dict((await conn.execute(sa.text("SELECT id, compaction_ranges_complete FROM adk_sessions"))).all())
    assert [tuple(r) for r in ranges] == [("plain", "inv/compaction", 1.0, 3.0)]
    assert complete == {"plain": True, "sealed": False}
    service = DatabaseSessionService(engine, sealer=sealer)
    skipping = GetSessionConfig(skip_compacted=True)
    plain = await service.get_session(app_name="a", user_id="u", session_id="plain", config=skipping)
    sealed = await service.get_session(app_name="a", user_id="u", session_id="sealed", config=skipping)
    assert plain is not None and [e.id for e in plain.events] == ["u2", "a2", "inv/compaction", "u3"]
    assert sealed is not None and [e.id for e in sealed.events] == [e.id for e in log]  # its range is sealed: all read
    await engine.dispose()


async def test_a_compaction_stored_now_has_its_range_in_clear_beside_its_sealed_event(
    engine: AsyncEngine, app_name: str
) -> None:
    service = DatabaseSessionService(engine, sealer=Sealer(KeyRing((("k1", bytes(range(32))),))))
    session = await service.create_session(app_name=app_name, user_id="u")
    await service.append_events(session, _compacted_log())
    async with engine.connect() as conn:
        rows = (await conn.execute(sa.text(
            "SELECT id, covers_from, covers_to, event ? 'adk_sealed' FROM adk_events WHERE app_name = :a ORDER BY seq"),
            {"a": app_name})).all()
    assert [tuple(r) for r in rows] == [
        ("u1", None, None, True), ("a1", None, None, True), ("u2", None, None, True), ("a2", None, None, True),
        ("inv/compaction", 1.0, 3.0, True), ("u3", None, None, True),
    ]
    got = await service.get_session(app_name=app_name, user_id="u", session_id=session.id,
                                    config=GetSessionConfig(skip_compacted=True))
    assert got is not None and [e.id for e in got.events] == ["u2", "a2", "inv/compaction", "u3"]


def _plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


async def test_a_skipping_read_does_not_read_the_compactions_the_newest_one_holds(postgres: EmbeddedPostgres) -> None:
    """A long agentic session compacted 3,000 times (the token trigger compacts before model calls):
    each compaction nested in the next, as the planner writes them. The read skipping compacted
    events must find the compactions the newest one does not hold (none) without reading the
    others: before migration 0009 one scan read all 3,000 and filtered them out. Analyzed, as
    autovacuum leaves a live table (without statistics the planner may still read them all)."""
    async with fresh_engine(postgres, "many_compactions") as engine:
        service = DatabaseSessionService(engine)
        await service.create_session(app_name="a", user_id="u", session_id="s")
        async with engine.begin() as conn:  # step g: an event at 2g, then a compaction at 2g + 1 covering 1..2g
            await conn.execute(sa.text(
                "INSERT INTO adk_events (app_name, user_id, session_id, id, seq, invocation_id, author, timestamp, event,"
                " covers_from, covers_to) "
                "SELECT 'a', 'u', 's', CASE WHEN k = 0 THEN 'e' || g ELSE 'c' || g END, 2 * g + k, 'inv', 'user',"
                " 2 * g + k, CASE WHEN k = 0 THEN jsonb_build_object('id', 'e' || g, 'author', 'user', 'invocation_id',"
                " 'inv', 'timestamp', 2 * g) ELSE jsonb_build_object('id', 'c' || g, 'author', 'user', 'invocation_id',"
                " 'inv', 'timestamp', 2 * g + 1, 'actions', jsonb_build_object('compaction', jsonb_build_object("
                " 'start_timestamp', 2.0, 'end_timestamp', 2 * g, 'compacted_content', jsonb_build_object('role',"
                " 'model', 'parts', jsonb_build_array(jsonb_build_object('text', 'S')))))) END,"
                " CASE WHEN k = 1 THEN 2.0 END, CASE WHEN k = 1 THEN (2 * g)::float8 END "
                "FROM generate_series(1, 3000) AS g, generate_series(0, 1) AS k"))
            await conn.execute(sa.text("UPDATE adk_sessions SET last_seq = 6001 WHERE id = 's'"))
            await conn.execute(sa.text("ANALYZE adk_events"))
        got = await service.get_session(app_name="a", user_id="u", session_id="s", config=GetSessionConfig(skip_compacted=True))
        assert got is not None and [e.id for e in got.events] == ["e3000", "c3000"]
        sql = _skipping_compacted_sql(False)
        async with engine.connect() as conn:
            [plan] = (await conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + sql, {"app": "a", "user": "u", "sid": "s"})).scalar_one()
        # Every scan that looks at compactions' ranges (the newest compaction's lookup, the two sides
        # of its range) reads a handful of rows, whatever else the planner picks for a small table.
        ranged = [node for node in _plan_nodes(plan["Plan"]) if "Scan" in node["Node Type"] and any(
            "covers_" in str(node.get(key, "")) for key in ("Index Cond", "Recheck Cond", "Filter"))]
        read = [node.get("Actual Rows", 0) * node.get("Actual Loops", 1) + node.get("Rows Removed by Filter", 0)
                for node in ranged]
        assert len(ranged) >= 2 and max(read) <= 10, [(n["Node Type"], n.get("Index Name"), r) for n, r in zip(ranged, read, strict=True)]


async def test_concurrent_migrators_take_turns(postgres: EmbeddedPostgres) -> None:
    url = await postgres.create_database(f"concurrent_migrators_{uuid.uuid4().hex[:8]}")
    await asyncio.gather(*(migrate(url) for _ in range(4)))
    engine = create_async_engine(url)
    async with engine.connect() as conn:
        tables = set(
            (
                await conn.execute(sa.text("SELECT tablename FROM pg_tables WHERE tablename LIKE 'adk_%'"))
            ).scalars()
        )
    await engine.dispose()
    assert tables >= {
        "adk_sessions",
        "adk_events",
        "adk_app_states",
        "adk_user_states",
        "adk_alembic_version",
    }


async def test_constructor_connects_to_nothing() -> None:
    service = DatabaseSessionService(
        "postgresql://nobody@127.0.0.1:1/nowhere"
    )  # plain URL upgraded to psycopg
    assert service.engine.url.drivername == "postgresql+psycopg"
    await service.close()


def test_other_drivers_are_refused_with_a_hint() -> None:
    with pytest.raises(ConfigurationError, match="postgresql\\+psycopg"):
        DatabaseSessionService("sqlite+aiosqlite:///x.db")


async def test_an_injected_engine_survives_close(engine: AsyncEngine, app_name: str) -> None:
    service = DatabaseSessionService(engine)
    await service.create_session(app_name=app_name, user_id="u")
    await service.close()
    async with engine.connect() as conn:  # still usable: the service did not dispose it
        assert (await conn.execute(sa.text("SELECT 1"))).scalar_one() == 1


# --- storage details -------------------------------------------------------------------------------------


async def test_events_are_stored_without_temp_keys_in_seq_order(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str
) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    for i in range(3):
        await service.append_event(session, event(f"e{i}", float(i), {"k": i, "temp:t": i}))
    await service.append_event(session, event("e1", 1.0, {"k": 1, "temp:t": 1}))  # a retry allocates no seq
    await service.append_event(session, event("e3", 3.0))
    rows = await stored_rows(engine, session)
    assert [(r.id, r.seq) for r in rows] == [("e0", 1), ("e1", 2), ("e2", 3), ("e3", 4)]
    assert all("temp:t" not in r.event["actions"]["state_delta"] for r in rows)


@pytest.mark.parametrize("bad", [math.nan, math.inf, "nul\x00byte"])
async def test_values_postgres_cannot_hold_are_refused_before_writing(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str, bad: Any
) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    with pytest.raises(InvalidInputError, match="Postgres"):
        await service.append_event(session, event("e1", 1.0, {"ok": 1, "user:v": bad}))
    assert await stored_rows(engine, session) == []
    assert await service.get_user_state(app_name=app_name, user_id="u") == {}
    # A string that merely spells the escape is fine.
    await service.append_event(session, event("e2", 2.0, {"text": "\\u0000"}))
    assert (await service.get_session(app_name=app_name, user_id="u", session_id=session.id)).state == {  # type: ignore[union-attr]
        "text": "\\u0000"
    }


async def test_delete_removes_event_rows(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str
) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    await service.append_event(session, event("e1", 1.0))
    await service.delete_session(app_name=app_name, user_id="u", session_id=session.id)
    assert await stored_rows(engine, session) == []


# --- a transaction killed halfway ------------------------------------------------------------------------


async def _append_blocked_after_event_insert(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str
) -> tuple[Session, asyncio.Task[Event], int, Any]:
    """Start an append that has updated the session and inserted its event, then blocks on the
    app-state row (held FOR UPDATE by the returned blocker connection). Returns its backend pid."""
    session = await service.create_session(
        app_name=app_name, user_id="u", state={"k": "before", "app:seed": 0}
    )
    blocker = await engine.connect()
    await blocker.execute(
        sa.text("SELECT 1 FROM adk_app_states WHERE app_name = :a FOR UPDATE"), {"a": app_name}
    )
    copy = session.model_copy(deep=True)
    task = asyncio.create_task(
        service.append_event(copy, event("e1", 5.0, {"k": "after", "app:seed": 1, "user:u": 1}))
    )
    async with engine.connect() as probe:
        for _ in range(500):
            pid = (
                await probe.execute(
                    sa.text(
                        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                        "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                    )
                )
            ).scalar_one_or_none()
            # pg_stat_activity is a snapshot per transaction: end it to see the next state.
            await probe.rollback()
            if pid is not None:
                break
            await asyncio.sleep(0.01)
        else:
            task.cancel()
            await blocker.close()
            raise AssertionError("the append never blocked on the app-state row")
        # Halfway indeed: the blocked transaction has already written to adk_events.
        holds_events_lock = await probe.execute(
            sa.text("SELECT 1 FROM pg_locks WHERE pid = :pid AND relation = 'adk_events'::regclass"),
            {"pid": pid},
        )
        assert holds_events_lock.first() is not None
    return session, task, pid, blocker


async def _assert_nothing_applied(
    service: DatabaseSessionService, engine: AsyncEngine, session: Session
) -> None:
    stored = await service.get_session(app_name=session.app_name, user_id="u", session_id=session.id)
    assert stored is not None
    assert stored.events == [] and stored.state == {"k": "before", "app:seed": 0}
    assert await service.get_user_state(app_name=session.app_name, user_id="u") == {}
    assert await stored_rows(engine, session) == []
    # The retry of the same append then goes through once.
    await service.append_event(session, event("e1", 5.0, {"k": "after", "app:seed": 1, "user:u": 1}))
    stored = await service.get_session(app_name=session.app_name, user_id="u", session_id=session.id)
    assert stored is not None and [e.id for e in stored.events] == ["e1"]
    assert stored.state == {"k": "after", "app:seed": 1, "user:u": 1}
    assert [r.seq for r in await stored_rows(engine, session)] == [1]


async def test_a_connection_killed_mid_append_leaves_nothing(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str
) -> None:
    session, task, pid, blocker = await _append_blocked_after_event_insert(service, engine, app_name)
    async with engine.connect() as killer:
        await killer.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    with pytest.raises(DBAPIError) as caught:
        await task  # the failure surfaces; nothing is swallowed
    # ...as the database error itself, not an AdkError, so a Temporal activity retries it.
    assert not isinstance(caught.value, AdkError) and is_transient(caught.value)
    await blocker.rollback()
    await blocker.close()
    await _assert_nothing_applied(service, engine, session)


async def test_a_cancelled_append_leaves_nothing(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str
) -> None:
    session, task, _, blocker = await _append_blocked_after_event_insert(service, engine, app_name)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await blocker.rollback()
    await blocker.close()
    await _assert_nothing_applied(service, engine, session)


# --- a 10,000-event session -------------------------------------------------------------------------------


async def test_last_events_of_a_big_session_come_from_the_seq_index(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = await service.create_session(app_name=app_name, user_id="u", session_id="big")
    params = {"a": app_name, "u": "u", "s": "big"}
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO adk_events (app_name, user_id, session_id, id, seq, invocation_id, author, timestamp, event) "
                "SELECT :a, :u, :s, 'e' || g, g, 'inv', 'user', g::float8, jsonb_build_object("
                "  'id', 'e' || g, 'author', 'user', 'invocation_id', 'inv', 'timestamp', g::float8,"
                "  'content', jsonb_build_object('role', 'user', 'parts', jsonb_build_array("
                "    jsonb_build_object('text', 'message ' || g))))"
                "FROM generate_series(1, 10000) AS g"
            ),
            params,
        )
        await conn.execute(
            sa.text(
                "UPDATE adk_sessions SET last_seq = 10000 WHERE app_name = :a AND user_id = :u AND id = :s"
            ),
            params,
        )
        await conn.execute(sa.text("ANALYZE adk_events"))
    await service.append_event(session, event("last", 10001.0))

    with held_statements(monkeypatch) as statements:
        got = await service.get_session(
            app_name=app_name, user_id="u", session_id="big", config=GetSessionConfig(num_recent_events=20)
        )
    assert got is not None
    assert [e.id for e in got.events] == [f"e{i}" for i in range(9982, 10001)] + ["last"]
    assert got.events[0].text == "message 9982"

    (events_query,) = [(s, p) for s, p in statements if "FROM adk_events" in s]
    async with engine.connect() as conn:
        plan = "\n".join(
            (await conn.exec_driver_sql("EXPLAIN " + events_query[0], events_query[1])).scalars()
        )
    # Read backwards along the seq index and stop after 20 rows: no scan of the session, no sort of it.
    assert "Index Scan Backward using adk_events_session_seq on adk_events" in plan, plan
    assert "Seq Scan on adk_events" not in plan and "Limit" in plan, plan

    # The cursor read (through an event id) is an index range too.
    cursor = await service.get_session(
        app_name=app_name,
        user_id="u",
        session_id="big",
        config=GetSessionConfig(through_event_id="e5000", num_recent_events=3),
    )
    assert cursor is not None and [e.id for e in cursor.events] == ["e4998", "e4999", "e5000"]


async def test_a_batch_of_plain_events_with_a_bad_one_writes_nothing(service: DatabaseSessionService) -> None:
    session = await service.create_session(app_name="app", user_id="u", session_id="badplain")
    bad = event("q2", 2.0)
    bad.content = Content(role="user", parts=[Part(text="a NUL \x00 Postgres cannot store")])
    with pytest.raises(InvalidInputError):
        await service.append_events(session, [event("q1", 1.0), bad, event("q3", 3.0)])
    stored = await service.get_session(app_name="app", user_id="u", session_id="badplain")
    assert stored is not None and stored.events == []


async def test_a_batch_of_plain_events_is_one_statement(
    service: DatabaseSessionService, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events without a state delta are stored by one statement, with no transaction around it."""
    session = await service.create_session(app_name="app", user_id="u", session_id="onestatement")
    await service.append_event(session, event("r0", 0.5))  # the held connections exist now
    with held_statements(monkeypatch) as statements:
        await service.append_events(session, [event("r1", 1.0), event("r2", 2.0), event("r3", 3.0)])
        await service.append_events(session, [event("r4", 4.0), event("r5", 5.0, {"k": 5}), event("r6", 6.0)])
    assert len(statements) == 1 + 3  # the plain batch; then r4, r5 (its delta) and r6 each alone
    rows = await stored_rows(engine, session)
    assert [(r.id, r.seq) for r in rows] == [(f"r{i}", i + 1) for i in range(7)]


# --- one id, one content (issue 24, item 8) ---------------------------------------------------------


async def test_a_row_stored_before_a_field_existed_is_a_repeat_not_a_conflict(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str
) -> None:
    """The statements compare jsonb; a stored row that lacks fields the current Event model has
    (written by an older version) differs there, and is then compared in the model's form."""
    session = await service.create_session(app_name=app_name, user_id="u", session_id="older")
    events = [event("o1", 1.0), event("o2", 2.0), event("o3", 3.0, {"k": 3})]
    await service.append_events(session, events)
    async with engine.begin() as conn:  # as an older version stored them: without two newer fields
        await conn.execute(
            sa.text("UPDATE adk_events SET event = event - 'model_version' - 'interrupted' "
                    "WHERE app_name = :a AND session_id = 'older'"),
            {"a": app_name},
        )
    again = [Event.model_validate_json(e.model_dump_json()) for e in events]
    await service.append_event(session, again[0])
    await service.append_events(session, [*again, event("o4", 4.0), event("o5", 5.0)])  # plain run o1, o2, o4, o5
    rows = await stored_rows(engine, session)
    assert [r.id for r in rows] == ["o1", "o2", "o3", "o4", "o5"]
    changed = event("o2", 2.0)
    changed.content = Content.user("changed")
    with pytest.raises(EventConflictError, match="'o2'"):
        await service.append_events(session, [event("o6", 6.0), changed])
    assert [r.id for r in await stored_rows(engine, session)] == ["o1", "o2", "o3", "o4", "o5"]


async def test_the_batch_statement_looks_stored_events_up_by_key_in_its_generic_plan(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str
) -> None:
    """Prepared statements switch to a generic plan: the conflict check must not scan the events table there."""
    session = await service.create_session(app_name=app_name, user_id="u", session_id="plan")
    await fill_session(engine, app_name, "u", "plan", 5000)
    async with engine.begin() as conn:
        await conn.execute(sa.text("ANALYZE adk_events"))
    names: list[str] = []

    def numbered(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    generic = re.sub(r"%\((\w+)\)s", numbered, _APPEND_PLAIN_SQL)
    async with engine.connect() as conn:
        plan = "\n".join((await conn.exec_driver_sql("EXPLAIN (GENERIC_PLAN) " + generic)).scalars())
    assert "Seq Scan on adk_events" not in plan, plan
    assert "adk_events_pkey" in plan, plan
    await service.append_events(session, [event("new1", 5001.0), event("new2", 5002.0)])
    with pytest.raises(EventConflictError, match="e4999"):  # stored above with other content
        await service.append_events(session, [event("new3", 5003.0), event("e4999", 4999.0)])


async def test_appending_new_events_reads_no_stored_event(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append of events not stored yet (nearly every append) reads none of the session's stored events.
    Looking each id up cost one index probe an event where Postgres had statistics, and on a table it had
    not analyzed yet (a new database, before autovacuum first gets to it) one read of the whole session an
    event, through the (session, seq) index: 1 ms for a W1 turn's 8 events in a session of 900."""
    session = await service.create_session(app_name=app_name, user_id="u", session_id="newonly")
    await service.append_event(session, event("n0", 0.5))  # the held connections exist now
    with held_statements(monkeypatch) as statements:
        await service.append_events(session, [event("n1", 1.0), event("n2", 2.0), event("n3", 3.0)])  # one plain batch
        await service.append_event(session, event("n4", 4.0, {"k": 4}))  # one event, with a delta
    assert len(statements) == 2
    async with engine.connect() as conn:
        for sql, params in statements:
            plan = "\n".join((await conn.exec_driver_sql("EXPLAIN " + sql, params)).scalars())
            assert not re.search(r"Scan[^\n]* on adk_events\b", plan), plan

    # A retried append finds its ids stored: the same content is a repeat, other content a conflict,
    # and neither writes anything.
    await service.append_events(session, [event("n2", 2.0), event("n3", 3.0), event("n5", 5.0)])
    changed = event("n5", 5.0)
    changed.content = Content.user("changed")
    with pytest.raises(EventConflictError, match="'n5'"):
        await service.append_events(session, [event("n6", 6.0), changed])
    with pytest.raises(EventConflictError, match="'n4'"):
        await service.append_event(session, event("n4", 4.0, {"k": "other"}))
    rows = await stored_rows(engine, session)
    assert [r.id for r in rows] == ["n0", "n1", "n2", "n3", "n4", "n5"]
    stored = await service.get_session(app_name=app_name, user_id="u", session_id="newonly")
    assert stored is not None and stored.state == {"k": 4}


async def test_one_batch_appended_by_racing_writers_is_stored_once(
    service: DatabaseSessionService, engine: AsyncEngine, app_name: str
) -> None:
    """Two attempts of one call storing the same events at once (a heartbeat missed): the first stores
    them, each other one finds them stored on the primary key and goes again as a repeat."""
    session = await service.create_session(app_name=app_name, user_id="u", session_id="racing")
    copies = [
        await service.get_session(app_name=app_name, user_id="u", session_id="racing") for _ in range(4)
    ]
    await asyncio.gather(
        *(service.append_events(copy, [event("c1", 1.0), event("c2", 2.0), event("c3", 3.0)]) for copy in copies if copy)
    )
    assert [r.id for r in await stored_rows(engine, session)] == ["c1", "c2", "c3"]
    assert all(copy is not None and [e.id for e in copy.events] == ["c1", "c2", "c3"] for copy in copies)


async def test_reads_through_an_event_id_take_the_key_on_a_database_without_statistics(
    postgres: EmbeddedPostgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new database has no statistics until autovacuum first reaches it. There a plain `id = :x` lookup
    goes through the (session, seq) index with the id as a filter, reading the whole session: the reads
    through an event id (a session read up to an id or after one, a stored event's JSON) must not."""
    LONG = "3f1c8a52-0d6e-4c1b-9a7e-6b2d5e8f-"
    async with fresh_engine(postgres, "no_statistics") as engine:
        service = DatabaseSessionService(engine)
        await service.create_session(app_name="app", user_id="u", session_id="long")
        # Ids as long as the runtime's (uuids): with short ones the key is smaller and the planner took it anyway.
        await fill_session(engine, "app", "u", "long", 10_000, padding=200, prefix=LONG)
        statements: list[tuple[str, Any]] = []

        def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
            statements.append((statement, parameters))

        sa.event.listen(engine.sync_engine, "before_cursor_execute", capture)
        try:
            through = await service.get_session(
                app_name="app", user_id="u", session_id="long",
                config=GetSessionConfig(through_event_id=f"{LONG}1500", num_recent_events=2),
            )
            after = await service.get_session(
                app_name="app", user_id="u", session_id="long", config=GetSessionConfig(after_event_id=f"{LONG}9998"),
            )
            missing = await service.get_session(  # the first id after it in key order is e1501, not it
                app_name="app", user_id="u", session_id="long",
                config=GetSessionConfig(through_event_id=f"{LONG}1500x", num_recent_events=2),
            )
        finally:
            sa.event.remove(engine.sync_engine, "before_cursor_execute", capture)
        assert through is not None and [e.id for e in through.events] == [f"{LONG}1499", f"{LONG}1500"]
        assert after is not None and [e.id for e in after.events] == [f"{LONG}9999", f"{LONG}10000"]
        assert missing is not None and missing.events == []
        event_json = (held.driver_sql(q.EVENT_JSON), {"app": "app", "user": "u", "sid": "long", "event_id": f"{LONG}2000"})

        # A retried append takes the statements that look each id up: those must not scan either.
        long = await service.get_session(app_name="app", user_id="u", session_id="long", config=GetSessionConfig(num_recent_events=0))
        assert long is not None
        await service.append_events(long, [event("r1", 10_001.0), event("r2", 10_002.0)])
        await service.append_event(long, event("r3", 10_003.0, {"k": 3}))
        with held_statements(monkeypatch) as retried:
            await service.append_events(long, [event("r1", 10_001.0), event("r2", 10_002.0)])  # a repeat: again with lookups
            await service.append_event(long, event("r3", 10_003.0, {"k": 3}))
        assert len(retried) == 4  # each first without lookups, refused on the key, then with them
        assert [r.id for r in await stored_rows(engine, long)][-3:] == ["r1", "r2", "r3"]

        async with engine.connect() as conn:
            reltuples = (await conn.execute(sa.text("SELECT reltuples FROM pg_class WHERE relname = 'adk_events'"))).scalar()
            assert reltuples is not None and reltuples < 0, "the premise: Postgres has not analyzed adk_events"
            for sql, parameters in [*statements, event_json, *retried[1::2]]:
                plan = "\n".join((await conn.exec_driver_sql("EXPLAIN ANALYZE " + sql, parameters)).scalars())
                await conn.rollback()  # EXPLAIN ANALYZE runs an append: nothing of it stays
                removed = [int(n) for n in re.findall(r"Rows Removed by Filter: (\d+)", plan)]
                assert all(n <= 10 for n in removed), plan
                assert "adk_events_pkey" in plan, plan
