"""Plugins: they run before agent callbacks, and hook the whole run (message, before/after run, events)."""

from __future__ import annotations

from typing import Any

import pytest

from adk_core import App, BasePlugin, Content, Event, InMemoryRunner, LlmAgent, LlmRequest, ScriptedModel
from adk_core.errors import ConfigurationError
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.plugins import PluginManager


def double(x: int) -> dict:
    """Double a number."""
    return {"value": 2 * x}


class Recorder(BasePlugin):
    """Records the hooks it sees; answers for the ones given in ``answers``."""

    def __init__(self, name: str = "recorder", **answers: Any) -> None:
        super().__init__(name)
        self.answers = answers
        self.seen: list[str] = []

    async def before_agent_callback(self, *, agent, callback_context):
        self.seen.append(f"before_agent {agent.name}")
        return self.answers.get("before_agent")

    async def before_model_callback(self, *, callback_context, llm_request):
        self.seen.append("before_model")
        return self.answers.get("before_model")

    def before_tool_callback(self, *, tool, tool_args, tool_context):  # sync hooks work too
        self.seen.append(f"before_tool {tool.name} {tool_args}")
        return self.answers.get("before_tool")

    async def after_run_callback(self, *, invocation_context):
        self.seen.append(f"after_run {invocation_context.invocation_id}")


def _agent(calls: list[str], model: ScriptedModel | None = None) -> LlmAgent:
    def agent_cb(name: str):
        def callback(**kwargs: Any) -> None:
            calls.append(name)

        return callback

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        return text_response(f"answer {done}") if done else function_call_response("double", {"x": 2})

    return LlmAgent(
        name="helper",
        model=model or ScriptedModel(script),
        tools=[double],
        before_agent_callback=agent_cb("agent before_agent"),
        before_model_callback=agent_cb("agent before_model"),
        before_tool_callback=agent_cb("agent before_tool"),
    )


async def test_plugins_run_before_agent_callbacks() -> None:
    calls: list[str] = []
    plugin = Recorder()
    plugin.seen = calls
    events = await InMemoryRunner(app=App(name="p", root_agent=_agent(calls), plugins=[plugin])).run("hi")
    assert calls[:6] == [
        "before_agent helper",
        "agent before_agent",
        "before_model",
        "agent before_model",
        "before_tool double {'x': 2}",
        "agent before_tool",
    ]
    assert calls[-1] == f"after_run {events[-1].invocation_id}"


@pytest.mark.parametrize(
    ("hook", "answer", "skipped"),
    [
        ("before_agent", Content.model("plugin says no"), "agent before_agent"),
        ("before_model", text_response("plugin answer"), "agent before_model"),
        ("before_tool", {"value": "from plugin"}, "agent before_tool"),
    ],
)
async def test_a_plugin_result_wins_and_the_agent_callback_is_not_called(hook: str, answer: Any, skipped: str) -> None:
    calls: list[str] = []
    plugin = Recorder(**{hook: answer})
    agent = _agent(calls)
    events = await InMemoryRunner(app=App(name="p", root_agent=agent, plugins=[plugin])).run("hi")
    assert skipped not in calls
    if hook == "before_agent":
        assert [e.text for e in events] == ["plugin says no"]
    elif hook == "before_model":
        assert events[-1].text == "plugin answer" and agent.model.requests == []  # type: ignore[union-attr]
    else:
        assert events[-1].text == "answer [{'value': 'from plugin'}]"


async def test_the_first_plugin_with_an_answer_wins() -> None:
    first = Recorder("first")
    second = Recorder("second", before_model=text_response("second"))
    third = Recorder("third", before_model=text_response("third"))
    runner = InMemoryRunner(app=App(name="p", root_agent=_agent([]), plugins=[first, second, third]))
    events = await runner.run("hi")
    assert events[-1].text == "second"
    assert "before_model" in first.seen and "before_model" not in third.seen


def test_plugin_names_must_be_unique() -> None:
    with pytest.raises(ConfigurationError, match=r"\['twin'\] appear more than once"):
        PluginManager([Recorder("twin"), Recorder("twin")])


class Rewriter(BasePlugin):
    def __init__(self) -> None:
        super().__init__("rewriter")

    async def on_user_message_callback(self, *, invocation_context, user_message: Content) -> Content:
        return Content(parts=[*user_message.parts, *Content.user("(please be brief)").parts])


async def test_on_user_message_replaces_the_message() -> None:
    model = ScriptedModel(lambda r: text_response(r.contents[-1].text))
    runner = InMemoryRunner(app=App(name="p", root_agent=LlmAgent(name="a", model=model), plugins=[Rewriter()]))
    events = await runner.run("hi", session_id="s")
    assert [p.text for p in model.requests[0].contents[-1].parts] == ["hi", "(please be brief)"]
    assert events[-1].text == "hi(please be brief)"
    session = await runner.session_service.get_session(app_name="p", user_id="user", session_id="s")
    assert session is not None and session.events[0].content is not None
    stored = session.events[0].content
    assert stored.role == "user" and [p.text for p in stored.parts] == ["hi", "(please be brief)"]


class Maintenance(BasePlugin):
    def __init__(self) -> None:
        super().__init__("maintenance")

    async def before_run_callback(self, *, invocation_context) -> Content:
        return Content.model("down for maintenance")


async def test_before_run_answers_without_running_the_agent() -> None:
    model = ScriptedModel(lambda r: text_response("model"))
    runner = InMemoryRunner(app=App(name="p", root_agent=LlmAgent(name="a", model=model), plugins=[Maintenance()]))
    events = await runner.run("hi", session_id="s")
    assert [(e.author, e.text) for e in events] == [("model", "down for maintenance")]
    assert model.requests == []
    session = await runner.session_service.get_session(app_name="p", user_id="user", session_id="s")
    assert session is not None and [e.text for e in session.events] == ["hi", "down for maintenance"]


class Tagger(BasePlugin):
    def __init__(self) -> None:
        super().__init__("tagger")

    async def on_event_callback(self, *, invocation_context, event: Event) -> Event | None:
        if not event.text:
            return None  # keep tool events as they are
        return event.model_copy(update={"custom_metadata": {"tagged": True}, "content": Content.model(event.text + "!")})


async def test_on_event_replaces_events_before_they_are_stored_and_yielded() -> None:
    runner = InMemoryRunner(app=App(name="p", root_agent=_agent([]), plugins=[Tagger()]))
    events = await runner.run("hi", session_id="s")
    assert events[-1].text == "answer [{'value': 4}]!" and events[-1].custom_metadata == {"tagged": True}
    assert events[0].custom_metadata is None  # the function call event was left alone
    session = await runner.session_service.get_session(app_name="p", user_id="user", session_id="s")
    assert session is not None and session.events[-1].text == "answer [{'value': 4}]!"


async def test_after_run_notifies_every_plugin() -> None:
    first, second = Recorder("first"), Recorder("second")
    runner = InMemoryRunner(app=App(name="p", root_agent=_agent([]), plugins=[first, second]))
    events = await runner.run("hi")
    expected = f"after_run {events[0].invocation_id}"
    assert first.seen[-1] == expected and second.seen[-1] == expected
