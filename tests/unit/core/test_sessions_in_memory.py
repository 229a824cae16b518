"""InMemorySessionService: the reference backend's selection, idempotency and concurrency rules."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

import pytest

from adk_core import Content, Event, EventActions, InMemorySessionService
from adk_core.errors import AlreadyExistsError, InvalidInputError, SessionNotFoundError
from adk_core.sessions.base import GetSessionConfig, model_json

APP, USER = "app", "u1"


def _event(i: int, **fields) -> Event:
    return Event(id=f"ev-{i}", author="user", timestamp=float(i), content=Content.user(f"msg {i}"), **fields)


@pytest.fixture
def service() -> InMemorySessionService:
    ids = iter(f"gen-{i}" for i in range(1000))
    return InMemorySessionService(clock=lambda: 100.0, id_factory=lambda: next(ids))


async def _session_with_events(service: InMemorySessionService, n: int = 5):
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    for i in range(1, n + 1):
        await service.append_event(session, _event(i))
    return session


async def test_create_get_and_generated_id(service: InMemorySessionService) -> None:
    created = await service.create_session(app_name=APP, user_id=USER, state={"a": 1})
    assert created.id == "gen-0" and created.last_update_time == 100.0
    got = await service.get_session(app_name=APP, user_id=USER, session_id="gen-0")
    assert got is not None and got.state == {"a": 1} and got.events == []
    assert await service.get_session(app_name=APP, user_id="other", session_id="gen-0") is None


async def test_returned_sessions_are_copies(service: InMemorySessionService) -> None:
    created = await service.create_session(app_name=APP, user_id=USER, session_id="s1", state={"a": {"b": 1}})
    created.state["a"]["b"] = 99
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None and got.state == {"a": {"b": 1}}


async def test_duplicate_id_is_already_exists(service: InMemorySessionService) -> None:
    await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    with pytest.raises(AlreadyExistsError, match="'s1' already exists.*get_session"):
        await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    # the same id for another user is a different session
    await service.create_session(app_name=APP, user_id="u2", session_id="s1")


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (GetSessionConfig(num_recent_events=2), ["ev-4", "ev-5"]),
        (GetSessionConfig(num_recent_events=0), []),
        (GetSessionConfig(after_timestamp=3.0), ["ev-3", "ev-4", "ev-5"]),  # inclusive, as google-adk
        (GetSessionConfig(after_timestamp=3.5), ["ev-4", "ev-5"]),
        (GetSessionConfig(through_event_id="ev-3"), ["ev-1", "ev-2", "ev-3"]),
        (GetSessionConfig(through_event_id="nope"), []),
        (GetSessionConfig(through_event_id="ev-4", num_recent_events=2), ["ev-3", "ev-4"]),
        (GetSessionConfig(through_event_id="ev-4", after_timestamp=1.5, num_recent_events=5), ["ev-2", "ev-3", "ev-4"]),
        (None, ["ev-1", "ev-2", "ev-3", "ev-4", "ev-5"]),
    ],
)
async def test_get_session_config_selects_events(service, config, expected) -> None:
    await _session_with_events(service)
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1", config=config)
    assert got is not None and [e.id for e in got.events] == expected


async def test_list_has_no_events_and_delete_removes(service: InMemorySessionService) -> None:
    await _session_with_events(service, 3)
    await service.create_session(app_name=APP, user_id="u2", session_id="s2", state={"x": 1})
    listed = await service.list_sessions(app_name=APP)
    assert sorted(s.id for s in listed.sessions) == ["s1", "s2"]
    assert all(s.events == [] for s in listed.sessions)
    assert [s.id for s in (await service.list_sessions(app_name=APP, user_id="u2")).sessions] == ["s2"]
    await service.delete_session(app_name=APP, user_id=USER, session_id="s1")
    await service.delete_session(app_name=APP, user_id=USER, session_id="s1")  # missing: not an error
    assert await service.get_session(app_name=APP, user_id=USER, session_id="s1") is None
    # a new session under the deleted id starts empty
    again = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    await service.append_event(again, _event(1))
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None and [e.id for e in got.events] == ["ev-1"]


async def test_partial_events_are_returned_but_not_stored(service: InMemorySessionService) -> None:
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    partial = _event(1, partial=True, actions=EventActions(state_delta={"k": "v"}))
    assert await service.append_event(session, partial) is partial
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None and got.events == [] and "k" not in got.state
    assert session.events == []


async def test_append_is_idempotent_by_event_id(service: InMemorySessionService) -> None:
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    event = _event(1, actions=EventActions(state_delta={"n": 1}))
    await service.append_event(session, event)
    await service.append_event(session, event.model_copy(deep=True))
    stale = await service.get_session(app_name=APP, user_id=USER, session_id="s1", config=GetSessionConfig(num_recent_events=0))
    assert stale is not None
    await service.append_event(stale, event.model_copy(deep=True))  # a retry from another copy
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None and [e.id for e in got.events] == ["ev-1"] and got.state == {"n": 1}
    assert [e.id for e in session.events] == ["ev-1"]


async def test_fifty_concurrent_appenders_lose_nothing(service: InMemorySessionService) -> None:
    await service.create_session(app_name=APP, user_id=USER, session_id="s1")

    async def append(i: int) -> None:
        copy = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
        assert copy is not None
        await asyncio.sleep(0)  # let the others read the same (soon stale) copy
        delta = {f"k{i}": i, "user:last": i, "app:seen": i}
        await service.append_event(copy, _event(i, actions=EventActions(state_delta=delta)))

    await asyncio.gather(*(append(i) for i in range(50)))
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None
    assert sorted(e.id for e in got.events) == sorted(f"ev-{i}" for i in range(50))
    assert all(got.state[f"k{i}"] == i for i in range(50))
    assert "user:last" in got.state and "app:seen" in got.state


async def test_non_json_state_is_refused_before_anything_is_written(service: InMemorySessionService) -> None:
    with pytest.raises(InvalidInputError, match="'bad' is not JSON-serializable"):
        await service.create_session(app_name=APP, user_id=USER, session_id="s1", state={"app:ok": 1, "bad": object()})
    assert await service.get_session(app_name=APP, user_id=USER, session_id="s1") is None
    assert await service.get_app_state(app_name=APP) == {}

    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    bad = _event(1, actions=EventActions(state_delta={"user:ok": 1, "good": 2, "bad": {1, 2}}))
    with pytest.raises(InvalidInputError):
        await service.append_event(session, bad)
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None and got.events == [] and got.state == {}
    assert await service.get_user_state(app_name=APP, user_id=USER) == {}
    assert session.events == [] and session.state == {}


async def test_an_event_json_cannot_hold_writes_nothing_alone_or_in_a_batch(
    service: InMemorySessionService,
) -> None:
    """The event is serialized before its delta is merged; a batch, every event before any is written."""
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    delta = EventActions(state_delta={"count": 1, "user:seen": True, "app:hits": 7})
    surrogate = _event(2, actions=delta).model_copy(update={"content": Content.user("half an emoji \ud83d")})
    for bad in (surrogate, _event(2, actions=delta, custom_metadata={"score": math.nan})):
        for batch in ([bad], [_event(1), bad]):
            with pytest.raises(InvalidInputError, match="event 'ev-2'"):
                await (service.append_event(session, bad) if len(batch) == 1 else service.append_events(session, batch))
            got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
            assert got is not None and got.events == [] and got.state == {}
            assert session.events == [] and session.state == {}


def test_model_json_is_model_dump_json_for_what_json_can_hold() -> None:
    """model_json writes untyped NaN and Infinity as constants, to find them: everything else as
    pydantic does (bytes in metadata as base64, the model's config)."""
    metadata = {"raw": b"\x00\xff", "n": [1.5, None, "NaN"]}
    event = _event(1, custom_metadata=metadata, actions=EventActions(state_delta={"k": 2.0}))
    assert model_json(event, "e") == event.model_dump_json()
    bad = _event(1, custom_metadata={"n": [1.5, math.nan]}, actions=EventActions(state_delta={"k": math.inf}))
    with pytest.raises(InvalidInputError, match=r"NaN at custom_metadata\.n\[1\], Infinity at actions\.state_delta\.k"):
        model_json(bad, "e")


async def test_append_to_missing_session_says_to_create_it(service: InMemorySessionService) -> None:
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    await service.delete_session(app_name=APP, user_id=USER, session_id="s1")
    with pytest.raises(SessionNotFoundError, match="create_session"):
        await service.append_event(session, _event(1))


async def test_temp_keys_reach_the_live_copy_only(service: InMemorySessionService) -> None:
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    event = _event(1, actions=EventActions(state_delta={"temp:t": object(), "kept": 1}))
    await service.append_event(session, event)
    assert "temp:t" in session.state and event.actions.state_delta == {"kept": 1}
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None and got.state == {"kept": 1}
    assert got.events[0].actions.state_delta == {"kept": 1}


async def test_list_is_ordered_by_last_update_oldest_first() -> None:
    clock = iter([10.0, 20.0, 30.0, 40.0])
    service = InMemorySessionService(clock=lambda: next(clock))
    for sid in ("a", "b", "c"):
        await service.create_session(app_name=APP, user_id=USER, session_id=sid)
    a = await service.get_session(app_name=APP, user_id=USER, session_id="a")
    assert a is not None
    await service.append_event(a, _event(50))  # "a" is now the most recently active
    await service.create_session(app_name=APP, user_id="u0", session_id="z")  # created at 40.0
    listed = (await service.list_sessions(app_name=APP)).sessions
    assert [(s.id, s.last_update_time) for s in listed] == [("b", 20.0), ("c", 30.0), ("z", 40.0), ("a", 50.0)]


async def test_list_ties_are_broken_by_user_then_session_id() -> None:
    service = InMemorySessionService(clock=lambda: 1.0)
    for user, sid in [("u2", "a"), ("u1", "b"), ("u1", "a")]:
        await service.create_session(app_name=APP, user_id=user, session_id=sid)
    listed = (await service.list_sessions(app_name=APP)).sessions
    assert [(s.user_id, s.id) for s in listed] == [("u1", "a"), ("u1", "b"), ("u2", "a")]


async def test_negative_num_recent_events_is_refused(service: InMemorySessionService) -> None:
    await _session_with_events(service)
    with pytest.raises(InvalidInputError, match="num_recent_events is -1; give 0 or more"):
        await service.get_session(
            app_name=APP, user_id=USER, session_id="s1", config=GetSessionConfig(num_recent_events=-1)
        )


@pytest.mark.parametrize("bad", ["", " s1", "s1 ", "s\x001", "a\nb", "x" * 257, 7])
async def test_bad_ids_are_refused_at_every_entry_point(service: InMemorySessionService, bad: object) -> None:
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: service.create_session(app_name=bad, user_id=USER),  # type: ignore[arg-type]
        lambda: service.create_session(app_name=APP, user_id=bad),  # type: ignore[arg-type]
        lambda: service.create_session(app_name=APP, user_id=USER, session_id=bad),  # type: ignore[arg-type]
        lambda: service.get_session(app_name=APP, user_id=USER, session_id=bad),  # type: ignore[arg-type]
        lambda: service.list_sessions(app_name=bad),  # type: ignore[arg-type]
        lambda: service.list_sessions(app_name=APP, user_id=bad),  # type: ignore[arg-type]
        lambda: service.delete_session(app_name=APP, user_id=bad, session_id="s1"),  # type: ignore[arg-type]
        lambda: service.append_event(session.model_copy(update={"id": bad}), _event(1)),
        lambda: service.get_user_state(app_name=APP, user_id=bad),  # type: ignore[arg-type]
        lambda: service.get_app_state(app_name=bad),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(InvalidInputError):
            await call()
    assert [s.id for s in (await service.list_sessions(app_name=APP)).sessions] == ["s1"]
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None and got.events == []
