"""What both workflows do to run one invocation of the engine, and to find pending requests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from pydantic_core import to_json

    from adk_core.agents.base import new_event
    from adk_core.agents.context import InvocationContext
    from adk_core.agents.run_config import RunConfig
    from adk_core.compaction.planner import latest_compaction
    from adk_core.errors import ConfigurationError, InvalidInputError
    from adk_core.flow.functions import resumable_tail_start, unanswered_long_running_calls
    from adk_core.models.pricing import turn_usage
    from adk_core.runner import Runner
    from adk_core.sessions import Session
    from adk_core.types import REQUEST_CONFIRMATION_FUNCTION, Content, Event
    from adk_temporal.activities import contracts as c

    from ._compaction import compact_after_invocation
    from ._turn_stream import TurnStream
    from .app_scope import worker_apps
    from .contracts import PendingRequest, SessionWorkflowInput, TurnContinuation, session_workflow_id
    from .converter import encoded_already
    from .runtime import TemporalRuntime, Waiter
    from .services import (
        DurableArtifactService,
        DurableMemoryService,
        DurableSessionService,
        ends_cancelled,
    )


R = TypeVar("R", bound=BaseModel)

CANCELLED = "CancelledError"
CANCELLED_MESSAGE = "the turn was cancelled: its workflow was cancelled"
"""The error event a turn cancelled with its workflow ends with, and the reason its sender gets."""


class DurableInvoker:
    """Holds one session's durable services and runs invocations on it."""

    def __init__(self, app_name: str, user_id: str, session_id: str, *, waiter: Waiter | None = None) -> None:
        self.key = c.SessionKey(app_name=app_name, user_id=user_id, session_id=session_id)
        self.sessions = DurableSessionService(self.key)
        self.runtime = TemporalRuntime(app_name=app_name, sessions=self.sessions, waiter=waiter)
        self.session: Session | None = None
        app = worker_apps().get(app_name)
        self.runner = Runner(
            app=app,
            session_service=self.sessions,
            artifact_service=DurableArtifactService(self.key),
            memory_service=DurableMemoryService(self.key, self.sessions),
            runtime=self.runtime,
        )
        self.runtime.app_compacts = self.runner.events_compaction_config is not None
        self._uncompacted: InvocationContext | None = None
        """The invocation ``invoke(compact=False)`` finished, until ``compact_last``."""

    async def load(self, *, create: bool, initial_state: dict | None, tail_events: int = 20,
                   expect_new: bool = False) -> Session:  # fmt: skip
        result = await self.sessions.load(create_if_missing=create, initial_state=initial_state, tail_events=tail_events,
                                          expect_new=expect_new)  # fmt: skip
        session = result.session
        loaded = (session.app_name, session.user_id, session.id)
        own = (self.key.app_name, self.key.user_id, self.key.session_id)
        if loaded != own:
            # Never expected from a correct store; checked so that no bug can hand one user's
            # session to another's workflow.
            raise ApplicationError(
                f"the session store returned session {loaded!r} to the workflow of {own!r}; refusing to run",
                type="SessionOwnershipError",
                non_retryable=True,
            )
        self.session = session
        return session

    async def invoke(
        self, message: Content | None, *, state_delta: dict | None, max_llm_calls: int, events: list[Event],
        streaming_mode: str = "none", stream_id: str = "", continuation: TurnContinuation | None = None,
        flush: bool = True, compact: bool = True,
    ) -> str:
        """Run one invocation, appending its events to ``events`` as they come; returns its id.

        With ``streaming_mode`` "sse" the model calls stream and their partials go to ``stream_id``
        (activities/streaming.py), not into workflow history.

        With ``continuation``, the invocation an earlier run stopped (TurnOutgrewRun) goes on
        from the stored session instead: no new message, the same invocation id and model-call
        count. That raises TurnOutgrewRun (a BaseException) again when this run outgrows its
        history budget; the caller stores what is queued and continues elsewhere.

        Engine errors fail the invocation with an ApplicationError naming the error type, after
        the events made so far are stored.

        Without ``flush``, the invocation's last events stay queued (``sessions.unacked``) for the
        caller to store, or to ride along with the session's next model call (eval trials).

        Without ``compact``, a compaction due after the invocation is left to ``compact_last``, for a
        caller that answers first (SessionWorkflow).
        """
        assert self.session is not None, "load() first"
        self._uncompacted = None
        streams = streaming_mode == "sse" and bool(stream_id)
        ctx = self.runner.new_invocation_context(
            self.session, run_config=RunConfig(max_llm_calls=max_llm_calls, streaming_mode="sse" if streams else "none"),
            invocation_id=continuation.invocation_id if continuation else None,
        )
        if continuation is not None:
            ctx.user_content = continuation.user_content
            ctx.resume_llm_calls(continuation.llm_calls)
            message, state_delta = None, None
        self.runtime.turn_stream = TurnStream(stream_id, events, self.sessions) if streams else None
        labels = {"app": self.key.app_name, "agent": ctx.root_agent.name}
        started, first_event, waiting = workflow.now(), len(events), _waits(self.session.events)
        if continuation is None:  # a continued turn was counted by the run that started it
            self.runtime.metrics.started.add(1, labels)
        try:
            async for event in self.runner.run_invocation(ctx, message, state_delta):
                events.append(event)
            if flush:
                await self.sessions.flush(self.runtime.turn_stream)
        except asyncio.CancelledError:
            # The workflow is being cancelled (Temporal delivers that once, so the store still runs):
            # the turn ends like a failed one, its events and an error event stored, then the run ends.
            if not ends_cancelled():
                raise  # an inner task cancelled by its owner, not the workflow: as before
            await self._store_error(ctx, events, CANCELLED, CANCELLED_MESSAGE, event_id=self.runtime.unanswered)
            self._count_turn(labels, started, events[first_event:], waiting, error_type=CANCELLED)
            raise
        except Exception as e:  # noqa: BLE001  (reported below, with the reason stored)
            error_type = failure_type(e)
            # Stored as the error event's text: no NUL, which Postgres refuses.
            error_message = failure_message(e).replace("\x00", "\\x00")
            await self._store_error(ctx, events, error_type, error_message)
            self._count_turn(labels, started, events[first_event:], waiting, error_type=error_type)
            raise ApplicationError(error_message, type=error_type, non_retryable=True) from e
        self._count_turn(labels, started, events[first_event:], waiting, error_type=None)
        if compact:
            await compact_after_invocation(self.runner, self.runtime, self.sessions, ctx)
        else:
            self._uncompacted = ctx
        return ctx.invocation_id

    async def compact_last(self) -> None:
        """The compaction ``invoke(compact=False)`` left, if one is due; nothing when that invocation
        did not finish here (it failed, or went on in a long turn's child, which compacts itself)."""
        ctx, self._uncompacted = self._uncompacted, None
        if ctx is not None:
            await compact_after_invocation(self.runner, self.runtime, self.sessions, ctx)

    def _count_turn(self, labels: dict[str, str], started: datetime, events: list[Event],
                    waiting_before: dict[str, tuple[str, float]], *, error_type: str | None) -> None:
        """A finished turn into the metrics: its outcome, latency and cost, and the questions to a
        person it asked (confirmations, long-running tools) or answered. Workflow time, so the
        latency of a turn is what its history says, on first run and never again on replay."""
        metrics, now = self.runtime.metrics, workflow.now()
        if error_type is None:
            metrics.completed.add(1, labels)
        else:
            metrics.failed.add(1, {**labels, "error_type": error_type})
        metrics.duration.record((now - started).total_seconds(), labels)
        cost = turn_usage(events).cost_usd
        if cost is not None:
            metrics.cost.record(cost, labels)
        waiting = _waits(self.session.events if self.session is not None else [])
        for call_id, (kind, _) in waiting.items():
            if call_id not in waiting_before:
                metrics.waits_started.add(1, {**labels, "kind": kind})
        for call_id, (kind, asked_at) in waiting_before.items():
            if call_id not in waiting:
                metrics.waits_answered.add(1, {**labels, "kind": kind})
                metrics.wait_duration.record(max(0.0, now.timestamp() - asked_at), {**labels, "kind": kind})

    async def _store_error(self, ctx: InvocationContext, events: list[Event], error_type: str, error_message: str,
                           *, event_id: str | None = None) -> None:
        """End a failed invocation with an error event (unless the engine already stored one saying
        why), so the session records why the turn stopped; then store everything made so far.
        ``event_id``: the id the error event takes (TemporalRuntime.unanswered), instead of a new one.

        When that cannot be stored (an event the store refuses, e.g. a NUL in a tool's output),
        the unstored events are dropped and the session is read back from the store, so the
        next turn starts from what is stored instead of failing on the same events forever."""
        last = events[-1] if events else None
        if last is None or last.error_code is None:
            event = new_event(ctx, author=ctx.agent.name, error_code=error_type, error_message=error_message[:4000])
            if event_id is not None:
                event = event.model_copy(update={"id": event_id})
            event = await self.runtime.commit(ctx, event)
            events.append(event)
        try:
            await self.sessions.flush()
            return
        except Exception as flush_error:
            if not _refused_by_store(flush_error):
                raise  # not about the data: the events stay queued for the next commit
            log_warning(f"a failed turn's events could not be stored ({flush_error}); reloading the session")
        # The store refuses these events (e.g. a NUL in a tool's output): drop them and read the
        # session back, so the next turn starts from what is stored instead of failing forever.
        self.sessions.unacked.clear()
        try:
            session = await self.load(create=False, initial_state=None)
            error = new_event(ctx, author=ctx.agent.name, error_code=error_type, error_message=error_message[:4000])
            await self.sessions.append_event(session, error)
            await self.sessions.flush()
        except Exception as reload_error:  # noqa: BLE001  (the turn's own error is the one to report)
            log_warning(f"could not store the error event of a failed turn: {reload_error}")

    async def stored_events_of(self, invocation_id: str, *, look_back: int) -> list[Event]:
        """The events one invocation made, as its turn returned them (the user's message is not
        among them), read from the session's last ``look_back`` stored events."""
        return [
            e for e in await self.sessions.read_recent(look_back) if e.invocation_id == invocation_id and e.author != "user"
        ]

    def trim(self, keep: int = 200) -> None:
        """Between turns, the workflow's session copy goes back to what a fresh load brings: the
        part a new invocation reads (``resumable_tail_start``), at most ``keep`` events. The rest
        stays in the store and reaches models by reference. Every model call builds the contents of
        the loaded events, so a copy that grew with the conversation made each turn cost more CPU
        in the workflow than the last."""
        events = self.session.events if self.session is not None else []
        start = resumable_tail_start(events)
        if self.runner.events_compaction_config is not None:
            # Whether a compaction is due is read from the loaded events (workflows/_compaction.py):
            # keep the latest compaction and what follows it, or the whole session before the first.
            index, latest = latest_compaction(events)
            if latest is not None:
                start = min(start, index)
            elif self.sessions.unloaded_through is None:
                start = 0
        start = max(start, len(events) - keep)
        if self.sessions.unacked:
            # A reference can only stand for stored events: the queued ones stay loaded.
            queued = {e.id for e in self.sessions.unacked}
            start = min(start, next((i for i, e in enumerate(events) if e.id in queued), start))
        if start > 0:
            self.sessions.unloaded_through = events[start - 1].id
            del events[:start]


