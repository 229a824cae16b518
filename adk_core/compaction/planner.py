"""Which events the next compaction summarizes, and the event that records it.

A compaction event is appended after the events it covers and never replaces them in the store:
it names a timestamp range, and the contents builder (adk_core.flow.contents) shows its summary in
place of the events before it whose timestamps fall in that range. Each new compaction starts
where the previous one started and feeds the previous summary to the summarizer, so the latest
compaction covers (nests) all earlier ones and the model sees one summary, not a growing list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import ConfigurationError
from ..types import Event, EventActions, EventCompaction
from .config import EventsCompactionConfig

COMPACTION_AUTHOR = "user"
"""Compaction events are not an agent's words: authored like the user's, routing (which agent
answers next) and turn results pass over them."""


@dataclass(frozen=True)
class CompactionPlan:
    events: list[Event]
    """What the summarizer reads: the previous compaction event, if any, then the events to cover."""
    start_timestamp: float
    end_timestamp: float


def latest_compaction(events: Sequence[Event]) -> tuple[int, EventCompaction | None]:
    for i in range(len(events) - 1, -1, -1):
        compaction = events[i].actions.compaction
        if compaction is not None:
            return i, compaction
    return -1, None


def plan_compaction(events: Sequence[Event], config: EventsCompactionConfig) -> CompactionPlan | None:
    """The next compaction of ``events`` (a whole session, in store order), or None when none is due.

    Due once ``compaction_interval`` invocations ran after the latest compaction event. It covers
    the invocations the latest compaction left uncovered, less the newest ``overlap_size``, and less
    any invocation from the first one holding a tool call that has no response among the covered
    events (its response would otherwise reach the model without its call).
    """
    last_index, last = latest_compaction(events)
    raw = [(i, e) for i, e in enumerate(events) if e.actions.compaction is None]
    if len(_invocations(e for i, e in raw if i > last_index)) < config.compaction_interval:
        return None
    uncovered = [e for i, e in raw if last is None or i > last_index or not last.holds(e.timestamp)]
    invocations = _invocations(uncovered)
    chosen_ids = invocations[: len(invocations) - config.overlap_size]
    chosen = _without_open_calls(uncovered, chosen_ids)
    if not chosen:
        return None
    end = max(e.timestamp for e in chosen)
    chosen_set = {id(e) for e in chosen}
    if any(e.timestamp <= end for e in uncovered if id(e) not in chosen_set):
        # A kept event shares the covered range's last timestamp (a coarse clock): a range cannot
        # separate them, so wait for a later invocation rather than hide a kept event.
        return None
    start = last.start_timestamp if last is not None else min(e.timestamp for e in chosen)
    previous = [events[last_index]] if last is not None else []
    return CompactionPlan(events=previous + chosen, start_timestamp=start, end_timestamp=end)


def may_be_due(events: Sequence[Event], config: EventsCompactionConfig, *, whole_session: bool) -> bool:
    """Whether a compaction may be due, judged from the newest part of a session only.

    False only when ``events`` (a suffix of the session, in store order) show that fewer than
    ``compaction_interval`` invocations ran after the latest compaction: they hold that compaction
    and everything after it, or they are the ``whole_session`` and hold none. The durable
    workflow checks this first, so most invocations need no summarizing activity at all.
    """
    last_index, last = latest_compaction(events)
    if last is None and not whole_session:
        return True
    after = (e for e in events[last_index + 1:] if e.actions.compaction is None)
    return len(_invocations(after)) >= config.compaction_interval


async def compact_events(events: Sequence[Event], config: EventsCompactionConfig) -> EventCompaction | None:
    """Plan the next compaction of ``events`` and have the summarizer write it; None when none is due
    or the summarizer skipped it."""
    plan = plan_compaction(events, config)
    if plan is None:
        return None
    if config.summarizer is None:
        raise ConfigurationError(
            "EventsCompactionConfig has no summarizer; set it on an App (which defaults it to the root "
            "agent's model) or pass summarizer=LlmEventsSummarizer(model=...)"
        )
    summary = await config.summarizer.summarize_events(plan.events)
    if summary is None or not summary.parts:
        return None
    return EventCompaction(
        start_timestamp=plan.start_timestamp, end_timestamp=plan.end_timestamp, compacted_content=summary
    )


def compaction_event_id(invocation_id: str) -> str:
    """One compaction per invocation at most, so its id follows from the invocation's: storing it
    again (a retried step) stores nothing new, as appends are idempotent by event id."""
    return f"{invocation_id}/compaction"


def compaction_event(compaction: EventCompaction, *, invocation_id: str, timestamp: float) -> Event:
    """The event that records ``compaction``, made at the end of invocation ``invocation_id``."""
    return Event(
        id=compaction_event_id(invocation_id),
        invocation_id=invocation_id,
        author=COMPACTION_AUTHOR,
        timestamp=timestamp,
        actions=EventActions(compaction=compaction),
    )


def _invocations(events: Iterable[Event]) -> list[str]:
    return list(dict.fromkeys(e.invocation_id for e in events))


def _without_open_calls(events: list[Event], invocation_ids: list[str]) -> list[Event]:
    """The events of ``invocation_ids``, dropping whole invocations from the newest until every
    tool call among them has its response among them too."""
    ids = list(invocation_ids)
    while ids:
        keep = set(ids)
        chosen = [e for e in events if e.invocation_id in keep]
        calls = {c.id for e in chosen for c in e.function_calls() if c.id}
        answered = {r.id for e in chosen for r in e.function_responses() if r.id}
        if calls <= answered:
            return chosen
        ids.pop()
    return []
