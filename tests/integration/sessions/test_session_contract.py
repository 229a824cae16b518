"""The SessionService contract, run unchanged on InMemorySessionService and DatabaseSessionService."""

from __future__ import annotations

import asyncio
import math
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from adk_core.compaction import compaction_event
from adk_core.errors import (
    AlreadyExistsError,
    EventConflictError,
    InvalidInputError,
    SessionNotFoundError,
    StateKeyError,
)
from adk_core.flow.contents import without_compacted
from adk_core.sessions import GetSessionConfig, InMemorySessionService, Session, SessionService
from adk_core.sessions.base import select_events
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.types import Blob, Content, Event, EventActions, EventCompaction, FunctionResponse, Part


@pytest_asyncio.fixture
async def service(backend: tuple[str, str | None]) -> AsyncIterator[SessionService]:
    kind, url = backend
    if kind == "in_memory":
        yield InMemorySessionService()
        return
    assert url is not None
    sql = DatabaseSessionService(url)
    yield sql
    await sql.close()


def event(event_id: str, ts: float, delta: dict[str, Any] | None = None, **kw: Any) -> Event:
    return Event(
        id=event_id,
        author=kw.pop("author", "user"),
        invocation_id=kw.pop("invocation_id", "inv-1"),
        timestamp=ts,
        content=Content.user(f"message {event_id}"),
        actions=EventActions(state_delta=delta or {}),
        **kw,
    )


async def reget(service: SessionService, session: Session, config: GetSessionConfig | None = None) -> Session:
    got = await service.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.id, config=config
    )
    assert got is not None
    return got


# --- create, get, list, delete ------------------------------------------------------------------


async def test_create_splits_state_by_prefix_and_never_stores_temp(
    service: SessionService, app_name: str
) -> None:
    state = {"count": 1, "app:model": "m", "user:name": "ada", "temp:scratch": "x"}
    session = await service.create_session(app_name=app_name, user_id="u1", state=state, session_id="s1")

    expected = {"count": 1, "app:model": "m", "user:name": "ada"}
    assert (session.id, session.app_name, session.user_id) == ("s1", app_name, "u1")
    assert session.state == expected and session.events == []
    assert (await reget(service, session)).state == expected
    assert await service.get_app_state(app_name=app_name) == {"model": "m"}
    assert await service.get_user_state(app_name=app_name, user_id="u1") == {"name": "ada"}


async def test_create_generates_an_id_only_when_none_is_given(service: SessionService, app_name: str) -> None:
    a = await service.create_session(app_name=app_name, user_id="u")
    b = await service.create_session(app_name=app_name, user_id="u", session_id=None)
    assert a.id and b.id and a.id != b.id
    # Blank or padded ids are refused, not replaced or stripped (google-adk does both).
    for blank in ("", "  ", " s1", "s1\n"):
        with pytest.raises(InvalidInputError, match="session id"):
            await service.create_session(app_name=app_name, user_id="u", session_id=blank)
    assert {s.id for s in (await service.list_sessions(app_name=app_name)).sessions} == {a.id, b.id}


async def test_an_id_reads_and_deletes_exactly_as_created(service: SessionService, app_name: str) -> None:
    created = await service.create_session(app_name=app_name, user_id="u", session_id="a/b c:%d")
    assert created.id == "a/b c:%d"  # punctuation and inner spaces are kept as they are
    assert (await reget(service, created)).id == "a/b c:%d"
    with pytest.raises(InvalidInputError, match="leading or trailing whitespace; pass 'a/b c:%d'"):
        await service.get_session(app_name=app_name, user_id="u", session_id=" a/b c:%d")
    await service.delete_session(app_name=app_name, user_id="u", session_id="a/b c:%d")
    assert await service.get_session(app_name=app_name, user_id="u", session_id="a/b c:%d") is None


BAD_IDS = ["", " x", "x ", "x\ty", "nul\x00", "\x85next-line", "x" * 257, 42, None]


