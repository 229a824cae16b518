"""History by reference has one owner: the flow builds a model call's contents once, and one module
(adk_core.flow.history) builds every ContentsRef; the runtime only swaps an untouched prefix for it.

A runtime that stores its session (like the durable one) is imitated in-process: ``stores_session``
answers by the session's key, ``generate_content`` does what TemporalRuntime does with the request
(``by_reference``) and records what would cross to the model activity.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adk_core import App, Content, InMemorySessionService, LocalRuntime, Part, Runner
from adk_core.flow import contents as contents_module
from adk_core.flow.history import by_reference
from adk_core.models.base import LlmRequest, LlmResponse, Model
from adk_core.sessions import Session
from examples import w1

ROOT = Path(__file__).resolve().parents[3]


class StoringRuntime(LocalRuntime):
    """Stores one session (its scope), the way TemporalRuntime stores its workflow's session."""

    def __init__(self, scope: tuple[str, str, str] | None = None, cursor: str | None = None) -> None:
        self.scope = scope
        self.cursor = cursor
        self.sent: list[LlmRequest] = []

    def stores_session(self, session: Session) -> bool:
        return (session.app_name, session.user_id, session.id) == self.scope

    def history_cursor(self, ctx: Any) -> str | None:
        return self.cursor if ctx.runtime_stores_session else None

    async def generate_content(self, model: Model, request: LlmRequest, *, stream: bool, ctx: Any) -> AsyncIterator[LlmResponse]:
        sent = by_reference(request)
        self.sent.append(sent)
        async for response in model.generate_content(request, stream=stream):  # the model sees everything
            yield response


