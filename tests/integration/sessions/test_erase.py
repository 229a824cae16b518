"""Deleting a session or a user reaches every table that holds their data, and nothing else."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from adk_core.artifacts.sql import DatabaseArtifactService
from adk_core.errors import SessionNotFoundError
from adk_core.eval.results import SessionRef
from adk_core.eval.store import EvalResultStore, RunRecord, TrialRecord
from adk_core.memory.sql import DatabaseMemoryService
from adk_core.sessions import Session
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.simulator.sql import SqlSimulatorStore
from adk_core.sql.erase import erase_user, stream_prefixes
from adk_core.sql.schema import payloads, stream_chunks
from adk_core.types import Content, Event, EventActions, Part
from adk_temporal.activities.streaming import turn_stream_id
from adk_temporal.workflows.contracts import session_workflow_id

pytestmark = pytest.mark.integration
USERS = ("ann", "bob")
SESSIONS = ("s1", "user")  # "user" shares the artifact scope column with user: names


def test_stream_prefixes_match_the_workflow_id_scheme() -> None:
    for app, user, sid in (("a", "u", "s"), ("a/b", "u%1", "s#2")):
        assert turn_stream_id(session_workflow_id(app, user, sid), "m").startswith(stream_prefixes(app, user, sid)[0])
        assert session_workflow_id(app, user, sid).startswith(stream_prefixes(app, user)[0])
        other = session_workflow_id(app, user, sid + "x")
        assert not turn_stream_id(other, "m").startswith(stream_prefixes(app, user, sid)[0])


async def fill(engine: AsyncEngine, app: str) -> None:
    """Rows of every kind for each user and session."""
    sessions, memory = DatabaseSessionService(engine, sealer=None), DatabaseMemoryService(engine, sealer=None)
    artifacts, sim = DatabaseArtifactService(engine, sealer=None), SqlSimulatorStore(engine)
    evals = EvalResultStore(engine)
    await evals.start_run(RunRecord(run_id=f"{app}-run", suite="s", mode="durable", status="running", start_time=1.0))
    async with engine.begin() as conn:
        await conn.execute(sa.insert(payloads), [{"sha256": f"{app}-{u}", "data": b"x", "size": 1, "create_time": 1.0} for u in USERS])
    for user in USERS:
        for sid in SESSIONS:
            session = await sessions.create_session(app_name=app, user_id=user, session_id=sid)
            await sessions.append_event(
                session,
                Event(id=f"{user}-{sid}", author="user", timestamp=1.0, content=Content.user("words here"),
                      actions=EventActions(state_delta={"user:k": 1})),
            )
            await memory.add_session_to_memory(session)
            for name in ("f", "user:f"):
                await artifacts.save_artifact(app_name=app, user_id=user, session_id=sid, filename=name, artifact=Part(text="t"))
            await sim.session_for(app, user, sid)
            await evals.record_trial(f"{app}-run", TrialRecord(
                case_name=f"{user}-{sid}", trial=0, status="passed", turns=1, duration_ms=1.0,
                session=SessionRef(app_name=app, user_id=user, session_id=sid),
            ))
            async with engine.begin() as conn:
                for stream in (turn_stream_id(session_workflow_id(app, user, sid), "m"),
                               f"adk-run/{app}/{user}/{sid}/abc#m"):
                    await conn.execute(sa.insert(stream_chunks).values(
                        stream_id=stream, call=0, attempt=0, seq=0, after_events=0, kind="partial",
                        event={}, create_time=time.time()))


async def counts(engine: AsyncEngine, app: str, user: str) -> dict[str, int]:
    """Rows per table that belong to (app, user)."""
    queries = {
        "adk_sessions": "SELECT count(*) FROM adk_sessions WHERE app_name = :a AND user_id = :u",
        "adk_events": "SELECT count(*) FROM adk_events WHERE app_name = :a AND user_id = :u",
        "adk_user_states": "SELECT count(*) FROM adk_user_states WHERE app_name = :a AND user_id = :u",
        "adk_memory_entries": "SELECT count(*) FROM adk_memory_entries WHERE app_name = :a AND user_id = :u",
        "adk_artifacts": "SELECT count(*) FROM adk_artifacts WHERE app_name = :a AND user_id = :u",
        "adk_simulator_sessions": "SELECT count(*) FROM adk_simulator_sessions WHERE app_name = :a AND user_id = :u",
        "adk_eval_trials": "SELECT count(*) FROM adk_eval_trials WHERE session_app_name = :a AND session_user_id = :u",
        "adk_stream_chunks": "SELECT count(*) FROM adk_stream_chunks WHERE stream_id LIKE '%/' || :a || '/' || :u || '/%'",
    }
    async with engine.connect() as conn:
        return {t: (await conn.execute(sa.text(q), {"a": app, "u": user})).scalar_one() for t, q in queries.items()}


async def test_delete_session_then_user_reach_every_table(engine: AsyncEngine, app_name: str) -> None:
    app = app_name
    await fill(engine, app)
    full = await counts(engine, app, "ann")
    assert full == {"adk_sessions": 2, "adk_events": 2, "adk_user_states": 1, "adk_memory_entries": 2,
                    "adk_artifacts": 4, "adk_simulator_sessions": 2, "adk_eval_trials": 2, "adk_stream_chunks": 4}
    sessions = DatabaseSessionService(engine, sealer=None)
    for sid in SESSIONS:
        await sessions.delete_session(app_name=app, user_id="ann", session_id=sid)
    # Only user: artifacts (two versions of one name, saved from each session) and user: state stay.
    assert await counts(engine, app, "ann") == {**{t: 0 for t in full}, "adk_user_states": 1, "adk_artifacts": 2}
    artifacts = DatabaseArtifactService(engine, sealer=None)
    assert await artifacts.list_versions(app_name=app, user_id="ann", session_id="any", filename="user:f") == [0, 1]

    deleted = await erase_user(engine, app, "ann", payload_keys=[f"{app}-ann"])
    assert deleted["adk_user_states"] == 1 and deleted["adk_artifacts"] == 2 and deleted["adk_payloads"] == 1
    assert await counts(engine, app, "ann") == {t: 0 for t in full}
    assert await counts(engine, app, "bob") == full  # the other user is untouched
    assert await erase_user(engine, app, "ann", payload_keys=[f"{app}-ann"]) == {t: 0 for t in deleted}  # a retry
    async with engine.connect() as conn:
        left = (await conn.execute(sa.select(payloads.c.sha256).where(payloads.c.sha256.like(f"{app}-%")))).scalars().all()
    assert left == [f"{app}-bob"]


async def test_a_copy_of_a_deleted_users_session_cannot_append(engine: AsyncEngine, app_name: str) -> None:
    sessions = DatabaseSessionService(engine, sealer=None)
    session: Session = await sessions.create_session(app_name=app_name, user_id="u", session_id="s")
    await sessions.delete_user(app_name=app_name, user_id="u")
    with pytest.raises(SessionNotFoundError):
        await sessions.append_event(session, Event(id="late", author="user", timestamp=2.0))


async def test_a_sessions_delete_leaves_the_streams_of_sessions_whose_ids_extend_its_own(
    engine: AsyncEngine, app_name: str
) -> None:
    """'#' joins a conversation's workflow id and a message id in its stream ids, and ids may hold
    it: session 's' shares its stream-id prefix with 's#1', whose streamed partials its delete must
    leave (and the other way round)."""
    sessions = DatabaseSessionService(engine, sealer=None)
    sids = ("s", "s#1", "s#a/b%", "t")  # '/' and '%' escaped in the workflow id
    streams = {sid: turn_stream_id(session_workflow_id(app_name, "u", sid), "m") for sid in sids}
    for sid in sids:
        await sessions.create_session(app_name=app_name, user_id="u", session_id=sid)
    async with engine.begin() as conn:
        await conn.execute(sa.insert(stream_chunks), [
            {"stream_id": stream, "call": 0, "attempt": 0, "seq": 0, "after_events": 0, "kind": "partial",
             "event": {}, "create_time": time.time()} for stream in streams.values()])

    async def left() -> set[str]:
        async with engine.connect() as conn:
            found = await conn.execute(sa.select(stream_chunks.c.stream_id).where(
                sa.func.starts_with(stream_chunks.c.stream_id, stream_prefixes(app_name, "u")[0])))
            return set(found.scalars())

    await sessions.delete_session(app_name=app_name, user_id="u", session_id="s")
    assert await left() == {streams["s#1"], streams["s#a/b%"], streams["t"]}
    await sessions.delete_session(app_name=app_name, user_id="u", session_id="s#1")
    assert await left() == {streams["s#a/b%"], streams["t"]}
    await sessions.delete_session(app_name=app_name, user_id="u", session_id="s#a/b%")
    assert await left() == {streams["t"]}