@pytest.mark.parametrize("bad", BAD_IDS, ids=lambda v: repr(v)[:12])
async def test_bad_ids_are_refused_at_every_entry_point_before_any_write(
    service: SessionService, app_name: str, bad: Any
) -> None:
    session = await service.create_session(app_name=app_name, user_id="u", session_id="s")
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: service.create_session(app_name=bad, user_id="u", state={"app:k": 1}),
        lambda: service.create_session(app_name=app_name, user_id=bad, state={"app:k": 1}),
        lambda: service.get_session(app_name=bad, user_id="u", session_id="s"),
        lambda: service.get_session(app_name=app_name, user_id=bad, session_id="s"),
        lambda: service.list_sessions(app_name=bad),
        lambda: service.delete_session(app_name=app_name, user_id="u", session_id=bad),
        lambda: service.get_user_state(app_name=app_name, user_id=bad),
        lambda: service.get_app_state(app_name=bad),
        lambda: service.append_event(session.model_copy(update={"user_id": bad}), event("e1", 1.0, {"app:k": 1})),
        lambda: service.append_events(
            session.model_copy(update={"id": bad}), [event("e2", 1.0), event("e3", 2.0, {"app:k": 1})]
        ),
    ]
    if bad is not None:  # None means "generate one" for create, "every user" for list
        calls += [
            lambda: service.create_session(app_name=app_name, user_id="u", session_id=bad, state={"app:k": 1}),
            lambda: service.get_session(app_name=app_name, user_id="u", session_id=bad),
            lambda: service.list_sessions(app_name=app_name, user_id=bad),
        ]
    for call in calls:
        with pytest.raises(InvalidInputError):
            await call()
    assert await service.get_app_state(app_name=app_name) == {}
    assert [s.id for s in (await service.list_sessions(app_name=app_name)).sessions] == ["s"]
    assert (await reget(service, session)).events == []


async def test_duplicate_session_id_is_already_exists(service: SessionService, app_name: str) -> None:
    await service.create_session(app_name=app_name, user_id="u", session_id="dup", state={"app:k": 1})
    with pytest.raises(AlreadyExistsError, match="already exists"):
        await service.create_session(app_name=app_name, user_id="u", session_id="dup", state={"app:k": 2})
    assert await service.get_app_state(app_name=app_name) == {"k": 1}  # the failed create wrote nothing
    with pytest.raises(AlreadyExistsError, match="already exists"):  # no shared state: the one-statement path
        await service.create_session(app_name=app_name, user_id="u", session_id="dup", state={"k": 3})
    stored = await service.get_session(app_name=app_name, user_id="u", session_id="dup")
    assert stored is not None and stored.state == {"app:k": 1}
    # The same id under another user is another session.
    await service.create_session(app_name=app_name, user_id="other", session_id="dup")


async def test_get_missing_session_is_none(service: SessionService, app_name: str) -> None:
    assert await service.get_session(app_name=app_name, user_id="u", session_id="nope") is None


