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
from .estimate import prompt_tokens

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


def plan_compaction(
    events: Sequence[Event], config: EventsCompactionConfig, *, before_model_call: bool = False
) -> CompactionPlan | None:
    """The next compaction of ``events`` (a whole session, in store order), or None when none is due.
    ``before_model_call``: planned inside an invocation, by the token trigger alone (the interval
    counts whole invocations).

    By the interval: due once ``compaction_interval`` invocations ran after the latest compaction
    event. It covers the invocations the latest compaction left uncovered, less the newest
    ``overlap_size``, and less any invocation from the first one holding a tool call that has no
    response among the covered events (its response would otherwise reach the model without its
    call). By tokens, when the interval's is not due (or finds nothing to cover): due once the
    newest model response after the latest compaction reported ``token_threshold`` prompt tokens or
    more. It covers the uncovered events less the newest ``event_retention_size``, ending earlier
    where that would split a tool call from its response or two events on one clock tick.
    """
    last_index, last = latest_compaction(events)
    uncovered = [e for i, e in enumerate(events)
                 if e.actions.compaction is None and (last is None or i > last_index or not last.holds(e.timestamp))]
    after_latest = events[last_index + 1:]
    chosen: list[Event] = []
    if not before_model_call and _interval_due(after_latest, config):
        chosen = _by_invocations(uncovered, config.overlap_size)
    if not chosen and config.event_retention_size is not None and _over_token_threshold(after_latest, config):
        chosen = uncovered[:_retention_split(uncovered, config.event_retention_size)]
    if not chosen:
        return None
    start = last.start_timestamp if last is not None else min(e.timestamp for e in chosen)
    previous = [events[last_index]] if last is not None else []
    return CompactionPlan(events=previous + chosen, start_timestamp=start, end_timestamp=max(e.timestamp for e in chosen))


def _by_invocations(uncovered: list[Event], overlap_size: int) -> list[Event]:
    """The interval trigger's choice: whole invocations, [] when none can go yet."""
    invocations = _invocations(uncovered)
    chosen = _without_open_calls(uncovered, invocations[: len(invocations) - overlap_size])
    if not chosen:
        return []
    end = max(e.timestamp for e in chosen)
    chosen_set = {id(e) for e in chosen}
    if any(e.timestamp <= end for e in uncovered if id(e) not in chosen_set):
        # A kept event shares the covered range's last timestamp (a coarse clock): a range cannot
        # separate them, so wait for a later invocation rather than hide a kept event.
        return []
    return chosen


def _interval_due(after_latest: Sequence[Event], config: EventsCompactionConfig) -> bool:
    """Whether ``compaction_interval`` invocations ran among ``after_latest`` (the events after the
    latest compaction)."""
    interval = config.compaction_interval
    return interval is not None and len(_invocations(e for e in after_latest if e.actions.compaction is None)) >= interval


def prompt_over_threshold(events: Sequence[Event], config: EventsCompactionConfig) -> bool:
    """Whether the token trigger is due, judged from ``events``, the newest part of a session (an
    invocation's loaded events will do): its newest model response after its latest compaction
    reported ``token_threshold`` prompt tokens or more. What the flow asks before a model call."""
    last_index, _ = latest_compaction(events)
    return _over_token_threshold(events[last_index + 1:], config)


def _over_token_threshold(after_latest: Sequence[Event], config: EventsCompactionConfig) -> bool:
    """Whether the newest model response among ``after_latest`` (the events after the latest
    compaction) reported ``token_threshold`` prompt tokens or more (or, reporting none, was
    estimated at that many: estimate.py). Only those count: a response before the latest
    compaction measured a prompt that compaction has since shortened."""
    threshold = config.token_threshold
    if threshold is None:
        return False
    for event in reversed(after_latest):
        tokens = prompt_tokens(event)
        if tokens is not None:
            return tokens >= threshold
    return False


