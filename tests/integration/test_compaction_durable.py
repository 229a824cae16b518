"""Compaction under the durable runtime (SessionWorkflow on a real dev server, sessions in real
Postgres): the same contents as in-process for a long conversation (100 turns, 20 compactions; the
in-process test in tests/unit/compaction runs 200), bounded model input, the full event log kept,
and one compaction event however the summarizing step is retried."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from adk_core import App, InMemoryRunner, LlmAgent, ScriptedModel
from adk_core.compaction import EventsCompactionConfig, LlmEventsSummarizer, compaction_event_id
from adk_core.errors import ModelError
from adk_core.models.base import LlmRequest
from adk_core.types import Content, Event
from adk_temporal.activities._history import StoredEventsCache
from tests.integration.conftest import DurableStack
from tests.unit.compaction.conversation import (
    INTERVAL,
    OVERLAP,
    agentic_app,
    make_app,
    question,
    request_text,
    without_call_ids,
)

pytestmark = pytest.mark.integration

TURNS = 100


async def converse_durably(stack: DurableStack, app: App, session_id: str, turns: int) -> None:
    for n in range(1, turns + 1):
        result = await stack.client.send(app.name, "user", session_id, question(n))
        assert result.final_text.startswith(f"After {n} comes {n + 1}")
    await compactions_stored(stack, app.name, session_id, turns // INTERVAL)


async def compactions_stored(stack: DurableStack, app_name: str, session_id: str, count: int) -> list[Event]:
    """The session's compaction events, once there are ``count``: a turn answers before the summary
    it makes due is written (workflows/session.py, COMPACT_AFTER_REPLY_PATCH)."""
    async with asyncio.timeout(30):
        while True:
            stored = await stack.sessions.get_session(app_name=app_name, user_id="user", session_id=session_id)
            assert stored is not None
            compactions = [e for e in stored.events if e.actions.compaction is not None]
            if len(compactions) >= count:
                return compactions
            await asyncio.sleep(0.05)


async def converse_in_process(app: App, turns: int) -> None:
    runner = InMemoryRunner(app=app)
    for n in range(1, turns + 1):
        await runner.run(question(n), session_id="s")


def contents_seen(model: ScriptedModel) -> list[list[dict]]:
    return [[c.model_dump(mode="json") for c in r.contents] for r in model.requests]


@pytest.mark.parametrize("edit_contents", [False, True], ids=["by-reference", "callback-edited"])
async def test_long_conversation_matches_in_process(durable_stack: DurableStack, edit_contents: bool) -> None:
    """``callback-edited``: a callback changes the contents, so the loaded events go by value and
    only the older ones by reference; the model activity must apply the compactions stored after
    its reference, or the summary and the events it covers would both reach the model."""
    name = f"compaction_{uuid.uuid4().hex[:8]}"
    app, model, summarizer = make_app(name, edit_contents=edit_contents)
    durable_stack.register(app)
    await converse_durably(durable_stack, app, "s", TURNS)
    local_app, local_model, local_summarizer = make_app(name, edit_contents=edit_contents)
    await converse_in_process(local_app, TURNS)

    assert len(model.requests) == TURNS
    assert contents_seen(model) == contents_seen(local_model)
    assert [request_text(r) for r in summarizer.requests] == [request_text(r) for r in local_summarizer.requests]
    sizes = [len(request_text(r)) for r in model.requests]
    assert max(sizes[TURNS // 2:]) <= 1.1 * max(sizes[: TURNS // 4])
    print(f"\ndurable ({'edited' if edit_contents else 'by reference'}): request text max {max(sizes)} chars")

    # The whole conversation is still in Postgres: compaction adds events, it deletes none.
    stored = await durable_stack.sessions.get_session(app_name=name, user_id="user", session_id="s")
    assert stored is not None
    compactions = [e for e in stored.events if e.actions.compaction is not None]
    assert [e.text for e in stored.events if e.author == "user" and e.actions.compaction is None] == [
        question(n) for n in range(1, TURNS + 1)
    ]
    assert sum(1 for e in stored.events if e.author == "counter") == TURNS
    assert len(compactions) == TURNS // INTERVAL
    assert all(e.id == compaction_event_id(e.invocation_id) for e in compactions)


@pytest.mark.parametrize("trigger", ["tokens", "estimated"])
async def test_by_tokens_the_durable_model_sees_what_it_sees_in_process(durable_stack: DurableStack, trigger: str) -> None:
    """The token trigger under SessionWorkflow: the workflow decides from the turn's own responses
    whether the summarizing activity runs, and the summary may end mid-invocation; the model and the
    summarizer see exactly what they see in-process, and nothing stored is lost. ``estimated``: the
    model reports no usage, and the model activity estimates each prompt as LocalRuntime does."""
    turns = 30
    name = f"compaction_{trigger}_{uuid.uuid4().hex[:8]}"
    app, model, summarizer = make_app(name, trigger=trigger)
    durable_stack.register(app)
    for n in range(1, turns + 1):
        result = await durable_stack.client.send(app.name, "user", "s", question(n))
        assert result.final_text.startswith(f"After {n} comes {n + 1}")
    local_app, local_model, local_summarizer = make_app(name, trigger=trigger)
    await converse_in_process(local_app, turns)
    expected = len(local_summarizer.requests)
    assert expected >= turns // 8
    compactions = await compactions_stored(durable_stack, name, "s", expected)

    assert contents_seen(model) == contents_seen(local_model)
    assert [request_text(r) for r in summarizer.requests] == [request_text(r) for r in local_summarizer.requests]
    assert len(compactions) == expected
    stored = await durable_stack.sessions.get_session(app_name=name, user_id="user", session_id="s")
    assert stored is not None
    assert sum(1 for e in stored.events if e.actions.compaction is None) == 2 * turns


async def test_by_tokens_a_summary_ending_inside_an_agentic_turn_is_the_same_durably(durable_stack: DurableStack) -> None:
    """The durable runtime stamps a workflow task's events with one time; a summary ending before a
    tool-calling step still falls between two ticks, so durable and in-process plan alike."""
    turns = 8
    name = f"compaction_agentic_{uuid.uuid4().hex[:8]}"
    app, model, summarizer = agentic_app(name)
    durable_stack.register(app)
    for n in range(1, turns + 1):
        result = await durable_stack.client.send(app.name, "user", "s", f"task {n}")
        assert result.final_text == "finished"
    local_app, local_model, local_summarizer = agentic_app(name)
    runner = InMemoryRunner(app=local_app)
    for n in range(1, turns + 1):
        await runner.run(f"task {n}", session_id="s")
    local = await runner.session_service.get_session(app_name=name, user_id="user", session_id="s")
    assert local is not None
    local_compactions = [e for e in local.events if e.actions.compaction is not None]
    assert len(local_compactions) >= 2
    compactions = await compactions_stored(durable_stack, name, "s", len(local_compactions))

    assert without_call_ids(contents_seen(model)) == without_call_ids(contents_seen(local_model))
    assert without_call_ids(contents_seen(summarizer)) == without_call_ids(contents_seen(local_summarizer))
    # The summaries ended inside a turn: the newest kept events begin with a tool-calling step.
    newest = local.events.index(local_compactions[-1])
    kept_after = [e for e in local.events[:newest] if not local_compactions[-1].actions.compaction.holds(e.timestamp)
                  and e.actions.compaction is None]
    assert kept_after and kept_after[0].function_calls(), [e.id for e in kept_after]
    assert len(compactions) == len(local_compactions)


@pytest.mark.parametrize("workflow", ["conversation", "one-shot", "conversation-estimated"])
async def test_a_long_invocation_is_compacted_before_its_model_calls_durably(
    durable_stack: DurableStack, workflow: str
) -> None:
    """One turn of 30 tool rounds (SessionWorkflow, or AgentRunWorkflow, which loads a short tail):
    the workflow sees its own calls' prompt tokens, summarizes through the activity before the next
    call, and stores the compaction event under the call's id; the model and the summarizer see
    what they see in-process. ``conversation-estimated``: the model reports no usage; the model
    activity's estimates (tool call ids left out, which each runtime draws afresh) trip it alike."""
    name = f"compaction_long_turn_{uuid.uuid4().hex[:8]}"
    reports_usage = workflow != "conversation-estimated"
    threshold = 900 if reports_usage else 500  # the estimate counts the JSON's values, not its keys
    app, model, summarizer = agentic_app(name, steps=30, token_threshold=threshold, keep=3, reports_usage=reports_usage)
    durable_stack.register(app)
    if workflow.startswith("conversation"):
        final_text = (await durable_stack.client.send(app.name, "user", "s", "do the work")).final_text
    else:
        final_text = (await durable_stack.client.run_once(app.name, "user", "s", "do the work")).final_text
    assert final_text == "finished"
    local_app, local_model, local_summarizer = agentic_app(
        name, steps=30, token_threshold=threshold, keep=3, reports_usage=reports_usage
    )
    await InMemoryRunner(app=local_app).run("do the work", session_id="s")

    assert len(model.requests) == 31
    assert without_call_ids(contents_seen(model)) == without_call_ids(contents_seen(local_model))
    assert without_call_ids(contents_seen(summarizer)) == without_call_ids(contents_seen(local_summarizer))
    stored = await durable_stack.sessions.get_session(app_name=name, user_id="user", session_id="s")
    assert stored is not None
    compactions = [e for e in stored.events if e.actions.compaction is not None]
    assert len(compactions) == len(local_summarizer.requests) >= 3
    assert all("/compaction/" in e.id for e in compactions)
    assert [r.response["done"] for e in stored.events for r in e.function_responses()] == list(range(30))


