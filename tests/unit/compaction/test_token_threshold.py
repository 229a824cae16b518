"""Token-threshold compaction: when the newest prompt reached ``token_threshold`` tokens, everything
but the newest ``event_retention_size`` events is summarized, without splitting a tool call from its
response or one clock tick."""

from __future__ import annotations

import random

import pytest

from adk_core.compaction import EventsCompactionConfig, may_be_due, plan_compaction
from adk_core.errors import ConfigurationError
from adk_core.flow.contents import build_contents
from adk_core.types import Content, Event, Part
from tests.unit.compaction.test_planner import _Summarizer, compacted, covered_ids, turn, turns


def by_tokens(threshold: int = 1000, keep: int = 2, *, interval: int | None = None) -> EventsCompactionConfig:
    return EventsCompactionConfig(interval, summarizer=_Summarizer(), token_threshold=threshold, event_retention_size=keep)


def prompted(event: Event, tokens: int) -> Event:
    """``event`` as a model response that reports ``tokens`` prompt tokens."""
    return event.model_copy(update={"usage_metadata": {"prompt_token_count": tokens, "candidates_token_count": 5}})


def conversation(last: int, tokens: int) -> list[Event]:
    """Turns 1..last; the last answer reports ``tokens`` prompt tokens."""
    events = turns(1, last)
    events[-1] = prompted(events[-1], tokens)
    return events


def test_below_the_threshold_nothing_is_due():
    assert plan_compaction(conversation(3, 999), by_tokens(1000)) is None
    assert not may_be_due(conversation(3, 999), by_tokens(1000), whole_session=True)


def test_at_the_threshold_all_but_the_newest_events_are_summarized():
    plan = plan_compaction(conversation(3, 1000), by_tokens(1000, keep=2))
    assert plan is not None and covered_ids(plan) == ["u1", "a1", "u2", "a2"]
    assert (plan.start_timestamp, plan.end_timestamp) == (10.0, 21.0)
    assert may_be_due(conversation(3, 1000), by_tokens(1000), whole_session=True)


def test_keeping_none_summarizes_everything():
    plan = plan_compaction(conversation(2, 5000), by_tokens(1000, keep=0))
    assert plan is not None and covered_ids(plan) == ["u1", "a1", "u2", "a2"]


def test_the_split_never_falls_right_before_an_answer():
    # Keeping 1 would keep a3 without the question it answers: u3 stays with it.
    plan = plan_compaction(conversation(3, 5000), by_tokens(1000, keep=1))
    assert plan is not None and covered_ids(plan) == ["u1", "a1", "u2", "a2"]


def long_invocation(steps: int, tokens: int) -> list[Event]:
    """One invocation of ``steps`` tool rounds (call, response) and an answer reporting ``tokens``."""
    events = [Event(id="u", invocation_id="inv", author="user", timestamp=1.0, content=Content.user("go"))]
    for k in range(steps):
        events.append(Event(id=f"c{k}", invocation_id="inv", author="agent", timestamp=2.0 + 2 * k,
                            content=Content(role="model", parts=[Part.from_function_call("t", {}, id=f"id{k}")])))
        events.append(Event(id=f"r{k}", invocation_id="inv", author="user", timestamp=3.0 + 2 * k,
                            content=Content(role="user", parts=[Part.from_function_response("t", {}, id=f"id{k}")])))
    events.append(prompted(Event(id="a", invocation_id="inv", author="agent", timestamp=2.0 + 2 * steps,
                                 content=Content.model("done")), tokens))
    return events


def test_a_long_invocation_is_split_before_a_step():
    """A long agentic invocation (the case the token trigger is for): the summary ends inside it,
    before a model step that calls a tool, so each kept response has its call."""
    plan = plan_compaction(long_invocation(5, 9000), by_tokens(1000, keep=4))
    # Keeping 4 (r3, c4, r4, a) would keep r3 without c3; before c3 is a step's start.
    assert plan is not None and covered_ids(plan) == ["u", "c0", "r0", "c1", "r1", "c2", "r2"]


def test_a_model_that_reports_no_prompt_tokens_never_trips_it():
    assert plan_compaction(turns(1, 50), by_tokens(1)) is None


def test_only_responses_after_the_latest_compaction_count():
    events = conversation(3, 5000) + [compacted(10, 21, after=3)] + turns(4, 4)
    # The 5,000-token prompt was measured before the compaction shortened it; turn 4 reported nothing.
    assert plan_compaction(events, by_tokens(1000, keep=1)) is None
    assert not may_be_due(events[4:], by_tokens(1000, keep=1), whole_session=False)
    events[-1] = prompted(events[-1], 1500)
    plan = plan_compaction(events, by_tokens(1000, keep=1))
    # Nested: the previous summary first, then what it left out, less the newest event.
    assert plan is not None and covered_ids(plan) == ["inv3/compaction", "u3", "a3"]
    assert (plan.start_timestamp, plan.end_timestamp) == (10.0, 31.0)


