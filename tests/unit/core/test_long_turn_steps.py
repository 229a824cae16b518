"""A step of a long turn costs what its own events cost, not what the turn made before it.

Each model call is given the contents of all the session's loaded events, and each model response's
calls get ids unique in the invocation. Both used to be derived from every event at every step, so
a turn of n tool calls did n² work (adk_core.flow.incremental). These tests count that work in a
long in-process turn, and check that deriving it a step at a time gives what a full build gives.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import pytest

from adk_core import App, Content, InMemorySessionService, LlmAgent, LocalRuntime, Part, Runner, ScriptedModel
from adk_core.agents.run_config import RunConfig
from adk_core.flow import contents as contents_module
from adk_core.flow import incremental
from adk_core.flow.contents import build_contents, current_turn_start
from adk_core.flow.incremental import InvocationMemo
from adk_core.models import LlmRequest, LlmResponse, function_call_response, text_response
from adk_core.types import Event, EventActions, EventCompaction

STEPS = 60


async def step(i: int) -> dict:
    """Do step i."""
    return {"done": i}


def _long_turn_app(steps: int, call_id: str | None = None) -> App:
    """A model that calls step(0) .. step(steps - 1), one a call, then says done. It reads only the
    newest content, so the harness itself does the same work at every step. ``call_id``: the id
    every call carries, as providers that repeat ids (``call_0`` on every turn) do."""

    def script(request: LlmRequest) -> LlmResponse:
        for part in request.contents[-1].parts:
            if part.function_response is not None:
                done = part.function_response.response["done"]
                return function_call_response("step", {"i": done + 1}, id=call_id) if done + 1 < steps else text_response("done")
        return function_call_response("step", {"i": 0}, id=call_id)

    agent = LlmAgent(name="worker", model=ScriptedModel(script, name="long", record_requests=False), tools=[step])
    return App(name="long", root_agent=agent)


async def _run_turn(app: App) -> list[Event]:
    sessions = InMemorySessionService()
    await sessions.create_session(app_name="long", user_id="u", session_id="s")
    runner = Runner(app=app, session_service=sessions, runtime=LocalRuntime())
    events = [
        e async for e in runner.run_async(user_id="u", session_id="s", new_message=Content.user("go"),
                                          run_config=RunConfig(max_llm_calls=STEPS + 5))
    ]
    assert events[-1].text == "done"
    return events


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the two per-event derivations ran: a content built for an event, and an event's
    function calls listed."""
    counts = {"event_to_content": 0, "function_calls": 0}
    to_content = contents_module.event_to_content
    function_calls = Event.function_calls

    def counting_to_content(*args: Any, **kwargs: Any) -> Any:
        counts["event_to_content"] += 1
        return to_content(*args, **kwargs)

    def counting_function_calls(self: Event) -> Any:
        counts["function_calls"] += 1
        return function_calls(self)

    monkeypatch.setattr(contents_module, "event_to_content", counting_to_content)
    monkeypatch.setattr(Event, "function_calls", counting_function_calls)
    return counts


async def test_a_long_turn_builds_each_events_contents_once(counted: dict[str, int]) -> None:
    events = await _run_turn(_long_turn_app(STEPS))
    assert len(events) == 2 * STEPS + 1  # STEPS calls and their results, then the answer
    # A step builds its new events only, once the list is past incremental.SHORT (a shorter one is
    # built whole: 64 builds over the first 8 steps): 185. Every event at every step was 3,721.
    assert counted["event_to_content"] <= 3 * len(events), counted


async def test_a_long_turns_call_ids_are_checked_against_the_new_events_only(counted: dict[str, int]) -> None:
    events = await _run_turn(_long_turn_app(STEPS, call_id="call_0"))
    # A handful of listings a step (the new events, the response itself, its tool dispatch); the
    # whole invocation again at every step would be about STEPS² (3,600).
    assert counted["function_calls"] <= 10 * STEPS, counted
    calls = [call for e in events for call in e.function_calls()]
    ids = [call.id for call in calls]
    assert len(calls) == STEPS and len(set(ids)) == STEPS, "a repeated provider id gets a fresh one"
    assert ids[0] == "call_0" and all(i.startswith("adk-") for i in ids[1:])
    answered = [r.id for e in events for r in e.function_responses()]
    assert answered == ids