async def test_get_session_config_selects_like_the_reference(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    for i in range(10):
        await service.append_event(session, event(f"e{i}", 100.0 + i))
    everything = (await reget(service, session)).events
    assert [e.id for e in everything] == [f"e{i}" for i in range(10)]

    configs = [
        GetSessionConfig(num_recent_events=3),
        GetSessionConfig(num_recent_events=0),
        GetSessionConfig(num_recent_events=50),
        GetSessionConfig(after_timestamp=104.0),
        GetSessionConfig(after_timestamp=104.0, num_recent_events=2),
        GetSessionConfig(through_event_id="e6"),
        GetSessionConfig(through_event_id="e6", num_recent_events=2),
        GetSessionConfig(through_event_id="e6", after_timestamp=102.5),
        GetSessionConfig(through_event_id="missing"),
    ]
    for config in configs:
        got = [e.id for e in (await reget(service, session, config)).events]
        assert got == [e.id for e in select_events(everything, config)], config
    # after_timestamp is inclusive, as in google-adk: an event at exactly that time is loaded.
    at_104 = await reget(service, session, GetSessionConfig(after_timestamp=104.0))
    assert [e.id for e in at_104.events] == ["e4", "e5", "e6", "e7", "e8", "e9"]
    assert [e.id for e in (await reget(service, session, GetSessionConfig(num_recent_events=3))).events] == [
        "e7",
        "e8",
        "e9",
    ]


def _random_compacted_log(rng: random.Random) -> list[Event]:
    """Invocations with compactions between them, of ranges nested as the planner writes them or
    anywhere, over timestamps that repeat and go backwards; some events carry a state delta."""
    log: list[Event] = []
    t = 100.0
    for n in range(rng.randint(1, 12)):
        for k in range(rng.randint(1, 3)):
            t += rng.choice([0.0, 1.0, 1.0, 2.0, -1.5])
            delta = {"n": n} if rng.random() < 0.1 else None
            log.append(event(f"e{n}.{k}", t, delta, invocation_id=f"inv{n}"))
        if rng.random() < 0.45:
            start = 100.0 if rng.random() < 0.5 else rng.uniform(95, t)
            summary = EventCompaction(start_timestamp=start, end_timestamp=rng.uniform(start, t + 2),
                                      compacted_content=Content.model(f"S{n}"))
            log.append(compaction_event(summary, invocation_id=f"inv{n}", timestamp=t + rng.choice([0.0, 0.5])))
    return log


async def test_skipping_compacted_events_selects_like_the_reference(service: SessionService, app_name: str) -> None:
    for seed in range(20):
        rng = random.Random(seed)
        log = _random_compacted_log(rng)
        session = await service.create_session(app_name=app_name, user_id="u", session_id=f"s{seed}")
        i = 0
        while i < len(log):  # in batches and one at a time, as workers write them
            size = rng.randint(1, 4)
            await service.append_events(session, [e.model_copy(deep=True) for e in log[i:i + size]])
            i += size
        for end in range(0, len(log) + 1, 2):
            through = log[end - 1].id if end else "missing"
            config = GetSessionConfig(through_event_id=through, skip_compacted=True)
            got = [e.id for e in (await reget(service, session, config)).events]
            assert got == [e.id for e in without_compacted(log[:end])], (seed, end)
        everything = await reget(service, session, GetSessionConfig(skip_compacted=True))
        assert everything.events == without_compacted(log), seed
        assert everything.state == (await reget(service, session)).state


async def test_skipping_compacted_events_takes_a_cursor_only(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    for config in (
        GetSessionConfig(skip_compacted=True, num_recent_events=3),
        GetSessionConfig(skip_compacted=True, after_timestamp=1.0),
        GetSessionConfig(skip_compacted=True, after_event_id="e1"),
    ):
        with pytest.raises(InvalidInputError, match="skip_compacted combines with through_event_id only"):
            await reget(service, session, config)


async def test_negative_num_recent_events_is_refused(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    await service.append_event(session, event("e1", 1.0))
    with pytest.raises(InvalidInputError, match="num_recent_events is -2; give 0 or more"):
        await reget(service, session, GetSessionConfig(num_recent_events=-2))


async def test_events_round_trip_unchanged(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    original = event(
        "rich",
        1700000000.123456,
        {"n": 1.5, "nested": {"a": [1, "two", None]}},
        branch="root.child",
        custom_metadata={"k": "v"},
        usage_metadata={"prompt_tokens": 3},
    )
    await service.append_event(session, original.model_copy(deep=True))
    (stored,) = (await reget(service, session)).events
    assert stored == original


async def test_list_sessions_has_state_but_no_events(service: SessionService, app_name: str) -> None:
    a = await service.create_session(app_name=app_name, user_id="u1", state={"x": 1, "app:shared": True})
    await service.append_event(a, event("e1", 1.0, {"y": 2}))
    await service.create_session(app_name=app_name, user_id="u2", session_id="b")

    listed = {s.id: s for s in (await service.list_sessions(app_name=app_name)).sessions}
    assert set(listed) == {a.id, "b"}
    assert all(s.events == [] for s in listed.values())
    assert listed[a.id].state == {"x": 1, "y": 2, "app:shared": True}
    assert listed[a.id].last_update_time == 1.0
    only_u2 = (await service.list_sessions(app_name=app_name, user_id="u2")).sessions
    assert [s.id for s in only_u2] == ["b"]
    assert (await service.list_sessions(app_name=app_name + "-other")).sessions == []


async def test_list_sessions_is_ordered_by_last_update_oldest_first(
    service: SessionService, app_name: str
) -> None:
    """google-adk's order: by last update ascending, ties by user id then session id, so the last
    session listed is the one most recently active."""
    created = {}
    for user, sid in [("u1", "active"), ("u1", "idle"), ("u2", "tie-b"), ("u1", "tie-b"), ("u1", "tie-a")]:
        created[sid, user] = await service.create_session(app_name=app_name, user_id=user, session_id=sid)
    # An append sets last_update_time to the event's timestamp; these are all far in the past.
    await service.append_event(created["idle", "u1"], event("i1", 100.0))
    for key in [("tie-b", "u2"), ("tie-b", "u1"), ("tie-a", "u1")]:
        await service.append_event(created[key], event(f"t-{key[1]}-{key[0]}", 200.0))
    await service.append_event(created["active", "u1"], event("a1", 300.0))
    fresh = await service.create_session(app_name=app_name, user_id="u0", session_id="fresh")  # now

    listed = [(s.user_id, s.id) for s in (await service.list_sessions(app_name=app_name)).sessions]
    assert listed == [
        ("u1", "idle"),
        ("u1", "tie-a"),
        ("u1", "tie-b"),
        ("u2", "tie-b"),
        ("u1", "active"),
        ("u0", fresh.id),
    ]
    only_u1 = [s.id for s in (await service.list_sessions(app_name=app_name, user_id="u1")).sessions]
    assert only_u1 == ["idle", "tie-a", "tie-b", "active"]


async def test_delete_removes_the_session_and_its_events(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u", session_id="gone")
    await service.append_event(session, event("e1", 1.0))
    await service.delete_session(app_name=app_name, user_id="u", session_id="gone")
    assert await service.get_session(app_name=app_name, user_id="u", session_id="gone") is None
    await service.delete_session(app_name=app_name, user_id="u", session_id="gone")  # missing: no error
    # A session re-created under the same id starts empty, and the old event id is new again.
    again = await service.create_session(app_name=app_name, user_id="u", session_id="gone")
    await service.append_event(again, event("e1", 2.0))
    assert [e.timestamp for e in (await reget(service, again)).events] == [2.0]


async def test_delete_user_removes_their_sessions_and_user_state_only(service: SessionService, app_name: str) -> None:
    for user in ("gone", "kept"):
        for sid in ("s1", "s2"):
            session = await service.create_session(app_name=app_name, user_id=user, session_id=sid)
            await service.append_event(session, event(f"{user}-{sid}", 1.0, {"user:k": user, "app:a": 1}))
    await service.delete_user(app_name=app_name, user_id="gone")
    assert (await service.list_sessions(app_name=app_name, user_id="gone")).sessions == []
    assert await service.get_user_state(app_name=app_name, user_id="gone") == {}
    assert [s.id for s in (await service.list_sessions(app_name=app_name, user_id="kept")).sessions] == ["s1", "s2"]
    assert await service.get_user_state(app_name=app_name, user_id="kept") == {"k": "kept"}
    assert await service.get_app_state(app_name=app_name) == {"a": 1}  # app: state is not the user's
    await service.delete_user(app_name=app_name, user_id="gone")  # again: nothing left, no error
    with pytest.raises(InvalidInputError, match="user id"):
        await service.delete_user(app_name=app_name, user_id=" gone")


# --- state routing, temp:, partial events ----------------------------------------------------------


async def test_app_state_is_shared_by_all_users_and_user_state_by_one_user(
    service: SessionService, app_name: str
) -> None:
    a1 = await service.create_session(app_name=app_name, user_id="alice")
    a2 = await service.create_session(app_name=app_name, user_id="alice")
    b1 = await service.create_session(app_name=app_name, user_id="bob")
    await service.append_event(a1, event("e1", 1.0, {"app:theme": "dark", "user:lang": "fr", "local": 1}))

    assert (await reget(service, a2)).state == {"app:theme": "dark", "user:lang": "fr"}
    assert (await reget(service, b1)).state == {"app:theme": "dark"}
    assert (await reget(service, a1)).state == {"app:theme": "dark", "user:lang": "fr", "local": 1}
    other_app = await service.create_session(app_name=app_name + "-2", user_id="alice")
    assert other_app.state == {}
    # A session created later, with its own state only, starts with the shared state as created.
    a3 = await service.create_session(app_name=app_name, user_id="alice", state={"local": 2})
    assert a3.state == {"app:theme": "dark", "user:lang": "fr", "local": 2} == (await reget(service, a3)).state


async def test_temp_keys_live_on_the_copy_only(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    appended = await service.append_event(session, event("e1", 1.0, {"temp:scratch": object(), "kept": 1}))

    assert session.state["kept"] == 1 and "temp:scratch" in session.state  # visible this invocation
    assert appended.actions.state_delta == {"kept": 1}  # the event the caller sees is the stored one
    stored = await reget(service, session)
    assert stored.state == {"kept": 1}
    assert stored.events[0].actions.state_delta == {"kept": 1}


async def test_partial_events_are_returned_not_stored(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    partial = event("p1", 1.0, {"k": 1}, partial=True)
    assert await service.append_event(session, partial) is partial
    stored = await reget(service, session)
    assert stored.events == [] and stored.state == {}


async def test_append_updates_last_update_time(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    await service.append_event(session, event("e1", 1234.5))
    assert session.last_update_time == 1234.5
    assert (await reget(service, session)).last_update_time == 1234.5


# --- idempotency, errors, stale copies --------------------------------------------------------------


async def test_appending_a_stored_event_id_again_changes_nothing(
    service: SessionService, app_name: str
) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    stale = await reget(service, session)
    first = event("same", 1.0, {"n": 1, "app:a": 1})
    await service.append_event(session, first)
    # A retry (say, an activity run twice) with the same copy, and with a copy read before the first try.
    await service.append_event(session, event("same", 1.0, {"n": 1, "app:a": 1}))
    await service.append_event(stale, event("same", 1.0, {"n": 1, "app:a": 1}))

    assert [e.id for e in session.events] == ["same"]
    assert [e.id for e in stale.events] == ["same"]  # the stale copy is brought level, once
    stored = await reget(service, session)
    assert [e.id for e in stored.events] == ["same"]
    assert stored.state == {"n": 1, "app:a": 1}
    # A different payload under a stored id is refused (not silently dropped): see below.
    with pytest.raises(EventConflictError, match="'same'"):
        await service.append_event(session, event("same", 9.0, {"n": 99}))
    assert (await reget(service, session)).state["n"] == 1


# --- one id, one content (issue 24, item 8) ---------------------------------------------------------


async def test_a_stored_event_id_with_different_content_is_a_conflict_naming_the_id(
    service: SessionService, app_name: str
) -> None:
    session = await service.create_session(app_name=app_name, user_id="u", session_id="conflict")
    await service.append_event(session, event("e1", 1.0, {"n": 1}))
    for changed in (
        event("e1", 1.0, {"n": 2}),  # another delta
        event("e1", 1.0, {"n": 1}, author="model"),  # another author
        Event(id="e1", author="user", invocation_id="inv-1", timestamp=1.0, content=Content.user("other text"),
              actions=EventActions(state_delta={"n": 1})),
    ):
        copy = await reget(service, session)
        with pytest.raises(EventConflictError) as refused:
            await service.append_event(copy, changed)
        assert "'e1'" in str(refused.value) and refused.value.event_id == "e1"
        assert "new id" in str(refused.value)  # says what to do
        assert [e.id for e in copy.events] == ["e1"]  # the caller's copy is not changed either
    stored = await reget(service, session)
    assert [e.text for e in stored.events] == ["message e1"] and stored.state == {"n": 1}


async def test_the_same_event_at_another_time_is_a_repeat(service: SessionService, app_name: str) -> None:
    """A durable workflow task that flushed events and died before Temporal recorded it runs again
    with the same event ids but a later workflow.now() (adk_core.sessions.base.NOT_COMPARED)."""
    session = await service.create_session(app_name=app_name, user_id="u", session_id="retimed")
    await service.append_event(session, event("e1", 1.0, {"n": 1}))
    await service.append_event(await reget(service, session), event("e1", 2.0, {"n": 1}))
    stored = await reget(service, session)
    assert [(e.id, e.timestamp) for e in stored.events] == [("e1", 1.0)] and stored.state == {"n": 1}


async def test_the_same_event_after_a_json_round_trip_is_a_repeat_not_a_conflict(
    service: SessionService, app_name: str
) -> None:
    """What a retried activity sends: the event as Temporal carried it (JSON), temp: keys already
    dropped, key order and number spelling as JSON gives them back."""
    session = await service.create_session(app_name=app_name, user_id="u", session_id="roundtrip")
    rich = Event(
        id="r1", author="model", invocation_id="inv-9", timestamp=1732000000.123456789, branch="a.b",
        content=Content(role="model", parts=[
            Part(text="héllo \u2603"), Part(inline_data=Blob(mime_type="image/png", data=b"\x00\x01\xffpng")),
        ]),
        usage_metadata={"prompt_token_count": 12, "ratio": 0.1},
        custom_metadata={"nested": {"b": [1, 2.5, None], "a": True}},
        actions=EventActions(state_delta={"x": 1.0, "temp:scratch": "gone", "user:deep": {"k": [1, {"z": 0.3}]}}),
    )
    sent = rich.model_dump_json()  # with its temp: key, as a retry may carry it
    await service.append_event(session, rich)
    carried = Event.model_validate_json(sent)
    await service.append_event(session, carried)
    await service.append_events(await reget(service, session), [carried, event("r2", 2.0)])
    stale = await reget(service, session, GetSessionConfig(num_recent_events=0))
    await service.append_event(stale, Event.model_validate_json(carried.model_dump_json()))
    stored = await reget(service, session)
    assert [e.id for e in stored.events] == ["r1", "r2"]
    assert stored.events[0].content == rich.content


async def test_a_batch_holding_a_conflict_writes_nothing(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u", session_id="batchconflict")
    await service.append_events(session, [event("c1", 1.0), event("c2", 2.0, {"k": 2})])
    for batch in (
        [event("c3", 3.0), event("c4", 4.0), event("c1", 1.0, {"other": 1})],  # plain run, then a delta
        [event("c3", 3.0), event("c1", 1.0, author="model"), event("c4", 4.0)],  # all plain
        [event("c3", 3.0, {"k": 3}), event("c2", 2.0, {"k": 99})],  # deltas only
        [event("c3", 3.0), event("c3", 3.0, {"k": 3})],  # twice in the batch itself
    ):
        with pytest.raises(EventConflictError):
            await service.append_events(await reget(service, session), batch)
        stored = await reget(service, session)
        assert [e.id for e in stored.events] == ["c1", "c2"], batch
        assert stored.state == {"k": 2}
    # The batch with the conflict taken out goes in, stored events repeated as they are.
    await service.append_events(session, [event("c1", 1.0), event("c3", 3.0), event("c3", 3.0), event("c4", 4.0)])
    assert [e.id for e in (await reget(service, session)).events] == ["c1", "c2", "c3", "c4"]


async def test_append_to_unknown_session_says_to_create_it(service: SessionService, app_name: str) -> None:
    ghost = Session(id="ghost", app_name=app_name, user_id="u")
    with pytest.raises(SessionNotFoundError, match="create_session"):
        await service.append_event(ghost, event("e1", 1.0))


@pytest.mark.parametrize(
    ("delta", "error"),
    [
        ({"ok": 1, "bad/key": 1}, StateKeyError),
        ({"ok": 1, "": 1}, StateKeyError),
        ({"ok": 1, "value": object()}, InvalidInputError),
        ({"ok": 1, "app:value": {1, 2}}, InvalidInputError),
    ],
)
async def test_invalid_deltas_are_refused_and_nothing_is_written(
    service: SessionService, app_name: str, delta: dict[str, Any], error: type[Exception]
) -> None:
    session = await service.create_session(app_name=app_name, user_id="u", state={"ok": 0})
    with pytest.raises(error):
        await service.append_event(session, event("e1", 1.0, delta))
    stored = await reget(service, session)
    assert stored.events == [] and stored.state == {"ok": 0}
    assert await service.get_app_state(app_name=app_name) == {}
    assert session.events == [] and session.state == {"ok": 0}
    with pytest.raises(error):
        await service.create_session(app_name=app_name, user_id="u", state=delta)
    assert len((await service.list_sessions(app_name=app_name)).sessions) == 1


def _answer(response: dict[str, Any]) -> Content:
    return Content(role="user", parts=[Part(function_response=FunctionResponse(name="f", response=response))])


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"custom_metadata": {"score": math.nan, "bound": math.inf}}, "NaN at custom_metadata.score"),
        ({"content": _answer({"rows": [1.5, -math.inf]})}, "-Infinity at content.parts[0].function_response.response.rows[1]"),
        ({"actions": EventActions(state_delta={"ok": 1, "user:v": math.nan})}, "NaN at actions.state_delta.user:v"),
        ({"timestamp": math.inf}, "infinite timestamp"),
        ({"content": Content.user("half an emoji \ud83d")}, "surrogate"),
    ],
)
async def test_an_event_json_cannot_hold_is_refused_by_name_and_nothing_is_written(
    service: SessionService, app_name: str, fields: dict[str, Any], named: str
) -> None:
    """NaN and Infinity have no JSON form (pydantic would write null: the value would come back as
    None), nor has a lone surrogate: an InvalidInputError naming where, before anything changes,
    the event's state delta included; in a batch, before any event of it is written."""
    session = await service.create_session(app_name=app_name, user_id="u", state={"ok": 0})
    delta = EventActions(state_delta={"ok": 1, "user:seen": True, "app:hits": 7})
    fields = {"timestamp": 1.0, "actions": delta, **fields}
    bad = Event(id="bad", author="model", invocation_id="i", **fields)
    for append in (lambda: service.append_event(session, bad),
                   lambda: service.append_events(session, [event("good", 1.0, {"ok": 2}), bad])):
        with pytest.raises(InvalidInputError, match=re.escape(named)):
            await append()
        stored = await reget(service, session)
        assert stored.events == [] and stored.state == {"ok": 0}
        assert await service.get_app_state(app_name=app_name) == {}
        assert session.events == [] and session.state == {"ok": 0}
    # The words themselves, in text, are only text.
    fine = event("fine", 2.0, {"note": "NaN or Infinity"}, custom_metadata={"label": "-Infinity"})
    await service.append_event(session, fine)
    assert (await reget(service, session)).events == [fine]


async def test_a_stale_copy_appends_and_merges(service: SessionService, app_name: str) -> None:
    fresh = await service.create_session(app_name=app_name, user_id="u", state={"base": 0})
    stale = await reget(service, fresh)
    await service.append_event(fresh, event("e1", 1.0, {"x": 1, "shared": "fresh"}))
    await service.append_event(stale, event("e2", 2.0, {"y": 2, "shared": "stale"}))

    # The stale copy gains its own event and delta only...
    assert [e.id for e in stale.events] == ["e2"]
    assert stale.state == {"base": 0, "y": 2, "shared": "stale"}
    # ...while the store merged both writers: nothing was overwritten wholesale.
    stored = await reget(service, fresh)
    assert [e.id for e in stored.events] == ["e1", "e2"]
    assert stored.state == {"base": 0, "x": 1, "y": 2, "shared": "stale"}


# --- concurrency ---------------------------------------------------------------------------------------


async def test_fifty_concurrent_appenders_lose_nothing(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u")
    copies = [await reget(service, session) for _ in range(50)]

    await asyncio.gather(
        *(
            service.append_event(
                copy, event(f"e{i}", float(i), {f"k{i}": i, f"app:a{i}": i, f"user:u{i}": i})
            )
            for i, copy in enumerate(copies)
        )
    )
    stored = await reget(service, session)
    assert sorted(e.id for e in stored.events) == sorted(f"e{i}" for i in range(50))
    for i in range(50):
        assert stored.state[f"k{i}"] == stored.state[f"app:a{i}"] == stored.state[f"user:u{i}"] == i
    assert len(await service.get_app_state(app_name=app_name)) == 50
    assert len(await service.get_user_state(app_name=app_name, user_id="u")) == 50


async def test_concurrent_appenders_across_sessions_share_app_state(
    service: SessionService, app_name: str
) -> None:
    sessions = [await service.create_session(app_name=app_name, user_id=f"u{i % 5}") for i in range(20)]
    await asyncio.gather(
        *(service.append_event(s, event(f"e{i}", 1.0, {f"app:k{i}": i})) for i, s in enumerate(sessions))
    )
    assert await service.get_app_state(app_name=app_name) == {f"k{i}": i for i in range(20)}


async def test_append_events_stores_a_batch_in_order_and_tolerates_a_retried_batch(
    service: SessionService, app_name: str
) -> None:
    session = await service.create_session(app_name=app_name, user_id="u", session_id="batch")
    batch = [event("b1", 1.0, {"k1": 1, "user:u1": "x"}), event("b2", 2.0, {"k2": 2}), event("b3", 3.0)]
    await service.append_events(session, batch)
    # The same batch again (an activity retried after its commit landed) plus one new event.
    await service.append_events(session, [*batch, event("b4", 4.0, {"k3": 3})])
    stored = await reget(service, session)
    assert [e.id for e in stored.events] == ["b1", "b2", "b3", "b4"]
    assert stored.state == {"k1": 1, "k2": 2, "k3": 3, "user:u1": "x"}


async def test_append_events_with_a_bad_event_writes_nothing(service: SessionService, app_name: str) -> None:
    session = await service.create_session(app_name=app_name, user_id="u", session_id="badbatch")
    with pytest.raises(InvalidInputError):
        await service.append_events(session, [event("g1", 1.0, {"ok": 1}), event("g2", 2.0, {"bad": object()})])
    stored = await reget(service, session)
    assert stored.events == [] and stored.state == {}


async def test_append_events_keeps_order_across_plain_runs_and_deltas_and_a_retried_tail(
    service: SessionService, app_name: str
) -> None:
    """Events without a state delta travel together (one statement in SQL); events with one in
    between keep their place, and a retried batch that overlaps stored events adds only the rest."""
    session = await service.create_session(app_name=app_name, user_id="u", session_id="runs")
    await service.append_events(
        session, [event("p1", 1.0), event("p2", 2.0), event("d3", 3.0, {"k": 3}), event("p4", 4.0), event("p5", 5.0)]
    )
    await service.append_events(session, [event("p4", 4.0), event("p5", 5.0), event("p6", 6.0), event("p7", 7.0)])
    stored = await reget(service, session)
    assert [e.id for e in stored.events] == ["p1", "p2", "d3", "p4", "p5", "p6", "p7"]
    assert [e.content.parts[0].text for e in stored.events if e.content] == [
        f"message {i}" for i in ("p1", "p2", "d3", "p4", "p5", "p6", "p7")
    ]
    assert stored.state == {"k": 3}
    assert [e.id for e in session.events] == [e.id for e in stored.events]  # the caller's copy, level
    tail = await reget(service, session, GetSessionConfig(num_recent_events=2))
    assert [e.id for e in tail.events] == ["p6", "p7"]
    later = await reget(service, session, GetSessionConfig(after_event_id="p5"))
    assert [e.id for e in later.events] == ["p6", "p7"]

