"""The ride-along write (activities/_history.RideAlongWriter): an activity's commits are written in
the background, only what is stored is ever acknowledged, and whatever is not rides along again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adk_core.sessions import InMemorySessionService
from adk_core.types import Content, Event
from adk_temporal.activities._history import RideAlongWriter, StoredEventsCache
from adk_temporal.activities.contracts import SESSION_START

KEY = ("a", "u", "s")


def _event(eid: str) -> Event:
    return Event(id=eid, author="user", invocation_id="i", timestamp=1.0, content=Content.user(eid))


class GatedSessions(InMemorySessionService):
    """Appends wait for ``gate``; ``fail_next`` makes the next append raise."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail_next = False
        self.appends: list[list[str]] = []

    async def append_events(self, session: Any, events: list[Event]) -> list[Event]:  # type: ignore[override]
        await self.gate.wait()
        self.appends.append([e.id for e in events])
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("store went away")
        stored = await super().get_session(app_name=session.app_name, user_id=session.user_id, session_id=session.id)
        assert stored is not None
        known = {e.id for e in stored.events}
        for event in events:
            if event.id not in known:
                await super().append_event(stored, event)
        return events


async def _writer_with(first: str = "e0") -> tuple[GatedSessions, RideAlongWriter]:
    sessions = GatedSessions()
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    await InMemorySessionService.append_event(sessions, session, _event(first))
    cache = StoredEventsCache(sessions)
    await cache.through(KEY, first)  # the worker has served this session before
    return sessions, RideAlongWriter(sessions, cache)


async def _stored_ids(sessions: GatedSessions) -> list[str]:
    session = await sessions.get_session(app_name="a", user_id="u", session_id="s")
    assert session is not None
    return [e.id for e in session.events]


async def _work() -> str:
    return "done"


async def test_the_write_leaves_the_critical_path_and_the_next_call_acknowledges_it() -> None:
    sessions, writer = await _writer_with()
    sessions.gate.clear()  # the store is slow
    result, stored = await writer.run(KEY, "e0", [_event("e1"), _event("e2")], _work)
    assert (result, stored) == ("done", 0), "returned before the write finished, acknowledging nothing"
    sessions.gate.set()
    await asyncio.sleep(0)
    # The workflow sends e1, e2 again with the new e3: the worker finds them written.
    _, stored = await writer.run(KEY, "e0", [_event("e1"), _event("e2"), _event("e3")], _work, wait=True)
    assert stored == 3
    assert await _stored_ids(sessions) == ["e0", "e1", "e2", "e3"]
    assert sessions.appends == [["e1", "e2"], ["e3"]], "nothing written twice on the same worker"


async def test_a_failed_background_write_is_redone_synchronously_by_the_next_call() -> None:
    sessions, writer = await _writer_with()
    sessions.fail_next = True
    _, stored = await writer.run(KEY, "e0", [_event("e1")], _work)
    await asyncio.sleep(0.01)
    assert stored == 0 and await _stored_ids(sessions) == ["e0"]
    _, stored = await writer.run(KEY, "e0", [_event("e1"), _event("e2")], _work)
    assert stored == 2
    assert await _stored_ids(sessions) == ["e0", "e1", "e2"]


async def test_waiting_stores_everything_and_a_failure_fails_the_call() -> None:
    sessions, writer = await _writer_with()
    _, stored = await writer.run(KEY, "e0", [_event("e1")], _work, wait=True)
    assert stored == 1
    sessions.fail_next = True
    with pytest.raises(ConnectionError):
        await writer.run(KEY, "e1", [_event("e2")], _work, wait=True)


async def test_unknown_order_writes_before_the_work() -> None:
    sessions, writer = await _writer_with()
    order: list[str] = []

    async def work() -> str:
        order.append("work after " + ",".join(await _stored_ids(sessions)))
        return "done"

    # The workflow does not know what the batch follows (None): the cache cannot take it.
    _, stored = await writer.run(KEY, None, [_event("e1")], work)
    assert stored == 1 and order == ["work after e0,e1"]


