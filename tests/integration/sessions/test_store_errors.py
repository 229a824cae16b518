"""Database errors: permanent ones become AdkErrors, transient ones stay as they are (so retried).

The first half needs no server (errors built from psycopg's own classes); the second provokes
each kind on a real Postgres.
"""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import psycopg.errors as pg
import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from adk_core.artifacts.sql import DatabaseArtifactService
from adk_core.errors import AdkError, ConfigurationError, InvalidInputError, SessionError
from adk_core.memory.sql import DatabaseMemoryService
from adk_core.sessions import GetSessionConfig, Session
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import classify, is_transient, permanent_error, store_errors
from adk_core.types import Content, Event, Part
from adkt.embedded import EmbeddedPostgres


def wrapped(error: psycopg.Error) -> DBAPIError:
    """``error`` as SQLAlchemy raises it from a statement."""
    return DBAPIError.instance("SELECT 1", {}, error, psycopg.Error)


# --- the classification, without a server ---------------------------------------------------------------

TRANSIENT = [
    pg.SerializationFailure("could not serialize access"),
    pg.DeadlockDetected("deadlock detected"),
    pg.TooManyConnections("sorry, too many clients already"),
    pg.AdminShutdown("terminating connection due to administrator command"),
    pg.CannotConnectNow("the database system is starting up"),
    pg.QueryCanceled("canceling statement due to statement timeout"),
    pg.LockNotAvailable("canceling statement due to lock timeout"),
    pg.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction"),
    pg.ConnectionFailure("connection failure"),
    psycopg.OperationalError("connection is lost"),  # client-side: no SQLSTATE
    psycopg.InterfaceError("the connection is closed"),
]