RESULT_EVENT_BYTES = 128 * 1024
"""At most this much of a turn's events (as JSON) travels in its result; a turn of thousands of
tool calls returns its newest events and how many it left out (all of them are stored)."""


def result_within_budget(make: Callable[[list[Event], int], R], events: list[Event]) -> tuple[R, bytes]:
    """``make(events, 0)`` (a turn's or a run's result) and its JSON, when that fits RESULT_EVENT_BYTES:
    nearly every turn, one encode where measuring the events and sending the result took two, and
    the payload converter sends these bytes (``encoded_already``). Else ``make`` of the newest events
    that fit (``bounded_tail``) and how many it leaves out. The JSON is what our converter sends."""
    result = make(events, 0)
    data = to_json(result, exclude_none=True)
    if len(data) > RESULT_EVENT_BYTES:
        kept, left_out = bounded_tail(events, RESULT_EVENT_BYTES)
        if left_out:
            result = make(kept, left_out)
            data = to_json(result, exclude_none=True)
    encoded_already(result, data)
    return result, data


def bounded_tail(events: list[Event], budget: int = RESULT_EVENT_BYTES) -> tuple[list[Event], int]:
    """The newest ``events`` that fit ``budget`` bytes of JSON, and how many older ones are left out.
    The newest event is always kept (the final answer; a large one travels out of band)."""
    if len(to_json(events, exclude_none=True)) <= budget:  # nearly every turn: one encode, not one an event
        return events, 0
    total = 0
    for index in range(len(events) - 1, -1, -1):
        total += len(to_json(events[index], exclude_none=True))
        if total > budget and index < len(events) - 1:
            return events[index + 1:], index + 1
    return events, 0


