"""What a chaos run did: events lost or doubled, recovery per kill, duplicated tool effects.

Recovery is read from the session workflows' Temporal histories. A kill of worker I at time t
stalls a conversation W when I held W's work: a workflow task I had started and not finished (a),
an activity attempt I was running (b, from the attempts the app traces, because a history keeps only
an activity's last attempt), or W was sticky to I and needed a workflow task after t (c: Temporal
first offers it to I's sticky queue). W has recovered at the first workflow task completed by
another worker after the work fell due (t for a and b, the task's scheduling for c). A kill's
recovery is its slowest stalled conversation; a kill that held no work has none.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent


@dataclass
class Kill:
    at: float
    pid: int
    identity: str
    recovery_s: float | None = None
    stalled: dict[str, str] = field(default_factory=dict)
    """workflow id -> why it stalled (a: workflow task, b: activity, c: sticky)"""
    unrecovered: list[str] = field(default_factory=list)


@dataclass
class Turn:
    session_id: str
    index: int
    amount: int
    sent_at: float
    done_at: float | None = None
    error: str | None = None
    """why the turn never returned a result, even after resending"""
    client_errors: list[str] = field(default_factory=list)
    """errors the client raised for this turn, resends included"""
    finished_after_chaos: bool = False
    """a failed turn whose message, sent once more after the chaos, returned its result"""
    event_ids: list[str] = field(default_factory=list)
    final_text: str = ""


@dataclass
class _Wft:
    scheduled: float
    started: float | None = None
    started_by: str | None = None
    closed: float | None = None
    closed_by: str | None = None
    completed: bool = False


@dataclass
class _Activity:
    activity_id: str
    scheduled: float
    closed: float | None = None


@dataclass
class WorkflowTimeline:
    workflow_id: str
    wfts: list[_Wft] = field(default_factory=list)
    activities: dict[str, _Activity] = field(default_factory=dict)
    """by activity id; ids restart per run, so runs are kept apart by prefixing the run id"""

    def completions(self) -> list[tuple[float, str]]:
        return sorted((w.closed, w.closed_by or "") for w in self.wfts if w.completed and w.closed is not None)


def _time(event: HistoryEvent) -> float:
    return event.event_time.seconds + event.event_time.nanos / 1e9


def timeline(workflow_id: str, runs: list[tuple[str, list[HistoryEvent]]]) -> WorkflowTimeline:
    """The workflow tasks and activities of every run of one workflow."""
    out = WorkflowTimeline(workflow_id)
    for run_id, events in runs:
        wfts: dict[int, _Wft] = {}
        activities: dict[int, _Activity] = {}
        for e in events:
            t, kind = _time(e), e.event_type
            if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
                wfts[e.event_id] = _Wft(scheduled=t)
            elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
                a = e.workflow_task_started_event_attributes
                wfts[a.scheduled_event_id].started, wfts[a.scheduled_event_id].started_by = t, a.identity
            elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                a = e.workflow_task_completed_event_attributes
                w = wfts[a.scheduled_event_id]
                w.closed, w.closed_by, w.completed = t, a.identity, True
            elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
                wfts[e.workflow_task_timed_out_event_attributes.scheduled_event_id].closed = t
            elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                a = e.workflow_task_failed_event_attributes
                wfts[a.scheduled_event_id].closed, wfts[a.scheduled_event_id].closed_by = t, a.identity
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                activities[e.event_id] = _Activity(e.activity_task_scheduled_event_attributes.activity_id, t)
            elif kind in _ACTIVITY_CLOSED:
                scheduled_id = getattr(e, _ACTIVITY_CLOSED[kind]).scheduled_event_id
                activities[scheduled_id].closed = t
        out.wfts += wfts.values()
        out.activities |= {f"{run_id}/{a.activity_id}": a for a in activities.values()}
    out.wfts.sort(key=lambda w: w.scheduled)
    return out


_ACTIVITY_CLOSED = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity_task_completed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "activity_task_failed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "activity_task_timed_out_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "activity_task_canceled_event_attributes",
}


def read_attempts(trace_dir: Path) -> list[dict[str, Any]]:
    attempts = []
    for path in sorted(trace_dir.glob("attempts-*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                attempts.append(json.loads(line))
    return attempts


def _stalls(kill: Kill, w: WorkflowTimeline, attempts: list[dict[str, Any]]) -> tuple[str, float] | None:
    """Why and since when ``kill`` stalled ``w``, or None when the killed worker held none of its work."""
    for wft in w.wfts:  # (a) a workflow task the killed worker had started
        if wft.started_by == kill.identity and wft.started is not None and wft.started <= kill.at and (
            wft.closed is None or wft.closed > kill.at
        ):
            return "a", kill.at
    for attempt in attempts:  # (b) an activity attempt it was running
        if attempt["pid"] != kill.pid or attempt["workflow_id"] != w.workflow_id or attempt["at"] > kill.at:
            continue
        activity = w.activities.get(f"{attempt['run_id']}/{attempt['activity_id']}")
        if activity is not None and (activity.closed is None or activity.closed > kill.at):
            return "b", kill.at
    last_done = max((wft for wft in w.wfts if wft.completed and wft.closed and wft.closed <= kill.at),
                    key=lambda wft: wft.closed or 0.0, default=None)  # fmt: skip
    if last_done is not None and last_done.closed_by == kill.identity:  # (c) sticky to the killed worker
        others = [t for t, who in w.completions() if t > kill.at and who != kill.identity]
        due = [wft.scheduled for wft in w.wfts if wft.scheduled > kill.at and (not others or wft.scheduled < others[0])]
        if due:
            return "c", due[0]
    return None


def recoveries(kills: list[Kill], timelines: list[WorkflowTimeline], attempts: list[dict[str, Any]]) -> None:
    """Fill in each kill's stalled workflows and recovery time."""
    for kill in kills:
        worst: float | None = None
        for w in timelines:
            stall = _stalls(kill, w, attempts)
            if stall is None:
                continue
            why, since = stall
            kill.stalled[w.workflow_id] = why
            after = [t for t, who in w.completions() if t > since and who != kill.identity]
            if not after:
                kill.unrecovered.append(w.workflow_id)
                continue
            worst = max(worst or 0.0, after[0] - kill.at)
        kill.recovery_s = worst


