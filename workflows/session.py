"""SessionWorkflow: one conversation.

Messages join a FIFO queue that the run loop works through one turn at a time. A message
arrives by Update (``send_message``, update-with-start creates the workflow), which waits for
its turn's result: one round trip. Temporal allows only ten in-flight updates per workflow, so
when a conversation is that busy clients queue further messages by signal (``queue_message``,
durable the moment it is accepted, no limit) and follow their turn with the ``turn`` query.
Updates therefore never complete in the task that accepts them (except a repeated message id):
that pattern, under many concurrent updates, broke the SDK's update state machine on replay.
Every message has an id (the client's idempotency key): sending the same id again returns the
first turn's result.

Continue-as-new happens between turns, when the queue is empty and Temporal suggests it,
carrying the session key and the recent turns: the conversation itself lives in the session
store. An idle conversation ends; the next message starts it again.

On versioned workers (docs/versioning.md) a run is pinned to the version it started on, so a turn
always finishes on the code that began it. When Temporal says the target version changed, the
conversation moves at its next turn boundary: it continues-as-new with AUTO_UPGRADE, carrying the
messages not yet run, so the next turn runs the new version's code.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from adk_core.errors import AdkError
    from adk_core.types import Content, Event
    from adk_temporal.activities.streaming import turn_stream_id

    from ._invocation import (
        CANCELLED,
        CANCELLED_MESSAGE,
        DurableInvoker,
        bounded_tail,
        check_reply,
        failure_message,
        failure_type,
        log_warning,
        pending_requests,
        reply_content,
        result_within_budget,
        session_refusal,
    )
    from ._outcomes import KeptOutcomes
    from ._simulator import SUBMIT_DECISION, SimulatorDecision
    from .agent_run import AgentRunWorkflow
    from .contracts import (
        AgentRunInput,
        AgentRunResult,
        CarriedTurns,
        PendingRequest,
        Reply,
        SendMessage,
        SessionWorkflowInput,
        TurnContinuation,
        TurnFailure,
        TurnOutcome,
        TurnQuery,
        TurnResult,
        TurnStatus,
        final_text,
    )
    from .runtime import TurnOutgrewRun
    from .services import END_CANCELLED_TURN_PATCH, ends_cancelled, stop_if_cancelled
    from .summaries import turn_details

KEEP_OUTCOMES = 200
"""Finished turns kept in full (as JSON: workflows/_outcomes.py), for repeated message ids and clients
following queued turns."""
KEEP_DONE_IDS = 2000
"""Message ids remembered (with their invocation id) for idempotency."""
KEEP_FAILED_IDS = 200
"""Ids of failed turns remembered (with why), across runs, so a failed message sent again is not run again."""
FAILURE_MESSAGE_CHARS = 1000
"""How much of a remembered failure's message is kept (the next run's input is one payload)."""
CARRY_OUTCOMES = 4
"""Finished turns handed in full to the next run at continue-as-new (the rest by id only): the
newest few, which a client following a turn may still ask about. A repeated message whose turn
is not carried gets its events read back from the store (``_stored_result``). Each carried W1
turn is about 4.5 KB of events, which the next run decodes before it can take a message: twenty
of them cost 15-20 ms of workflow CPU at every continue-as-new."""
CARRY_BYTES = 256 * 1024
"""...and at most this much of them (JSON), so the next run's input stays well under 512 KB."""
TURN_HISTORY_EVENTS = 4000
"""A turn still running when this run's history holds this many events goes on in a child
workflow (``_finish_in_child``), far below Temporal's 10,240-event warning."""
STORED_RESULT_LOOK_BACK = 1000
"""How far back in the stored session a repeated message's events are looked for."""
IDLE_CLOCK_PATCH = "idle-clock-one-timer"
"""Runs started before IdleClock's single timer replay with a timer per wait (workflow.patched)."""
RENEW_IDLE_RUN_PATCH = "renew-idle-run"
"""The idle clock wakes a long run once it has been idle ``renew_idle_run_after_seconds`` (asked when
a run first grows long): a run from before slept through to its idle timeout."""
RENEW_MIN_HISTORY_EVENTS = 200
"""A run renews itself when idle only from this many history events (about four W1 turns): below,
the replay a cold worker makes of it for the next message is already short."""
COMPACT_AFTER_REPLY_PATCH = "compact-after-the-reply"
"""A compacting app's turn answers its sender before the compaction it makes due is written (the
next message waits for it). Asked only by apps that compact; a history recorded before, which
wrote the compaction first, replays that way."""
REMEMBER_FAILED_PATCH = "remember-failed-turns"
"""A failed turn's message id is remembered beside the done ones and carried at continue-as-new
(asked only when a turn fails): a history recorded before kept it among the outcomes alone."""
REPLY_WAITS_FOR_LOAD_PATCH = "reply-waits-for-load"
"""A reply signalled before the run loaded its session waits for the load, then is checked (asked
only then): a history recorded before refused it as "still loading"."""
HANDLERS_GRACE = timedelta(seconds=10)
"""How long a cancelled conversation waits for its update handlers to answer their senders, and for
a long turn's child, cancelled with it, to store what it made (_cancellable_long_turn)."""


