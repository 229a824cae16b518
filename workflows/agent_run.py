"""AgentRunWorkflow: one invocation (a message in, its events out). AgentToolWorkflow and
AgentBranchWorkflow: an AgentTool's agent and a ParallelAgent branch as child workflows, so agent
trees show as workflow trees."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from adk_core.agents.run_config import RunConfig
    from adk_core.errors import AdkError
    from adk_core.ids import validate_session_key
    from adk_core.tools.agent_tool import run_agent_as_tool
    from adk_core.types import Event

    from ._invocation import (
        DurableInvoker,
        check_reply,
        child_failure,
        pending_requests,
        result_within_budget,
    )
    from ._simulator import SimulatorMailbox, SimulatorUpdates
    from .app_scope import worker_apps
    from .contracts import (
        AgentBranchInput,
        AgentBranchResult,
        AgentRunInput,
        AgentRunResult,
        AgentToolInput,
        AgentToolResult,
        PendingRequest,
        Reply,
        final_text,
    )
    from .runtime import TurnOutgrewRun
    from .services import (
        DurableArtifactService,
        DurableMemoryService,
        ends_cancelled,
    )
    from .summaries import describe_content


TURN_HISTORY_EVENTS = 4000
"""An invocation still running when this run's history holds this many events continues-as-new,
far below Temporal's 10,240-event warning."""


@workflow.defn(name="AgentRunWorkflow", failure_exception_types=[AdkError])
class AgentRunWorkflow(SimulatorUpdates):
    @workflow.init
    def __init__(self, input: AgentRunInput) -> None:
        self._events: list[Event] = []
        self._replies: dict[str, dict[str, Any]] = {}
        self._simulator = SimulatorMailbox()

    @workflow.run
    async def run(self, input: AgentRunInput) -> AgentRunResult:
        validate_session_key(input.app_name, input.user_id, input.session_id)
        invoker = DurableInvoker(
            input.app_name, input.user_id, input.session_id, waiter=self._wait if input.wait_for_replies else None
        )
        invoker.runtime.simulator = self._simulator
        # The Temporal UI's "current details" (the static summary is set by whoever starts the run).
        workflow.set_current_details(f"**Message** {describe_content(input.message)}")
        await invoker.load(create=input.create_session, initial_state=input.initial_state)
        # A long invocation continues-as-new with what it needs to resume (docs/durability.md).
        invoker.runtime.turn_history_limit = TURN_HISTORY_EVENTS
        resumed = input.continuation
        try:
            invocation_id = await invoker.invoke(
                input.message, state_delta=input.state_delta, max_llm_calls=input.max_llm_calls, events=self._events,
                continuation=resumed,
            )
        except TurnOutgrewRun as outgrown:
            await invoker.sessions.flush()  # the next run resumes from the store
            before = (resumed.events_before if resumed else 0) + len(self._events)
            continuation = outgrown.continuation.model_copy(update={"events_before": before})
            workflow.continue_as_new(input.model_copy(update={"message": None, "continuation": continuation}))
        made_by_earlier_runs = resumed.events_before if resumed else 0
        result, _ = result_within_budget(
            lambda events, left_out: AgentRunResult(
                session_id=input.session_id, invocation_id=invocation_id, events=events, final_text=final_text(events),
                events_omitted=left_out + made_by_earlier_runs,
            ),
            self._events,
        )
        return result

    async def _wait(self, kind: str, call_id: str) -> Any:
        await workflow.wait_condition(lambda: call_id in self._replies)
        return self._replies.pop(call_id)

    @workflow.query
    def pending(self) -> list[PendingRequest]:
        return pending_requests(self._events)

    @workflow.query
    def events(self, after: int = 0) -> list[Event]:
        """Events made so far, from index ``after`` on (for streaming clients)."""
        return self._events[after:]

    @workflow.update
    async def reply(self, reply: Reply) -> None:
        self._replies[reply.call_id] = reply.response

    @reply.validator
    def _check_reply(self, reply: Reply) -> None:
        check_reply(reply.call_id, pending_requests(self._events))

@workflow.defn(name="AgentToolWorkflow", failure_exception_types=[AdkError])
class AgentToolWorkflow(SimulatorUpdates):
    @workflow.init
    def __init__(self, input: AgentToolInput) -> None:
        self._simulator = SimulatorMailbox()

    @workflow.run
    async def run(self, input: AgentToolInput) -> AgentToolResult:
        invoker = DurableInvoker(input.app_name, input.user_id, input.session_id)
        invoker.runtime.simulator = self._simulator
        agent = worker_apps().agent(input.app_name, input.agent_name)
        try:
            response, state_delta = await run_agent_as_tool(
                agent,
                input.args,
                state=input.state,
                user_id=input.user_id,
                runtime=invoker.runtime,
                artifact_service=DurableArtifactService(invoker.key),
                memory_service=DurableMemoryService(invoker.key),
                plugins=invoker.runner.plugin_manager.plugins,
                run_config=RunConfig(max_llm_calls=input.max_llm_calls),
            )
        except AdkError:
            raise  # fails the run (failure_exception_types)
        except Exception as e:  # noqa: BLE001  (the parent hears it, as from an inline AgentTool)
            raise child_failure(e) from e
        return AgentToolResult(response=response, state_delta=state_delta)


@workflow.defn(name="AgentBranchWorkflow", failure_exception_types=[AdkError])
class AgentBranchWorkflow(SimulatorUpdates):
    """One ParallelAgent branch: runs the sub-agent on the parent's session and invocation,
    stores its events, and hands them back to the parent."""

    @workflow.init
    def __init__(self, input: AgentBranchInput) -> None:
        self._simulator = SimulatorMailbox()

    @workflow.run
    async def run(self, input: AgentBranchInput) -> AgentBranchResult:
        invoker = DurableInvoker(input.app_name, input.user_id, input.session_id)
        invoker.runtime.simulator = self._simulator
        session = await invoker.load(create=False, initial_state=None)
        ctx = invoker.runner.new_invocation_context(
            session, run_config=RunConfig(max_llm_calls=input.max_llm_calls), invocation_id=input.invocation_id
        )
        ctx.branch = input.branch
        ctx.user_content = input.user_content
        agent = worker_apps().agent(input.app_name, input.agent_name)
        events: list[Event] = []
        try:
            async for event in agent.run_async(ctx):
                if not event.partial:
                    event = await invoker.runtime.commit(ctx, event)
                    events.append(event)
        except asyncio.CancelledError:
            # Cancelled with its parent's turn: what the branch made is stored before it ends (the
            # parent stores its own events and why the turn stopped).
            if ends_cancelled():
                await invoker.sessions.flush()
            raise
        except Exception as e:  # noqa: BLE001  (the parent's turn fails with it, as with an inline branch)
            await invoker.sessions.flush()  # what the branch made before it failed is stored
            if isinstance(e, AdkError):
                raise  # fails the run (failure_exception_types)
            raise child_failure(e) from e
        await invoker.sessions.flush()
        return AgentBranchResult(events=events)
