"""Compaction under the durable runtime: the summarizing step, and what the model activity reads
after a history reference so that compactions stored after it apply (adk_core.flow.contents).

The workflow calls ``adk.summarize_events`` at the end of an invocation. The activity reads the
session's stored events through the invocation's last one, plans the compaction and has the app's
summarizer write it; it stores nothing. The workflow makes the compaction event around the result,
with an id that follows from the invocation's, and stores it like any event (idempotent by id):
a crash before the result is recorded reruns the summary and stores nothing twice; a crash after
replays the recorded summary. Either way the session holds no compaction event or exactly one.
"""

from __future__ import annotations

from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from adk_core import App
from adk_core.compaction import compact_events
from adk_core.models.base import ContentsRef
from adk_core.sessions import GetSessionConfig, SessionService
from adk_core.types import Event, EventCompaction

from ._history import StoredEventsCache
from .contracts import SessionKey

SUMMARIZE_EVENTS = "adk.summarize_events"
COMPACTION_ACTIVITY_NAMES = (SUMMARIZE_EVENTS,)


class SummarizeEventsInput(BaseModel):
    app_name: str
    key: SessionKey
    through_event_id: str
    """The invocation's last stored event: the compaction is planned on the events through it."""
    invocation_id: str
    before_model_call: bool = False
    """Planned inside the invocation, before a model call: by the token trigger alone."""


class SummarizeEventsResult(BaseModel):
    compaction: EventCompaction | None = None
    """None when no compaction is due or the summarizer skipped it."""


async def summarize_stored_events(stored: StoredEventsCache, app: App, input: SummarizeEventsInput) -> SummarizeEventsResult:
    config = app.events_compaction_config
    if config is None:
        raise ApplicationError(
            f"app {app.name!r} on this worker has no events_compaction_config, but the workflow asked to compact; "
            "deploy the same app version to every worker on the task queue",
            type="ConfigurationError",
            non_retryable=True,
        )
    key = input.key
    # Less what the newest compaction hides: the planner reads only that compaction and what it
    # does not cover (adk_core.flow.contents.without_compacted).
    events = await stored.through_stored(
        (key.app_name, key.user_id, key.session_id), input.through_event_id, skip_compacted=True
    )
    return SummarizeEventsResult(compaction=await compact_events(events, config, before_model_call=input.before_model_call))


async def events_after_ref(sessions: SessionService, app: App | None, ref: ContentsRef) -> list[Event]:
    """The events stored after a history reference's last one, when they may hold a compaction that
    covers events before it; [] when the app does not compact (nothing to read then).

    A reference usually runs through the newest event and this finds nothing; it runs through an
    older one when callbacks edited the contents of the loaded events, which then go by value, and
    a compaction among those covers stored events that only the reference's reader can leave out.
    """
    if app is None or app.events_compaction_config is None:
        return []
    session = await sessions.get_session(
        app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id,
        config=GetSessionConfig(after_event_id=ref.through_event_id),
    )
    return session.events if session is not None else []
