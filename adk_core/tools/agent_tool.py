"""AgentTool: another agent, called like a function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..agents.context import ToolContext
from ..agents.run_config import RunConfig
from ..errors import OutputValidationError
from ..models.base import FunctionDeclaration
from ..state import TEMP_PREFIX
from ..types import Content, Part
from .base import BaseTool
from .execution import ToolExecution

if TYPE_CHECKING:
    from ..agents.base import BaseAgent
    from ..artifacts import ArtifactService
    from ..memory import MemoryService
    from ..plugins import BasePlugin
    from ..runtime import Runtime


class AgentTool(BaseTool):
    """Runs ``agent`` on the arguments and returns its final answer.

    The agent runs in a session of its own that starts with a copy of the caller's state; state it
    writes flows back to the caller. With ``skip_summarization`` its answer goes to the user as is
    instead of back through the calling model. In durable runs it may run as a child workflow
    (``execution=AgentExecution(child_workflow=True)`` on the agent).
    """

    def __init__(self, agent: BaseAgent, *, skip_summarization: bool = False, execution: ToolExecution | None = None):
        super().__init__(name=agent.name, description=agent.description, execution=execution)
        self.agent = agent
        self.skip_summarization = skip_summarization

    def declaration(self) -> FunctionDeclaration:
        input_schema = getattr(self.agent, "input_schema", None)
        if input_schema is not None:
            from ._schema import inline_refs

            schema = inline_refs(input_schema.model_json_schema())
        else:
            schema = {"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]}
        return FunctionDeclaration(name=self.name, description=self.description, parameters=schema)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        if self.skip_summarization:
            tool_context.actions.skip_summarization = True
        parent = tool_context.invocation_context
        response, state_delta = await run_agent_as_tool(
            self.agent,
            args,
            state=tool_context.state.to_dict(),
            user_id=parent.user_id,
            runtime=parent.runtime,
            artifact_service=parent.artifact_service,
            memory_service=parent.memory_service,
            plugins=parent.plugin_manager.plugins,
            run_config=parent.run_config,
        )
        for key, value in state_delta.items():
            tool_context.state[key] = value
        return response


async def run_agent_as_tool(
    agent: BaseAgent,
    args: dict[str, Any],
    *,
    state: dict[str, Any],
    user_id: str,
    runtime: Runtime,
    artifact_service: ArtifactService | None = None,
    memory_service: MemoryService | None = None,
    plugins: Sequence[BasePlugin] = (),
    run_config: RunConfig | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Run ``agent`` in a scratch session; return (its answer as a tool response, state it wrote)."""
    from ..runner import Runner
    from ..sessions import InMemorySessionService

    input_schema = getattr(agent, "input_schema", None)
    text = input_schema.model_validate(args).model_dump_json() if input_schema is not None else str(args.get("request", ""))
    runner = Runner(
        app_name=agent.name,
        agent=agent,
        session_service=InMemorySessionService(clock=runtime.now, id_factory=runtime.new_id),
        artifact_service=artifact_service,
        memory_service=memory_service,
        plugins=plugins,
        runtime=runtime,
    )
    session = await runner.session_service.create_session(
        app_name=agent.name,
        user_id=user_id,
        state={k: v for k, v in state.items() if not k.startswith(TEMP_PREFIX)},
        session_id=runtime.new_id(),
    )
    state_delta: dict[str, Any] = {}
    last_text = ""
    async for event in runner.run_async(
        user_id=user_id,
        session_id=session.id,
        new_message=Content(role="user", parts=[Part(text=text)]),
        run_config=run_config,
    ):
        state_delta.update(event.actions.state_delta)
        if event.content is not None and event.text and not event.partial:
            last_text = event.text
    output_schema = getattr(agent, "output_schema", None)
    if output_schema is not None and last_text:
        try:
            return output_schema.model_validate_json(last_text).model_dump(mode="json"), state_delta
        except ValueError as e:
            raise OutputValidationError(
                f"agent {agent.name!r} answered text that does not match its output_schema: {e}"
            ) from None
    return {"result": last_text}, state_delta
