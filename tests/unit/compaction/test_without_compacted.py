"""without_compacted: what a long compacted session is read as, and why that is enough.

The model's contents and the next compaction's plan must come out the same from the events it keeps
as from the whole log; the session stores select the same events (tests/integration/sessions)."""

from __future__ import annotations

import random

from adk_core.compaction import EventsCompactionConfig, compaction_event
from adk_core.compaction.planner import plan_compaction
from adk_core.flow.contents import apply_compactions, build_contents, without_compacted
from adk_core.types import Content, Event, EventCompaction

from .test_contents_with_compaction import compaction, turn


def ids(events: list[Event]) -> list[str]:
    return [e.id for e in events]


def test_a_log_without_compaction_is_kept_whole():
    events = turn(1) + turn(2)
    assert without_compacted(events) == events


def test_the_newest_compaction_keeps_its_last_covered_event_the_overlap_and_what_follows():
    # The planner's shape: each compaction starts where the previous one started (nested).
    events = (turn(1) + turn(2) + [compaction(10, 11, "S1", after=2)] + turn(3) + turn(4)
              + [compaction(10, 31, "S123", after=4)] + turn(5))
    kept = without_compacted(events)
    assert ids(kept) == ["a3", "u4", "a4", "inv4/compaction", "u5", "a5"]
    assert apply_compactions(kept) == apply_compactions(events)


def test_a_compaction_the_newest_does_not_hold_is_kept_with_what_it_covers():
    events = (turn(1) + turn(2) + [compaction(10, 11, "S1", after=2)] + turn(3)
              + [compaction(20, 31, "S23", after=3)] + turn(4))
    kept = without_compacted(events)
    assert ids(kept) == ["u1", "a1", "inv2/compaction", "a3", "inv3/compaction", "u4", "a4"]
    assert build_contents(kept, "agent", None) == build_contents(events, "agent", None)


def _random_log(rng: random.Random) -> list[Event]:
    """Invocations of a few events each, with compactions of random ranges between them: nested as
    the planner writes them, or anywhere (another writer's), over timestamps that may repeat and
    go backwards."""
    events: list[Event] = []
    t = 0.0
    for n in range(rng.randint(0, 14)):
        for k in range(rng.randint(1, 3)):
            t += rng.choice([0.0, 1.0, 1.0, 2.0, -1.5])
            author = "user" if k == 0 else rng.choice(["agent", "helper"])
            events.append(Event(id=f"e{n}.{k}", invocation_id=f"inv{n}", author=author, timestamp=t,
                                content=Content.user(f"m{n}.{k}") if author == "user" else Content.model(f"m{n}.{k}")))
        if events and rng.random() < 0.4:
            begin = rng.uniform(-5, t)
            end = rng.uniform(begin, t + 2)
            summary = EventCompaction(start_timestamp=begin, end_timestamp=end, compacted_content=Content.model(f"S{n}"))
            events.append(compaction_event(summary, invocation_id=f"inv{n}", timestamp=t + rng.choice([0.0, 0.5])))
    return events


def _plan(events: list[Event], config: EventsCompactionConfig) -> tuple[list[str], float, float] | None:
    plan = plan_compaction(events, config)
    return None if plan is None else (ids(plan.events), plan.start_timestamp, plan.end_timestamp)


def test_random_logs_read_as_their_kept_events_give_the_same_contents_and_plans():
    configs = [EventsCompactionConfig(compaction_interval=i, overlap_size=o) for i, o in ((1, 0), (2, 1), (3, 0), (3, 2))]
    for seed in range(400):
        rng = random.Random(seed)
        log = _random_log(rng)
        for end in range(len(log) + 1):  # every prefix: a model call reads through any event
            events = log[:end]
            kept = without_compacted(events)
            assert apply_compactions(kept) == apply_compactions(events), (seed, end)
            for agent in ("agent", "helper"):
                assert build_contents(kept, agent, None) == build_contents(events, agent, None), (seed, end)
            for config in configs:
                assert _plan(kept, config) == _plan(events, config), (seed, end)
            kept_ids = set(ids(kept))
            assert ids(kept) == [e.id for e in events if e.id in kept_ids], (seed, end)
