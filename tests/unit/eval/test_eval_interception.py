"""Safe by default: unmocked tools stop the run with the seed's text; mocks and passthroughs; user
agents' tools are not intercepted; the user's objects are left untouched."""

from __future__ import annotations

from typing import Any

import pytest
from eval_fixtures import agent, call_once_then_say, calls, function_responses

from adk_core import AgentTool, FunctionTool, LlmRequest, ToolContext
from adk_core.agents.context import ReadonlyContext
from adk_core.errors import ConfigurationError
from adk_core.eval import (
    EvalCase,
    MockToolContext,
    ToolMock,
    UserAgents,
    case_apps,
    passthrough,
    run_eval,
    scripted_user,
    with_state_change,
)
from adk_core.eval.interception import InterceptedTool
from adk_core.models import function_call_response, text_response
from adk_core.tools.base import BaseTool

sent: list[dict[str, Any]] = []


def search_requests(query: str, limit: int) -> dict:
    """Search the request database (a real side effect in production)."""
    sent.append({"query": query, "limit": limit})
    return {"results": ["real"]}


SEED_TEXT = """Tool 'search_requests' was called during eval but no mock was provided.

Add a mock:
  tool_mocks={
      "search_requests": ToolMock(execute=lambda args, ctx: {...}),
  }

Or if this tool has no side effects, provide the actual tool:
  from test_eval_interception import search_requests
  tool_mocks={"search_requests": search_requests}

Tool was called with args:
  {"limit": 10, "query": "headache"}"""


def _searching_agent() -> Any:
    return agent(call_once_then_say("search_requests", {"query": "headache", "limit": 10}), tools=[search_requests])


async def test_an_unmocked_tool_stops_the_run_with_the_seed_text_and_never_runs() -> None:
    sent.clear()
    result = await run_eval(EvalCase("unmocked", app_or_agent=_searching_agent(), first_message="find headaches"))
    assert result.status == "error"
    assert result.error is not None and result.error.phase == "system" and result.error.error_type == "EvalToolError"
    assert result.error.message == SEED_TEXT
    assert sent == []
    assert result.metrics == {}


async def test_a_mock_replaces_the_tool_and_sees_a_limited_context() -> None:
    sent.clear()
    seen: list[MockToolContext] = []

    def execute(args: dict, ctx: MockToolContext) -> dict:
        seen.append(ctx)
        ctx.state.session.set("searched", args["query"])
        ctx.state.patient.set("last_query", args["query"])
        return {"results": [f"mock for {args['query']}"], "at": ctx.now()}

    case = EvalCase("mocked", app_or_agent=_searching_agent(), first_message="find headaches",
                    tool_mocks={"search_requests": ToolMock(execute=execute)})
    result = await run_eval(case)
    assert result.status == "not_evaluated", result.error
    assert sent == []
    (ctx,) = seen
    assert ctx.tool_name == "search_requests" and ctx.call_id and ctx.invocation_id == result.events[0].invocation_id
    final = result.events[-1].text
    assert "mock for headache" in final
    responses = [r for e in result.events for r in e.function_responses()]
    assert responses[0].response["results"] == ["mock for headache"]
    state = {k: v for e in result.events for k, v in e.actions.state_delta.items()}
    assert state == {"searched": "headache", "patient:last_query": "headache"}


async def test_a_mock_may_take_the_args_alone_or_be_async() -> None:
    async def execute(args: dict) -> dict:
        return {"results": ["async"]}

    for mock in (ToolMock(execute=lambda args: {"results": ["one arg"]}), ToolMock(execute=execute)):
        case = EvalCase("one-arg", app_or_agent=_searching_agent(), first_message="x", tool_mocks={"search_requests": mock})
        result = await run_eval(case)
        assert result.status == "not_evaluated", result.error


async def test_passing_the_real_tool_runs_it() -> None:
    sent.clear()
    by_function = EvalCase("fn", app_or_agent=_searching_agent(), first_message="x",
                           tool_mocks=passthrough(search_requests))
    assert (await run_eval(by_function)).status == "not_evaluated"
    system = _searching_agent()
    by_object = EvalCase("obj", app_or_agent=system, first_message="x",
                         tool_mocks={"search_requests": system.tools[0]})  # type: ignore[dict-item]
    assert (await run_eval(by_object)).status == "not_evaluated"
    assert sent == [{"query": "headache", "limit": 10}] * 2