async def test_finished_sessions_beyond_the_bound_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    import adk_temporal.activities._history as history

    monkeypatch.setattr(history, "MAX_TRACKED_SESSIONS", 2)
    sessions = GatedSessions()
    cache = StoredEventsCache(sessions)
    writer = RideAlongWriter(sessions, cache)
    for sid in ("s1", "s2", "s3"):
        session = await sessions.create_session(app_name="a", user_id="u", session_id=sid)
        await InMemorySessionService.append_event(sessions, session, _event(f"{sid}-0"))
        await cache.through(("a", "u", sid), f"{sid}-0")
        await writer.run(("a", "u", sid), f"{sid}-0", [_event(f"{sid}-1")], _work, wait=True)
    assert list(writer._writing) == [("a", "u", "s2"), ("a", "u", "s3")]


async def test_a_call_that_does_not_write_only_acknowledges_what_this_worker_stored() -> None:
    """A tool activity passes its events on: it writes nothing, and it acknowledges the prefix
    that an earlier (model) call on this worker has finished storing."""
    sessions, writer = await _writer_with()
    _, stored = await writer.run(KEY, "e0", [_event("e1")], _work, store=False)
    assert stored == 0 and sessions.appends == []  # nothing stored it yet: it stays queued

    sessions.gate.clear()
    _, stored = await writer.run(KEY, "e0", [_event("e1"), _event("e2")], _work)  # the model call
    assert stored == 0
    _, stored = await writer.run(KEY, "e0", [_event("e1"), _event("e2"), _event("e3")], _work, store=False)
    assert stored == 0, "the write is still running: nothing acknowledged"
    sessions.gate.set()
    await asyncio.sleep(0.01)
    _, stored = await writer.run(KEY, "e0", [_event("e1"), _event("e2"), _event("e3")], _work, store=False)
    assert stored == 2
    assert sessions.appends == [["e1", "e2"]] and await _stored_ids(sessions) == ["e0", "e1", "e2"]


async def test_the_first_events_of_a_session_created_here_go_in_the_background_without_a_read() -> None:
    sessions = GatedSessions()
    await sessions.create_session(app_name="a", user_id="u", session_id="s")
    cache = StoredEventsCache(sessions)
    cache.created(KEY)
    writer = RideAlongWriter(sessions, cache)
    reads = 0
    real_read = cache._read

    async def counted(key: Any, config: Any) -> list[Event]:
        nonlocal reads
        reads += 1
        return await real_read(key, config)

    cache._read = counted  # type: ignore[method-assign]
    sessions.gate.clear()  # the write waits: the work must not

    async def work() -> list[str]:
        return [e.id for e in await cache.through(KEY, "e1") or []]

    seen, stored = await writer.run(KEY, SESSION_START, [_event("e1")], work)
    assert (seen, stored, reads) == (["e1"], 0, 0)  # the model read its history from the cache
    sessions.gate.set()
    await asyncio.sleep(0.05)
    assert await _stored_ids(sessions) == ["e1"]


async def test_the_session_start_is_refused_where_the_cache_holds_events_or_nothing() -> None:
    sessions, writer = await _writer_with()  # the cache holds e0
    cache = StoredEventsCache(sessions)
    assert not cache.extend(KEY, SESSION_START, [_event("e1")])  # nothing cached: not known empty
    await cache.through(KEY, "e0")
    assert not cache.extend(KEY, SESSION_START, [_event("e1")])  # e0 is stored: e1 does not start it
    assert cache.extend(KEY, "e0", [_event("e1")])


async def test_an_event_id_written_with_other_content_is_committed_in_full_not_taken_as_written() -> None:
    # A workflow task that was lost and ran again (local model calls): the same ids, but the model
    # answered otherwise and the task's clock moved. The write in flight holds the lost run's event.
    sessions, writer = await _writer_with()
    sessions.gate.clear()
    await writer.run(KEY, "e0", [_event("e1")], _work)
    again = _event("e1").model_copy(update={"timestamp": 2.0, "content": Content.user("another answer")})
    run_again = asyncio.ensure_future(writer.run(KEY, "e0", [again], _work))
    await asyncio.sleep(0.01)
    assert not run_again.done(), "committed before the work (the store compares it), not assumed written"
    sessions.gate.set()
    _, stored = await run_again
    assert stored == 1 and sessions.appends == [["e1"], ["e1"]]


def _answer(result: str) -> list[Event]:
    return [_event(f"answer to {result}")]


