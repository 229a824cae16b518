"""What a conversation's Temporal history adds to its timeline (timeline.py): each model and tool
activity's own start and end, its attempts (a retried call: the failed attempts before the last,
and the last failure's message), the runs it continued as new into, and each turn's trace id.

Temporal keeps the history of a run for the namespace's retention, so an old conversation's
timeline is drawn from its events alone (``SessionTimeline.history`` says which).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from adk_core.errors import SessionNotFoundError
from adk_temporal.workflows import session_workflow_id
from adkt.client import failure_text

from .backend import ApiBackend
from .timeline import SessionTimeline, TimelineSpan, TimelineTurn, build_turns, totals

HISTORY_SECONDS = 5.0
"""How long a timeline waits for Temporal's history before it is drawn from the events alone."""

MAX_RUNS = 5
"""Runs of a conversation read, newest first: continue-as-new happens every few turns, so the
page's turns are in the last few."""
SLACK = 0.25
"""Seconds an activity may reach outside its bar's event times and still be that bar's (the bar's
events are stamped with workflow task times, which follow the activity's own)."""
TRACER_HEADER = "_tracer-data"  # temporalio.contrib.opentelemetry's header (its W3C traceparent)
KINDS = {"adk.generate_content": "model", "adk.run_tool": "tool"}


@dataclass
class Activity:
    kind: str
    scheduled: float
    started: float | None = None
    closed: float | None = None
    attempt: int = 1
    failure: str | None = None
    agent: str | None = None
    """From the activity's summary (workflows/summaries.py), when a codec does not hide it."""
    tool: str | None = None

    def fits(self, span: TimelineSpan) -> bool:
        """Whether this activity can be ``span``'s: its kind, its agent and tool when the summary
        names them, and inside the bar's event times."""
        return (
            self.kind == span.kind and self.closed is not None
            and (self.agent is None or self.agent == span.agent)
            and (self.tool is None or span.kind != "tool" or self.tool == span.name)
            and span.start - SLACK <= self.scheduled and self.closed <= span.end + SLACK
        )  # fmt: skip


@dataclass
class ConversationHistory:
    activities: list[Activity] = field(default_factory=list)
    continued_as_new: list[float] = field(default_factory=list)
    updates: list[tuple[float, str | None]] = field(default_factory=list)
    """Each message or answer the conversation accepted: its time, its trace id."""


async def read_history(client: Client, workflow_id: str) -> ConversationHistory | None:
    """The conversation's last runs (``MAX_RUNS``), oldest first; None when Temporal has none."""
    history = ConversationHistory()
    quoted = workflow_id.replace("\\", "\\\\").replace('"', '\\"')
    runs = [run async for run in client.list_workflows(f'WorkflowId = "{quoted}"', limit=MAX_RUNS)]
    # Visibility lags behind a run that just started: then the latest run, asked for by id alone.
    run_ids: list[str | None] = [r.run_id for r in sorted(runs, key=lambda r: r.start_time)] or [None]
    try:
        for run_id in run_ids:
            fetched = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
            await _decode_failures(client, fetched.events)
            _read(fetched.events, history)
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
        return None
    return history


async def _decode_failures(client: Client, events: Sequence[HistoryEvent]) -> None:
    """With a payload codec, failures' messages travel encoded: the activities' are decoded in place."""
    if client.data_converter.payload_codec is None:
        return
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            failures = [started.last_failure] if started.HasField("last_failure") else []
        elif event.event_type in _CLOSED and event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            closed = getattr(event, _CLOSED[event.event_type])
            failures = [closed.failure] if closed.HasField("failure") else []
        else:
            continue
        for failure in failures:
            if failure.HasField("encoded_attributes"):
                failure.message = await failure_text(client, failure)


def _seconds(event: HistoryEvent) -> float:
    return event.event_time.ToDatetime(UTC).timestamp()


def _read(events: Sequence[HistoryEvent], into: ConversationHistory) -> None:
    scheduled: dict[int, Activity] = {}
    for event in events:
        t = event.event_type
        if t == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            kind = KINDS.get(event.activity_task_scheduled_event_attributes.activity_type.name)
            if kind is not None:
                made = Activity(kind, _seconds(event))
                _named(made, _text(event.user_metadata.summary if event.HasField("user_metadata") else None))
                scheduled[event.event_id] = made
                into.activities.append(made)
        elif t == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            if (activity := scheduled.get(started.scheduled_event_id)) is not None:
                activity.started, activity.attempt = _seconds(event), started.attempt
                if started.HasField("last_failure"):
                    activity.failure = started.last_failure.message or None
        elif t in _CLOSED:
            activity = scheduled.get(getattr(event, _CLOSED[t]).scheduled_event_id)
            if activity is not None:
                activity.closed = _seconds(event)
                if t != EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                    activity.failure = getattr(event, _CLOSED[t]).failure.message or activity.failure
        elif t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            into.continued_as_new.append(_seconds(event))
        elif t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            header = event.workflow_execution_update_accepted_event_attributes.accepted_request.input.header
            into.updates.append((_seconds(event), _trace_id(header.fields.get(TRACER_HEADER))))