def test_a_stand_in_function_is_not_taken_for_the_real_tool() -> None:
    case = EvalCase("stand-in", app_or_agent=_searching_agent(), first_message="x",
                    tool_mocks={"search_requests": lambda query, limit: {"results": []}})
    with pytest.raises(ConfigurationError, match="ToolMock"):
        case_apps(case)
    with pytest.raises(ConfigurationError, match="ToolMock"):
        EvalCase("bad", app_or_agent=_searching_agent(), first_message="x", tool_mocks={"search_requests": 42})  # type: ignore[dict-item]


def test_the_users_agent_tree_is_left_untouched() -> None:
    system = _searching_agent()
    original_tool = system.tools[0]
    apps = case_apps(EvalCase("untouched", app_or_agent=system, first_message="x"))
    assert system.tools == [original_tool] and not isinstance(original_tool, InterceptedTool)
    intercepted = apps.system.find_agent("system")
    assert intercepted is not system and isinstance(intercepted.tools[0], InterceptedTool)  # type: ignore[attr-defined]
    assert apps.system.plugins[0].name == "adk_eval_interception"
    case = EvalCase("cached", app_or_agent=system, first_message="x")
    assert case_apps(case) is case_apps(case)  # one set of apps per case object


async def test_user_agents_tools_are_not_intercepted_and_agent_tools_inner_tools_are() -> None:
    sent.clear()

    def reveal(condition: str) -> dict:
        """Reveal a condition."""
        sent.append({"revealed": condition})
        return with_state_change({"ok": True}, {"patient": {"revealed": {condition: True}}})

    def patient_script(request: LlmRequest) -> Any:
        if function_responses(request):
            return text_response("thanks")
        return function_call_response("reveal", {"condition": "asthma"})

    patient = agent(patient_script, name="patient", tools=[reveal])
    inner = agent(call_once_then_say("search_requests", {"query": "q", "limit": 1}), name="researcher",
                  tools=[search_requests], description="researches")

    def system_script(request: LlmRequest) -> Any:
        done = [n for n, _ in function_responses(request)]
        if "researcher" in done:
            return text_response("found it")
        if request.contents[-1].text == "thanks":
            return function_call_response("researcher", {"request": "look"})
        return text_response("how are you?")

    system = agent(system_script, tools=[AgentTool(inner)])
    case = EvalCase("nested", app_or_agent=system, first_message="hi", user_agents=UserAgents(loop=patient))
    result = await run_eval(case)
    assert sent == [{"revealed": "asthma"}]  # the user agent's own tool ran, unintercepted
    assert result.status == "error" and result.error is not None
    assert result.error.message.startswith("Tool 'search_requests' was called during eval")  # inside the AgentTool


async def test_framework_tools_need_no_mock() -> None:
    helper = agent(lambda r: text_response("helper here"), name="helper", description="helps")
    front = agent(lambda r: function_call_response("transfer_to_agent", {"agent_name": "helper"}), name="front",
                  sub_agents=[helper])
    result = await run_eval(EvalCase("transfer", app_or_agent=front, first_message="hi"))
    assert result.status == "not_evaluated", result.error
    assert result.events[-1].text == "helper here"


async def test_toolset_tools_are_intercepted() -> None:
    class Tools:
        name = "remote"

        async def get_tools(self, readonly_context: ReadonlyContext) -> list[BaseTool]:
            return [FunctionTool(search_requests)]

    system = agent(call_once_then_say("search_requests", {"query": "q", "limit": 2}), tools=[Tools()])
    blocked = await run_eval(EvalCase("toolset", app_or_agent=system, first_message="x"))
    assert blocked.status == "error" and "search_requests" in blocked.error.message  # type: ignore[union-attr]
    mocked = await run_eval(EvalCase("toolset-mocked", app_or_agent=system, first_message="x",
                                     tool_mocks={"search_requests": ToolMock(execute=lambda a: {"results": []})}))
    assert mocked.status == "not_evaluated", mocked.error