async def test_events_the_work_adds_go_in_the_same_write_and_are_waited_for() -> None:
    sessions, writer = await _writer_with()
    result, stored = await writer.run(KEY, "e0", [_event("e1"), _event("e2")], _work, then=_answer)
    assert (result, stored) == ("done", 2), "the answer is stored when run returns, and the batch before it"
    assert sessions.appends == [["e1", "e2", "answer to done"]], "one write: the batch, then the answer"
    # The next call follows the answer: the worker's cache ends with it, so it writes in the background.
    _, stored = await writer.run(KEY, "answer to done", [_event("e3")], _work, wait=True)
    assert stored == 1
    assert await _stored_ids(sessions) == ["e0", "e1", "e2", "answer to done", "e3"]


async def test_events_the_work_adds_follow_a_batch_being_written_or_written_before() -> None:
    sessions, writer = await _writer_with()
    # This worker is still writing the batch (a retried call carries it again): the answer waits for it.
    sessions.gate.clear()
    await writer.run(KEY, "e0", [_event("e1")], _work)
    pending = asyncio.ensure_future(writer.run(KEY, "e0", [_event("e1")], _work, then=_answer))
    await asyncio.sleep(0.01)
    assert not pending.done(), "waits for the batch's write, then writes the answer"
    sessions.gate.set()
    assert (await pending)[1] == 1
    # Order unknown: the batch is written before the work, the answer after it.
    _, stored = await writer.run(KEY, None, [_event("e2")], _work, then=lambda r: [_event("e3")])
    assert stored == 1
    # Nothing carried: the answer alone.
    await writer.run(KEY, "e3", [], _work, then=lambda r: [_event("e4")])
    assert await _stored_ids(sessions) == ["e0", "e1", "answer to done", "e2", "e3", "e4"]
    assert sessions.appends == [["e1"], ["answer to done"], ["e2"], ["e3"], ["e4"]], "nothing written twice"


async def test_a_failed_write_of_added_events_fails_the_call() -> None:
    sessions, writer = await _writer_with()
    sessions.fail_next = True
    with pytest.raises(ConnectionError):
        await writer.run(KEY, "e0", [_event("e1")], _work, then=_answer)
    assert await _stored_ids(sessions) == ["e0"]


async def test_a_failed_write_of_an_answer_alone_leaves_the_cache_without_it() -> None:
    sessions, writer = await _writer_with()
    sessions.fail_next = True
    with pytest.raises(ConnectionError):
        await writer.run(KEY, "e0", [], _work, then=_answer)  # nothing carried: the answer written alone
    assert await _stored_ids(sessions) == ["e0"]
    # The next call that follows the answer finds the cache does not claim it: a plain commit, checked.
    _, stored = await writer.run(KEY, "answer to done", [_event("e1")], _work)
    assert stored == 1 and sessions.appends[-1] == ["e1"]


async def test_a_deferred_call_writes_nothing_unless_it_adds_events_then_writes_all_at_once() -> None:
    sessions, writer = await _writer_with()
    # The model called a function: nothing to add, so nothing written and nothing acknowledged.
    result, stored = await writer.run(KEY, "e0", [_event("e1")], _work, defer=True, then=lambda r: [])
    assert (result, stored) == ("done", 0)
    assert sessions.appends == [] and await _stored_ids(sessions) == ["e0"]
    # The events ride along with the next calls; the one that ends the turn stores them all and its answer.
    _, stored = await writer.run(KEY, "e0", [_event("e1"), _event("e2")], _work, store=False)
    assert stored == 0
    _, stored = await writer.run(KEY, "e0", [_event("e1"), _event("e2"), _event("e3")], _work, defer=True, then=_answer)
    assert stored == 3
    assert sessions.appends == [["e1", "e2", "e3", "answer to done"]], "one write for the whole turn"
    assert await _stored_ids(sessions) == ["e0", "e1", "e2", "e3", "answer to done"]


async def test_a_deferred_call_whose_answer_cannot_be_written_fails_and_stores_nothing() -> None:
    sessions, writer = await _writer_with()
    sessions.fail_next = True
    with pytest.raises(ConnectionError):
        await writer.run(KEY, "e0", [_event("e1")], _work, defer=True, then=_answer)
    assert await _stored_ids(sessions) == ["e0"]
    # The retry carries the same events: written then, in full, in one write.
    _, stored = await writer.run(KEY, "e0", [_event("e1")], _work, defer=True, then=_answer)
    assert stored == 1 and await _stored_ids(sessions) == ["e0", "e1", "answer to done"]
    assert sessions.appends[-1] == ["e1", "answer to done"]
