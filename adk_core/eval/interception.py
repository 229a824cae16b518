"""Safe by default: every tool of the system under test is intercepted, by one rule in both runtimes.

The rule, decided per tool name from ``EvalCase.tool_mocks``:

    mocked (ToolMock)              run the mock's execute(args, ctx) where the tool would run
    passed through (the real tool) run the real tool
    long-running, not in mocks     run nothing: the call is a tool yield a user agent answers
    anything else                  EvalToolError (the seed's text), before anything runs

How it is applied (``intercept_app``): the case's agent tree is copied (the user's objects are never
changed) with every tool replaced by an ``InterceptedTool`` of the same name, declaration and
``ToolExecution``; toolsets are wrapped so the tools they list are too, and an AgentTool's agent is
intercepted in turn. An ``InterceptionPlugin`` goes first among the app's plugins. Two parts, because:

- the engine turns an exception raised *inside* a tool into an error the model reads, and the run
  goes on; the plugin's before_tool hook raises EvalToolError *before* dispatch, which stops the run;
- the mock must run outside the workflow code: in-process that is the runner's task, under the
  durable runtime a tool activity (a local one, ``mocks_run_locally``). The activity finds the tool by name in the app the worker registered,
  so it finds the InterceptedTool, which carries the rule. A worker therefore registers
  ``case_apps(case).system`` (adk_core.eval.apps): the rule is rebuilt from the case object,
  deterministically, on every worker that imports the case's module.

Framework tools that only touch the case's own services are not intercepted: ``transfer_to_agent``,
``exit_loop``, ``load_memory``, ``load_artifacts`` (AgentTool runs, its agent's tools intercepted).
User agents' own tools are never intercepted: their app has neither wrappers nor the plugin.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from .._callables import call_maybe_async
from ..agents.base import BaseAgent
from ..agents.context import ReadonlyContext, ToolContext
from ..agents.llm_agent import LlmAgent
from ..app import App
from ..errors import EvalToolError, RemoteError
from ..models.base import FunctionDeclaration, LlmRequest
from ..plugins.base import BasePlugin
from ..tools.agent_tool import AgentTool
from ..tools.base import BaseTool, Toolset
from ..tools.builtin import ExitLoopTool, LoadArtifactsTool, LoadMemoryTool, TransferToAgentTool
from ..tools.execution import ToolExecution
from ..tools.function_tool import FunctionTool, confirmation_step
from .mocks import MockToolContext, ToolMock, check_passthrough

_FRAMEWORK_TOOLS = (TransferToAgentTool, ExitLoopTool, LoadMemoryTool, LoadArtifactsTool)
PLUGIN_NAME = "adk_eval_interception"
Decision = Literal["mock", "passthrough", "yield", "refuse"]


@dataclass(frozen=True)
class Interception:
    """The rule for one case: what happens when its system calls a tool."""

    case_name: str
    tool_mocks: Mapping[str, Any]

    def decide(self, tool: BaseTool) -> Decision:
        given = self.tool_mocks.get(tool.name)
        if isinstance(given, ToolMock):
            return "mock"
        if given is not None:
            check_passthrough(tool.name, given, tool)
            return "passthrough"
        if tool.is_long_running:
            return "yield"
        return "refuse"

    def refusal(self, tool: BaseTool, args: Mapping[str, Any]) -> EvalToolError:
        return EvalToolError(unmocked_tool_message(tool, args))


def unmocked_tool_message(tool: BaseTool | str, args: Mapping[str, Any]) -> str:
    """The seed's text for a tool called without a mock, in Python."""
    name = tool if isinstance(tool, str) else tool.name
    module = "your_app.tools"
    symbol = name
    if isinstance(tool, FunctionTool):
        module = getattr(tool.func, "__module__", None) or module
        symbol = getattr(tool.func, "__name__", None) or name
    return (
        f"Tool '{name}' was called during eval but no mock was provided.\n\n"
        "Add a mock:\n"
        "  tool_mocks={\n"
        f'      "{name}": ToolMock(execute=lambda args, ctx: {{...}}),\n'
        "  }\n\n"
        "Or if this tool has no side effects, provide the actual tool:\n"
        f"  from {module} import {symbol}\n"
        f'  tool_mocks={{"{name}": {symbol}}}\n\n'
        "Tool was called with args:\n"
        f"  {_json(args)}"
    )


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(value)


class InterceptedTool(BaseTool):
    """A tool of the system under test, seen through the case's interception rule."""

    def __init__(self, tool: BaseTool, rule: Interception) -> None:
        self.tool = tool
        self.rule = rule
        self.decision = rule.decide(tool)
        execution = tool.execution
        if self.decision == "yield":
            # Nothing runs for an unmocked long-running tool: no activity is worth scheduling.
            execution = ToolExecution(mode="inline")
        super().__init__(
            name=tool.name, description=tool.description, is_long_running=tool.is_long_running, execution=execution
        )

    def declaration(self) -> FunctionDeclaration | None:
        return self.tool.declaration()

    async def process_llm_request(self, *, tool_context: ToolContext, llm_request: LlmRequest) -> None:
        # The real tool shapes the request (declaration, instructions); dispatch must reach the wrapper.
        await self.tool.process_llm_request(tool_context=tool_context, llm_request=llm_request)
        if self.name in llm_request.tools_dict:
            llm_request.tools_dict[self.name] = self

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        if self.decision == "refuse":
            # Reached only without the InterceptionPlugin (which raises first): still run nothing.
            raise self.rule.refusal(self.tool, args)
        if self.decision == "yield":
            return None  # pending: a user agent answers (adk_core.eval.driver)
        if self.decision == "passthrough":
            return await self.tool.run_async(args=args, tool_context=tool_context)
        gate = await _confirmation_gate(self.tool, args, tool_context)
        if gate is not None:
            return gate
        mock = self.rule.tool_mocks[self.name]
        return await mock.run(args, MockToolContext(tool_context, self.name))


