"""The ride-along writer on Postgres (issue 24, item 8): events stored in the background and sent
again (a retried activity, the next activity, another worker), after Temporal carried them as
JSON, are idempotent repeats; an id sent again with other content is refused, not dropped."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from adk_core.errors import EventConflictError
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.types import Blob, Content, Event, EventActions, Part
from adk_temporal.activities import contracts as c
from adk_temporal.activities._history import RideAlongWriter, StoredEventsCache
from adk_temporal.workflows.converter import AdkPayloadConverter

pytestmark = pytest.mark.integration


def _event(eid: str, ts: float, text: str | None = None) -> Event:
    return Event(
        id=eid, author="a", invocation_id="inv", timestamp=ts,
        content=Content(role="model", parts=[Part(text=text or f"answer {eid}"),
                                             Part(inline_data=Blob(mime_type="application/octet-stream", data=b"\x00\xff"))]),
        usage_metadata={"total": 3, "ratio": 1 / 3},
        actions=EventActions(state_delta={"temp:scratch": 1} if eid.endswith("1") else {}),
    )


def _carried(key: c.SessionKey, after: str | None, events: list[Event]) -> c.AppendEventsInput:
    """The activity input as a worker receives it: through the ADK payload converter (JSON)."""
    converter = AdkPayloadConverter()
    payloads = converter.to_payloads([c.AppendEventsInput(key=key, events=events, after=after)])
    (received,) = converter.from_payloads(payloads, [c.AppendEventsInput])
    return received


async def _work() -> str:
    return "done"


async def test_events_written_in_the_background_and_sent_again_are_repeats(engine: AsyncEngine, app_name: str) -> None:
    sessions = DatabaseSessionService(engine)
    await sessions.create_session(app_name=app_name, user_id="u", session_id="s")
    key = c.SessionKey(app_name=app_name, user_id="u", session_id="s")
    k = (app_name, "u", "s")
    first = [_event("e0", 1.0)]
    await sessions.append_events(await sessions.get_session(app_name=app_name, user_id="u", session_id="s"), first)  # type: ignore[arg-type]
    cache = StoredEventsCache(sessions)
    await cache.through(k, "e0")
    writer = RideAlongWriter(sessions, cache)

    batch = [_event("e1", 2.0), _event("e2", 3.0)]
    sent = _carried(key, "e0", batch)
    _, stored = await writer.run(k, sent.after, sent.events, _work, wait=True)  # the background write
    assert stored == 2
    # The activity's result was lost: Temporal retries it with the same input, on this worker...
    again = _carried(key, "e0", batch)
    await writer.run(k, again.after, again.events, _work, wait=True)
    # ...the next activity carries them again with one more event...
    more = _carried(key, "e0", [*batch, _event("e3", 4.0)])
    await writer.run(k, more.after, more.events, _work, wait=True)
    # ...and a worker that never saw this session writes the whole batch synchronously.
    other = RideAlongWriter(sessions, StoredEventsCache(sessions))
    await other.run(k, more.after, _carried(key, "e0", more.events).events, _work)

    stored_session = await sessions.get_session(app_name=app_name, user_id="u", session_id="s")
    assert stored_session is not None
    assert [e.id for e in stored_session.events] == ["e0", "e1", "e2", "e3"]

    # The same id with another answer is refused by both paths, and the stored answer stays.
    changed = _carried(key, "e3", [_event("e4", 5.0), _event("e2", 3.0, text="another answer")])
    with pytest.raises(EventConflictError, match="'e2'"):
        await other.run(k, changed.after, changed.events, _work)
    with pytest.raises(EventConflictError, match="'e2'"):
        await writer.run(k, changed.after, changed.events, _work, wait=True)
    stored_session = await sessions.get_session(app_name=app_name, user_id="u", session_id="s")
    assert stored_session is not None
    assert [e.id for e in stored_session.events] == ["e0", "e1", "e2", "e3"]
    assert stored_session.events[2].content is not None and stored_session.events[2].text == "answer e2"