_CLOSED = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity_task_completed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "activity_task_failed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "activity_task_timed_out_event_attributes",
}


def _text(payload: Payload | None) -> str | None:
    """A string the default converter made (a codec's output is left alone)."""
    if payload is None or payload.metadata.get("encoding") != b"json/plain":
        return None
    try:
        value = json.loads(payload.data)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _named(activity: Activity, summary: str | None) -> None:
    """The agent and tool a summary names: ``agent -> tool`` for a tool call, ``agent: ...`` for a
    model call (workflows/runtime.py)."""
    if not summary:
        return
    if activity.kind == "tool" and " -> " in summary:
        activity.agent, activity.tool = summary.split(" -> ", 1)
    elif activity.kind == "model" and ": " in summary:
        activity.agent = summary.split(": ", 1)[0]


def _trace_id(payload: Payload | None) -> str | None:
    """The trace id in a W3C ``traceparent`` (``00-<trace id>-<span id>-<flags>``) the caller's
    tracing interceptor put in the header; None without one, or when a codec hides it."""
    if payload is None or payload.metadata.get("encoding") != b"json/plain":
        return None
    try:
        parent = json.loads(payload.data).get("traceparent", "")
    except (ValueError, AttributeError):
        return None
    parts = parent.split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else None


def enrich(turns: list[TimelineTurn], history: ConversationHistory) -> None:
    """Move model and tool bars to their activities' times, mark retries, add continue-as-new and
    trace ids. A bar is matched to the first unmatched activity of its kind inside its times."""
    free = sorted(history.activities, key=lambda a: a.scheduled)
    starts = [t.start for t in turns[1:]] + [float("inf")]
    for turn, next_start in zip(turns, starts, strict=True):
        spans: list[TimelineSpan] = []
        for span in turn.spans:
            spans.append(span)
            if span.kind not in ("model", "tool"):
                continue
            match = next((a for a in free if a.fits(span)), None)
            if match is None:
                continue  # run in the workflow (transfer_to_agent, inline tools) or history gone
            free.remove(match)
            span.start, span.end, span.attempts = match.scheduled, max(match.closed or span.end, match.scheduled), match.attempt
            if match.attempt > 1:
                span.error = match.failure
                spans.append(TimelineSpan(
                    id=f"{span.id}/retries", kind="retry", name=f"{match.attempt - 1} failed attempt(s)", agent=span.agent,
                    depth=span.depth + 1, start=match.scheduled, end=match.started or match.scheduled, error=match.failure,
                ))  # fmt: skip
        turn.spans = spans
        _fit_agents(turn)
        # The message that started the turn was accepted in the workflow task that began it, so
        # after the turn's first event's time (that task's start); answers later in the turn follow it.
        accepted = [trace for at, trace in history.updates if turn.start - SLACK <= at < next_start - SLACK]
        turn.trace_id = accepted[0] if accepted else None
    for at in history.continued_as_new:
        before = [t for t in turns if t.end <= at + SLACK]
        if before:
            turn = before[-1]
            turn.spans.append(TimelineSpan(id=f"can/{at}", kind="continue_as_new", name="continued as new", agent="",
                                           depth=0, start=at, end=at))  # fmt: skip
            turn.end = max(turn.end, at)


def _fit_agents(turn: TimelineTurn) -> None:
    """An agent's bar spans its calls again, now that they moved; the turn spans everything."""
    agent: TimelineSpan | None = None
    for span in turn.spans:
        if span.kind == "agent":
            agent = span
            agent.start, agent.end = float("inf"), float("-inf")
        elif agent is not None and span.kind in ("model", "tool", "wait", "error"):
            agent.start, agent.end = min(agent.start, span.start), max(agent.end, span.end)
    for span in turn.spans:
        if span.kind == "agent" and span.start == float("inf"):
            span.start = span.end = turn.start
    turn.start = min([turn.start, *(s.start for s in turn.spans)])
    turn.end = max([turn.end, *(s.end for s in turn.spans)])


async def session_timeline(backend: ApiBackend, app: str, user_id: str, session_id: str) -> SessionTimeline:
    """The conversation's timeline: its stored events, sharpened by its history when Temporal
    answers within ``HISTORY_SECONDS`` (else drawn from the events alone)."""
    session = await backend.sessions.get_session(app_name=app, user_id=user_id, session_id=session_id)
    if session is None:
        raise SessionNotFoundError(
            f"no session {session_id!r} for app {app!r}, user {user_id!r}; "
            "list them with GET /api/v1/apps/{app}/sessions?user_id=..."
        )
    turns = build_turns(session.events, now=time.time())
    workflow_id = session_workflow_id(app, user_id, session_id)
    try:
        async with asyncio.timeout(HISTORY_SECONDS):
            history = await read_history(backend.client.client, workflow_id)
    except (RPCError, TimeoutError):
        history = None
    if history is not None:
        enrich(turns, history)
    return SessionTimeline(workflow_id=workflow_id, workflow_url=backend.workflow_url(workflow_id),
                           history=history is not None, totals=totals(turns), turns=turns)  # fmt: skip
