"""TemporalRuntime: adk_core's runtime seam inside a workflow.

Clock, ids and randomness come from the workflow; model and tool calls are activities; session
commits ride along with them (see workflows/services.py). Callbacks and plugins run here, in the
workflow, so they must be deterministic: no I/O, no wall clock, no randomness of their own (use
``ctx.runtime``), and no reliance on process memory that differs between workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from random import Random
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from opentelemetry import trace
    from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider

    from adk_core import telemetry
    from adk_core.agents.base import BaseAgent
    from adk_core.agents.context import InvocationContext, ToolContext
    from adk_core.compaction import EventsCompactionConfig
    from adk_core.errors import InvalidInputError, ModelError, RemoteError
    from adk_core.flow.history import by_reference
    from adk_core.flow.llm_flow import answer_event
    from adk_core.models.base import LlmRequest, LlmResponse, Model
    from adk_core.sessions import Session
    from adk_core.simulator import WAIT_KIND as SIMULATOR_WAIT
    from adk_core.tools.agent_tool import AgentTool
    from adk_core.tools.base import BaseTool
    from adk_core.tools.builtin import ExitLoopTool, LoadArtifactsTool, LoadMemoryTool, TransferToAgentTool
    from adk_core.tools.execution import ToolExecution
    from adk_core.types import Event, EventCompaction
    from adk_temporal.activities import contracts as c
    from adk_temporal.metrics import TurnMetrics

    from ._retry import retry_policy
    from ._simulator import DurableSimulatorChannel, SimulatorMailbox
    from ._turn_stream import TurnStream
    from .contracts import AgentBranchInput, AgentToolInput, TurnContinuation
    from .services import (
        ACTIVITY_FAILURES,
        ActivityFailure,
        DurableSessionService,
        cancelled_call,
        ends_cancelled,
        failure_of,
        raise_if_cancelled,
        stop_if_cancelled,
    )
    from .summaries import model_call_summary

DEFAULT_TOOL_EXECUTION = ToolExecution()
ANSWER_STORED_BY_CALL_PATCH = "model-call-stores-answer"
"""Model calls store the agent's answer themselves (TemporalRuntime._answer_slot). A run recorded
before takes the id of a response's event after the call, and commits the answer itself."""
FLUSH_BEFORE_WAIT_PATCH = "flush-deferred-before-wait"
"""A run stores what its model calls left unstored before it waits for a person (wait_for); runs
recorded before wait without storing."""
DEFER_ONCE_A_TURN_PATCH = "defer-a-turns-first-events-only"
"""Once a turn's events outgrow one deferred write (DEFER_MAX_EVENTS, DEFER_MAX_AGE_S), its later
model calls in this run store what they carry instead of deferring again (a long turn's child, and
each run it continues as, defers its own first events once). Runs recorded before defer again."""
DEFER_MAX_EVENTS = 32
"""At most this many events ride along unstored (ModelCallInput.defer_commit): each activity of
the turn carries them all, so its input grows with them."""
DEFER_MAX_AGE_S = 5.0
"""Events older than this (workflow time) are stored by the next model call: a slow turn's events
reach the store as it goes, a fast turn's in one write at its end."""
_ANSWER_CHANGERS = ("before_model_callback", "after_model_callback", "on_event_callback")
"""Plugin callbacks that can change a model response's event between the call and its commit."""
# Framework tools that only set actions or reach the world through durable services: they run
# in the workflow itself.
_WORKFLOW_TOOLS = (TransferToAgentTool, ExitLoopTool, LoadMemoryTool, LoadArtifactsTool, AgentTool)

Waiter = Callable[[str, str], Awaitable[Any]]
ToolExecutionFor = Callable[[BaseTool], ToolExecution | None]
"""How a tool runs in a run that overrides its ``execution`` (the eval host runs mocks locally)."""


def runs_in_workflow(tool: BaseTool) -> bool:
    """Whether ``tool`` runs in the workflow itself (so its code must be deterministic) rather than
    in an activity: framework tools that only set actions, and tools with ``mode="inline"``."""
    execution = tool.execution or DEFAULT_TOOL_EXECUTION
    return (isinstance(tool, _WORKFLOW_TOOLS) and tool.execution is None) or execution.mode == "inline"