@pytest.fixture
def build_contents_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every call of build_contents, wherever a module imported it from."""
    original = contents_module.build_contents
    calls: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "build_contents", None) is original:
            monkeypatch.setattr(module, "build_contents", counting)
    return calls


async def _w1_turn(runtime: StoringRuntime, *, session_id: str = "s1", callback: Any = None) -> list:
    sessions = InMemorySessionService(clock=runtime.now, id_factory=runtime.new_id)
    agent = w1.build_agent()
    if callback is not None:
        agent.before_model_callback = [callback]
    runner = Runner(app=App(name="w1", root_agent=agent), session_service=sessions, runtime=runtime)
    await sessions.create_session(app_name="w1", user_id="u", session_id=session_id)
    events = [e async for e in runner.run_async(user_id="u", session_id=session_id, new_message=Content.user(w1.USER_MESSAGE))]
    w1.check_turn(events)
    return events


async def test_contents_are_built_once_per_model_call(build_contents_calls: list[int]) -> None:
    runtime = StoringRuntime(scope=("w1", "u", "s1"), cursor="older-stored-event")
    await _w1_turn(runtime)
    assert len(runtime.sent) == 4  # W1: four model calls
    assert len(build_contents_calls) == 4, "each model call's contents must be computed exactly once"


async def test_a_stored_session_goes_by_reference_through_its_newest_event() -> None:
    runtime = StoringRuntime(scope=("w1", "u", "s1"))
    events = await _w1_turn(runtime)
    model_events = [e for e in events if e.author == "assistant" and e.function_calls()]
    for sent in runtime.sent:
        assert sent.history is not None and sent.contents == []
        assert (sent.history.app_name, sent.history.user_id, sent.history.session_id) == ("w1", "u", "s1")
    # The second call refers through the first call's tool response, and so on.
    assert runtime.sent[0].history is not None and runtime.sent[1].history is not None
    assert runtime.sent[1].history.through_event_id not in {e.id for e in model_events}


async def test_a_session_outside_the_runtimes_scope_goes_by_value() -> None:
    runtime = StoringRuntime(scope=("w1", "u", "another-session"), cursor="would-be-wrong")
    await _w1_turn(runtime)
    assert all(sent.history is None for sent in runtime.sent)
    assert [len(sent.contents) for sent in runtime.sent] == [1, 3, 5, 7]


async def test_contents_a_callback_changed_go_by_value() -> None:
    def rewrite(callback_context: Any, llm_request: LlmRequest) -> None:
        llm_request.contents[0] = Content.user(w1.USER_MESSAGE + " (rephrased)")

    runtime = StoringRuntime(scope=("w1", "u", "s1"))
    await _w1_turn(runtime, callback=rewrite)
    for sent in runtime.sent:
        assert sent.history is None
        assert sent.contents[0].parts[0].text.endswith("(rephrased)")


async def test_contents_a_tool_appended_keep_the_reference_for_the_prefix() -> None:
    def append(callback_context: Any, llm_request: LlmRequest) -> None:
        # Not user text: W1's script counts tool results after the last user text.
        llm_request.contents.append(Content(role="model", parts=[Part(text="an attachment")]))

    runtime = StoringRuntime(scope=("w1", "u", "s1"))
    await _w1_turn(runtime, callback=append)
    for sent in runtime.sent:
        assert sent.history is not None
        assert [c.parts[0].text for c in sent.contents] == ["an attachment"]


def test_contents_ref_is_constructed_in_exactly_one_module() -> None:
    builders = []
    for folder in ("adk_core", "workflows", "activities", "adk_temporal/worker.py", "adkt", "worker.py", "examples", "bench"):
        path = ROOT / folder
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            if re.search(r"(?<!class )\bContentsRef\(", file.read_text()):
                builders.append(file.relative_to(ROOT).as_posix())
    assert builders == ["adk_core/flow/history.py"]


def test_the_durable_runtime_scope_is_its_workflows_session() -> None:
    from adk_temporal.activities.contracts import SessionKey
    from adk_temporal.workflows.runtime import TemporalRuntime
    from adk_temporal.workflows.services import DurableSessionService

    runtime = TemporalRuntime(
        app_name="w1", sessions=DurableSessionService(SessionKey(app_name="w1", user_id="u", session_id="s1"))
    )
    assert runtime.stores_session(Session(id="s1", app_name="w1", user_id="u"))
    assert not runtime.stores_session(Session(id="scratch-1", app_name="w1", user_id="u"))
    assert not runtime.stores_session(Session(id="s1", app_name="w1", user_id="someone-else"))


async def test_a_long_running_calls_answer_reaches_the_model_as_in_process_by_reference_or_not() -> None:
    """The answer goes back to its call (adk_core.flow.contents.pair_answers): the model activity,
    which builds a reference's contents from the stored events (ContentsMemo), gives what the flow
    built. The call right after the answer ends with it, which no reference stands for: by value."""
    from adk_core import LlmAgent, LongRunningFunctionTool, ScriptedModel
    from adk_core.models import function_call_response, text_response, tool_responses_this_turn
    from adk_temporal.activities._history import ContentsMemo

    def open_ticket(amount: int) -> dict:
        """Open an approval ticket; the decision arrives later."""
        return {"status": "pending", "ticket": "T1"}

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        if not done:
            return function_call_response("open_ticket", {"amount": 5}) if len(request.contents) == 1 else text_response("bye")
        return text_response("waiting" if done[-1].get("status") == "pending" else "approved")

    model = ScriptedModel(script)
    runtime = StoringRuntime(scope=("lr", "u", "s1"))
    sessions = InMemorySessionService(clock=runtime.now, id_factory=runtime.new_id)
    agent = LlmAgent(name="w", model=model, tools=[LongRunningFunctionTool(open_ticket)])
    runner = Runner(app=App(name="lr", root_agent=agent), session_service=sessions, runtime=runtime)
    await sessions.create_session(app_name="lr", user_id="u", session_id="s1")

    async def send(message: Content) -> None:
        async for _ in runner.run_async(user_id="u", session_id="s1", new_message=message):
            pass

    await send(Content.user("approve 5"))
    call = next(e for e in (await sessions.get_session(app_name="lr", user_id="u", session_id="s1")).events  # type: ignore[union-attr]
                if e.function_calls()).function_calls()[0]
    await send(Content(role="user", parts=[Part.from_function_response("open_ticket", {"ok": True}, id=call.id)]))
    await send(Content.user("thanks"))
    session = await sessions.get_session(app_name="lr", user_id="u", session_id="s1")
    assert session is not None
    ids = [e.id for e in session.events]
    memo = ContentsMemo()
    assert len(runtime.sent) == len(model.requests) == 4  # call, waiting; approved; bye
    for sent, seen in zip(runtime.sent, model.requests, strict=True):
        if sent.history is None:
            assert sent.contents == seen.contents
            continue
        stored = session.events[: ids.index(sent.history.through_event_id) + 1]
        assert memo.contents(("lr", "u", "s1"), stored, "w", None, later=[]) + sent.contents == seen.contents
    after_answer = runtime.sent[2]
    assert after_answer.history is None and after_answer.contents[-1].function_responses()[0].response == {"ok": True}
    assert [sent.history is not None for sent in runtime.sent] == [True, True, False, True]
