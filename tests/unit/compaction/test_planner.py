"""Which events a compaction covers: interval, overlap, nesting, open tool calls, coarse clocks."""

from __future__ import annotations

from adk_core.compaction import EventsCompactionConfig, compaction_event, plan_compaction
from adk_core.types import Content, Event, EventCompaction, Part


class _Summarizer:
    async def summarize_events(self, events):
        return Content.model("s")


def config(interval: int, overlap: int = 0) -> EventsCompactionConfig:
    return EventsCompactionConfig(interval, overlap, summarizer=_Summarizer())


def turn(n: int, *parts_of_answer: Part) -> list[Event]:
    inv = f"inv{n}"
    answer = Content(role="model", parts=list(parts_of_answer)) if parts_of_answer else Content.model(f"a{n}")
    return [
        Event(id=f"u{n}", invocation_id=inv, author="user", timestamp=10.0 * n, content=Content.user(f"q{n}")),
        Event(id=f"a{n}", invocation_id=inv, author="agent", timestamp=10.0 * n + 1, content=answer),
    ]


def turns(first: int, last: int) -> list[Event]:
    return [e for n in range(first, last + 1) for e in turn(n)]


def compacted(start: float, end: float, *, after: int) -> Event:
    return compaction_event(
        EventCompaction(start_timestamp=start, end_timestamp=end, compacted_content=Content.model("S")),
        invocation_id=f"inv{after}", timestamp=10.0 * after + 5,
    )


def covered_ids(plan) -> list[str]:
    return [e.id for e in plan.events]


def test_due_every_interval_invocations():
    assert plan_compaction(turns(1, 2), config(3)) is None
    plan = plan_compaction(turns(1, 3), config(3))
    assert plan is not None and covered_ids(plan) == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert (plan.start_timestamp, plan.end_timestamp) == (10.0, 31.0)


def test_overlap_keeps_the_newest_invocations_out():
    plan = plan_compaction(turns(1, 3), config(3, overlap=1))
    assert plan is not None and covered_ids(plan)[-1] == "a2" and plan.end_timestamp == 21.0


def test_the_next_compaction_counts_invocations_after_the_last_and_nests_it():
    events = turns(1, 3) + [compacted(10, 21, after=3)] + turns(4, 5)
    assert plan_compaction(events, config(3, overlap=1)) is None  # two invocations since: not due
    events += turn(6)
    plan = plan_compaction(events, config(3, overlap=1))
    assert plan is not None
    # The previous compaction first (its summary is carried forward), then invocation 3 (kept last
    # time) through 5; 6 is kept now. The range starts where the previous one did.
    assert covered_ids(plan) == ["inv3/compaction", "u3", "a3", "u4", "a4", "u5", "a5"]
    assert (plan.start_timestamp, plan.end_timestamp) == (10.0, 51.0)


def test_an_unanswered_tool_call_and_everything_after_it_stay_out():
    call = Part.from_function_call("ask_human", {}, id="call-1")
    events = turns(1, 1) + turn(2, call) + turns(3, 3)
    plan = plan_compaction(events, config(3))
    assert plan is not None and covered_ids(plan) == ["u1", "a1"]
    answer = Event(id="r", invocation_id="inv4", author="user", timestamp=40.0,
                   content=Content(role="user", parts=[Part.from_function_response("ask_human", {"ok": 1}, id="call-1")]))
    plan = plan_compaction(events + [answer], config(3))
    assert plan is not None and covered_ids(plan)[-1] == "r"  # answered: the call and its reply go together


def test_a_kept_event_on_the_boundary_timestamp_postpones_the_compaction():
    events = turns(1, 2)
    events[2] = events[2].model_copy(update={"timestamp": 11.0})  # invocation 2 starts on invocation 1's last tick
    assert plan_compaction(events, config(2, overlap=1)) is None
    assert plan_compaction(events, config(2)) is not None  # nothing kept: no boundary to blur


def test_summarize_events_activity_name_is_registered():
    from adk_core.sessions import InMemorySessionService
    from adk_temporal.activities.adk_activities import AdkActivities
    from adk_temporal.activities.compaction_activities import SUMMARIZE_EVENTS

    names = [fn.__temporal_activity_definition.name for fn in AdkActivities(InMemorySessionService()).all()]
    assert SUMMARIZE_EVENTS == "adk.summarize_events" and SUMMARIZE_EVENTS in names


def test_may_be_due_from_the_newest_events_only():
    from adk_core.compaction import may_be_due

    events = turns(1, 3) + [compacted(10, 21, after=3)] + turns(4, 5)
    assert not may_be_due(events[4:], config(3), whole_session=False)  # holds the compaction: 2 invocations since
    assert may_be_due(events + turn(6), config(3), whole_session=False)
    assert may_be_due(turns(4, 5), config(3), whole_session=False)  # no compaction seen: cannot tell
    assert not may_be_due(turns(1, 2), config(3), whole_session=True)
    assert may_be_due(turns(1, 3), config(3), whole_session=True)
    # Whenever the plan is due, may_be_due says so, for every suffix that holds the latest compaction.
    for cut in range(0, 7):
        assert may_be_due(events[cut:] + turn(6), config(3), whole_session=cut == 0)


def test_a_long_running_call_with_its_first_result_stays_out_until_the_user_answers():
    """A long-running tool's own first result (a ticket) is not its answer: a summary covering the
    call would leave the user's answer, when it comes, with no call before it (a 400 from providers)."""
    call = Part.from_function_call("approve", {}, id="lr-1")
    asked = Event(id="a2", invocation_id="inv2", author="agent", timestamp=21.0,
                  content=Content(role="model", parts=[call]), long_running_tool_ids={"lr-1"})
    ticket = Event(id="t2", invocation_id="inv2", author="agent", timestamp=22.0, content=Content(
        role="user", parts=[Part.from_function_response("approve", {"status": "pending"}, id="lr-1")]))
    events = turns(1, 1) + [turn(2)[0], asked, ticket] + turns(3, 3)
    plan = plan_compaction(events, config(3))
    assert plan is not None and covered_ids(plan) == ["u1", "a1"]
    tokens = EventsCompactionConfig(token_threshold=10, event_retention_size=0)
    events[-1].usage_metadata = {"prompt_token_count": 50}
    plan = plan_compaction(events, tokens)
    assert plan is not None and covered_ids(plan) == ["u1", "a1", "u2"]
    answer = Event(id="r", invocation_id="inv4", author="user", timestamp=40.0, content=Content(
        role="user", parts=[Part.from_function_response("approve", {"approved": True}, id="lr-1")]))
    plan = plan_compaction(events + [answer], config(3))
    assert plan is not None and covered_ids(plan)[-1] == "r"  # answered: the call and its answer go together