PERMANENT = [
    (pg.CharacterNotInRepertoire("invalid byte sequence"), InvalidInputError, "refused a value"),
    (pg.NumericValueOutOfRange("bigint out of range"), InvalidInputError, "bigint out of range"),
    (pg.ProgramLimitExceeded("total size of jsonb array elements exceeds the maximum"), InvalidInputError, "jsonb"),
    (psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"), InvalidInputError, "NUL"),
    (pg.UndefinedTable('relation "adk_sessions" does not exist'), ConfigurationError, "migrate"),
    (pg.UndefinedColumn('column "last_seq" does not exist'), ConfigurationError, "migrate"),
    (pg.InsufficientPrivilege("permission denied for table adk_events"), ConfigurationError, "role"),
    (pg.UniqueViolation("duplicate key value violates unique constraint"), SessionError, "rejected"),
    (pg.SyntaxError("syntax error at or near"), SessionError, "adk_core bug"),
]


@pytest.mark.parametrize("error", TRANSIENT, ids=lambda e: type(e).__name__)
def test_transient_errors_are_left_as_they_are(error: psycopg.Error) -> None:
    assert is_transient(wrapped(error))
    assert permanent_error(wrapped(error), "doing") is None


@pytest.mark.parametrize(("error", "becomes", "says"), PERMANENT, ids=lambda e: type(e).__name__)
def test_permanent_errors_become_adk_errors_that_say_what_to_fix(
    error: psycopg.Error, becomes: type[AdkError], says: str
) -> None:
    replacement = permanent_error(wrapped(error), "Store.op")
    assert type(replacement) is becomes
    assert str(replacement).startswith("Store.op: ") and says in str(replacement)
    assert "SELECT 1" not in str(replacement)  # the database's message, not the statement


def test_text_the_driver_cannot_encode_is_invalid_input() -> None:
    with pytest.raises(UnicodeEncodeError) as caught:
        "a\ud800".encode()
    replacement = permanent_error(caught.value, "Store.op")
    assert isinstance(replacement, InvalidInputError) and "surrogates not allowed" in str(replacement)


def test_unknown_errors_are_left_as_they_are() -> None:
    for error in (wrapped(pg.InternalError_("internal error")), ValueError("not a database error")):
        assert classify(error) == "unknown"
        assert permanent_error(error, "doing") is None


def test_an_invalidated_connection_is_transient_whatever_the_sqlstate() -> None:
    error = wrapped(pg.SyntaxError("x"))
    error.connection_invalidated = True
    assert is_transient(error)


async def test_store_errors_names_the_method_and_keeps_the_cause() -> None:
    nul = wrapped(psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"))
    lost = wrapped(pg.AdminShutdown("terminating connection"))

    class Store:
        @store_errors
        async def write(self, error: Exception) -> None:
            raise error

    with pytest.raises(InvalidInputError, match=r"^Store\.write: Postgres refused a value") as caught:
        await Store().write(nul)
    assert caught.value.__cause__ is nul
    with pytest.raises(DBAPIError) as passed:
        await Store().write(lost)
    assert passed.value is lost  # untouched: the activity fails and Temporal retries it


# --- each kind on a real Postgres -------------------------------------------------------------------------


def event(event_id: str, author: str = "user") -> Event:
    return Event(id=event_id, author=author, timestamp=1.0, content=Content.user(event_id))


@pytest.mark.integration
async def test_a_value_postgres_refuses_is_an_invalid_input_error(engine: AsyncEngine, app_name: str) -> None:
    sessions = DatabaseSessionService(engine)
    session = await sessions.create_session(app_name=app_name, user_id="u")
    # A cursor id is sent as a text parameter; psycopg refuses the NUL before sending.
    with pytest.raises(InvalidInputError, match=r"DatabaseSessionService\.get_session: .*NUL"):
        await sessions.get_session(
            app_name=app_name, user_id="u", session_id=session.id, config=GetSessionConfig(through_event_id="e\x00")
        )
    # NULs in state at create and in events are caught before sending, naming the field.
    with pytest.raises(InvalidInputError, match="session state contains a NUL"):
        await sessions.create_session(app_name=app_name, user_id="u", state={"k": "a\x00"})
    with pytest.raises(InvalidInputError, match="app: state contains a NUL"):
        await sessions.create_session(app_name=app_name, user_id="u", state={"app:k": ["\x00"]})
    with pytest.raises(InvalidInputError, match="event 'e1' contains a NUL"):
        await sessions.append_event(session, event("e1", author="a\x00"))
    # A lone surrogate has no UTF-8 form: the id rule refuses it, and in a value psycopg cannot send it.
    with pytest.raises(InvalidInputError, match="lone surrogate"):
        await sessions.create_session(app_name=app_name, user_id="u\ud800")
    with pytest.raises(InvalidInputError, match="Postgres refused a value"):
        await sessions.create_session(app_name=app_name, user_id="u", state={"k": "x\ud800"})
    assert [s.id for s in (await sessions.list_sessions(app_name=app_name)).sessions] == [session.id]
    assert await sessions.get_app_state(app_name=app_name) == {}


@pytest.mark.integration
async def test_memory_and_artifact_text_with_a_nul_is_an_invalid_input_error(
    engine: AsyncEngine, app_name: str
) -> None:
    memory = DatabaseMemoryService(engine)
    session = Session(id="s", app_name=app_name, user_id="u", events=[event("e1", author="bad\x00author")])
    with pytest.raises(InvalidInputError, match=r"DatabaseMemoryService\.add_session_to_memory"):
        await memory.add_session_to_memory(session)
    artifacts = DatabaseArtifactService(engine)
    keys = {"app_name": app_name, "user_id": "u", "session_id": "s", "filename": "a.txt"}
    with pytest.raises(InvalidInputError, match=r"DatabaseArtifactService\.save_artifact"):
        await artifacts.save_artifact(**keys, artifact=Part(text="a\x00b"))
    assert await artifacts.list_versions(**keys) == []


@pytest.mark.integration
async def test_a_database_without_the_tables_is_a_configuration_error(postgres: EmbeddedPostgres) -> None:
    url = await postgres.create_database(f"unmigrated_{uuid.uuid4().hex[:8]}")
    sessions = DatabaseSessionService(url)
    try:
        with pytest.raises(ConfigurationError, match=r"adk_sessions.*does not exist.*migrate\(url\)"):
            await sessions.create_session(app_name="app", user_id="u")
        with pytest.raises(ConfigurationError, match="migrate"):
            await sessions.list_sessions(app_name="app")
    finally:
        await sessions.close()


@pytest.mark.integration
async def test_a_lock_timeout_stays_a_database_error_and_the_retry_succeeds(
    migrated_url: str, engine: AsyncEngine, app_name: str
) -> None:
    impatient = DatabaseSessionService(migrated_url, engine_kwargs={"connect_args": {"options": "-c lock_timeout=100"}})
    try:
        session = await impatient.create_session(app_name=app_name, user_id="u")
        async with engine.connect() as blocker:
            await blocker.execute(
                sa.text("SELECT 1 FROM adk_sessions WHERE app_name = :a FOR UPDATE"), {"a": app_name}
            )
            with pytest.raises(DBAPIError) as caught:
                await impatient.append_event(session, event("e1"))
            await blocker.rollback()
        assert not isinstance(caught.value, AdkError) and is_transient(caught.value)
        assert isinstance(caught.value.orig, pg.LockNotAvailable)
        assert session.events == []  # the caller's copy is untouched by the failed append
        await impatient.append_event(session, event("e1"))  # the retry
        stored = await impatient.get_session(app_name=app_name, user_id="u", session_id=session.id)
        assert stored is not None and [e.id for e in stored.events] == ["e1"]
    finally:
        await impatient.close()


@pytest.mark.integration
async def test_too_many_connections_stays_a_database_error(
    migrated_url: str, engine: AsyncEngine, app_name: str
) -> None:
    role = f"adk_nobody_{uuid.uuid4().hex[:8]}"
    async with engine.begin() as conn:
        await conn.execute(sa.text(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 0"))
    url = sa.make_url(migrated_url).set(username=role, password=None)
    locked_out = DatabaseSessionService(url)
    try:
        with pytest.raises(DBAPIError) as caught:
            await asyncio.wait_for(locked_out.list_sessions(app_name=app_name), 30)
        assert not isinstance(caught.value, AdkError) and is_transient(caught.value)
        assert "too many connections" in str(caught.value)
    finally:
        await locked_out.close()