def check_events(turns: list[Turn], stored: dict[str, list[Any]]) -> dict[str, Any]:
    """Compare the events each session stored with what its turns returned to the client: lost
    (returned, not stored), doubled (an event id, a user message or a tool response stored twice),
    stored but never returned to the client that sent the turn."""
    lost, doubled, unreturned, shape_errors = 0, 0, 0, []
    by_session: dict[str, list[Turn]] = defaultdict(list)
    for turn in turns:
        by_session[turn.session_id].append(turn)
    for session_id, session_turns in by_session.items():
        events = stored.get(session_id, [])
        ids = [e.id for e in events]
        doubled += len(ids) - len(set(ids))
        returned = {i for t in session_turns if t.done_at is not None for i in t.event_ids}
        lost += len(returned - set(ids))
        all_finished = all(t.done_at is not None for t in session_turns)
        if all_finished:  # a failed turn's events were never returned; it is reported as failed instead
            # A turn's result leaves out the user's own message; anything else stored must have been returned.
            unreturned += sum(1 for e in events if e.author != "user" and e.id not in returned)
        texts = Counter(e.text for e in events if e.author == "user")
        doubled += sum(n - 1 for n in texts.values() if n > 1)
        call_ids = Counter(r.id for e in events for r in e.function_responses())
        doubled += sum(n - 1 for n in call_ids.values() if n > 1)
        finished = sum(1 for t in session_turns if t.done_at is not None)
        if all_finished and len(events) != 4 * finished:
            shape_errors.append(f"{session_id}: {len(events)} events stored for {finished} turns (expected 4 each)")
    return {"lost": lost, "doubled": doubled, "stored_not_returned": unreturned, "shape_errors": shape_errors}


def check_answers(turns: list[Turn], stored: dict[str, list[Any]]) -> dict[str, list[str]]:
    """Exactly-once effects, as the conversation shows them: in each stored session every answer
    reports the running sum of the session's stored deposits (an effect applied twice, or not at
    all, breaks the sum). And what the clients got: each returned answer must be the stored one."""
    sums, differing, empty = [], [], []
    for session_id, events in stored.items():
        running, asked, answers = 0, None, {}
        for event in events:
            if event.author == "user" and event.text and event.text.startswith("deposit "):
                asked = int(event.text.split()[1])
                running += asked
            elif event.author != "user" and event.text and asked is not None:
                expected = f"deposited {asked}, balance {running}"
                if event.text != expected:
                    sums.append(f"{session_id}: stored {event.text!r}, expected {expected!r}")
                answers[asked] = event.text
        for turn in turns:
            if turn.session_id != session_id or turn.done_at is None or answers.get(turn.index) == turn.final_text:
                continue
            problem = f"{session_id} turn {turn.index}: got {turn.final_text!r}, stored {answers.get(turn.index)!r}"
            (empty if not turn.final_text and not turn.event_ids else differing).append(problem)
    return {"stored_sum_errors": sums, "answers_differing_from_store": differing, "empty_answers": empty}


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float | None]:
    return {"n": len(values), "median": statistics.median(values) if values else None,
            "p95": percentile(values, 0.95), "max": max(values) if values else None}  # fmt: skip
