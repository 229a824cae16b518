"""adk.load_session with ``expect_new`` (an eval trial's sessions): a new session is created without
reading first; one that exists already is read as ever, with its events."""

from __future__ import annotations

from typing import Any

from temporalio.testing import ActivityEnvironment

from adk_core.sessions import InMemorySessionService
from adk_core.types import Content, Event
from adk_temporal.activities import contracts as c
from adk_temporal.activities.adk_activities import AdkActivities


class _CountedReads(InMemorySessionService):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get_session(self, **kwargs: Any) -> Any:
        self.reads += 1
        return await super().get_session(**kwargs)


async def test_a_new_session_is_created_without_a_read_and_an_existing_one_is_read() -> None:
    sessions = _CountedReads()
    activities = AdkActivities(sessions)
    key = c.SessionKey(app_name="eval:case@run/0", user_id="eval-user", session_id="run/0/main")
    load = c.LoadSessionInput(key=key, initial_state={"mood": "calm"}, expect_new=True)

    first = await ActivityEnvironment().run(activities.load_session, load)
    assert first.created and first.session.state == {"mood": "calm"} and first.session.events == []
    assert sessions.reads == 0

    stored = await sessions.get_session(app_name=key.app_name, user_id=key.user_id, session_id=key.session_id)
    assert stored is not None
    await sessions.append_event(stored, Event(author="user", content=Content.user("hi")))
    sessions.reads = 0
    again = await ActivityEnvironment().run(activities.load_session, load)
    assert not again.created and [e.text for e in again.session.events] == ["hi"]  # as a lost run left it
    assert sessions.reads == 1

    plain = await ActivityEnvironment().run(activities.load_session, load.model_copy(update={"expect_new": False}))
    assert not plain.created and sessions.reads == 2