async def test_a_worker_without_the_session_cached_reads_what_compaction_leaves_and_sees_the_same(
    durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each turn finds the session uncached (as on a worker that evicted it, or another worker), so
    its model call and its summary read it from Postgres, skipping what the newest compaction
    hides: the model and the summarizer see what they see in-process, and the reads stay short."""
    reads: list[tuple[bool, int]] = []
    caches: set[StoredEventsCache] = set()
    through = StoredEventsCache.through

    async def counted(self: StoredEventsCache, key: Any, event_id: str, *, skip_compacted: bool = False) -> Any:
        caches.add(self)
        cached = key in self._events
        events = await through(self, key, event_id, skip_compacted=skip_compacted)
        if not cached:
            reads.append((skip_compacted, len(events or [])))
        return events

    monkeypatch.setattr(StoredEventsCache, "through", counted)
    turns = 6 * INTERVAL + 2
    name = f"compaction_cold_{uuid.uuid4().hex[:8]}"
    app, model, summarizer = make_app(name)
    durable_stack.register(app)
    for n in range(1, turns + 1):
        for cache in caches:  # the turn before is stored: forget it
            cache.invalidate((name, "user", "s"))
        result = await durable_stack.client.send(app.name, "user", "s", question(n))
        assert result.final_text.startswith(f"After {n} comes {n + 1}")
    local_app, local_model, local_summarizer = make_app(name)
    await converse_in_process(local_app, turns)

    assert contents_seen(model) == contents_seen(local_model)
    assert [request_text(r) for r in summarizer.requests] == [request_text(r) for r in local_summarizer.requests]
    stored = await durable_stack.sessions.get_session(app_name=name, user_id="user", session_id="s")
    assert stored is not None
    assert len(reads) >= turns - 1 and all(skip for skip, _ in reads)  # the first turn made the session here
    # A read holds the newest compaction, the event its summary stands at, and the turns (two
    # events each) it does not cover: never more than the turns between two compactions and the overlap.
    longest = max(count for _, count in reads)
    assert longest <= 2 * (INTERVAL + OVERLAP) + 2 < len(stored.events) // 4, (longest, len(stored.events))


class HeldSummarizer:
    """Writes its summary once ``release`` is set: a summarizer model that takes its time."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def summarize_events(self, events: Sequence[Event]) -> Content | None:
        self.started.set()
        await self.release.wait()
        return Content.model(f"summary of {len(events)} events")


async def test_a_compacting_turn_answers_before_its_summary_is_written(durable_stack: DurableStack) -> None:
    """The turn that makes a compaction due answers its sender while the summarizer still works;
    the next message waits for the summary, and its model sees it."""
    summarizer = HeldSummarizer()
    model = ScriptedModel(lambda r: "ok")
    name = f"compaction_after_reply_{uuid.uuid4().hex[:8]}"
    config = EventsCompactionConfig(2, 0, summarizer=summarizer)
    app = durable_stack.register(App(name=name, root_agent=LlmAgent(name="counter", model=model),
                                     events_compaction_config=config))
    await durable_stack.client.send(app.name, "user", "s", "message 0")
    # The second turn makes a compaction due: its answer comes while the summary is held.
    second = await asyncio.wait_for(durable_stack.client.send(app.name, "user", "s", "message 1"), timeout=20)
    await asyncio.wait_for(summarizer.started.wait(), timeout=20)
    stored = await durable_stack.sessions.get_session(app_name=name, user_id="user", session_id="s")
    assert stored is not None and not any(e.actions.compaction for e in stored.events)

    third = asyncio.ensure_future(durable_stack.client.send(app.name, "user", "s", "message 2"))
    await asyncio.sleep(1.0)
    assert not third.done() and len(model.requests) == 2  # the next turn waits for the summary
    summarizer.release.set()
    await asyncio.wait_for(third, timeout=20)

    stored = await durable_stack.sessions.get_session(app_name=name, user_id="user", session_id="s")
    assert stored is not None
    assert [e.id for e in stored.events if e.actions.compaction] == [compaction_event_id(second.invocation_id)]
    seen = [p.text for c in model.requests[2].contents for p in c.parts if p.text]
    assert any("summary of" in text for text in seen) and "message 0" not in seen


async def test_a_retried_summary_stores_one_compaction_event(durable_stack: DurableStack) -> None:
    """The summarizer fails its first attempt (as a crashed worker's attempt would end): Temporal
    retries the step, which writes a different summary; the session holds exactly one compaction
    event, and storing that event again (a retried append) changes nothing."""
    attempts: list[int] = []

    def flaky_summary(request: LlmRequest) -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise ModelError("summarizer unavailable", status=503, retryable=True)
        return f"summary, attempt {len(attempts)}"

    name = f"compaction_retry_{uuid.uuid4().hex[:8]}"
    agent = LlmAgent(name="counter", model=ScriptedModel(lambda r: "ok"))
    config = EventsCompactionConfig(2, 0, summarizer=LlmEventsSummarizer(ScriptedModel(flaky_summary)))
    app = durable_stack.register(App(name=name, root_agent=agent, events_compaction_config=config))
    second = None
    for n in range(2):
        second = await durable_stack.client.send(app.name, "user", "s", f"message {n}")
    await compactions_stored(durable_stack, name, "s", 1)
    assert second is not None and len(attempts) == 2

    stored = await durable_stack.sessions.get_session(app_name=name, user_id="user", session_id="s")
    assert stored is not None
    compactions = [e for e in stored.events if e.actions.compaction is not None]
    assert [e.id for e in compactions] == [compaction_event_id(second.invocation_id)]
    assert compactions[0].actions.compaction.compacted_content.text == "summary, attempt 2"

    count = len(stored.events)
    await durable_stack.sessions.append_event(stored, compactions[0].model_copy(deep=True))
    again = await durable_stack.sessions.get_session(app_name=name, user_id="user", session_id="s")
    assert again is not None and len(again.events) == count


async def test_a_compacting_conversation_replays(durable_stack: DurableStack) -> None:
    """The recorded history of a conversation that compacted twice replays against today's code:
    the compaction step (its activity, the event's id and clock) is deterministic."""
    from adk_temporal.replay import replayer
    from adk_temporal.workflows import session_workflow_id

    name = f"compaction_replay_{uuid.uuid4().hex[:8]}"
    app, _, summarizer = make_app(name)
    durable_stack.register(app)
    await converse_durably(durable_stack, app, "s", 2 * INTERVAL + 2)
    assert len(summarizer.requests) == 2
    handle = durable_stack.client.client.get_workflow_handle(session_workflow_id(name, "user", "s"))
    history = await handle.fetch_history()
    summarize_steps = [
        e for e in history.events
        if e.activity_task_scheduled_event_attributes.activity_type.name == "adk.summarize_events"
    ]
    # The workflow holds the whole (new) session, so it asks for a summary only when one is due.
    assert len(summarize_steps) == 2
    result = await replayer([app]).replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


async def test_one_shot_runs_compact_like_a_conversation(durable_stack: DurableStack) -> None:
    """AgentRunWorkflow loads only a short tail of the session, so it asks the activity after each
    invocation; the model still sees what it sees in-process."""
    name = f"compaction_once_{uuid.uuid4().hex[:8]}"
    turns = 3 * INTERVAL + 1
    app, model, summarizer = make_app(name)
    durable_stack.register(app)
    for n in range(1, turns + 1):
        result = await durable_stack.client.run_once(name, "user", "s", question(n))
        assert result.final_text.startswith(f"After {n} comes")
    local_app, local_model, _ = make_app(name)
    await converse_in_process(local_app, turns)
    assert contents_seen(model) == contents_seen(local_model)
    assert len(summarizer.requests) == 3
    stored = await durable_stack.sessions.get_session(app_name=name, user_id="user", session_id="s")
    assert stored is not None and sum(1 for e in stored.events if e.actions.compaction is not None) == 3