def mocks_run_locally(tool: BaseTool) -> ToolExecution | None:
    """How ``tool`` runs under the durable runtime when mocks run as local activities (the durable
    eval host's choice): a mocked tool as a local activity on the trial's own worker, with the tool's
    timeouts and retries; every other tool as it says. A mock stands in for the effect, so the real
    tool's reasons for a regular activity (its task queue, its heartbeat) do not apply, while a
    regular activity costs the server a task and the trial a workflow task per call (measured in
    bench/bench_eval.py). A tool marked inline stays inline."""
    if not (isinstance(tool, InterceptedTool) and tool.decision == "mock"):
        return tool.execution
    execution = tool.execution or ToolExecution()
    if execution.mode == "inline":
        return execution
    return replace(execution, mode="local_activity", task_queue=None, heartbeat_timeout=None)


async def _confirmation_gate(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any] | None:
    """A mock replaces a FunctionTool's function, not its confirmation: a mocked tool that requires
    confirmation still asks (and honours a rejection) as the real one would, so confirmation flows
    can be evaluated. None: go ahead and run the mock."""
    if not isinstance(tool, FunctionTool) or not tool.require_confirmation:
        return None
    rule = tool.require_confirmation
    if callable(rule):
        params = inspect.signature(rule).parameters
        kwargs = {k: v for k, v in args.items() if k in params}
        if "tool_context" in params:
            kwargs["tool_context"] = tool_context
        needed = bool(await call_maybe_async(rule, **kwargs))
    else:
        needed = bool(rule)
    return confirmation_step(tool.name, tool_context) if needed else None


class InterceptedToolset:
    """A toolset whose listed tools are intercepted."""

    def __init__(self, toolset: Toolset, rule: Interception) -> None:
        self.toolset = toolset
        self.rule = rule
        self.name = toolset.name

    async def get_tools(self, readonly_context: ReadonlyContext) -> list[BaseTool]:
        return [wrap_tool(t, self.rule) for t in await self.toolset.get_tools(readonly_context)]

    async def tool_named(self, name: str) -> BaseTool | None:
        """The inner toolset's tool by name (adk_core.tools.lookup.find_tool), intercepted; the
        toolset's own calls (an MCP toolset's listing) are not the system's and pass as they are."""
        named = getattr(self.toolset, "tool_named", None)
        tool = named(name) if named is not None else None
        if inspect.isawaitable(tool):
            tool = await tool
        if not isinstance(tool, BaseTool) or getattr(tool, "toolset_internal", False):
            return tool
        return wrap_tool(tool, self.rule)


class InterceptionPlugin(BasePlugin):
    """Stops the run with EvalToolError when the system calls a tool the rule refuses."""

    def __init__(self, rule: Interception) -> None:
        super().__init__(PLUGIN_NAME)
        self.rule = rule

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if isinstance(tool, InterceptedTool):
            if tool.decision == "refuse":
                raise self.rule.refusal(tool.tool, tool_args)
            return None
        if isinstance(tool, (*_FRAMEWORK_TOOLS, AgentTool)):
            return None
        raise self.rule.refusal(tool, tool_args)  # a tool that escaped wrapping: refuse, never run it

    async def on_tool_error_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> dict[str, Any] | None:
        # A refusal raised below a tool (inside an AgentTool's agent, or by an InterceptedTool run
        # without this plugin in front) would otherwise reach the model as a tool error and the run
        # would go on; it must stop the run like a refusal raised here. From an activity it comes
        # back as a RemoteError carrying the type name.
        if isinstance(error, EvalToolError):
            raise error
        if isinstance(error, RemoteError) and error.error_type == EvalToolError.__name__:
            raise EvalToolError(str(error)) from error
        return None


def wrap_tool(tool: BaseTool | Toolset, rule: Interception) -> Any:
    if isinstance(tool, InterceptedTool | InterceptedToolset):
        return tool
    if isinstance(tool, _FRAMEWORK_TOOLS):
        return tool
    if isinstance(tool, AgentTool):
        wrapped = copy.copy(tool)
        wrapped.agent = intercept_agent(tool.agent, rule)
        return wrapped
    if isinstance(tool, BaseTool):
        return InterceptedTool(tool, rule)
    return InterceptedToolset(tool, rule)


def intercept_agent(agent: BaseAgent, rule: Interception) -> BaseAgent:
    """A copy of the agent tree with every tool intercepted (the originals are left as they are)."""
    clone = copy.copy(agent)
    clone.parent_agent = None
    clone.sub_agents = [intercept_agent(sub, rule) for sub in agent.sub_agents]
    for sub in clone.sub_agents:
        sub.parent_agent = clone
    if isinstance(agent, LlmAgent):
        clone.tools = [wrap_tool(t, rule) for t in agent.tools]  # type: ignore[attr-defined]
    return clone


def intercept_app(app: App, *, name: str, rule: Interception) -> App:
    """The app an eval runs: its tree intercepted, the interception plugin first, under ``name``;
    its compaction as the app's own, so a long simulated conversation is judged as users would see it."""
    return App(
        name=name, root_agent=intercept_agent(app.root_agent, rule), plugins=[InterceptionPlugin(rule), *app.plugins],
        events_compaction_config=app.events_compaction_config,
    )