def pending_requests(events: list[Event]) -> list[PendingRequest]:
    """Long-running calls (tool confirmations included) that no reply has answered yet.

    Only a user's function response answers: a long-running tool's own first result (say
    ``{"status": "pending", "ticket": ...}``) carries the same call id but is not the answer.
    """
    pending: list[PendingRequest] = []
    for _, event, call in unanswered_long_running_calls(events):
        if call.name == REQUEST_CONFIRMATION_FUNCTION:
            original = call.args.get("originalFunctionCall", {})
            confirmation = call.args.get("toolConfirmation", {})
            pending.append(
                PendingRequest(
                    kind="tool_confirmation", call_id=call.id or "", name=original.get("name", ""),
                    args=original.get("args", {}), hint=confirmation.get("hint", ""), agent=event.author,
                )
            )
        else:
            pending.append(
                PendingRequest(kind="long_running_tool", call_id=call.id or "", name=call.name, args=call.args,
                               agent=event.author)
            )
    return pending


def _waits(events: list[Event]) -> dict[str, tuple[str, float]]:
    """The unanswered questions to a person among ``events``: call id -> (kind, when asked)."""
    return {
        call.id or "": ("tool_confirmation" if call.name == REQUEST_CONFIRMATION_FUNCTION else "long_running_tool",
                        event.timestamp)
        for _, event, call in unanswered_long_running_calls(events)
    }


