"""A simulator session played once by a person, exported, replays as a passing eval case."""

from __future__ import annotations

import asyncio

import httpx

from adk_core import App, FunctionTool, InMemoryRunner, LlmAgent, ScriptedModel
from adk_core.eval import run_eval
from adk_core.simulator import SimulatorExport, SimulatorPlugin, SimulatorService, eval_case, export_session
from adkt.web.app import create_app

CALLS: list[dict] = []


def get_weather(city: str, days: int = 1) -> dict:
    """Weather forecast for a city."""
    CALLS.append({"city": city, "days": days})
    return {"city": city, "days": days, "sky": "sunny"}


def _app(service: SimulatorService) -> App:
    agent = LlmAgent(name="weather", model=ScriptedModel([]), instruction="Use tools.",
                     tools=[FunctionTool(get_weather)])
    return App(name="sim_export", root_agent=agent, plugins=[SimulatorPlugin(service=service)])


async def _answer_next(service: SimulatorService, answered: int, decision: dict) -> None:
    async with service.store.changes() as changes:
        while True:
            sessions = await service.list_sessions()
            if sessions and sessions[0].pending_count and sessions[0].turn_count > answered:
                break
            await asyncio.wait_for(anext(changes), 5)
    view = await service.view(sessions[0].session.id)
    await service.submit_decision(view.session.id, view.head.turn_id, decision)


async def _played_session() -> tuple[App, SimulatorService, str]:
    service = SimulatorService()
    app = _app(service)
    runner = InMemoryRunner(app=app)
    session = await runner.session_service.create_session(app_name=app.name, user_id="u")

    async def person() -> None:
        await _answer_next(service, 0, {"function_calls": [{"name": "get_weather", "args": {"city": "Rome", "days": 2}}]})
        await _answer_next(service, 1, {"text": "Sunny in Rome for 2 days."})
        await _answer_next(service, 2, {"text": "You're welcome."})

    playing = asyncio.create_task(person())
    await runner.run("Weather in Rome for 2 days?", session_id=session.id)
    await runner.run("Thanks!", session_id=session.id)
    await asyncio.wait_for(playing, 5)
    [summary] = await service.list_sessions()
    return app, service, summary.session.id


async def test_a_played_session_replays_as_a_passing_eval_case() -> None:
    app, service, session_id = await _played_session()
    export = await export_session(service, session_id)
    assert export.user_messages == ["Weather in Rome for 2 days?", "Thanks!"]
    assert [len(a) for a in export.answers.values()] == [3]
    [call] = export.tool_calls
    assert (call.name, call.args, call.response) == ("get_weather", {"city": "Rome", "days": 2},
                                                    {"city": "Rome", "days": 2, "sky": "sunny"})
    # What `adkt sim export` writes, read back.
    export = SimulatorExport.model_validate_json(export.model_dump_json())

    CALLS.clear()
    result = await run_eval(eval_case(export, app))  # no person: the recorded answers replay
    assert result.status == "passed", result
    assert [(n, m.passed) for n, m in result.metrics.items()] == [("tool_trajectory", True)]
    assert CALLS == []  # the tool was mocked with its recorded result
    texts = [e.content.text for e in result.events if e.author == "weather" and e.content and e.content.text]
    assert texts == ["Sunny in Rome for 2 days.", "You're welcome."]


async def test_a_changed_agent_fails_the_replayed_case() -> None:
    app, service, session_id = await _played_session()
    export = await export_session(service, session_id)
    # The agent no longer offers get_weather: the person's recorded call cannot run.
    changed = LlmAgent(name="weather", model=ScriptedModel([]), instruction="Use tools.")
    result = await run_eval(eval_case(export, changed))
    assert result.status != "passed"
    assert result.error is not None and "get_weather" in result.error.message, result.error


async def test_the_api_exports_a_session() -> None:
    _, service, session_id = await _played_session()
    transport = httpx.ASGITransport(app=create_app(service))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        answer = await http.get(f"/api/sessions/{session_id}/export")
        missing = await http.get("/api/sessions/3c9f0d7e-1d3b-4b8e-9d55-1f2a4c7b8e90/export")
    assert answer.status_code == 200
    assert SimulatorExport.model_validate(answer.json()) == await export_session(service, session_id)
    assert missing.status_code == 404
