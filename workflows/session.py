"""SessionWorkflow: one conversation. Messages arrive by Update (update-with-start creates the
workflow), run one at a time, and their events come back as the update's result.

Continue-as-new happens between invocations when Temporal suggests it, carrying only the
session key: the conversation itself lives in the session store. An idle conversation ends;
the next message starts it again.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from adk_core.errors import AdkError
    from adk_core.types import Event

    from ._invocation import DurableInvoker, check_reply, pending_requests, reply_content
    from .contracts import PendingRequest, Reply, SendMessage, SessionWorkflowInput, TurnResult, final_text


@workflow.defn(name="SessionWorkflow", failure_exception_types=[AdkError])
class SessionWorkflow:
    @workflow.init
    def __init__(self, input: SessionWorkflowInput) -> None:
        self._input = input
        self._invoker = DurableInvoker(input.app_name, input.user_id, input.session_id)
        self._lock = asyncio.Lock()
        self._loaded = False
        self._busy = False
        self._turn_events: list[Event] = []
        self._turns = 0
        self._last_activity = workflow.now()

    @workflow.run
    async def run(self, input: SessionWorkflowInput) -> None:
        await self._ensure_loaded()
        idle = timedelta(seconds=input.idle_timeout_seconds)
        while True:
            self._last_activity = workflow.now()
            try:
                await workflow.wait_condition(lambda: self._busy or self._should_continue_as_new(), timeout=idle)
            except TimeoutError:
                if self._busy or not workflow.all_handlers_finished():
                    continue
                break
            if self._should_continue_as_new():
                await workflow.wait_condition(lambda: not self._busy and workflow.all_handlers_finished())
                await self._invoker.sessions.flush()
                workflow.continue_as_new(input)
            await workflow.wait_condition(lambda: not self._busy)
        await workflow.wait_condition(workflow.all_handlers_finished)

    def _should_continue_as_new(self) -> bool:
        limit = self._input.max_turns_per_run
        return workflow.info().is_continue_as_new_suggested() or (limit is not None and self._turns >= limit)

    async def _ensure_loaded(self) -> None:
        async with self._lock:
            if not self._loaded:
                await self._invoker.load(create=True, initial_state=self._input.initial_state)
                self._loaded = True

    @workflow.update
    async def send_message(self, message: SendMessage) -> TurnResult:
        await self._ensure_loaded()
        async with self._lock:
            self._busy = True
            self._turn_events = []
            try:
                invocation_id = await self._invoker.invoke(
                    message.message,
                    state_delta=message.state_delta,
                    max_llm_calls=message.max_llm_calls,
                    events=self._turn_events,
                )
            finally:
                self._turns += 1
                self._busy = False
                self._invoker.trim()
        return TurnResult(invocation_id=invocation_id, events=self._turn_events, final_text=final_text(self._turn_events))

    @workflow.update
    async def reply(self, reply: Reply) -> TurnResult:
        """Answer a pending confirmation or long-running tool; the conversation continues."""
        await self._ensure_loaded()
        try:
            check_reply(reply.call_id, self.pending())
        except ValueError as e:
            raise ApplicationError(str(e), type="UnknownCallId", non_retryable=True) from None
        content = reply_content(reply.call_id, self.pending(), reply.response)
        return await self.send_message(SendMessage(message=content))

    @reply.validator
    def _check_reply(self, reply: Reply) -> None:
        if not self._loaded:
            return  # validated again against the loaded session by reply_content
        check_reply(reply.call_id, self.pending())

    @workflow.query
    def pending(self) -> list[PendingRequest]:
        session = self._invoker.session
        return pending_requests(session.events if session else [])

    @workflow.query
    def events(self, after: int = 0) -> list[Event]:
        """Events of the current (or last) turn from index ``after`` on, for streaming clients."""
        return self._turn_events[after:]