def reply_content(call_id: str, pending: list[PendingRequest], response: dict) -> Content:
    """The user message that answers a pending request (ADK's function-response pattern)."""
    from adk_core.types import Part

    request = next(p for p in pending if p.call_id == call_id)
    name = REQUEST_CONFIRMATION_FUNCTION if request.kind == "tool_confirmation" else request.name
    return Content(role="user", parts=[Part.from_function_response(name, response, id=call_id)])


def check_reply(call_id: str, pending: list[PendingRequest]) -> None:
    if not any(p.call_id == call_id for p in pending):
        known = ", ".join(p.call_id for p in pending) or "none"
        raise ValueError(f"no pending request has call id {call_id!r}; pending call ids: {known}")


def _refused_by_store(error: Exception) -> bool:
    """Whether the store refused the data itself (a non-retryable error), not just failed to answer.
    A failed local activity surfaces as its ApplicationError, a regular one wrapped in ActivityError."""
    cause = error.cause if isinstance(error, ActivityError) else error
    return isinstance(cause, ApplicationError) and cause.non_retryable


def log_warning(message: str) -> None:
    """Log from workflow code. Always one preformatted string: Temporal's workflow logger appends
    the workflow's info (its id among it) to the message before %-formatting, so with arguments an
    id holding '%' (every escaped '/') breaks the formatting, and under pytest the workflow task."""
    workflow.logger.warning(message)


def failure_type(error: Exception) -> str:
    """The type a failed turn reports: an ApplicationError's own, or that of the failure a model error,
    an activity or a child workflow carries."""
    if isinstance(error, ApplicationError) and error.type:
        return error.type
    carried = getattr(error, "error_type", None)  # ModelError / RemoteError rebuilt from an activity
    if isinstance(carried, str) and carried:
        return carried
    cause = getattr(error, "cause", None)  # ActivityError / ChildWorkflowError carry the real one
    if isinstance(cause, ApplicationError) and cause.type:
        return cause.type
    return type(error).__name__


def child_failure(error: Exception) -> ApplicationError:
    """What a child workflow (a ParallelAgent branch, an AgentTool) raises for an error of its own code
    that is not an AdkError (a callback's RuntimeError): a failure of the run, which its parent hears.
    Raised as it is, it would fail the workflow task, which Temporal retries without end, and the
    parent's turn would wait for good."""
    return ApplicationError(failure_message(error), type=failure_type(error), non_retryable=True)


def failure_message(error: Exception) -> str:
    """The message a failed turn reports (a failed child workflow: its own reason)."""
    if isinstance(error, ApplicationError):
        return error.message
    cause = getattr(error, "cause", None)  # a failed child workflow: its own reason, not "execution failed"
    if isinstance(error, ChildWorkflowError) and isinstance(cause, ApplicationError) and cause.message:
        return cause.message
    return str(error)


def session_refusal(input: SessionWorkflowInput, workflow_id: str) -> str | None:
    """Why a SessionWorkflow must not run for ``input`` under ``workflow_id``, or None."""
    try:
        expected = session_workflow_id(input.app_name, input.user_id, input.session_id)
    except InvalidInputError as e:
        return str(e)
    if workflow_id != expected:
        return (
            f"a SessionWorkflow for app {input.app_name!r}, user {input.user_id!r}, session {input.session_id!r} "
            f"must have the workflow id {expected!r} (one workflow per session), not {workflow_id!r}; start it "
            "with AdkClient, or use that id with the temporal CLI"
        )
    renew = input.renew_idle_run_after_seconds
    if renew is not None and not renew > 0:
        return (
            f"renew_idle_run_after_seconds is {renew!r}; give the seconds a conversation with a long run waits "
            "idle before it continues as new (above 0), or null never to renew"
        )
    try:
        worker_apps().get(input.app_name)
    except ConfigurationError as e:
        return str(e)
    return None
