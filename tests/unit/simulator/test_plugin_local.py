"""SimulatorPlugin in-process: targeted agents wait for a person's decision (an asyncio future),
others keep their model."""

from __future__ import annotations

import asyncio

from adk_core import App, FunctionTool, InMemoryRunner, LlmAgent, ScriptedModel, SequentialAgent
from adk_core.models import text_response
from adk_core.simulator import SimulatorPlugin, SimulatorService


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
