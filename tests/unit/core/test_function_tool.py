"""FunctionTool: sync and async functions, ToolContext injection, declarations, bad arguments."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from adk_core import (
    Content,
    FunctionTool,
    InMemoryRunner,
    LlmAgent,
    LlmRequest,
    LocalRuntime,
    Runner,
    ScriptedModel,
    ToolContext,
)
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.sessions import InMemorySessionService

calls: list[tuple[str, Any]] = []


def sync_multiply(a: int, b: int = 2) -> dict:
    """Multiply two integers.

    Args:
        a: the first factor
        b: the second factor
    """
    calls.append(("sync_multiply", (a, b)))
    return {"product": a * b}


async def async_greet(name: str) -> str:
    """Greet someone."""
    calls.append(("async_greet", name))
    return f"hello {name}"


def by_annotation(key: str, ctx: ToolContext) -> dict:
    """Remember a key (context injected by annotation)."""
    ctx.state[key] = ctx.function_call_id
    return {"stored": key, "agent": ctx.agent_name}


async def by_name(key: str, tool_context) -> dict:  # noqa: ANN001  (unannotated on purpose)
    """Read a key (context injected by name)."""
    return {"value": tool_context.state.get(key)}


def _scripted(plan: list[Any]) -> ScriptedModel:
    """Answers plan[n] where n = function responses since the user's text (any process, any order)."""
    return ScriptedModel(lambda request: plan[len(tool_responses_this_turn(request))])


def test_declaration_from_signature_and_docstring_hides_the_context() -> None:
    declaration = FunctionTool(sync_multiply).declaration()
    assert declaration.name == "sync_multiply" and declaration.description == "Multiply two integers."
    assert declaration.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "the first factor"},
            "b": {"type": "integer", "description": "the second factor", "default": 2},
        },
        "required": ["a"],
    }
    for func in (by_annotation, by_name):
        params = FunctionTool(func).declaration().parameters
        assert params is not None and list(params["properties"]) == ["key"] and params["required"] == ["key"]


async def test_sync_and_async_functions_run_and_results_reach_the_model() -> None:
    calls.clear()
    model = _scripted(
        [
            function_call_response("sync_multiply", {"a": "3"}),  # lax coercion: "3" -> 3, b defaults
            function_call_response("async_greet", {"name": "Ada"}),
            text_response("finished"),
        ]
    )
    agent = LlmAgent(name="worker", model=model, tools=[sync_multiply, async_greet])
    events = await InMemoryRunner(agent).run("go")
    assert calls == [("sync_multiply", (3, 2)), ("async_greet", "Ada")]
    results = [r.response for e in events for r in e.function_responses()]
    assert results == [{"product": 6}, {"result": "hello Ada"}]  # non-dict results are wrapped
    last_request = model.requests[-1]
    assert tool_responses_this_turn(last_request) == results
    assert events[-1].text == "finished"


async def test_tool_context_is_injected_by_annotation_and_by_name() -> None:
    model = _scripted(
        [
            function_call_response("by_annotation", {"key": "k"}, id="call-7"),
            function_call_response("by_name", {"key": "k"}),
            text_response("ok"),
        ]
    )
    agent = LlmAgent(name="keeper", model=model, tools=[by_annotation, by_name])
    runner = InMemoryRunner(agent)
    events = await runner.run("go", session_id="ctx")
    results = [r.response for e in events for r in e.function_responses()]
    assert results == [{"stored": "k", "agent": "keeper"}, {"value": "call-7"}]
    session = await runner.session_service.get_session(app_name="app", user_id="user", session_id="ctx")
    assert session is not None and session.state["k"] == "call-7"


async def test_invalid_arguments_become_an_error_the_model_sees() -> None:
    calls.clear()
    model = _scripted(
        [
            function_call_response("sync_multiply", {"a": "three", "b": 2}),
            text_response("sorry"),
        ]
    )
    agent = LlmAgent(name="worker", model=model, tools=[sync_multiply])
    events = await InMemoryRunner(agent).run("go")
    assert calls == [], "the function must not run with bad arguments"
    error = tool_responses_this_turn(model.requests[1])[0]["error"]
    assert error.startswith("Invalid arguments for tool 'sync_multiply':")
    assert "- a: Input should be a valid integer" in error and "Fix these arguments" in error
    assert events[-1].text == "sorry"


async def test_missing_required_argument_is_reported() -> None:
    model = _scripted([function_call_response("async_greet", {}), text_response("ok")])
    await InMemoryRunner(LlmAgent(name="worker", model=model, tools=[async_greet])).run("go")
    assert "- name: missing required argument" in tool_responses_this_turn(model.requests[1])[0]["error"]


def test_request_carries_declarations_and_the_tool_map() -> None:
    request = LlmRequest()
    tool = FunctionTool(async_greet)
    request.append_tools([tool])
    assert [d.name for d in request.config.tools] == ["async_greet"]
    assert request.tools_dict == {"async_greet": tool}
    assert "tools_dict" not in request.model_dump()


# --- sync tools run off the event loop --------------------------------------------------------------
async def test_a_blocking_sync_tool_does_not_stall_a_concurrent_coroutine() -> None:
    threads: list[threading.Thread] = []

    def slow_lookup(key: str) -> dict:
        """Look a key up slowly (a blocking client)."""
        threads.append(threading.current_thread())
        time.sleep(0.5)
        return {"key": key}

    model = _scripted([function_call_response("slow_lookup", {"key": "k"}), text_response("done")])
    runner = InMemoryRunner(LlmAgent(name="a", model=model, tools=[slow_lookup]))
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    ticking = asyncio.create_task(ticker())
    try:
        started = time.monotonic()
        events = await runner.run("go")
        elapsed = time.monotonic() - started
    finally:
        ticking.cancel()
    assert events[-1].text == "done" and elapsed >= 0.5
    assert threads and threads[0] is not threading.main_thread()
    assert len(ticks) >= 20, f"the event loop stalled while the tool slept ({len(ticks)} ticks in {elapsed:.2f}s)"
    assert max(b - a for a, b in zip(ticks, ticks[1:], strict=False)) < 0.25


class DirectRuntime(LocalRuntime):
    """Calls sync functions itself, as the workflow runtime does (no threads in a workflow)."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def run_sync(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        self.ran.append(fn.__name__)
        return fn(*args, **kwargs)


class Greeter:
    async def __call__(self, name: str) -> str:
        return f"hi {name}"


async def test_sync_tools_go_through_the_runtime_seam_and_async_ones_do_not() -> None:
    calls.clear()
    model = _scripted([
        function_call_response("sync_multiply", {"a": 4}),
        function_call_response("async_greet", {"name": "Bo"}),
        function_call_response("greet", {"name": "Cy"}),
        text_response("ok"),
    ])
    runtime = DirectRuntime()
    tools = [sync_multiply, async_greet, FunctionTool(Greeter(), name="greet")]
    runner = Runner(
        app_name="app", agent=LlmAgent(name="a", model=model, tools=tools),
        session_service=InMemorySessionService(), runtime=runtime, auto_create_session=True,
    )
    events = [e async for e in runner.run_async(user_id="u", session_id="s", new_message=Content.user("go"))]
    assert runtime.ran == ["sync_multiply"]
    results = [r.response for e in events for r in e.function_responses()]
    assert results == [{"product": 8}, {"result": "hello Bo"}, {"result": "hi Cy"}]
