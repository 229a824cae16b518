"""Pure pieces of the durable runtime: the worker's stored-events cache and the resumable tail."""

from __future__ import annotations

from typing import Any

from activities._history import StoredEventsCache
from adk_core.flow.functions import resumable_tail_start
from adk_core.sessions import GetSessionConfig, InMemorySessionService
from adk_core.types import Content, Event, Part


def _event(eid: str, author: str = "user", **kw: Any) -> Event:
    return Event(id=eid, author=author, invocation_id="i", timestamp=float(len(eid)), content=Content.user(eid), **kw)


class CountingSessions(InMemorySessionService):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[GetSessionConfig | None] = []

    async def get_session(self, *, app_name, user_id, session_id, config=None):  # type: ignore[override]
        self.reads.append(config)
        return await super().get_session(app_name=app_name, user_id=user_id, session_id=session_id, config=config)


async def test_cache_reads_only_new_events_and_answers_prefixes_from_memory() -> None:
    sessions = CountingSessions()
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    for eid in ["e1", "e2", "e3"]:
        await sessions.append_event(session, _event(eid))
    cache = StoredEventsCache(sessions)
    key = ("a", "u", "s")
    assert [e.id for e in await cache.through(key, "e3") or []] == ["e1", "e2", "e3"]
    assert [e.id for e in await cache.through(key, "e2") or []] == ["e1", "e2"]
    assert len(sessions.reads) == 1, "a prefix of what is cached needs no read"
    await sessions.append_event(session, _event("e4"))
    assert [e.id for e in await cache.through(key, "e4") or []] == ["e1", "e2", "e3", "e4"]
    assert sessions.reads[-1] is not None and sessions.reads[-1].after_event_id == "e3"
    assert await cache.through(key, "missing") is None


async def test_cache_notices_a_recreated_session() -> None:
    sessions = CountingSessions()
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    await sessions.append_event(session, _event("old"))
    cache = StoredEventsCache(sessions)
    await cache.through(("a", "u", "s"), "old")
    await sessions.delete_session(app_name="a", user_id="u", session_id="s")
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    await sessions.append_event(session, _event("new"))
    assert [e.id for e in await cache.through(("a", "u", "s"), "new") or []] == ["new"]


def test_resumable_tail_starts_at_the_last_agent_event() -> None:
    events = [_event("u1"), _event("a1", "bot"), _event("u2"), _event("a2", "bot"), _event("u3")]
    assert resumable_tail_start(events) == 3
    assert resumable_tail_start([_event("u1")]) == 0


def test_resumable_tail_keeps_calls_still_waiting_for_a_reply() -> None:
    waiting = Event(
        id="lr", author="bot", invocation_id="i",
        content=Content(role="model", parts=[Part.from_function_call("approve", {}, id="c1")]),
        long_running_tool_ids=["c1"],
    )
    events = [_event("u1"), waiting, _event("u2"), _event("a2", "bot")]
    assert resumable_tail_start(events) == 1
    answered = Event(
        id="r", author="user", invocation_id="j",
        content=Content(role="user", parts=[Part.from_function_response("approve", {"ok": True}, id="c1")]),
    )
    assert resumable_tail_start([*events, answered, _event("a3", "bot")]) == 5