# --- InvocationMemo against a full build ----------------------------------------------------------
_TIME = iter(range(1, 10_000))


@pytest.fixture
def every_list_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lists below are short: the memo keeps even these, so what it keeps is what is checked."""
    monkeypatch.setattr(incremental, "SHORT", 0)


def _event(author: str, text: str | None = None, *, invocation: str = "inv", branch: str | None = None,
           call: str | None = None, answer: str | None = None, thought: bool = False,
           compaction: EventCompaction | None = None) -> Event:
    parts = []
    if text is not None:
        parts.append(Part(text=text, thought=thought or None))
    if call is not None:
        parts.append(Part.from_function_call("step", {"i": 1}, id=call))
    if answer is not None:
        parts.append(Part.from_function_response("step", {"done": 1}, id=answer))
    t = float(next(_TIME))
    return Event(id=f"e{t}", invocation_id=invocation, author=author, branch=branch, timestamp=t,
                 content=Content(role="user" if author == "user" else "model", parts=parts) if parts else None,
                 actions=EventActions(compaction=compaction))


def _same(memo: InvocationMemo, events: list[Event], agent: str = "worker", branch: str | None = None,
          start: int = 0) -> list:
    built = memo.contents(events, start, agent, branch)
    assert built == build_contents(events[start:], agent, branch)
    return built


@pytest.mark.usefixtures("every_list_kept")
def test_contents_built_a_step_at_a_time_equal_a_full_build() -> None:
    memo = InvocationMemo()
    events = [_event("user", "hello")]
    _same(memo, events)
    events += [_event("worker", "thinking", thought=True), _event("worker", call="c1")]
    _same(memo, events)
    events += [_event("user", answer="c1"), _event("helper", "I help"), _event("worker", "on a branch", branch="b.x")]
    _same(memo, events)
    _same(memo, events, agent="helper")  # another agent's view is its own
    _same(memo, events, branch="b")  # and another branch's
    events.append(_event("worker", "partial"))
    events[-1].partial = True
    _same(memo, events)
    first = memo.contents(events, 0, "worker", None)
    first.append(Content.user("a callback's addition"))
    assert memo.contents(events, 0, "worker", None) == build_contents(events, "worker", None)  # each call a new list


@pytest.mark.usefixtures("every_list_kept")
def test_a_list_replaced_or_trimmed_is_built_again() -> None:
    memo = InvocationMemo()
    events = [_event("user", "one"), _event("worker", "two"), _event("user", "three")]
    _same(memo, events)
    del events[:2]  # trimmed under the memo, then grown back to the same length
    events += [_event("worker", "four"), _event("user", "five")]
    _same(memo, events)
    replaced = [*events, _event("worker", "six")]
    _same(memo, replaced)
    _same(memo, events)


@pytest.mark.usefixtures("every_list_kept")
def test_a_compaction_among_the_new_events_covers_the_older_ones() -> None:
    memo = InvocationMemo()
    events = [_event("user", "old question"), _event("worker", "old answer")]
    _same(memo, events)
    summary = EventCompaction(start_timestamp=events[0].timestamp, end_timestamp=events[1].timestamp,
                              compacted_content=Content(role="model", parts=[Part(text="they talked")]))
    events += [_event("worker", compaction=summary), _event("user", "new question")]
    built = _same(memo, events)
    assert "old question" not in str(built) and "they talked" in str(built)
    events.append(_event("worker", "new answer"))
    _same(memo, events)


@pytest.mark.usefixtures("every_list_kept")
def test_the_current_turn_only_view_starts_at_the_latest_user_text() -> None:
    memo = InvocationMemo()
    events = [_event("user", "first"), _event("worker", "reply")]
    _same(memo, events, start=0)
    events += [_event("user", "second"), _event("worker", call="c2")]
    _same(memo, events, start=2)
    events.append(_event("user", answer="c2"))
    _same(memo, events, start=2)


@pytest.mark.usefixtures("every_list_kept")
def test_call_ids_are_those_of_the_invocations_newest_events() -> None:
    memo = InvocationMemo()
    events = [_event("worker", call="old", invocation="earlier"), _event("user", "go")]
    assert memo.call_ids(events, "inv") == set()
    events.append(_event("worker", call="a"))
    assert memo.call_ids(events, "inv") == {"a"}
    events += [_event("user", answer="a"), _event("worker", call="b")]
    assert memo.call_ids(events, "inv") == {"a", "b"}
    events.append(_event("worker", call="x", invocation="another"))  # newer than ours: ours are older
    assert memo.call_ids(events, "inv") == set()
    events.append(_event("worker", call="c"))
    assert memo.call_ids(events, "inv") == {"c"}
    trimmed = events[-2:]
    assert memo.call_ids(trimmed, "inv") == {"c"}
    assert memo.call_ids(events, "other-invocation") == set()


def _random_event(rng: random.Random, invocation: str, clock: Iterator[int], long_running: bool = False) -> Event:
    author = rng.choice(["user", "worker", "helper"])
    parts = []
    if rng.random() < 0.5:
        parts.append(Part(text=rng.choice(["hi", "", " "]), thought=rng.choice([None, True])))
    if rng.random() < 0.3:
        parts.append(Part.from_function_call("f", {}, id=rng.choice([None, "call_0", f"c{rng.randint(0, 40)}"])))
    if rng.random() < 0.3:
        parts.append(Part.from_function_response("f", {}, id=f"c{rng.randint(0, 40)}"))
    calls = [p.function_call.id for p in parts if p.function_call is not None and p.function_call.id]
    # Long-running calls, answered later (their answers go back to them: contents.pair_answers).
    waits = calls if long_running and calls and rng.random() < 0.5 else None
    t = float(next(clock))
    compaction = None
    if rng.random() < 0.04:
        begin = rng.uniform(t - 60, t)
        compaction = EventCompaction(start_timestamp=begin, end_timestamp=rng.uniform(begin, t),
                                     compacted_content=Content(role="model", parts=[Part(text="summary")]))
    return Event(id=f"e{t}", invocation_id=invocation, author=author, branch=rng.choice([None, None, "a", "a.b", "c"]),
                 timestamp=t, content=Content(role="user" if author == "user" else "model", parts=parts) if parts else None,
                 actions=EventActions(compaction=compaction), long_running_tool_ids=waits)


@pytest.mark.parametrize(("short", "long_running"), [(0, False), (incremental.SHORT, False), (0, True)])
def test_step_by_step_equals_the_full_derivation_on_random_turns(
    monkeypatch: pytest.MonkeyPatch, short: int, long_running: bool
) -> None:
    """Random steps (appends from this and another invocation, trims, a second list, the current-turn
    view, other agents and branches, long-running calls answered later): the memo gives what
    deriving everything again gives."""
    monkeypatch.setattr(incremental, "SHORT", short)
    for seed in range(150):
        rng = random.Random(seed)
        memo, lists, clock = InvocationMemo(), [[]], itertools.count(1)
        for _ in range(60):
            events = rng.choice(lists)
            roll = rng.random()
            if roll < 0.85:
                events.extend(_random_event(rng, rng.choice(["inv"] * 6 + ["other"]), clock, long_running)
                              for _ in range(rng.randint(0, 4)))
            elif roll < 0.93:
                del events[:rng.randint(0, len(events))]
            else:
                lists.append(list(events))
            agent, branch = rng.choice(["worker", "helper"]), rng.choice([None, "a", "a.b", "c"])
            start = current_turn_start(events) if rng.random() < 0.3 else 0
            assert memo.contents(events, start, agent, branch) == build_contents(events[start:], agent, branch), seed
            walked: set[str] = set()
            for event in reversed(events):  # what ensure_call_ids read before the memo
                if event.invocation_id != "inv":
                    break
                walked.update(call.id for call in event.function_calls() if call.id)
            assert memo.call_ids(events, "inv") == walked, seed