class _Alarm:
    """Rings once the conversation has been idle ``period`` (IdleClock._ring); a restart silences it."""

    __slots__ = ("period", "rung")

    def __init__(self, period: timedelta) -> None:
        self.period = period
        self.rung = False


class IdleClock:
    """Ends a conversation that has had nothing to do for ``idle``.

    Waiting with ``wait_condition(timeout=idle)`` starts a Temporal timer for every wait and
    cancels it when the next message arrives: two commands and two history events per turn. This
    clock keeps one timer running instead: when it fires, it expires only if the conversation has
    been idle for the whole period (since the last ``restart``), and otherwise sleeps for the rest.
    A conversation that is never idle that long costs one timer per ``idle`` period, not per turn.

    With ``renew``, once the run is long enough to make a cold replay costly
    (RENEW_MIN_HISTORY_EVENTS, checked as each wait begins), a second timer of the same kind wakes
    it when it has been idle ``renew``: ``renew_due`` is set, and the workflow continues as new,
    carrying ``since``. A short run (most) never starts it.
    """

    def __init__(self, idle: timedelta, *, one_timer: bool, renew: timedelta | None = None,
                 since: datetime | None = None) -> None:
        self._one_timer = one_timer
        self._expiry = _Alarm(idle)
        self._renewal = _Alarm(renew) if one_timer and renew is not None and renew < idle else None
        self.since = since or workflow.now()
        """When idleness began: the last ``restart``, or the previous run's (carried)."""
        self._waiting = False
        self._timers: list[asyncio.Task[None]] = []

    @property
    def renew_due(self) -> bool:
        return self._renewal is not None and self._renewal.rung

    async def wait(self, ready: Callable[[], bool]) -> bool:
        """Until ``ready()``: True; or until idle for the whole period: False (the clock restarts)."""
        if not self._one_timer:  # replaying a run that started before this clock
            try:
                await workflow.wait_condition(ready, timeout=self._expiry.period)
                return True
            except TimeoutError:
                return False
        if not self._timers:
            self._timers.append(asyncio.create_task(self._ring(self._expiry)))
        if self._renewal is not None and len(self._timers) == 1 and _long_run():
            # Checked once a wait (a turn), not at every step of the workflow's event loop.
            self._timers.append(asyncio.create_task(self._renew_when_idle(self._renewal)))
        self._waiting = True
        try:
            await workflow.wait_condition(lambda: ready() or self._expiry.rung)
        finally:
            self._waiting = False
        if ready():
            return True
        self.restart()
        return False

    def restart(self) -> None:
        """Count idleness from now (a turn just ended)."""
        self.since = workflow.now()
        self._expiry.rung = False
        if self._renewal is not None:
            self._renewal.rung = False

    def stop(self) -> None:
        for timer in self._timers:
            if not timer.done():
                timer.cancel()
        self._timers = []

    async def _ring(self, alarm: _Alarm) -> None:
        """One timer for ``alarm``: when it fires, the alarm rings if the conversation has been idle
        its whole period and is waiting; otherwise it sleeps for the rest, or until the turn ends."""
        while True:
            await workflow.wait_condition(lambda: not alarm.rung)
            left = self.since + alarm.period - workflow.now()
            if left > timedelta(0):
                await workflow.sleep(left)
            elif self._waiting:
                alarm.rung = True
            else:  # a turn is running: idleness starts when it ends
                await workflow.wait_condition(lambda: self._waiting)

    async def _renew_when_idle(self, renewal: _Alarm) -> None:
        # Started with no command before the patch is asked: a run recorded before replays unchanged.
        if workflow.patched(RENEW_IDLE_RUN_PATCH):
            await self._ring(renewal)


