"""Deleting a session's or a user's data from every table of the sessions database (docs/security.md,
"Deleting a session or a user").

One transaction per call removes, for one session (``erase_session``) or one user of one app
(``erase_user``): events and sessions, ``user:`` state (a user only), memory entries, artifacts
(every version; a session's own names, a user's all), streamed partials of their conversations and
runs, simulator sessions (their events cascade), eval trials that ran in those sessions, and the
large payloads named in ``payload_keys`` (what the caller found referenced by the Temporal
workflows it deleted: ``adk_temporal.deletion``). Deleting what is already gone deletes nothing, so
a retry after a failure anywhere is safe.

Streamed partials are found by their stream id, which starts with the conversation's workflow id
(``workflows.contracts.session_workflow_id``) or the run's (``adk-run/app/user/session/...``);
``stream_prefixes`` rebuilds those prefixes here (adk_core does not import workflows; a test keeps
the two in step). A session's delete leaves the streams of its user's sessions whose ids extend its
own after a '#' (``_streams_of``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adk_core.artifacts.base import USER_SCOPE, USER_SCOPE_PREFIX
from adk_core.ids import escape_id_part, validate_id, validate_session_key
from adk_core.sql.schema import (
    artifacts,
    eval_trials,
    events,
    memory_entries,
    payloads,
    sessions,
    simulator_sessions,
    stream_chunks,
    user_states,
)


def stream_prefixes(app_name: str, user_id: str, session_id: str | None = None) -> list[str]:
    """The stream-id prefixes of a session's (or, without ``session_id``, a user's) conversations
    (``adk-session/...#message``) and ``run_once`` runs (``adk-run/.../hex#message``)."""
    parts = [escape_id_part(app_name), escape_id_part(user_id)]
    if session_id is None:
        return ["adk-session/" + "/".join(parts) + "/", "adk-run/" + "/".join(parts) + "/"]
    parts.append(escape_id_part(session_id))
    return ["adk-session/" + "/".join(parts) + "#", "adk-run/" + "/".join(parts) + "/"]


async def erase_session(
    engine: AsyncEngine, app_name: str, user_id: str, session_id: str, *, payload_keys: Iterable[str] = ()
) -> dict[str, int]:
    """Delete one session's data everywhere in the database; returns the rows deleted per table.
    Artifacts saved under ``user:`` names belong to the user and stay."""
    validate_session_key(app_name, user_id, session_id)
    async with engine.begin() as conn:
        return await _erase(conn, app_name, user_id, session_id, list(payload_keys))


async def erase_user(
    engine: AsyncEngine, app_name: str, user_id: str, *, payload_keys: Iterable[str] = ()
) -> dict[str, int]:
    """Delete everything of one user of one app in the database, ``user:`` state and artifacts
    included; returns the rows deleted per table."""
    validate_id("app name", app_name)
    validate_id("user id", user_id)
    async with engine.begin() as conn:
        return await _erase(conn, app_name, user_id, None, list(payload_keys))


async def _erase(
    conn: AsyncConnection, app_name: str, user_id: str, session_id: str | None, payload_keys: list[str]
) -> dict[str, int]:
    def of(table: sa.Table, app: str = "app_name", user: str = "user_id", sid: str = "session_id") -> list[Any]:
        where = [table.c[app] == app_name, table.c[user] == user_id]
        if session_id is not None:
            where.append(table.c[sid] == session_id)
        return where

    statements: dict[str, sa.Delete] = {
        # The session rows are locked first, as an append locks them: a concurrent append waits, then
        # finds its session gone (SessionNotFoundError) instead of adding an event after the delete.
        "adk_sessions": sa.delete(sessions).where(*of(sessions, sid="id")),
        "adk_events": sa.delete(events).where(*of(events)),
        "adk_memory_entries": sa.delete(memory_entries).where(*of(memory_entries)),
        "adk_artifacts": sa.delete(artifacts).where(*of(artifacts), *_not_user_scoped(session_id)),
        "adk_simulator_sessions": sa.delete(simulator_sessions).where(*of(simulator_sessions, sid="adk_session_id")),
        "adk_eval_trials": sa.delete(eval_trials).where(
            *of(eval_trials, app="session_app_name", user="session_user_id")
        ),
        "adk_stream_chunks": sa.delete(stream_chunks).where(_streams_of(app_name, user_id, session_id)),
    }
    if session_id is None:
        statements["adk_user_states"] = sa.delete(user_states).where(*of(user_states))
    if payload_keys:
        statements["adk_payloads"] = sa.delete(payloads).where(payloads.c.sha256.in_(payload_keys))
    deleted: dict[str, int] = {}
    for table, statement in statements.items():
        result = await conn.execute(statement)
        deleted[table] = result.rowcount or 0
    return deleted


def _streams_of(app_name: str, user_id: str, session_id: str | None) -> sa.ColumnElement[bool]:
    """The stream rows of a user's or a session's conversations and runs: prefix matches, which
    the (stream_id, id) index serves.

    A conversation's stream id is its workflow id, '#', then the message id, and ids may hold '#'
    (it is not escaped): the prefix of session 's' ('adk-session/app/user/s#') also starts every
    stream of session 's#1' ('adk-session/app/user/s#1#m'). Such a stream is taken to belong to
    the stored session with the longest workflow id that starts it, so a session's delete leaves
    the streams of its user's sessions named '<its id>#...'. (Message '1#m' of session 's' has the
    same stream id as message 'm' of 's#1': while 's#1' exists, it is taken as 's#1''s.) Run stream
    ids end the session id with '/', which is escaped: their prefix is exact."""
    conversations, runs = (
        sa.func.starts_with(stream_chunks.c.stream_id, p) for p in stream_prefixes(app_name, user_id, session_id)
    )
    if session_id is None:
        return sa.or_(conversations, runs)
    other = sessions.alias("other")
    other_prefix = (
        sa.literal(stream_prefixes(app_name, user_id)[0], sa.Text)
        + sa.func.replace(sa.func.replace(other.c.id, "%", "%25"), "/", "%2F")
        + "#"
    )
    owned_by_longer = sa.exists().where(
        other.c.app_name == app_name,
        other.c.user_id == user_id,
        sa.func.starts_with(other.c.id, session_id + "#"),
        sa.func.starts_with(stream_chunks.c.stream_id, other_prefix),
    )
    return sa.or_(sa.and_(conversations, sa.not_(owned_by_longer)), runs)


def _not_user_scoped(session_id: str | None) -> list[sa.ColumnElement[bool]]:
    """A session's artifacts leave its user's ``user:`` names alone. They share the scope column's
    value only with a session called 'user' (adk_core.artifacts.base.scope_session_id)."""
    if session_id == USER_SCOPE:
        return [sa.not_(artifacts.c.filename.startswith(USER_SCOPE_PREFIX, autoescape=True))]
    return []