async def test_a_mocked_tool_that_needs_confirmation_still_asks_and_honours_the_answer() -> None:
    transfers: list[Any] = []

    def transfer_money(amount: int, tool_context: ToolContext) -> dict:
        """Move money."""
        raise AssertionError("the real tool must not run")

    def script(request: LlmRequest) -> Any:
        results = [r for n, r in function_responses(request) if n == "transfer_money"]
        if results and "error" not in results[-1]:
            return text_response(f"sent: {results[-1]}")
        if results:
            return text_response("waiting for approval")
        return function_call_response("transfer_money", {"amount": 5})

    system = agent(script, tools=[FunctionTool(transfer_money, require_confirmation=True)])
    for confirmed in (True, False):
        transfers.clear()
        approver = scripted_user("approver", [{"confirmed": confirmed}])
        case = EvalCase(
            f"confirm-{confirmed}", app_or_agent=system, first_message="pay",
            tool_mocks={"transfer_money": ToolMock(execute=lambda args: transfers.append(args) or {"ok": True})},
            user_agents=UserAgents(tools={"adk_request_confirmation": approver}),
        )
        result = await run_eval(case)
        assert result.status == "not_evaluated", result.error
        assert transfers == ([{"amount": 5}] if confirmed else [])
        asked = [c for e in result.events for c in e.function_calls() if c.name == "adk_request_confirmation"]
        assert len(asked) == 1


async def test_parallel_mocked_calls_each_get_their_own_call_id() -> None:
    ids: list[str] = []

    def script(request: LlmRequest) -> Any:
        if function_responses(request):
            return text_response("both done")
        return calls(("search_requests", {"query": "a", "limit": 1}), ("search_requests", {"query": "b", "limit": 1}))

    system = agent(script, tools=[search_requests])
    result = await run_eval(EvalCase("parallel", app_or_agent=system, first_message="x", tool_mocks={
        "search_requests": ToolMock(execute=lambda args, ctx: ids.append(ctx.call_id) or {"q": args["query"]})}))
    assert result.status == "not_evaluated" and len(set(ids)) == 2


def test_an_evaluated_app_keeps_its_compaction() -> None:
    from adk_core import App
    from adk_core.compaction import EventsCompactionConfig

    config = EventsCompactionConfig(compaction_interval=3, overlap_size=1)
    app = App(name="compacting", root_agent=_searching_agent(), events_compaction_config=config)
    apps = case_apps(EvalCase("compacting", app_or_agent=app, first_message="x"))
    assert apps.system.events_compaction_config == app.events_compaction_config


def test_under_the_durable_runtime_only_mocks_run_as_local_activities() -> None:
    from datetime import timedelta

    from adk_core.eval.interception import mocks_run_locally
    from adk_core.tools.execution import RetryOptions, ToolExecution

    slow = ToolExecution(start_to_close_timeout=timedelta(seconds=7), retry=RetryOptions(maximum_attempts=2),
                         task_queue="gpu")  # fmt: skip

    def lookup(key: str) -> dict:
        """Look a key up."""
        return {"key": key}

    def pure(x: int) -> int:
        """A pure function."""
        return x

    system = agent(call_once_then_say("lookup", {"key": "k"}), tools=[
        FunctionTool(search_requests, execution=slow), FunctionTool(lookup),
        FunctionTool(pure, execution=ToolExecution(mode="inline")),
    ])  # fmt: skip
    case = EvalCase("local", app_or_agent=system, first_message="go", tool_mocks={
        "search_requests": ToolMock(execute=lambda args: {}), "lookup": lookup, "pure": ToolMock(execute=lambda a: 1),
    })  # fmt: skip
    tools = {t.name: t for t in case_apps(case).system.root_agent.tools}  # type: ignore[attr-defined]

    mocked = mocks_run_locally(tools["search_requests"])
    assert mocked is not None and mocked.mode == "local_activity"
    # The tool's own bounds go with it; its queue and heartbeat are the real tool's business.
    assert mocked.start_to_close_timeout == timedelta(seconds=7) and mocked.retry.maximum_attempts == 2
    assert mocked.task_queue is None and mocked.heartbeat_timeout is None
    assert mocks_run_locally(tools["lookup"]) is None  # passed through: as the real tool says (an activity)
    inline = mocks_run_locally(tools["pure"])
    assert inline is not None and inline.mode == "inline"
    assert tools["search_requests"].execution is slow  # the app's own tools are unchanged