def test_a_kept_response_keeps_its_call():
    call = Part.from_function_call("lookup", {"key": "x"}, id="c1")
    reply = Event(id="r1", invocation_id="inv2", author="user", timestamp=22.0,
                  content=Content(role="user", parts=[Part.from_function_response("lookup", {"v": 1}, id="c1")]))
    final = prompted(Event(id="f2", invocation_id="inv2", author="agent", timestamp=23.0, content=Content.model("done")), 9000)
    events = turns(1, 1) + turn(2, call) + [reply, final]
    # Keeping 2 would keep the response (r1) without its call (a2): the call stays too.
    plan = plan_compaction(events, by_tokens(1000, keep=2))
    assert plan is not None and covered_ids(plan) == ["u1", "a1", "u2"]


def test_an_unanswered_call_stays_out_with_everything_after_it():
    call = Part.from_function_call("ask_human", {}, id="c1")
    events = turns(1, 1) + turn(2, call) + turns(3, 3)
    events[-1] = prompted(events[-1], 9000)
    plan = plan_compaction(events, by_tokens(1000, keep=0))
    assert plan is not None and covered_ids(plan) == ["u1", "a1", "u2"]


def test_one_clock_tick_is_never_split():
    events = conversation(3, 9000)
    for i in (2, 3):  # u2 and a2 on one tick, as a workflow task stamps its events
        events[i] = events[i].model_copy(update={"timestamp": 20.0})
    plan = plan_compaction(events, by_tokens(1000, keep=3))  # would keep a2, u3, a3: split u2 | a2
    assert plan is not None and covered_ids(plan) == ["u1", "a1"]


def test_the_interval_goes_first_and_the_tokens_when_it_is_not_due():
    config = by_tokens(1000, keep=1, interval=3)
    plan = plan_compaction(conversation(3, 9000), config)  # both due: whole invocations
    assert plan is not None and covered_ids(plan) == ["u1", "a1", "u2", "a2", "u3", "a3"]
    plan = plan_compaction(conversation(2, 9000), config)  # the interval is not due yet
    assert plan is not None and covered_ids(plan) == ["u1", "a1"]


@pytest.mark.parametrize("kwargs, says", [
    ({}, "no trigger"),
    ({"token_threshold": 1000}, "give both"),
    ({"event_retention_size": 3}, "no trigger"),
    ({"token_threshold": 0, "event_retention_size": 3}, "1 or more"),
    ({"token_threshold": 1000, "event_retention_size": -1}, "0 or more"),
    ({"token_threshold": True, "event_retention_size": 3}, "whole number"),
    ({"token_threshold": 1000, "event_retention_size": 3, "overlap_size": 1}, "overlap_size applies"),
    ({"compaction_interval": 0}, "1 or more"),
])
def test_a_config_without_a_usable_trigger_says_how_to_fix_it(kwargs, says):
    with pytest.raises(ConfigurationError, match=says):
        EventsCompactionConfig(**kwargs)


def test_the_contents_of_a_token_compaction_show_the_summary_then_what_it_kept():
    """Seeded: random turns with tool calls and shared ticks; whatever the split, the model sees
    the summary once, then exactly the events kept, every function response after its call, and
    no answer without what it answers."""
    from adk_core.compaction import compaction_event
    from adk_core.types import EventCompaction

    rng = random.Random(7)
    for trial in range(200):
        events: list[Event] = []
        clock = 0.0
        for n in range(1, rng.randint(2, 6)):
            clock += 1
            inv = f"inv{n}"
            events.append(Event(id=f"u{n}", invocation_id=inv, author="user", timestamp=clock, content=Content.user(f"q{n}")))
            for k in range(rng.randint(0, 3)):
                clock += rng.choice([0, 1])  # some events share a tick
                cid = f"c{n}.{k}"
                events.append(Event(id=f"call{cid}", invocation_id=inv, author="agent", timestamp=clock,
                                    content=Content(role="model", parts=[Part.from_function_call("t", {}, id=cid)])))
                clock += rng.choice([0, 1])
                events.append(Event(id=f"resp{cid}", invocation_id=inv, author="user", timestamp=clock,
                                    content=Content(role="user", parts=[Part.from_function_response("t", {}, id=cid)])))
            clock += rng.choice([0, 1])
            events.append(Event(id=f"a{n}", invocation_id=inv, author="agent", timestamp=clock, content=Content.model(f"a{n}")))
        events[-1] = prompted(events[-1], 5000)
        keep = rng.randint(0, len(events))
        plan = plan_compaction(events, by_tokens(1000, keep=keep))
        if plan is None:
            continue
        covered = {e.id for e in plan.events}
        kept = [e for e in events if e.id not in covered]
        assert len(kept) >= keep
        assert not kept or kept[0].id.startswith(("u", "call")), (trial, kept[0].id)
        stored = events + [compaction_event(
            EventCompaction(start_timestamp=plan.start_timestamp, end_timestamp=plan.end_timestamp,
                            compacted_content=Content.model("S")),
            invocation_id="inv-last", timestamp=clock + 1)]
        contents = build_contents(stored, "agent", None)
        texts = [p.text for c in contents for p in c.parts if p.text]
        assert sum(1 for t in texts if t.endswith("\nS\n<<<AGENT_OUTPUT_END>>>")) == 1, trial
        shown_calls: set[str] = set()
        for content in contents:
            for part in content.parts:
                if part.function_call is not None:
                    shown_calls.add(part.function_call.id or "")
                if part.function_response is not None:
                    assert part.function_response.id in shown_calls, trial
        assert sum(1 for c in contents for p in c.parts if p.function_call is not None) == sum(
            1 for e in kept for _ in e.function_calls()), trial