class TurnOutgrewRun(BaseException):  # noqa: N818  (a signal, not an error)
    """The invocation stopped at a model call because this run's history is past its budget; it
    goes on from ``continuation`` in a fresh run. A BaseException, so the engine's error handling
    (on_model_error callbacks, error events) never takes it for a failure."""

    def __init__(self, continuation: TurnContinuation) -> None:
        super().__init__(f"invocation {continuation.invocation_id} continues in a new run")
        self.continuation = continuation


class TemporalRuntime:
    def __init__(
        self, *, app_name: str, sessions: DurableSessionService, waiter: Waiter | None = None,
        tool_execution: ToolExecutionFor | None = None, model_calls_local: bool = False,
    ) -> None:
        self.app_name = app_name
        self.sessions = sessions
        self._waiter = waiter
        self._tool_execution = tool_execution
        """How a tool runs in this run, when not as its ``execution`` says (the eval host runs mocks locally)."""
        self.model_calls_local = model_calls_local
        """Model calls are local activities (eval trials, ``EvalSuiteInput.model_calls``): no task on the
        server per call, recorded when the workflow task completes. An agent whose model calls go to a
        task queue of their own (``model_task_queue``) still calls through it."""
        # SimulatorPlugin: requests stored by activity, decisions arrive by the `submit_decision` Update.
        self.simulator = SimulatorMailbox()
        self.simulator_channel = DurableSimulatorChannel(self)
        self._stamps: dict[int, tuple[LlmResponse, str, float | None]] = {}
        """Per model response not yet made an event: the id its call was given, and when the call
        stored it (ModelCallInput.answer)."""
        self.unanswered: str | None = None
        """The answer event id of a model call cancelled with the workflow (ModelCallInput.answer).
        The workflow stops waiting for the call at once, but the call hears of the cancellation
        only at its next heartbeat, and may answer and store its answer before then: the turn's
        CancelledError event takes this id (DurableInvoker.invoke), so the store refuses that
        late answer, or, when the answer came first, the error event (stored again under an id
        of its own)."""
        self._deferring = False
        """The last model call left its events unstored (ModelCallInput.defer_commit): the tools it
        called carry none (nothing of them is being written), which keeps their inputs small."""
        self._outgrew_deferring: str | None = None
        """The invocation whose events outgrew one deferred write: its model calls store as they go."""
        self.app_compacts = False
        """The app compacts its events (set by DurableInvoker): its model calls store what they carry,
        since a compaction stored after a history reference must be found in the store."""
        # The running turn's stream when its partials are followed (set by DurableInvoker.invoke).
        self.turn_stream: TurnStream | None = None
        self.turn_history_limit: int | None = None
        """When this run's history holds this many events, an invocation that can resume from the
        stored session stops at its next model call (TurnOutgrewRun) to go on in a fresh run."""
        self._metrics: TurnMetrics | None = None

    @property
    def metrics(self) -> TurnMetrics:
        """Turn and wait instruments on the workflow's replay-safe meter (nothing is recorded on replay)."""
        if self._metrics is None:
            self._metrics = TurnMetrics.on(workflow.metric_meter())
        return self._metrics

    # --- determinism ------------------------------------------------------------------------
    def now(self) -> float:
        return workflow.now().timestamp()

    def new_id(self) -> str:
        return uuid4_text(workflow.random())

    def random(self) -> float:
        return workflow.random().random()

    def span(self, name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
        # A replay-safe tracer provider (adk_temporal.tracing) starts spans on replay too, at their
        # time in history and with the ids they had, and ends each once, live: a span still open
        # when the workflow was evicted (or its worker died) ends with its real duration. Any other
        # provider gets no spans on replay, so nothing is emitted twice. Tracing off (most workers):
        # no span either way, asked first (a replay asks the provider for every span otherwise).
        if not telemetry.tracing_enabled() or (workflow.unsafe.is_replaying() and not _replay_safe_tracing()):
            return _NO_SPAN
        return telemetry.start_span(name, attributes)

    # --- sessions ---------------------------------------------------------------------------
    def stores_session(self, session: Session) -> bool:
        """The runtime's scope is the one session its workflow serves (``sessions.key``). Any other
        session (an AgentTool's scratch one, a judge's) lives in process memory, not in the store."""
        key = self.sessions.key
        return (session.app_name, session.user_id, session.id) == (key.app_name, key.user_id, key.session_id)

    def history_cursor(self, ctx: InvocationContext) -> str | None:
        return self.sessions.unloaded_through if ctx.runtime_stores_session else None

    async def run_agent(self, agent: BaseAgent, ctx: InvocationContext) -> AsyncIterator[Event]:
        if not agent.execution.child_workflow or not ctx.runtime_stores_session:
            async for event in agent.run_async(ctx):
                yield event
            return
        from .agent_run import AgentBranchWorkflow  # noqa: PLC0415  (cycle: the child uses this runtime)

        await self.sessions.flush()  # the child reads the session from the store
        result = await _child_result(workflow.execute_child_workflow(
            AgentBranchWorkflow.run,
            AgentBranchInput(
                app_name=self.app_name,
                user_id=ctx.user_id,
                session_id=ctx.session.id,
                agent_name=agent.name,
                branch=ctx.branch or agent.name,
                invocation_id=ctx.invocation_id,
                user_content=ctx.user_content,
                max_llm_calls=ctx.run_config.max_llm_calls,
            ),
            id=f"{workflow.info().workflow_id}/branch/{ctx.invocation_id}/{agent.name}",
            static_summary=f"branch {ctx.branch or agent.name}",
            search_attributes=workflow.info().typed_search_attributes,  # listed with its parent (AdkApp, AdkUser)
        ))
        for event in result.events:
            self.sessions.stored_elsewhere.add(event.id)
            yield event

    async def commit(self, ctx: InvocationContext, event: Event) -> Event:
        return await ctx.session_service.append_event(ctx.session, event)

    async def summarize_before_model_call(
        self, ctx: InvocationContext, config: EventsCompactionConfig
    ) -> EventCompaction | None:
        """Through the summarizing activity, for the session this run stores (an AgentTool's scratch
        session is not in the store: it is not compacted)."""
        from ._compaction import PATCH_ID, summarize_in_activity  # noqa: PLC0415  (it imports this module)

        if not ctx.runtime_stores_session or not workflow.patched(PATCH_ID):
            return None
        return await summarize_in_activity(self, self.sessions, ctx, before_model_call=True)

    def _fence_answer(self, answer: c.AnswerSlot | None) -> None:
        """Keep the answer id of a model call cancelled with the workflow (``unanswered``). Given
        None for a local activity: the worker cancels that at once, and eval trials, which call
        models locally, start over on a conflicting store."""
        if answer is not None and ends_cancelled():
            self.unanswered = answer.event_id

    def _commits_for(self, ctx: InvocationContext) -> tuple[list[Event], str | None]:
        if not ctx.runtime_stores_session:
            return [], None
        return self.sessions.take_commits(), self.sessions.commit_after()

    def _outgrown(self, ctx: InvocationContext) -> bool:
        """Past the run's history budget, at a point the invocation can resume from: a lone root
        LlmAgent on its own stored session, on no branch, with no partials being streamed. Its
        state between model calls is all in the store (the resumed run loads it); an agent tree's
        position (which sub-agent, which loop iteration) is not, so trees never stop here."""
        return (
            self.turn_history_limit is not None
            and workflow.info().get_current_history_length() >= self.turn_history_limit
            and ctx.runtime_stores_session
            and ctx.branch is None
            and ctx.agent is ctx.root_agent
            and not ctx.agent.sub_agents
            and self.turn_stream is None
        )

    # --- model ------------------------------------------------------------------------------
    async def generate_content(
        self, model: Model, request: LlmRequest, *, stream: bool, ctx: InvocationContext
    ) -> AsyncIterator[LlmResponse]:
        stop_if_cancelled()  # a cancellation some handler took for a failure ends the turn here
        if self._outgrown(ctx):
            # Before anything is scheduled: the call is made again where the invocation resumes.
            raise TurnOutgrewRun(TurnContinuation(
                invocation_id=ctx.invocation_id, llm_calls=ctx.llm_calls_made - 1, user_content=ctx.user_content,
            ))
        commits, after = self._commits_for(ctx)
        answer = self._answer_slot(ctx, stream)
        call = c.ModelCallInput(
            app_name=self.app_name,
            agent_name=ctx.agent.name,
            key=self.sessions.key,
            request=by_reference(request),
            stream=stream,
            stream_to=self.turn_stream.target(ctx) if stream and self.turn_stream else None,
            commit=commits,
            commit_after=after,
            answer=answer,
            defer_commit=self._defers(ctx, commits, after, answer),
        )
        self._deferring = call.defer_commit
        execution = ctx.agent.execution
        options: dict[str, Any] = dict(
            result_type=c.ModelCallResult,
            start_to_close_timeout=execution.model_timeout,
            retry_policy=retry_policy(execution.model_retry),
            summary=model_call_summary(ctx.agent.name, model.name, request, ctx.user_content),
        )
        local = self.model_calls_local and execution.model_task_queue is None
        fenced = None if local else answer  # what a cancellation of this call fences (_fence_answer)
        try:
            if local:
                result = await workflow.execute_local_activity(c.GENERATE_CONTENT, call, **options)
            else:
                result = await workflow.execute_activity(
                    c.GENERATE_CONTENT, call, heartbeat_timeout=execution.model_heartbeat_timeout,
                    task_queue=execution.model_task_queue, **options,
                )
        except asyncio.CancelledError:
            self._fence_answer(fenced)
            raise
        except ACTIVITY_FAILURES as e:  # a local activity's failure comes bare (services.ACTIVITY_FAILURES)
            if cancelled_call(e):  # raise_if_cancelled, with the answer fenced first
                self._fence_answer(fenced)
                stop_if_cancelled()
            self.sessions.check_lost_task(e)  # its ride-along commit met a lost task's events
            raise _model_error(e) from None
        self.sessions.acknowledge(commits[: result.stored_commits])
        for index, response in enumerate(result.responses):
            if answer is not None and index == 0:
                # The event for it takes the id the call was given (and, stored, its timestamp).
                stored_at = answer.timestamp if result.answer_stored else None
                self._stamps[id(response)] = (response, answer.event_id, stored_at)
                if result.answer_stored:
                    self.sessions.stored_ahead[answer.event_id] = answer_event(
                        response, event_id=answer.event_id, timestamp=answer.timestamp,
                        invocation_id=answer.invocation_id, author=answer.author, branch=answer.branch,
                    )
            try:
                yield response
            finally:
                self._stamps.pop(id(response), None)

    def model_event_stamp(self, response: LlmResponse) -> tuple[str, float] | None:
        entry = self._stamps.pop(id(response), None)
        if entry is None or entry[0] is not response:
            return None
        _, event_id, stored_at = entry
        return event_id, stored_at if stored_at is not None else self.now()

    def _defers(self, ctx: InvocationContext, commits: list[Event], after: str | None,
                answer: c.AnswerSlot | None) -> bool:
        """Whether the call may leave its events unstored unless it stores the answer (ModelCallInput.
        defer_commit): a turn's events then reach the store in one write, with its answer, instead
        of one write per model call. Only while few and recent (DEFER_MAX_EVENTS, DEFER_MAX_AGE_S):
        a long turn's events are stored as it goes, the way readers of the session expect them.
        And only for a turn's first events: deferring again after that write would make every later
        call carry up to DEFER_MAX_EVENTS events, doubling a long turn's history for no time saved
        (docs/scaling.md, "Long turns")."""
        if answer is None or after is None or not commits or self.app_compacts:
            return False
        if len(commits) > DEFER_MAX_EVENTS or self.now() - commits[0].timestamp > DEFER_MAX_AGE_S:
            self._outgrew_deferring = ctx.invocation_id
            return False
        # The patch is asked only in a turn that outgrew its write: other histories stay as they were.
        return not (self._outgrew_deferring == ctx.invocation_id and workflow.patched(DEFER_ONCE_A_TURN_PATCH))

    def _answer_slot(self, ctx: InvocationContext, stream: bool) -> c.AnswerSlot | None:
        """Where the call stores its response, when that is the agent's answer: the event the engine
        makes of it is then known exactly (nothing can change it), and the turn needs no commit of
        its own after the call, a local activity less in its last workflow task. Not for a streamed
        or followed turn (its stream gets the committed answer from that commit), local model calls
        (eval trials leave their last events to ride along), or a branch of a parallel agent (other
        branches' events interleave with the answer)."""
        agent = ctx.agent
        if (
            stream or self.turn_stream is not None or self.model_calls_local or not ctx.runtime_stores_session
            or ctx.branch is not None
            or getattr(agent, "before_model_callback", None) or getattr(agent, "after_model_callback", None)
            or getattr(agent, "output_key", None)
            or any(ctx.plugin_manager.has(name) for name in _ANSWER_CHANGERS)
            or not workflow.patched(ANSWER_STORED_BY_CALL_PATCH)
        ):
            return None
        return c.AnswerSlot(event_id=self.new_id(), timestamp=self.now(), invocation_id=ctx.invocation_id,
                            author=agent.name, last_attempt=agent.execution.model_retry.maximum_attempts)

    # --- tools ------------------------------------------------------------------------------
    async def run_tool(self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> Any:
        stop_if_cancelled()
        execution = (self._tool_execution(tool) if self._tool_execution else tool.execution) or DEFAULT_TOOL_EXECUTION
        if runs_in_workflow(tool):
            if isinstance(tool, AgentTool) and tool.agent.execution.child_workflow:
                return await self._run_agent_tool_as_child(tool, args, tool_context)
            return await tool.run_async(args=args, tool_context=tool_context)
        ctx = tool_context.invocation_context
        commits, after = ([], None) if self._deferring else self._commits_for(ctx)
        call = c.ToolCallInput(
            app_name=self.app_name,
            agent_name=ctx.agent.name,
            tool_name=tool.name,
            args=args,
            function_call_id=tool_context.function_call_id,
            invocation_id=ctx.invocation_id,
            branch=ctx.branch,
            key=self.sessions.key,
            state=_state_for_activity(tool_context.state.to_dict(), tool.name),
            user_content=ctx.user_content,
            tool_confirmation=tool_context.tool_confirmation,
            retry_errors=execution.retry_errors,
            commit=commits,
            commit_after=after,
        )
        options: dict[str, Any] = dict(
            result_type=c.ToolCallResult,
            start_to_close_timeout=execution.start_to_close_timeout,
            schedule_to_close_timeout=execution.schedule_to_close_timeout,
            retry_policy=retry_policy(execution.retry),
            summary=f"{ctx.agent.name} -> {tool.name}",
        )
        try:
            if execution.mode == "local_activity":
                result = await workflow.execute_local_activity(c.RUN_TOOL, call, **options)
            else:
                result = await workflow.execute_activity(
                    c.RUN_TOOL, call, task_queue=execution.task_queue, heartbeat_timeout=execution.heartbeat_timeout,
                    **options,
                )
        except ACTIVITY_FAILURES as e:  # a local activity's failure comes bare (services.ACTIVITY_FAILURES)
            raise_if_cancelled(e)
            cause = failure_of(e)
            if isinstance(cause, ApplicationError):
                # A tool that raised with retry_errors on: the details say where its class lives.
                origin = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
                raise RemoteError(
                    cause.message, error_type=cause.type or "ApplicationError",
                    error_class=origin.get("error_class"), error_args=origin.get("error_args"),
                ) from None
            raise RemoteError(str(cause or e), error_type=type(cause or e).__name__) from None
        self.sessions.acknowledge(commits[: result.stored_commits])
        tool_context.actions.merge(result.actions)
        if result.error_type is not None:
            # The engine rebuilds the tool's own exception class from this for on_tool_error callbacks.
            raise RemoteError(
                result.error_message or "", error_type=result.error_type,
                error_class=result.error_class, error_args=result.error_args,
            )
        return result.response

    async def run_sync(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        # Workflow code may not start threads; a sync tool running inline is pure and short by contract.
        return fn(*args, **kwargs)

    async def _run_agent_tool_as_child(self, tool: AgentTool, args: dict[str, Any], tool_context: ToolContext) -> Any:
        from .agent_run import AgentToolWorkflow  # noqa: PLC0415  (cycle: the child workflow uses this runtime)

        ctx = tool_context.invocation_context
        await self.sessions.flush()
        child = workflow.execute_child_workflow(
            AgentToolWorkflow.run,
            AgentToolInput(
                app_name=self.app_name,
                agent_name=tool.agent.name,
                user_id=ctx.user_id,
                session_id=ctx.session.id,
                args=args,
                state={k: v for k, v in tool_context.state.to_dict().items() if not k.startswith("temp:")},
                max_llm_calls=ctx.run_config.max_llm_calls,
            ),
            id=f"{workflow.info().workflow_id}/tool/{tool_context.function_call_id}",
            static_summary=f"agent tool {tool.agent.name}",
            search_attributes=workflow.info().typed_search_attributes,  # listed with its parent (AdkApp, AdkUser)
        )
        try:
            result = await _child_result(child)
        except ChildWorkflowError as e:
            cause = e.cause
            if not isinstance(cause, ApplicationError):
                raise
            # The agent's own error, as the model would read it from the agent run inline (not
            # "Child Workflow execution failed").
            raise RemoteError(cause.message, error_type=cause.type or "ApplicationError") from None
        if tool.skip_summarization:
            tool_context.actions.skip_summarization = True
        for key, value in result.state_delta.items():
            tool_context.state[key] = value
        return result.response

    # --- waiting for people -----------------------------------------------------------------
    async def wait_for(self, kind: str, key: str, ctx: InvocationContext) -> Any | None:
        if kind == SIMULATOR_WAIT:
            return await self.simulator.wait(key)
        if self._waiter is None:
            return None  # the run ends; the invoker counts the question still pending at its end
        if self._deferring and workflow.patched(FLUSH_BEFORE_WAIT_PATCH):
            # A person may take days to answer: the turn's events, left unstored by its model calls
            # (ModelCallInput.defer_commit), go to the store before the wait, where readers see them.
            self._deferring = False
            await self.sessions.flush()
        labels = {"app": self.app_name, "agent": ctx.root_agent.name, "kind": kind}
        asked = workflow.now()
        self.metrics.waits_started.add(1, labels)
        answer = await self._waiter(kind, key)
        self.metrics.waits_answered.add(1, labels)
        self.metrics.wait_duration.record((workflow.now() - asked).total_seconds(), labels)
        return answer


_replay_safe: tuple[object, bool] = (object(), False)
_NO_SPAN = contextlib.nullcontext()


def _replay_safe_tracing() -> bool:
    """Whether the process traces with Temporal's ReplaySafeTracerProvider (kept per provider: asked
    for every span, and isinstance is slow in the sandbox)."""
    global _replay_safe
    provider = trace.get_tracer_provider()
    if provider is not _replay_safe[0]:
        _replay_safe = (provider, isinstance(provider, ReplaySafeTracerProvider))
    return _replay_safe[1]


def _state_for_activity(state: dict[str, Any], tool_name: str) -> dict[str, Any]:
    """The state snapshot a tool activity gets. It crosses a process boundary as JSON, so a value
    that is not JSON (typically a Python object kept under a temp: key) is refused here, with
    what to do, instead of failing the workflow task on serialization."""
    for key, value in state.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"state key {key!r} holds a {type(value).__name__}, which cannot reach tool {tool_name!r} "
                "running in an activity; keep state JSON (e.g. model.model_dump(mode='json')), or run the "
                "tool in the workflow with ToolExecution(mode='inline')"
            ) from None
    return state


def _model_error(error: ActivityFailure) -> Exception:
    """The ModelError the activity raised, rebuilt from the ApplicationError Temporal carried back."""
    cause = failure_of(error)
    if not isinstance(cause, ApplicationError):
        return ModelError(str(cause or error), retryable=True)
    details = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
    return ModelError(
        cause.message,
        status=details.get("status"),
        retryable=not cause.non_retryable,
        provider=details.get("provider") or "",
        error_type=cause.type,
    )


T = TypeVar("T")


async def _child_result(child: Awaitable[T]) -> T:
    """A child workflow's result; the workflow's own cancellation, which cancels the child, raised
    as such instead of a ChildWorkflowError the engine would take for the tool's or agent's failure."""
    try:
        return await child
    except ChildWorkflowError as e:
        raise_if_cancelled(e)
        raise


_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (4 << 76) | (0x8000 << 48)


def uuid4_text(rand: Random) -> str:
    """``str(workflow.uuid4())`` when given ``workflow.random()``: the same one draw of 128 bits and the
    same version and variant bits (uuid.UUID's), without building a UUID object (about 12 ids a W1
    turn, each a UUID whose constructor runs the sandbox's isinstance stand-in). Ids made by a run
    are in its history, so a replay must make them again exactly: tests/unit/test_uuid4_text.py."""
    text = f"{(rand.getrandbits(128) & _UUID4_CLEAR) | _UUID4_SET:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