def _long_run() -> bool:
    return workflow.info().get_current_history_length() >= RENEW_MIN_HISTORY_EVENTS


@workflow.defn(name="SessionWorkflow", failure_exception_types=[AdkError])
class SessionWorkflow:
    @workflow.init
    def __init__(self, input: SessionWorkflowInput) -> None:
        self._input = input
        # Checked before anything runs: a workflow refuses ids that break the id rule, a
        # workflow id that is not its session's (two workflows would own one session), and an
        # app this worker does not serve. Updates are rejected with the reason; run() fails.
        self._refusal = session_refusal(input, workflow.info().workflow_id)
        self._invoker = None if self._refusal else DurableInvoker(input.app_name, input.user_id, input.session_id)
        if self._invoker is not None:
            self._invoker.runtime.turn_history_limit = TURN_HISTORY_EVENTS
        self._loaded = False
        self._queue: deque[SendMessage] = deque()
        self._running: SendMessage | None = None
        self._turn_events: list[Event] = []
        self._outcomes = KeptOutcomes(KEEP_OUTCOMES)
        self._done: OrderedDict[str, str] = OrderedDict()
        self._failed: OrderedDict[str, TurnFailure] = OrderedDict()
        self._early_replies: list[Reply] = []  # signalled before the session was loaded
        self._turns = 0
        self._idle: IdleClock | None = None
        carried = input.carried or CarriedTurns()
        self._done.update(carried.done)
        self._failed.update(carried.failed)
        for outcome in carried.outcomes:
            self._outcomes.add(outcome)
        self._queue.extend(carried.queued)

    @workflow.run
    async def run(self, input: SessionWorkflowInput) -> None:
        if self._refusal:
            raise ApplicationError(self._refusal, type="InvalidInputError", non_retryable=True)
        invoker = self._invoker
        assert invoker is not None  # set whenever there is no refusal
        await invoker.load(create=True, initial_state=input.initial_state)
        self._loaded = True
        early, self._early_replies = self._early_replies, []
        for reply in early:
            self.queue_reply(reply)
        carried = input.carried
        idle = self._idle = IdleClock(
            timedelta(seconds=input.idle_timeout_seconds), one_timer=workflow.patched(IDLE_CLOCK_PATCH),
            renew=None if input.renew_idle_run_after_seconds is None else timedelta(seconds=input.renew_idle_run_after_seconds),
            since=datetime.fromtimestamp(carried.idle_since, UTC) if carried and carried.idle_since else None,
        )
        try:
            while True:
                if not await idle.wait(lambda: bool(self._queue) or self._should_continue_as_new() or self._should_move()):
                    if self._queue or not workflow.all_handlers_finished():
                        continue
                    break
                if self._should_move():
                    await self._move_to_current_version(invoker, input)
                if self._queue:
                    await self._run_turn(invoker, self._queue.popleft())
                    stop_if_cancelled()  # one that reached only a call that completed anyway
                    idle.restart()
                    continue
                # Continue-as-new only between turns with nothing queued and no handler mid-way.
                await workflow.wait_condition(lambda: bool(self._queue) or workflow.all_handlers_finished())
                if self._queue:
                    continue
                await invoker.sessions.flush()
                if self._queue or not workflow.all_handlers_finished():
                    continue  # something arrived while the flush ran: serve it first
                carried_turns = self._carry()
                if idle.renew_due:  # idle all along: the next run's idle timeout counts from the same moment
                    carried_turns.idle_since = idle.since.timestamp()
                workflow.continue_as_new(input.model_copy(update={"carried": carried_turns}))
        except asyncio.CancelledError:
            if workflow.patched(END_CANCELLED_TURN_PATCH):
                await self._answer_before_cancelled()
            raise
        finally:
            idle.stop()
        await workflow.wait_condition(workflow.all_handlers_finished)

    async def _answer_before_cancelled(self) -> None:
        """The run ends cancelled: each message queued is answered as not run (those arriving in the
        meantime too), and the update handlers get a bounded moment to hand every answer to its
        sender, rather than the AcceptedUpdateCompletedWorkflow a client answers by starting the
        conversation again."""
        deadline = workflow.now() + HANDLERS_GRACE
        while True:
            while self._queue:
                message = self._queue.popleft()
                self._keep(TurnOutcome(message_id=message.message_id or "", error_type=CANCELLED,
                                       error_message="the conversation was cancelled before this message ran"))
            left = deadline - workflow.now()
            if workflow.all_handlers_finished() or left <= timedelta(0):
                return
            try:
                await workflow.wait_condition(lambda: workflow.all_handlers_finished() or bool(self._queue), timeout=left)
            except TimeoutError:
                return

    def _should_move(self) -> bool:
        """Between turns, when the target version changed, unless a question this version asked
        (a tool confirmation, a long-running tool) is still unanswered: its answer must reach the
        code that asked it, so the conversation moves after the turn that answer starts."""
        return _version_changed() and not self.pending()

    async def _move_to_current_version(self, invoker: DurableInvoker, input: SessionWorkflowInput) -> NoReturn:
        """Continue-as-new onto the target worker version, between turns: the messages not yet run
        go with it and run there. Updates still waiting for those messages' turns end here; their
        senders ask again with the same message id (AdkClient does, on AcceptedUpdateCompletedWorkflow)
        and the new run answers from its queue, so no message runs twice or is lost."""
        await invoker.sessions.flush()
        version = workflow.info().get_current_deployment_version()
        carried = self._carry().model_copy(update={
            "queued": list(self._queue),
            "moved_from": f"{version.deployment_name}:{version.build_id}" if version else None,
        })
        workflow.continue_as_new(
            input.model_copy(update={"carried": carried}),
            initial_versioning_behavior=workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE,
        )

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        limit = self._input.max_turns_per_run
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= self._input.max_history_events
            or (limit is not None and self._turns >= limit)
            or (self._idle is not None and self._idle.renew_due)
        )

    async def _run_turn(self, invoker: DurableInvoker, message: SendMessage) -> None:
        message_id = message.message_id or ""
        self._running = message
        self._turn_events = []
        outcome = TurnOutcome(message_id=message_id)
        turn = self._turns + 1
        # The Temporal UI's "current details": the conversation's latest message and its turn.
        workflow.set_current_details(turn_details(turn, message.message, "running"))
        omitted = 0
        result_json: bytes | None = None
        compact_after_reply = invoker.runtime.app_compacts and workflow.patched(COMPACT_AFTER_REPLY_PATCH)
        try:
            try:
                invocation_id = await invoker.invoke(
                    message.message, state_delta=message.state_delta, max_llm_calls=message.max_llm_calls,
                    events=self._turn_events, streaming_mode=message.streaming_mode,
                    stream_id=turn_stream_id(workflow.info().workflow_id, message_id),
                    compact=not compact_after_reply,
                )
            except TurnOutgrewRun as outgrown:
                invocation_id, omitted = await self._finish_in_child(invoker, message, outgrown.continuation)
            outcome.result, result_json = result_within_budget(
                lambda events, left_out: TurnResult(
                    invocation_id=invocation_id, events=events, final_text=final_text(events), message_id=message_id,
                    events_omitted=omitted + left_out,
                ),
                self._turn_events,
            )
            self._remember(message_id, invocation_id)
        except Exception as e:  # noqa: BLE001  (a turn fails alone; the conversation goes on)
            # invoke() (or the long turn's child) stored an error event saying why; the sender gets the same reason.
            outcome.error_type, outcome.error_message = failure_type(e), failure_message(e)
            outcome.failed_events, outcome.failed_events_omitted = bounded_tail(self._turn_events)
            log_warning(f"turn {message_id} failed: {outcome.error_type}: {outcome.error_message}")
            if workflow.patched(REMEMBER_FAILED_PATCH):
                self._remember_failure(message_id, outcome)
        except asyncio.CancelledError:
            # The sender hears why before the run ends cancelled (run() waits for the handlers):
            # from invoke() (the turn's events and why are stored by then), or from what
            # follows it (compaction, a long turn's child; what the turn made is stored by then).
            if ends_cancelled():
                outcome.error_type, outcome.error_message = CANCELLED, CANCELLED_MESSAGE
                outcome.failed_events, outcome.failed_events_omitted = bounded_tail(self._turn_events)
                self._keep(outcome)
            raise
        finally:
            self._turns += 1
            self._running = None
            invoker.trim()
        state = "done" if outcome.result is not None else f"failed: {outcome.error_type}"
        workflow.set_current_details(turn_details(turn, message.message, state))
        self._keep(outcome, result_json)
        if compact_after_reply:
            # The sender has its answer (the update completes with this workflow task); the summary
            # is written before the next message runs, and before the run continues as new.
            await invoker.compact_last()

    async def _finish_in_child(
        self, invoker: DurableInvoker, message: SendMessage, continuation: TurnContinuation
    ) -> tuple[str, int]:
        """The rest of a turn that outgrew this run's history budget, in a child AgentRunWorkflow
        that continues-as-new as often as it needs (docs/durability.md, "Long turns"). This run
        keeps the turn's update and queue; its own history grows by a few events for the child.
        Returns the invocation id and how many of the turn's events its result leaves out."""
        await invoker.sessions.flush()  # the child resumes from the store
        continuation = continuation.model_copy(update={"events_before": len(self._turn_events)})
        child_input = AgentRunInput(
            app_name=self._input.app_name, user_id=self._input.user_id, session_id=self._input.session_id,
            create_session=False, max_llm_calls=message.max_llm_calls, wait_for_replies=False,
            continuation=continuation,
        )
        child_id = f"{workflow.info().workflow_id}/turn/{message.message_id}"
        summary = f"the rest of turn {message.message_id} (it outgrew one run)"
        if workflow.patched(END_CANCELLED_TURN_PATCH):
            result = await _cancellable_long_turn(
                await workflow.start_child_workflow(AgentRunWorkflow.run, child_input, id=child_id, static_summary=summary)
            )
        else:
            result = await workflow.execute_child_workflow(
                AgentRunWorkflow.run, child_input, id=child_id, static_summary=summary
            )
        await invoker.load(create=False, initial_state=None)  # the child stored the rest of the turn
        if result.events_omitted == continuation.events_before:
            self._turn_events.extend(result.events)  # the child's events follow this run's: no gap
            return result.invocation_id, 0
        # The child left events out (it continued as new, or its result was over budget): those sit
        # between this run's events and the child's, so the turn's result holds the child's newest
        # events alone and counts everything before them as left out, the oldest first.
        self._turn_events[:] = result.events
        return result.invocation_id, result.events_omitted

    def _remember(self, message_id: str, invocation_id: str) -> None:
        self._done[message_id] = invocation_id
        while len(self._done) > KEEP_DONE_IDS:
            self._done.popitem(last=False)

    def _remember_failure(self, message_id: str, outcome: TurnOutcome) -> None:
        message = outcome.error_message
        if message is not None and len(message) > FAILURE_MESSAGE_CHARS:
            message = message[: FAILURE_MESSAGE_CHARS - 1] + "…"
        self._failed[message_id] = TurnFailure(error_type=outcome.error_type, error_message=message)
        while len(self._failed) > KEEP_FAILED_IDS:
            self._failed.popitem(last=False)

    def _keep(self, outcome: TurnOutcome, result_json: bytes | None = None) -> None:
        self._outcomes.add(outcome, result_json)

    def _carry(self) -> CarriedTurns:
        # The newest outcomes, within a byte budget: the next run's input is one payload.
        return CarriedTurns(done=dict(self._done), failed=dict(self._failed),
                            outcomes=self._outcomes.newest(CARRY_OUTCOMES, CARRY_BYTES))

    # --- messages -----------------------------------------------------------------------------
    def _message_id(self, message: SendMessage) -> str:
        if message.message_id:
            return message.message_id
        info = workflow.current_update_info()
        return info.id if info else str(workflow.uuid4())

    def _is_known(self, message_id: str) -> bool:
        return (
            message_id in self._outcomes
            or message_id in self._done
            or message_id in self._failed
            or (self._running is not None and self._running.message_id == message_id)
            or any(m.message_id == message_id for m in self._queue)
        )

    # ABANDON: a run that moves to a new worker version leaves the updates waiting for its queued
    # messages; their senders ask the next run, which has the messages (_move_to_current_version).
    @workflow.update(unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def send_message(self, message: SendMessage) -> TurnResult:
        return await self._send(message)

    async def _send(self, message: SendMessage) -> TurnResult:
        message_id = self._enqueue(message)
        await workflow.wait_condition(
            lambda: message_id in self._outcomes or message_id in self._done or message_id in self._failed
        )
        if message_id not in self._outcomes and message_id in self._failed:
            # A repeat of a failed turn this run no longer holds in full: the same failure.
            failure = self._failed[message_id]
            raise ApplicationError(failure.error_message or "the turn failed", type=failure.error_type,
                                   non_retryable=True)  # fmt: skip
        if message_id not in self._outcomes and self._invoker is not None:
            # A repeat of a turn whose full result this run no longer holds: read it back.
            return await self._stored_result(self._invoker, message_id)
        return self._result(message_id)

    async def _stored_result(self, invoker: DurableInvoker, message_id: str) -> TurnResult:
        invocation_id = self._done[message_id]
        events = await invoker.stored_events_of(invocation_id, look_back=STORED_RESULT_LOOK_BACK)
        return TurnResult(invocation_id=invocation_id, events=events, final_text=final_text(events), message_id=message_id)

    @workflow.signal
    def queue_message(self, message: SendMessage) -> None:
        """The same message by signal: durably queued the moment the signal is accepted, with no
        limit on how many wait. Clients use it when the conversation already has as many
        in-flight updates as Temporal allows, and follow the turn with the ``turn`` query."""
        if self._refusal:
            self._keep(TurnOutcome(message_id=message.message_id or "", error_type="MessageRejected",
                                   error_message=self._refusal))
            return
        self._enqueue(message)

    @workflow.signal
    def check_version(self) -> None:
        """Nothing to do: the workflow task this signal brings carries Temporal's word on whether the
        target worker version changed, and an idle conversation moves on it (``_version_changed``).
        ``adkt deployment promote`` sends it to every open conversation after a new version is made
        current, so idle ones move now rather than at their next message."""

    @workflow.signal
    def queue_reply(self, reply: Reply) -> None:
        """A reply by signal (see queue_message); one that cannot be accepted is recorded as a
        failed turn under its reply id, for the client following it."""
        if not self._loaded and not self._refusal and workflow.patched(REPLY_WAITS_FOR_LOAD_PATCH):
            # The conversation starts again on this reply: it is checked against what the session
            # waits for once loaded (run() hands it back here).
            self._early_replies.append(reply)
            return
        reply_id = reply.reply_id or str(workflow.uuid4())
        if self._is_known(reply_id):
            return  # a repeated signal: the first one's turn stands
        reason = self._reply_refusal(reply)
        if reason:
            self._keep(TurnOutcome(message_id=reply_id, error_type="MessageRejected", error_message=reason))
            return
        content = reply_content(reply.call_id, self.pending(), reply.response)
        self._enqueue(SendMessage(message=content, message_id=reply_id))

    def _enqueue(self, message: SendMessage) -> str:
        message_id = self._message_id(message)
        if not self._is_known(message_id):
            if self._invoker is not None:  # how many messages this one waits behind (replay-safe meter)
                ahead = len(self._queue) + (self._running is not None)
                self._invoker.runtime.metrics.queued.record(ahead, {"app": self._input.app_name})
            self._queue.append(message.model_copy(update={"message_id": message_id}))
        return message_id

    @send_message.validator
    def _check_message(self, message: SendMessage) -> None:
        if self._refusal:
            _reject(self._refusal)

    def _result(self, message_id: str) -> TurnResult:
        outcome = self._outcomes.get(message_id)
        if outcome is None:
            # A repeat of a message whose full result is no longer held: its events are in the store.
            return TurnResult(invocation_id=self._done[message_id], message_id=message_id)
        if outcome.result is None:
            raise ApplicationError(
                outcome.error_message or "the turn failed", type=outcome.error_type, non_retryable=True
            )
        return outcome.result

    def _position(self, message_id: str) -> int:
        """How many messages run before ``message_id`` (0 when it is running or unknown)."""
        for index, queued in enumerate(self._queue):
            if queued.message_id == message_id:
                return index + (self._running is not None)
        return 0

    @workflow.update
    async def reply(self, reply: Reply) -> TurnResult:
        """Answer a pending confirmation or long-running tool; the conversation continues."""
        if not self._loaded:
            # Accepted before the session was loaded (a conversation that went idle starts again
            # on its reply): checked now against what the session waits for.
            await workflow.wait_condition(lambda: self._loaded)
            if not (reply.reply_id and self._is_known(reply.reply_id)):
                reason = self._reply_refusal(reply)
                if reason:
                    _reject(reason)
        reply_id = reply.reply_id or self._message_id(SendMessage(message=Content(role="user")))
        if self._is_known(reply_id):
            return await self._send(SendMessage(message=Content(role="user"), message_id=reply_id))
        content = reply_content(reply.call_id, self.pending(), reply.response)
        return await self._send(SendMessage(message=content, message_id=reply_id))

    @reply.validator
    def _check_reply(self, reply: Reply) -> None:
        if reply.reply_id and self._is_known(reply.reply_id):
            return  # a repeat: the handler returns the first reply's result
        if self._refusal:
            _reject(self._refusal)
        if not self._loaded:
            return  # what the session waits for is not known yet: the handler checks once it is
        reason = self._reply_refusal(reply)
        if reason:
            _reject(reason)

    def _reply_refusal(self, reply: Reply) -> str | None:
        if self._refusal:
            return self._refusal
        if not self._loaded:
            return "the conversation is still loading; send the reply again in a moment"
        try:
            check_reply(reply.call_id, self.pending())
        except ValueError as e:
            return str(e)
        queued = {r.id for m in self._queue for r in m.message.function_responses()}
        if reply.call_id in queued:
            return f"call {reply.call_id!r} already has a reply queued; it runs when its turn comes"
        return None

    @workflow.update(name=SUBMIT_DECISION)
    async def submit_decision(self, decision: SimulatorDecision) -> None:
        """A person's answer to a model request of a SimulatorPlugin target (checked by the simulator first)."""
        assert self._invoker is not None  # the validator refuses updates to a refused workflow
        self._invoker.runtime.simulator.deliver(decision)

    @submit_decision.validator
    def _check_decision(self, decision: SimulatorDecision) -> None:
        reason = self._refusal or (self._invoker.runtime.simulator.refusal(decision) if self._invoker else None)
        if reason:
            _reject(reason)

    # --- queries ------------------------------------------------------------------------------
    @workflow.query
    def pending(self) -> list[PendingRequest]:
        session = self._invoker.session if self._invoker else None
        return pending_requests(session.events if session else [])

    @workflow.query
    def turn(self, query: TurnQuery) -> TurnStatus:
        """Where a message is: queued (and how far back), running (its events so far), done, failed."""
        message_id = query.message_id
        if self._running is not None and self._running.message_id == message_id:
            return TurnStatus(state="running", events=self._turn_events[query.after:], first=query.after)
        if any(m.message_id == message_id for m in self._queue):
            return TurnStatus(state="queued", position=self._position(message_id))
        if any(r.reply_id == message_id for r in self._early_replies):
            return TurnStatus(state="queued")  # checked once the session is loaded (queue_reply)
        outcome = self._outcomes.get(message_id)
        if outcome is not None and outcome.result is not None:
            # ``after`` counts the whole turn; the result may leave its oldest events out.
            events, first = outcome.result.events_after(query.after)
            return TurnStatus(state="done", events=events, first=first, result=outcome.result)
        if outcome is not None:
            events, first = outcome.failed_events_after(query.after)
            return TurnStatus(state="failed", events=events, first=first, error_type=outcome.error_type,
                              error_message=outcome.error_message)  # fmt: skip
        failure = self._failed.get(message_id)
        if failure is not None:
            return TurnStatus(state="failed", error_type=failure.error_type, error_message=failure.error_message)
        if message_id in self._done:
            # Done in an earlier run; its events are in the store, which a query cannot read: no
            # result here, and the client asks again by update (send_message reads them back).
            return TurnStatus(state="done")
        return TurnStatus(state="unknown")


def _version_changed() -> bool:
    """Temporal's word that this pinned run's worker version is no longer the target (always False
    on unversioned workers). It arrives with the run's next workflow task: a message, or the
    ``check_version`` signal that ``adkt deployment promote`` sends to idle conversations."""
    return workflow.info().is_target_worker_deployment_version_changed()


def _reject(reason: str) -> None:
    """Refuse an update before it is accepted: nothing is queued, nothing runs."""
    raise ApplicationError(reason, type="MessageRejected", non_retryable=True)


async def _cancellable_long_turn(handle: workflow.ChildWorkflowHandle[Any, AgentRunResult]) -> AgentRunResult:
    """The result of the child running the rest of a long turn. Temporal cancels a child through the
    run it started, which this child has continued as new from, so a cancellation would reach
    nothing: when this workflow is cancelled, the child's current run is cancelled by its id, and
    it stores what it made (DurableInvoker.invoke) before this run ends."""
    try:
        await workflow.wait_condition(handle.done)
    except asyncio.CancelledError:
        await workflow.get_external_workflow_handle(handle.id).cancel()
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(handle.done, timeout=HANDLERS_GRACE)
        raise
    return await handle