def _retention_split(uncovered: list[Event], retention: int) -> int:
    """How many of ``uncovered`` (oldest first) a token-triggered compaction covers: all but the
    newest ``retention``, or fewer, so that the covered part ends where a step starts
    (``_starts_a_step``), before the first tool call with no response yet, holding the call of every
    response kept, and on another clock tick than the first kept event (a timestamp range cannot
    split one tick). One pass from the newest event."""
    call_at: dict[str, int] = {}
    for i, event in enumerate(uncovered):
        for call in event.function_calls():
            if call.id:
                call_at.setdefault(call.id, i)
    answered = _answered(uncovered)
    split = len(uncovered) - retention
    unanswered = [i for call_id, i in call_at.items() if call_id not in answered]
    if unanswered:
        split = min(split, min(unanswered))
    if split >= len(uncovered):
        return len(uncovered)  # everything goes: nothing kept to split from
    latest_before = []  # latest_before[i]: the latest timestamp among uncovered[:i]
    latest = float("-inf")
    for event in uncovered:
        latest_before.append(latest)
        latest = max(latest, event.timestamp)
    earliest_kept = float("inf")
    earliest_call_kept = len(uncovered)  # the earliest call of a response in uncovered[i:]
    for i in range(len(uncovered) - 1, 0, -1):
        earliest_kept = min(earliest_kept, uncovered[i].timestamp)
        for response in uncovered[i].function_responses():
            earliest_call_kept = min(earliest_call_kept, call_at.get(response.id or "", i))
        if i <= split and earliest_call_kept >= i and latest_before[i] < earliest_kept and _starts_a_step(uncovered, i):
            return i
    return 0


def _starts_a_step(events: list[Event], i: int) -> bool:
    """Whether a summary may end right before ``events[i]``: it starts an invocation, or it is a
    model response calling tools (a step of a long invocation). Not before an answer: the model
    would read an answer without what it answers. This also keeps the split where every runtime
    can make it: the durable one stamps an answer with the tick of the event before it."""
    event = events[i]
    return event.invocation_id != events[i - 1].invocation_id or bool(event.function_calls())


def may_be_due(events: Sequence[Event], config: EventsCompactionConfig, *, whole_session: bool) -> bool:
    """Whether a compaction may be due, judged from the newest part of a session only.

    False only when ``events`` (a suffix of the session, in store order) hold the latest compaction
    and everything after it, or are the ``whole_session`` and hold none, and show that neither
    trigger is due: fewer than ``compaction_interval`` invocations ran after that compaction, and
    the newest model response since reported fewer than ``token_threshold`` prompt tokens. The
    durable workflow checks this first, so most invocations need no summarizing activity at all.
    """
    last_index, last = latest_compaction(events)
    if last is None and not whole_session:
        return True
    after = events[last_index + 1:]
    return _interval_due(after, config) or _over_token_threshold(after, config)


async def compact_events(
    events: Sequence[Event], config: EventsCompactionConfig, *, before_model_call: bool = False
) -> EventCompaction | None:
    """Plan the next compaction of ``events`` and have the summarizer write it; None when none is due
    or the summarizer skipped it. ``before_model_call``: see ``plan_compaction``."""
    plan = plan_compaction(events, config, before_model_call=before_model_call)
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


def compaction_event_id(invocation_id: str, before_call: int | None = None) -> str:
    """One compaction at the end of an invocation at most, and one before each of its model calls
    (``before_call``: how many it made before), so the id follows from the invocation's and the
    call's: storing it again (a retried step) stores nothing new, as appends are idempotent by id."""
    return f"{invocation_id}/compaction" if before_call is None else f"{invocation_id}/compaction/{before_call}"


def compaction_event(
    compaction: EventCompaction, *, invocation_id: str, timestamp: float, before_call: int | None = None
) -> Event:
    """The event that records ``compaction``, made at the end of invocation ``invocation_id`` or,
    with ``before_call``, before its model call after that many."""
    return Event(
        id=compaction_event_id(invocation_id, before_call),
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
        if calls <= _answered(chosen):
            return chosen
        ids.pop()
    return []


def _answered(events: Iterable[Event]) -> set[str]:
    """The call ids that ``events`` (in store order) answer. A long-running call's own first result
    (a ticket, ``{"status": "pending"}``) carries its id too, but only the user's reply answers it:
    a summary covering the call and its ticket would leave the reply, when it comes, with no call
    before it, which providers refuse (adk_core.flow.functions.unanswered_long_running_calls)."""
    long_running: set[str] = set()
    answered: set[str] = set()
    for event in events:
        long_running.update(event.long_running_tool_ids or ())
        for response in event.function_responses():
            if response.id and (response.id not in long_running or event.author == "user"):
                answered.add(response.id)
    return answered
