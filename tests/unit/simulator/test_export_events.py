"""A dev chat session's events exported as a simulator export (the page's "Save as eval case"): the
case eval_case builds from it replays the conversation without the app's model, and fails when the
app's tools change."""

from __future__ import annotations

import json

from adk_core import App, LlmAgent, LlmRequest, Runner, ScriptedModel
from adk_core.eval import run_eval
from adk_core.models import LlmResponse, function_call_response, text_response, tool_responses_this_turn
from adk_core.sessions import InMemorySessionService
from adk_core.simulator import SimulatorExport, eval_case, export_events
from adk_core.types import Content


def get_balance(account: str) -> dict:
    """Look up an account's balance."""
    return {"account": account, "balance": 1200}


def _teller(request: LlmRequest) -> LlmResponse:
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("get_balance", {"account": "checking"})
    return text_response(f"Your balance is {done[-1]['balance']}.")


def _app(model: ScriptedModel) -> App:
    return App(name="bank", root_agent=LlmAgent(name="teller", model=model, tools=[get_balance]))


async def _chat(app: App, *messages: str) -> list:
    sessions = InMemorySessionService()
    runner = Runner(app_name=app.name, agent=app.root_agent, session_service=sessions)
    session = await sessions.create_session(app_name=app.name, user_id="ana", session_id="s1")
    for text in messages:
        async for _ in runner.run_async(user_id="ana", session_id=session.id, new_message=Content.user(text)):
            pass
    stored = await sessions.get_session(app_name=app.name, user_id="ana", session_id="s1")
    assert stored is not None
    return list(stored.events)


async def test_a_chat_exports_and_replays_as_an_eval_case() -> None:
    events = await _chat(_app(ScriptedModel(_teller)), "What is my balance?", "Thanks")
    exported = export_events("s1", events, app_name="bank")
    assert exported.user_messages == ["What is my balance?", "Thanks"]
    # The scripted teller looks the balance up in each turn: two calls, each with the result it saw.
    assert [(c.name, c.args, c.response) for c in exported.tool_calls] == [
        ("get_balance", {"account": "checking"}, {"account": "checking", "balance": 1200})
    ] * 2
    assert len(exported.answers["teller"]) == 4  # call, answer; then the second turn's call and answer
    # The downloaded file round-trips, and the case replays without the app's own model.
    loaded = SimulatorExport.model_validate_json(json.dumps(exported.model_dump(mode="json")))

    def never(request: LlmRequest) -> LlmResponse:
        raise AssertionError("the replay answers instead of the model")

    case = eval_case(loaded, _app(ScriptedModel(never)))
    result = await run_eval(case)
    assert result.status == "passed", result.metrics
    assert result.metrics["tool_trajectory"].passed


async def test_a_replayed_chat_fails_when_the_tool_changed() -> None:
    exported = export_events("s1", await _chat(_app(ScriptedModel(_teller)), "What is my balance?"), app_name="bank")

    def get_balance(account: str, currency: str) -> dict:  # a required argument the recorded call lacks
        """Look up an account's balance."""
        return {}

    changed = App(name="bank", root_agent=LlmAgent(name="teller", model=ScriptedModel(_teller), tools=[get_balance]))
    result = await run_eval(eval_case(exported, changed))
    assert result.status == "error" and "no longer fits" in (result.error.message if result.error else "")


def test_a_session_without_user_text_exports_no_messages() -> None:
    assert export_events("s1", []).user_messages == []
