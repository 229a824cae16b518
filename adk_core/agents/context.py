"""Contexts handed to agents, callbacks and tools.

    ReadonlyContext        ids, the user's message, read-only state
      CallbackContext      + state writes (recorded as a delta), artifacts, memory search
        ToolContext        + function_call_id, confirmation, actions of this tool call
    InvocationContext      everything one invocation needs; owned by the engine
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, LlmCallsLimitExceededError
from ..state import State
from ..types import Content, EventActions, Part, ToolConfirmation
from .run_config import RunConfig

if TYPE_CHECKING:
    from ..artifacts import ArtifactService
    from ..compaction import EventsCompactionConfig
    from ..flow.incremental import InvocationMemo
    from ..memory import MemoryService, SearchMemoryResponse
    from ..plugins.manager import PluginManager
    from ..runtime import Runtime
    from ..sessions import Session, SessionService
    from .base import BaseAgent


def _invocation_memo() -> InvocationMemo:
    from ..flow.incremental import InvocationMemo  # the flow imports this module

    return InvocationMemo()


class _LlmCallCounter:
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


@dataclasses.dataclass
class InvocationContext:
    """State of one invocation (one user message and everything it causes)."""

    runtime: Runtime
    session_service: SessionService
    session: Session
    invocation_id: str
    agent: BaseAgent
    root_agent: BaseAgent
    plugin_manager: PluginManager
    artifact_service: ArtifactService | None = None
    memory_service: MemoryService | None = None
    user_content: Content | None = None
    run_config: RunConfig = dataclasses.field(default_factory=RunConfig)
    branch: str | None = None
    runtime_stores_session: bool = False
    """Whether ``session`` is the one the runtime itself persists (``Runtime.stores_session``): a
    durable run's own session, whose events model calls may send by reference. False in-process
    and for scratch sessions (an AgentTool's)."""
    end_invocation: bool = False
    events_compaction_config: EventsCompactionConfig | None = None
    """The Runner's (adk_core.compaction): with a ``token_threshold``, the flow compacts before a
    model call once a prompt of this invocation reached it."""
    _llm_calls: _LlmCallCounter = dataclasses.field(default_factory=_LlmCallCounter)
    flow_memo: InvocationMemo = dataclasses.field(default_factory=_invocation_memo, repr=False, compare=False)
    """What the flow derived from the session's events so far (adk_core.flow.incremental); shared,
    like the model call count, by the invocation's agents and branches (``for_agent``, ``for_branch``)."""

    @property
    def app_name(self) -> str:
        return self.session.app_name

    @property
    def user_id(self) -> str:
        return self.session.user_id

    def for_agent(self, agent: BaseAgent) -> InvocationContext:
        return dataclasses.replace(self, agent=agent)

    def for_branch(self, branch: str) -> InvocationContext:
        return dataclasses.replace(self, branch=branch)

    @property
    def llm_calls_made(self) -> int:
        return self._llm_calls.count

    def resume_llm_calls(self, count: int) -> None:
        """Continue counting from ``count``: an invocation resumed in another workflow run
        (workflows: a turn that outgrew one run) keeps its max_llm_calls budget."""
        self._llm_calls.count = count

    def count_llm_call(self) -> None:
        self._llm_calls.count += 1
        limit = self.run_config.max_llm_calls
        if limit > 0 and self._llm_calls.count > limit:
            raise LlmCallsLimitExceededError(
                f"this invocation made more than {limit} model calls (RunConfig.max_llm_calls); "
                "the agent may be looping on a tool. Fix the instruction or tool, or raise the limit "
                "with run_config=RunConfig(max_llm_calls=N)"
            )


class ReadonlyContext:
    __slots__ = ("_ic",)

    def __init__(self, invocation_context: InvocationContext) -> None:
        self._ic = invocation_context

    @property
    def invocation_id(self) -> str:
        return self._ic.invocation_id

    @property
    def agent_name(self) -> str:
        return self._ic.agent.name

    @property
    def app_name(self) -> str:
        return self._ic.app_name

    @property
    def user_id(self) -> str:
        return self._ic.user_id

    @property
    def session_id(self) -> str:
        return self._ic.session.id

    @property
    def user_content(self) -> Content | None:
        return self._ic.user_content

    @property
    def session(self) -> Session:
        return self._ic.session

    @property
    def runtime(self) -> Runtime:
        return self._ic.runtime

    @property
    def invocation_context(self) -> InvocationContext:
        return self._ic

    @property
    def state(self) -> Mapping[str, Any]:
        return MappingProxyType(self._ic.session.state)


class CallbackContext(ReadonlyContext):
    """What callbacks get: state writes go to ``actions.state_delta`` and reach the session with
    the event that carries them."""

    __slots__ = ("actions", "_state")

    def __init__(self, invocation_context: InvocationContext, *, event_actions: EventActions | None = None):
        super().__init__(invocation_context)
        self.actions = event_actions if event_actions is not None else EventActions()
        self._state = State(invocation_context.session.state, self.actions.state_delta)

    @property
    def state(self) -> State:
        return self._state

    def _artifacts(self) -> ArtifactService:
        service = self._ic.artifact_service
        if service is None:
            raise ConfigurationError("no artifact service is configured; pass artifact_service= to the Runner")
        return service

    async def load_artifact(self, filename: str, version: int | None = None) -> Part | None:
        return await self._artifacts().load_artifact(
            app_name=self.app_name, user_id=self.user_id, session_id=self.session_id, filename=filename, version=version
        )

    async def save_artifact(self, filename: str, artifact: Part) -> int:
        version = await self._artifacts().save_artifact(
            app_name=self.app_name, user_id=self.user_id, session_id=self.session_id, filename=filename, artifact=artifact
        )
        self.actions.artifact_delta[filename] = version
        return version

    async def list_artifacts(self) -> list[str]:
        return await self._artifacts().list_artifact_keys(
            app_name=self.app_name, user_id=self.user_id, session_id=self.session_id
        )

    async def search_memory(self, query: str) -> SearchMemoryResponse:
        service = self._ic.memory_service
        if service is None:
            raise ConfigurationError("no memory service is configured; pass memory_service= to the Runner")
        return await service.search_memory(app_name=self.app_name, user_id=self.user_id, query=query)


class ToolContext(CallbackContext):
    """What a tool gets for one call."""

    __slots__ = ("function_call_id", "tool_confirmation")

    def __init__(
        self,
        invocation_context: InvocationContext,
        *,
        function_call_id: str | None = None,
        event_actions: EventActions | None = None,
        tool_confirmation: ToolConfirmation | None = None,
    ) -> None:
        super().__init__(invocation_context, event_actions=event_actions)
        self.function_call_id = function_call_id
        self.tool_confirmation = tool_confirmation

    @property
    def idempotency_key(self) -> str:
        """A key for this tool call's effect: the same every time this call runs, different for
        every other call.

        Durable runs execute tools at least once: an activity that times out or loses its worker
        after the tool had its effect runs again. To make the effect happen once, hand this key
        to the system that carries it out (an ``Idempotency-Key`` header, a unique column, a
        request id) or record it next to the effect and, when it is already there, return what
        the first run returned (examples/idempotent_tool.py; docs/durability.md).

        It is ``"{invocation_id}:{function_call_id}"``: both come from the runtime (deterministic
        inside a workflow) and travel with the call to every attempt, so in-process and durable
        runs, retries and replays see the same key. Call ids are unique within an invocation:
        the engine gives one to every call a model leaves without.

        Raises:
            ConfigurationError: outside a tool call (no function call id).
        """
        if not self.function_call_id:
            raise ConfigurationError(
                "idempotency_key needs a function call id; it is only valid inside a tool call (read it in the "
                "tool function, from the ToolContext it is given)"
            )
        return f"{self.invocation_id}:{self.function_call_id}"

    def request_confirmation(self, *, hint: str = "", payload: Any = None) -> None:
        """Ask a human to confirm this call before it runs; the run pauses until they answer."""
        if not self.function_call_id:
            raise ConfigurationError(
                "request_confirmation needs a function call id; it is only valid inside a tool call (call it "
                "in the tool function, or use FunctionTool(require_confirmation=True))"
            )
        self.actions.requested_tool_confirmations[self.function_call_id] = ToolConfirmation(hint=hint, payload=payload)
