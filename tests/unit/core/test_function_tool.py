"""FunctionTool: sync and async functions, ToolContext injection, declarations, bad arguments."""

from __future__ import annotations

from typing import Any

from adk_core import FunctionTool, InMemoryRunner, LlmAgent, LlmRequest, ScriptedModel, ToolContext
from adk_core.models import function_call_response, text_response
from tests.scenarios import responses_since_user_text

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
    return ScriptedModel(lambda request: plan[len(responses_since_user_text(request))])


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
    assert responses_since_user_text(last_request) == results
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
    error = responses_since_user_text(model.requests[1])[0]["error"]
    assert error.startswith("Invalid arguments for tool 'sync_multiply':")
    assert "- a: Input should be a valid integer" in error and "Fix these arguments" in error
    assert events[-1].text == "sorry"


async def test_missing_required_argument_is_reported() -> None:
    model = _scripted([function_call_response("async_greet", {}), text_response("ok")])
    await InMemoryRunner(LlmAgent(name="worker", model=model, tools=[async_greet])).run("go")
    assert "- name: missing required argument" in responses_since_user_text(model.requests[1])[0]["error"]


def test_request_carries_declarations_and_the_tool_map() -> None:
    request = LlmRequest()
    tool = FunctionTool(async_greet)
    request.append_tools([tool])
    assert [d.name for d in request.config.tools] == ["async_greet"]
    assert request.tools_dict == {"async_greet": tool}
    assert "tools_dict" not in request.model_dump()
