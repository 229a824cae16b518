"""SimulatorPlugin in-process: targeted agents wait for a person's decision (an asyncio future),
others keep their model."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from adk_core import App, FunctionTool, InMemoryRunner, LlmAgent, ScriptedModel, SequentialAgent
from adk_core.models import text_response
from adk_core.simulator import (
    AskerGoneError,
    SimulatorInputError,
    SimulatorPlugin,
    SimulatorService,
    export_session,
)
from adk_core.simulator.models import abandoned_response, is_abandoned


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "sky": "sunny"}


async def next_head(service: SimulatorService, count: int = 1):
    """Wait (on the store's change feed) until the first session's head request is there."""
    async with service.store.changes() as changes:
        while True:
            sessions = await service.list_sessions()
            answered = sum(s.turn_count - s.pending_count for s in sessions)
            if sessions and any(s.pending_count for s in sessions) and answered >= count - 1:
                view = await service.view(next(s for s in sessions if s.pending_count).session.id)
                return view
            await anext(changes)


async def test_a_person_answers_with_a_function_call_then_text() -> None:
    service = SimulatorService()
    agent = LlmAgent(name="weather", model=ScriptedModel([]), instruction="Use tools.",
                     tools=[FunctionTool(get_weather)])
    runner = InMemoryRunner(app=App(name="sim", root_agent=agent, plugins=[SimulatorPlugin(service=service)]))
    run = asyncio.create_task(runner.run("Weather in Paris?"))

    view = await next_head(service)
    assert view.head.agent_name == "weather"
    request = view.head.llm_request
    assert request["system_instruction"]["parts"][0]["text"].startswith("Use tools.")
    assert request["tools"][0]["function_declarations"][0]["name"] == "get_weather"
    assert request["contents"][-1]["parts"][0]["text"] == "Weather in Paris?"
    await service.submit_decision(view.session.id, view.head.turn_id,
                                  {"function_calls": [{"name": "get_weather", "args": {"city": "Paris"}}]})

    view = await next_head(service, count=2)
    assert view.head.llm_request["contents"][-1]["parts"][0]["function_response"]["response"]["sky"] == "sunny"
    await service.submit_decision(view.session.id, view.head.turn_id, {"text": "Sunny in Paris."})

    events = await asyncio.wait_for(run, 10)
    assert events[-1].content.text == "Sunny in Paris."
    final = await service.view(view.session.id)
    assert final.head is None and [t.response is not None for t in final.timeline] == [True, True]


async def test_only_targeted_agents_wait() -> None:
    service = SimulatorService()
    first = LlmAgent(name="planner", model=ScriptedModel([]))
    second = LlmAgent(name="writer", model=ScriptedModel([text_response("real model")]))
    third = LlmAgent(name="reviewer", model=ScriptedModel([]))
    app = App(name="sim2", root_agent=SequentialAgent(name="flow", sub_agents=[first, second, third]),
              plugins=[SimulatorPlugin(["planner", "reviewer"], service=service)])
    run = asyncio.create_task(InMemoryRunner(app=app).run("go"))
    view = await next_head(service)
    assert view.head.agent_name == "planner"
    await service.submit_decision(view.session.id, view.head.turn_id, {"text": "plan"})
    view = await next_head(service, count=2)
    assert view.head.agent_name == "reviewer"
    await service.submit_decision(view.session.id, view.head.turn_id, {"text": "ok"})
    events = await asyncio.wait_for(run, 10)
    assert [(e.author, e.content.text) for e in events if e.content and e.author != "user"] == [
        ("planner", "plan"), ("writer", "real model"), ("reviewer", "ok"),
    ]


async def test_a_cancelled_run_closes_its_request_and_the_next_one_can_be_answered() -> None:
    """The run that asked gave up (a timeout, Ctrl-C, a cancelled chat turn): its request is closed,
    not left at the head of the session's queue where it would block every later request."""
    service = SimulatorService()
    agent = LlmAgent(name="helper", model=ScriptedModel([]))
    runner = InMemoryRunner(app=App(name="sim_cancel", root_agent=agent, plugins=[SimulatorPlugin(service=service)]))
    first = asyncio.create_task(runner.run("first question", session_id="s1"))
    view = await next_head(service)
    dead_turn = view.head.turn_id
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first

    second = asyncio.create_task(runner.run("second question", session_id="s1"))
    try:
        async with asyncio.timeout(5):
            while (view := await service.view(view.session.id)).head is None or view.head.turn_id == dead_turn:
                await asyncio.sleep(0.01)
        await service.submit_decision(view.session.id, view.head.turn_id, {"text": "answer"})
        async with asyncio.timeout(5):
            events = await second
    finally:
        second.cancel()
    assert events[-1].content.text == "answer"
    closed = next(t for t in (await service.view(view.session.id)).timeline if t.turn_id == dead_turn)
    assert closed.response is not None and is_abandoned(closed.response.llm_response)
    exported = await export_session(service, view.session.id)
    assert [a["candidates"][0]["content"]["parts"] for a in exported.answers["helper"]] == [[{"text": "answer"}]]


async def test_answering_a_request_whose_run_is_gone_closes_it_and_says_so() -> None:
    """A request left by a run that ended without closing it (a process killed mid-wait): the
    person's answer is refused with the reason, the request is closed, and the next one is the head."""
    service = SimulatorService()
    common = {"app_name": "a", "user_id": "u", "adk_session_id": "s", "agent_name": "helper", "llm_request": {"contents": []}}
    orphan, live = str(uuid.uuid4()), str(uuid.uuid4())
    request = await service.submit_request(turn_id=orphan, event_id="e1", timestamp=1.0, **common)
    await service.submit_request(turn_id=live, event_id="e2", timestamp=2.0, **common)
    with pytest.raises(AskerGoneError, match="closed"):
        await service.submit_decision(request.session_id, orphan, {"text": "late"})
    view = await service.view(request.session_id)
    assert view.head is not None and view.head.turn_id == live
    with pytest.raises(SimulatorInputError):  # a person cannot close a request themselves
        await service.submit_decision(request.session_id, live, {"response": abandoned_response("no")})
