"""AdkClient: send messages to durable agents, stream their events, answer what they wait for.

Every send carries a message id, its idempotency key, which the workflow deduplicates by.
Transport errors (the Temporal service restarting, a dropped connection) are retried with the same
message id for up to ``retry_seconds``, so a retried send never runs a second turn and the caller
gets the turn's result rather than a transport error. When the conversation already has as many
in-flight updates as Temporal allows, the message is queued by signal and its turn followed by
query. See docs/durability.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.failure.v1 import Failure
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.converter import DataConverter, PayloadCodec
from temporalio.envconfig import ClientConfig
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from adk_core.errors import AdkError, ConfigurationError, InvalidInputError
from adk_core.ids import escape_id_part, validate_session_key
from adk_core.sql import dumps as storable_json
from adk_core.sql import open_engine
from adk_core.state import validate_state_delta
from adk_core.types import Content, Event
from adk_temporal.activities.streaming import turn_stream_id
from adk_temporal.encryption import codec_from_env
from adk_temporal.workflows import (
    AdkPlugin,
    AgentRunInput,
    AgentRunResult,
    AgentRunWorkflow,
    PendingRequest,
    Reply,
    SendMessage,
    SessionWorkflow,
    SessionWorkflowInput,
    TurnResult,
    app_task_queue,
    session_workflow_id,
)
from adk_temporal.workflows.contracts import TurnQuery, TurnStatus
from adk_temporal.workflows.payload_storage import PostgresPayloadDriver
from adk_temporal.workflows.summaries import run_summary, session_details, session_summary
from adkt._stream_follow import StreamFollower, TurnMerge
from adkt.listener import ListenerUnavailableError
from adkt.search_attributes import adk_search_attributes, missing_error
from adkt.settings import Settings

T = TypeVar("T")

# gRPC statuses that say "try again": the service is restarting or unreachable, or the call timed
# out. (RESOURCE_EXHAUSTED on a send is answered by queueing it by signal instead.)
_TRANSIENT = {RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.RESOURCE_EXHAUSTED,
              RPCStatusCode.CANCELLED, RPCStatusCode.ABORTED, RPCStatusCode.UNKNOWN}
TASK_FAILURE_CHECK_SECONDS = 5.0
"""A waiting send first asks whether its workflow task keeps failing after this long..."""
TASK_FAILURE_CHECK_MAX_SECONDS = 60.0
"""...then twice as long each time, up to this: every check reads the workflow's history on the
server, and 1,000 sends waiting in a burst checking every 5 s were 200 reads a second (issue 21)."""
FOLLOW_LIVENESS_POLLS = 20
"""While following a queued turn, check this often (in polls) that the conversation still runs."""
READ_BACK_ROUNDS = 5
"""How often a send is repeated (same message id) to read back a result only the store holds."""
KNOWN_RUNNING = 10_000
"""Conversation workflow ids an AdkClient remembers as running (a few MB at most)."""
QUIET_POLL_SECONDS = 0.5
"""While a streamed turn makes no events, its progress is queried at most this rarely (backing off
from ``poll_interval``); an event it makes later shows up at most this late, its end at once."""


class TurnFailedError(AdkError):
    """The turn ran and failed; the session stores an error event saying why.

    Attributes:
        error_type: the failure's type name (e.g. ``ModelError``, ``LlmCallsLimitExceededError``).
    """

    def __init__(self, message: str, *, error_type: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.reason = message


class MessageRejectedError(AdkError):
    """The conversation refused the message before running anything (bad ids, no such app, an
    unknown call id); the message says what to change."""


class WorkflowTaskFailedError(AdkError):
    """The conversation's workflow cannot make progress: its workflow task keeps failing (a bug
    in workflow code or a non-deterministic change). Temporal retries it; a fixed deploy resumes
    the conversation where it stopped. The message is the worker's error."""


class WorkersBusyError(AdkError):
    """The conversation's workflow task kept timing out for ``retry_seconds``: its workers are too
    busy to finish it in time (or stopped), not failing on its code. Temporal retries the task; the
    message was not delivered, so sending it again (same message id) later is safe."""


async def connect(
    address: str | None = None, *, namespace: str | None = None, tracing: bool = False, database_url: str | None = None,
    payload_codec: PayloadCodec | None = None,
) -> Client:
    """A Temporal client with the ADK plugin. Address and namespace come from the arguments, else
    Temporal's envconfig (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, profiles), else localhost:7233.

    ``database_url`` (else ADK_DATABASE_URL) is the sessions database, where payloads too large for
    Temporal are kept (workflows.payload_storage): without it, sending or receiving a value over
    256 KiB fails.

    ``payload_codec`` encodes every payload before it leaves the process (and before a large one is
    stored in Postgres); default: the AES-256-GCM codec when ADK_ENCRYPTION_KEYS or
    ADK_ENCRYPTION_KEYS_FILE is set (adk_temporal.encryption), else none. Workers built from this
    client keep it."""
    config = ClientConfig.load_client_connect_config()
    codec = payload_codec or codec_from_env()
    converter = DataConverter(payload_codec=codec) if codec is not None else DataConverter.default
    if address:
        config["target_host"] = address
    if namespace:
        config["namespace"] = namespace
    config.setdefault("target_host", "localhost:7233")
    url = database_url or Settings.load().database_url
    storage = PostgresPayloadDriver(open_engine(url, pool_size=2, max_overflow=8)) if url else None
    return await Client.connect(
        **config, data_converter=converter, plugins=[AdkPlugin(tracing=tracing, payload_storage=storage)]
    )


class AdkClient:
    """Conversations run as SessionWorkflows, one per (app, user, session)."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str | None = None,
        idle_timeout_seconds: float | None = None,
        renew_idle_run_after_seconds: float | None = None,
        retry_seconds: float = 120.0,
        database_url: str | None = None,
        search_attributes: bool = True,
    ) -> None:
        """``idle_timeout_seconds``: how long a conversation's workflow waits for the next message
        before it ends (the next message starts it again); None keeps the workflow's default.
        ``renew_idle_run_after_seconds``: how long a conversation with a long run waits before it
        continues as new, so a worker without it cached replays little for the next message (the
        idle timeout still counts from its last turn); None keeps the workflow's default (300), 0
        never renews.
        ``retry_seconds``: how long transport errors are retried (with the same message id).
        ``task_queue``: None sends each app's runs to its own queue (workflows.app_task_queue), where
        only workers serving that app poll; a name sends every app's runs there (the workers must
        then poll that one queue: ``--task-queue`` / ADK_TASK_QUEUE).
        ``search_attributes``: start workflows with the AdkApp and AdkUser search attributes (the
        namespace must have them: adkt.search_attributes.create_command); False starts them without."""
        self.client = client
        self.search_attributes = search_attributes
        self.task_queue = task_queue
        self.idle_timeout_seconds = idle_timeout_seconds
        if renew_idle_run_after_seconds is not None and renew_idle_run_after_seconds < 0:
            raise InvalidInputError(
                f"renew_idle_run_after_seconds is {renew_idle_run_after_seconds!r}; give seconds above 0, "
                "0 never to renew, or None for the workflow's default"
            )
        self.renew_idle_run_after_seconds = renew_idle_run_after_seconds
        self.retry_seconds = retry_seconds
        self.database_url = database_url
        """The sessions database, where ``stream(partial=True)`` reads partials (else ADK_DATABASE_URL)."""
        self._running: OrderedDict[str, None] = OrderedDict()
        """Conversations this client last saw running (at most KNOWN_RUNNING, least recent dropped
        first): their messages go by plain update, the others by update-with-start."""
        self.page_url: str | None = None
        """The dev page this client serves, if any (adkt.web.serve sets it): conversations it starts
        link to it from their details in the Temporal UI."""

    def queue_of(self, app: str) -> str:
        """The task queue ``app``'s runs go to."""
        return self.task_queue if self.task_queue is not None else app_task_queue(app)

    # --- sending ----------------------------------------------------------------------------
    def _input(self, app: str, user_id: str, session_id: str, initial_state: dict[str, Any] | None) -> SessionWorkflowInput:
        options: dict[str, Any] = {"idle_timeout_seconds": self.idle_timeout_seconds} if self.idle_timeout_seconds else {}
        if self.renew_idle_run_after_seconds is not None:
            options["renew_idle_run_after_seconds"] = self.renew_idle_run_after_seconds or None
        return SessionWorkflowInput(
            app_name=app, user_id=user_id, session_id=session_id, initial_state=initial_state, **options
        )

    def _start(self, app: str, user_id: str, session_id: str, initial_state: dict[str, Any] | None) -> WithStartWorkflowOperation:
        return WithStartWorkflowOperation(
            SessionWorkflow.run,
            self._input(app, user_id, session_id, initial_state),
            id=session_workflow_id(app, user_id, session_id),
            task_queue=self.queue_of(app),
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            **self._start_options(app, user_id, session_id),
        )

    def _start_options(self, app: str, user_id: str, session_id: str) -> dict[str, Any]:
        """What a conversation's workflow shows in the Temporal UI and is listed by (docs/temporal-cli.md)."""
        options: dict[str, Any] = {
            "static_summary": session_summary(app, user_id, session_id),
            "static_details": session_details(app, user_id, session_id, self.page_url),
        }
        if self.search_attributes:
            options["search_attributes"] = adk_search_attributes(app, user_id)
        return options

    def _explained(self, error: BaseException) -> BaseException:
        """``error``, or what to do about it when the namespace lacks the ADK search attributes."""
        return missing_error(error, self.client.namespace) or error

    async def send(
        self,
        app: str,
        user_id: str,
        session_id: str,
        message: str | Content,
        *,
        state_delta: dict[str, Any] | None = None,
        max_llm_calls: int = 500,
        initial_state: dict[str, Any] | None = None,
        message_id: str | None = None,
    ) -> TurnResult:
        """Send a message (starting the conversation's workflow if needed); returns the turn's events.

        ``message_id`` is the idempotency key (a new one per call by default): sending the same id
        again returns the first turn's result. Raises TurnFailedError when the turn fails (its
        reason is also stored as an error event), MessageRejectedError when the conversation
        refuses the message, WorkflowTaskFailedError when the workflow cannot make progress.
        """
        send = self._message(app, user_id, session_id, message, state_delta, max_llm_calls, message_id)
        if initial_state:
            _check_state(initial_state, "initial_state")
        return await self._deliver(
            SessionWorkflow.send_message, "queue_message", send, send.message_id or "", app, user_id, session_id,
            initial_state,
        )

    async def stream(
        self, app: str, user_id: str, session_id: str, message: str | Content, *, poll_interval: float = 0.05,
        message_id: str | None = None, partial: bool = False,
    ) -> AsyncIterator[Event]:
        """Send a message and yield its events as the workflow makes them, each once, in order.

        ``partial=True`` streams the turn's model calls (``streaming_mode="sse"``) and also yields
        their partial events (``Event.partial``) as the model makes them, placed among the committed
        events as the in-process Runner places them. The committed events are the same either way.
        When a model call is retried after some of its partial text was yielded, a partial event
        with ``activities.streaming.is_stream_reset(event)`` comes first: discard that call's
        partial text so far. Partials are read from the sessions database (``database_url``).
        """
        send = self._message(app, user_id, session_id, message, None, 500, message_id)
        if not partial:
            async for event in self._stream_turn(send, app, user_id, session_id, poll_interval, None):
                yield event
            return
        send.streaming_mode = "sse"
        stream_id = turn_stream_id(session_workflow_id(app, user_id, session_id), send.message_id or "")
        # The LISTEN goes out beside the send, not before it (about 1 ms of the first token): the
        # turn waits for listening() before it relies on notifications, then reads what came before.
        async with StreamFollower(self._stream_database_url(), stream_id, wait_listening=False) as follower:
            async for event in self._stream_turn(send, app, user_id, session_id, poll_interval, follower):
                yield event
            await follower.delete()  # the turn is over: its committed events stand for its partials

    def _stream_database_url(self) -> str:
        url = self.database_url or Settings.load().database_url
        if not url:
            raise ConfigurationError(
                "partial=True reads partial events from the sessions database: pass "
                "AdkClient(..., database_url='postgresql+psycopg://...') or set ADK_DATABASE_URL"
            )
        return url

    async def _stream_turn(
        self, send: SendMessage, app: str, user_id: str, session_id: str, poll_interval: float,
        follower: StreamFollower | None,
    ) -> AsyncIterator[Event]:
        handle = self._handle(app, user_id, session_id)
        result = asyncio.ensure_future(self._retrying(
            lambda: self._update(SessionWorkflow.send_message, send, app, user_id, session_id, None),
            handle,
            busy=lambda: self._signal("queue_message", send, app, user_id, session_id, None),
        ))
        query = TurnQuery(message_id=send.message_id or "")
        merge = TurnMerge()
        interval = poll_interval

        async def ordered(events: list[Event], first: int | None = None) -> list[Event]:
            """The turn's events from index ``first`` (default ``query.after``) merged with what the
            stream holds; moves ``query.after`` past every committed event received (the stream
            brings the last ones early: activities/streaming.publish_committed)."""
            first = query.after if first is None else first
            if follower is None:
                query.after = max(query.after, first + len(events))
                return events
            merge.add_events(events, first)
            merge.add_chunks(await follower.read())  # after the events: all partials before them are read
            query.after = merge.received
            return merge.take()

        try:
            if follower is not None:
                try:
                    await follower.listening()
                except ListenerUnavailableError as e:
                    raise ListenerUnavailableError(
                        f"{e} The message was sent (message_id {query.message_id!r}): its turn runs, and sending it "
                        "again with that message_id returns the turn without running it twice."
                    ) from None
                merge.add_chunks(await follower.read())  # committed before the LISTEN took effect: rare
                # A query sent with the message reaches the worker with the message's workflow task and
                # is answered in it, before the model call is scheduled (measured: 5-7 ms on the first
                # token). The turn has no events to report that early: let the first partial or
                # poll_interval come first.
                await _notified_or_answered(follower, poll_interval, result)
            while True:
                status = await self._query_turn(handle, query, result)
                for event in await ordered(status.events, status.first):
                    yield event
                # Query again soon while the turn makes events, less often while it is quiet (a model
                # call streaming, a slow tool): hundreds of streams otherwise load Temporal with queries.
                # The turn's end comes with the send's own result, which ends the wait at once.
                interval = poll_interval if status.events else min(interval * 2, max(poll_interval, QUIET_POLL_SECONDS))
                if status.state == "failed":
                    raise TurnFailedError(status.error_message or "", error_type=status.error_type or "Error")
                if status.state == "done" and status.result is None and not status.events:
                    # Done in an earlier run of the workflow: read the turn back by update.
                    turn = await self._deliver(
                        SessionWorkflow.send_message, "queue_message", send, query.message_id, app, user_id, session_id,
                        None,
                    )
                    for event in await ordered(*turn.events_after(query.after)):
                        yield event
                    return
                if status.state == "done":
                    return
                if result.done() and result.exception() is not None:
                    raise result.exception()  # type: ignore[misc]
                if result.done() and status.state == "unknown":  # queued by signal, and not known
                    raise MessageRejectedError(f"the conversation has no record of message {query.message_id!r}")
                if follower is not None:
                    # Partials as they are written; the turn's state at most every poll_interval.
                    deadline = time.monotonic() + interval
                    while (left := deadline - time.monotonic()) > 0 and not _answered(result):
                        await _notified_or_answered(follower, left, result)
                        for event in await ordered([]):
                            yield event
                elif result.done():  # queued by signal: nothing left to wait on but the query
                    await asyncio.sleep(interval)
                else:
                    await asyncio.wait([result], timeout=interval)
        finally:
            if not result.done():
                result.cancel()
            await asyncio.gather(result, return_exceptions=True)

    async def _query_turn(self, handle: WorkflowHandle, query: TurnQuery, result: asyncio.Future) -> TurnStatus:
        turn: TurnResult | None = result.result() if result.done() and result.exception() is None else None
        if turn is not None:  # the update's own result (None when the message was queued by signal)
            events, first = turn.events_after(query.after)
            return TurnStatus(state="done", events=events, first=first, result=turn)
        try:
            return await handle.query(SessionWorkflow.turn, query)
        except RPCTimeoutOrCancelledError:
            return TurnStatus(state="queued")  # the service is restarting: the send's own retries are bounded
        except RPCError as e:
            if e.status in _TRANSIENT or e.status == RPCStatusCode.NOT_FOUND:
                return TurnStatus(state="queued")  # not started yet, or the service is restarting
            if "Workflow Task in failed state" in str(e):
                # Temporal retries the task (a worker too busy to finish it in time fails it too); the
                # send's own retry reports a task that keeps failing, within its bound.
                return TurnStatus(state="queued")
            raise

    async def reply(
        self, app: str, user_id: str, session_id: str, call_id: str, response: dict[str, Any], *,
        reply_id: str | None = None,
    ) -> TurnResult:
        """Answer a pending request; the conversation continues and this returns the turn's events."""
        validate_session_key(app, user_id, session_id)
        answer = Reply(call_id=call_id, response=response, reply_id=reply_id or uuid.uuid4().hex)
        return await self._deliver(
            SessionWorkflow.reply, "queue_reply", answer, answer.reply_id or "", app, user_id, session_id, None
        )

    async def _deliver(
        self, update: Any, signal: str, arg: SendMessage | Reply, key: str, app: str, user_id: str, session_id: str,
        initial_state: dict[str, Any] | None,
    ) -> TurnResult:
        """Send ``arg`` by update and wait for its turn; when the conversation has as many in-flight
        updates as Temporal allows, queue it by ``signal`` and follow the turn by its idempotency key."""
        handle = self._handle(app, user_id, session_id)
        for _ in range(READ_BACK_ROUNDS):
            result = await self._retrying(
                lambda: self._update(update, arg, app, user_id, session_id, initial_state),
                handle,
                busy=lambda: self._signal(signal, arg, app, user_id, session_id, initial_state),
            )
            if result is None:  # queued by signal: follow it
                result = await self._follow(handle, key)
            if result is not None:
                return result
            # Done in an earlier run of the workflow: asking again by update (same key, no second
            # turn) reads the turn back from the store.
        raise MessageRejectedError(
            f"message {key!r} ran, but its result could not be read back after {READ_BACK_ROUNDS} tries; "
            "its events are in the session store"
        )

    async def pending(self, app: str, user_id: str, session_id: str) -> list[PendingRequest]:
        """What the conversation waits for (tool confirmations, long-running tools). A read:
        transport errors are retried for up to ``retry_seconds``."""
        handle = self._handle(app, user_id, session_id)
        return await self._reading(lambda: handle.query(SessionWorkflow.pending))

    async def cancel(self, app: str, user_id: str, session_id: str, *, wait_seconds: float = 30.0) -> bool:
        """Stop a conversation: its workflow is cancelled. A running turn stores the events it made
        and an error event ``CancelledError``; its sender and each queued message get TurnFailedError
        (docs/durability.md, "Cancelling a conversation"). The session stays; the next message starts
        the conversation again. Returns False when it was not running. Waits up to ``wait_seconds``
        for the workflow to end (TimeoutError after that: the cancellation stands and goes on)."""
        validate_session_key(app, user_id, session_id)
        handle = self._handle(app, user_id, session_id)
        self._running.pop(handle.id, None)
        try:
            if (await self._reading(handle.describe)).status != WorkflowExecutionStatus.RUNNING:
                return False  # ended (Temporal accepts a cancel of an ended workflow and does nothing)
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:  # never started
                return False
            raise
        await self._reading(handle.cancel)  # asking twice is harmless: the workflow hears it once
        async with asyncio.timeout(wait_seconds):
            with contextlib.suppress(WorkflowFailureError):  # ended cancelled (or failed): either way, stopped
                await handle.result(follow_runs=False)
        return True

    def _message(
        self, app: str, user_id: str, session_id: str, message: str | Content, state_delta: dict[str, Any] | None,
        max_llm_calls: int, message_id: str | None,
    ) -> SendMessage:
        validate_session_key(app, user_id, session_id)
        content = Content.user(message) if isinstance(message, str) else message
        if not isinstance(content, Content):
            raise InvalidInputError(f"message is a {type(message).__name__}; send a str or an adk_core Content")
        if state_delta:
            _check_state(state_delta, "state_delta")
        return SendMessage(
            message=content, state_delta=state_delta, max_llm_calls=max_llm_calls,
            message_id=message_id or uuid.uuid4().hex,
        )

    def _handle(self, app: str, user_id: str, session_id: str) -> WorkflowHandle:
        return self.client.get_workflow_handle(session_workflow_id(app, user_id, session_id))

    async def _update(
        self, update: Any, arg: Any, app: str, user_id: str, session_id: str, initial_state: dict[str, Any] | None
    ) -> TurnResult:
        # Each attempt is a new update with its own id: the workflow deduplicates by the message
        # id inside ``arg``. Reusing one update id across retries under contention has been seen
        # to break the SDK's update state machine ("UpdateMachine ... transition is invalid").
        # A WithStartWorkflowOperation also serves one call only.
        workflow_id = session_workflow_id(app, user_id, session_id)
        start = None
        try:
            if workflow_id in self._running:
                # A plain update to a conversation this client saw running: the server skips the
                # start it would otherwise try first (about 1 ms of each later message's first token).
                try:
                    result = await self.client.get_workflow_handle(workflow_id).execute_update(
                        update, arg, id=uuid.uuid4().hex
                    )
                    self._running.move_to_end(workflow_id)
                    return result
                except RPCError as e:
                    if e.status != RPCStatusCode.NOT_FOUND:
                        raise
                    del self._running[workflow_id]  # ended (idle): started again below, same message
            start = self._start(app, user_id, session_id, initial_state)
            result = await self.client.execute_update_with_start_workflow(
                update, arg, id=uuid.uuid4().hex, start_workflow_operation=start
            )
            self._running[workflow_id] = None
            if len(self._running) > KNOWN_RUNNING:
                self._running.popitem(last=False)
            return result
        except WorkflowUpdateFailedError as e:
            if _run_ended_under_update(e):
                raise _RunMoved() from None
            raise _update_error(e) from None
        except BaseException as e:
            self._running.pop(workflow_id, None)
            if start is not None:
                # The operation's start handle holds the same error; read it so it is not reported unread.
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(start.workflow_handle(), timeout=0.01)
            if (explained := self._explained(e)) is not e:
                raise explained from None
            raise

    async def _follow(self, handle: WorkflowHandle, message_id: str) -> TurnResult | None:
        """Wait for a queued message's turn by querying it, backing off from 50 ms to 1 s. None:
        the turn is done but its result is held only in the store (ask again by update)."""
        query = TurnQuery(message_id=message_id)
        delay = 0.05
        deadline = time.monotonic() + self.retry_seconds
        polls = 0
        while True:
            try:
                status: TurnStatus = await handle.query(SessionWorkflow.turn, query)
            except RPCError as e:
                if e.status not in _TRANSIENT or time.monotonic() > deadline:
                    raise
                status = TurnStatus(state="queued")
            else:
                deadline = time.monotonic() + self.retry_seconds  # the service answers: no transport trouble
            if status.state == "done":
                return status.result
            if status.state == "failed":
                raise TurnFailedError(status.error_message or "", error_type=status.error_type or "Error")
            if status.state == "unknown":
                raise MessageRejectedError(
                    f"the conversation has no record of message {message_id!r}; it may have ended (idle) before "
                    "running it: send the message again"
                )
            polls += 1
            if polls % FOLLOW_LIVENESS_POLLS == 0:
                await self._reading(lambda: _require_running(handle, message_id))
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 1.0)

    async def _signal(
        self, signal: str, arg: Any, app: str, user_id: str, session_id: str, initial_state: dict[str, Any] | None
    ) -> None:
        """Queue by signal-with-start: durable once accepted, whatever the number of waiting updates."""
        try:
            await self.client.start_workflow(
                SessionWorkflow.run, self._input(app, user_id, session_id, initial_state),
                id=session_workflow_id(app, user_id, session_id), task_queue=self.queue_of(app),
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING, start_signal=signal, start_signal_args=[arg],
                **self._start_options(app, user_id, session_id),
            )
        except RPCError as e:
            raise self._explained(e) from None

    async def _retrying(
        self, call: Callable[[], Awaitable[T]], handle: WorkflowHandle, *, busy: Callable[[], Awaitable[None]]
    ) -> T | None:
        """Run ``call`` until it succeeds, retrying transport errors for up to retry_seconds, and
        report a workflow whose workflow task keeps failing instead of waiting on it forever.
        When the workflow has as many in-flight updates as Temporal allows, ``busy()`` queues the
        message another way and this returns None."""
        deadline = time.monotonic() + self.retry_seconds
        attempt = 0
        while True:
            try:
                return await _watching_task_failures(call(), self.client, handle.id)
            except _RunMoved:
                # The conversation moved to a new worker version while this update waited: the new
                # run holds the message (same id) in its queue, so asking it again runs nothing twice.
                if time.monotonic() > deadline:
                    raise MessageRejectedError(
                        f"workflow {handle.id!r} kept ending its run under this message for {self.retry_seconds:g} s"
                    ) from None
            except (RPCError, RPCTimeoutOrCancelledError) as e:
                # Mostly the workflow's limit of ten in-flight updates (or a rate limit: queueing by
                # signal, itself retried, is right for that too).
                if isinstance(e, RPCError) and e.status == RPCStatusCode.RESOURCE_EXHAUSTED:
                    await self._retry_transport(busy, deadline)
                    return None
                stuck = isinstance(e, RPCError) and "Workflow Task in failed state" in str(e)
                if isinstance(e, RPCError) and e.status not in _TRANSIENT and not stuck:
                    raise
                if time.monotonic() > deadline:
                    if stuck:
                        reason = await workflow_task_failure(self.client, handle.id)
                        if reason is None:
                            # Temporal says "failed state" after timeouts too (an overloaded worker):
                            # that is not a bug a deploy must fix.
                            raise WorkersBusyError(
                                f"workflow {handle.id!r}: its workflow task kept timing out for "
                                f"{self.retry_seconds:g} s (workers too busy or stopped); the message was not "
                                "delivered: send it again later, with the same message id"
                            ) from None
                        raise WorkflowTaskFailedError(
                            f"workflow {handle.id!r} cannot make progress: {reason}. See the worker's log."
                        ) from None
                    raise
            attempt += 1
            await asyncio.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))

    async def _retry_transport(self, call: Callable[[], Awaitable[None]], deadline: float) -> None:
        attempt = 0
        while True:
            try:
                return await call()
            except RPCError as e:
                if e.status not in _TRANSIENT or time.monotonic() > deadline:
                    raise
            attempt += 1
            await asyncio.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))

    async def _reading(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, a read or an idempotent request, retried on transport errors (the service is
        restarting or unreachable) for up to ``retry_seconds``; other errors are raised at once."""
        deadline = time.monotonic() + self.retry_seconds
        attempt = 0
        while True:
            try:
                return await call()
            except (RPCError, RPCTimeoutOrCancelledError) as e:
                if (isinstance(e, RPCError) and e.status not in _TRANSIENT) or time.monotonic() > deadline:
                    raise
            attempt += 1
            await asyncio.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))

    # --- one-shot runs ------------------------------------------------------------------------
    async def run_once(
        self, app: str, user_id: str, session_id: str, message: str | Content, *, workflow_id: str | None = None,
        **options: Any,
    ) -> AgentRunResult:
        """One invocation as its own AgentRunWorkflow (no conversation workflow kept running).

        Transport errors are retried for up to ``retry_seconds``, without running the invocation
        twice: a start whose answer was lost is found again by a mark this call leaves in the
        run's memo, and its result is read from that run."""
        validate_session_key(app, user_id, session_id)
        content = Content.user(message) if isinstance(message, str) else message
        run_input = AgentRunInput(app_name=app, user_id=user_id, session_id=session_id, message=content, **options)
        start = self._start_options(app, user_id, session_id)
        start["static_summary"] = run_summary(app, user_id, session_id, content)
        start["memo"] = {RUN_CALL_MEMO: uuid.uuid4().hex}
        workflow_id = workflow_id or "/".join(["adk-run", *map(escape_id_part, (app, user_id, session_id)), uuid.uuid4().hex[:12]])
        try:
            handle = await self._start_run(run_input, workflow_id, app, start)
            return await self._reading(handle.result)
        except RPCError as e:
            raise self._explained(e) from None

    async def _start_run(
        self, run_input: AgentRunInput, workflow_id: str, app: str, start: dict[str, Any]
    ) -> WorkflowHandle[Any, AgentRunResult]:
        """Start the run once. After a transport error the start may have happened: a retry does
        not start over a closed run of this id (REJECT_DUPLICATE), and a run of this id that
        carries this call's mark is the one this call started."""
        deadline = time.monotonic() + self.retry_seconds
        attempt = 0
        while True:
            retry = attempt > 0
            try:
                return await self.client.start_workflow(
                    AgentRunWorkflow.run, run_input, id=workflow_id, task_queue=self.queue_of(app),
                    id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE if retry else WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                    **start,
                )
            except WorkflowAlreadyStartedError:
                if not retry:
                    raise
                existing = self.client.get_workflow_handle_for(AgentRunWorkflow.run, workflow_id)
                description = await self._reading(existing.describe)
                if (await description.memo()).get(RUN_CALL_MEMO) == start["memo"][RUN_CALL_MEMO]:
                    return existing  # started by this call before its answer was lost
                if description.status == WorkflowExecutionStatus.RUNNING:
                    raise  # another caller's run under this id, as on a first attempt
                attempt = 0  # a closed run of someone else's: this call never started; start anew
                continue
            except (RPCError, RPCTimeoutOrCancelledError) as e:
                if (isinstance(e, RPCError) and e.status not in _TRANSIENT) or time.monotonic() > deadline:
                    raise
            attempt += 1
            await asyncio.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))


RUN_CALL_MEMO = "adk_run_call"
"""Memo key of a one-shot run: a mark unique to the run_once call that started it."""


async def _notified_or_answered(follower: StreamFollower, timeout: float, result: asyncio.Future) -> None:
    """Wait for the stream's next notification, the send's result, or ``timeout``, whichever is first."""
    notified = asyncio.ensure_future(follower.wait(timeout))
    await asyncio.wait([notified] if result.done() else [notified, result], return_when=asyncio.FIRST_COMPLETED)
    if notified.done():
        notified.result()  # the listener gave up: the stream ends with its error
    else:
        notified.cancel()
        await asyncio.gather(notified, return_exceptions=True)


def _answered(result: asyncio.Future) -> bool:
    """Whether the send came back with the turn (or failed); None means queued by signal: follow on."""
    return result.done() and (result.cancelled() or result.exception() is not None or result.result() is not None)


async def _require_running(handle: WorkflowHandle, message_id: str) -> None:
    """Raise when the conversation's workflow has closed: a message still queued there never runs."""
    description = await handle.describe()
    if description.status != WorkflowExecutionStatus.RUNNING:
        raise MessageRejectedError(
            f"the conversation ended ({description.status.name if description.status else 'closed'}) before running "
            f"message {message_id!r}; send it again"
        )


def _check_state(state: dict[str, Any], what: str) -> None:
    """The session store's own rules, before anything is sent: key names, JSON values, no NaN, no NUL."""
    validate_state_delta(state)
    storable_json(state, what)


class _RunMoved(Exception):
    """The update was accepted, then its run ended before answering: the conversation continued
    as new onto another worker version (SessionWorkflow._move_to_current_version). Ask again."""


def _run_ended_under_update(error: WorkflowUpdateFailedError) -> bool:
    cause = error.cause
    return isinstance(cause, ApplicationError) and (
        cause.type == "AcceptedUpdateCompletedWorkflow" or "AcceptedUpdateCompletedWorkflow" in str(cause)
    )


def _update_error(error: WorkflowUpdateFailedError) -> AdkError:
    cause = error.cause
    if not isinstance(cause, ApplicationError):
        return TurnFailedError(str(cause), error_type=type(cause).__name__)
    if cause.type == "MessageRejected":  # the workflow's update validators
        return MessageRejectedError(cause.message)
    return TurnFailedError(cause.message, error_type=cause.type or "ApplicationError")


async def _watching_task_failures(call: Awaitable[T], client: Client, workflow_id: str) -> T:
    """Await ``call``; now and then (failure_check_delays) check whether the workflow's task keeps failing."""
    task = asyncio.ensure_future(call)
    delays = failure_check_delays()
    try:
        while True:
            done, _ = await asyncio.wait([task], timeout=next(delays))
            if done:
                return task.result()
            reason = await workflow_task_failure(client, workflow_id)
            if reason is not None:
                raise WorkflowTaskFailedError(
                    f"workflow {workflow_id!r} cannot make progress: its workflow task keeps failing with: {reason}. "
                    "See the worker's log; deploying a fix resumes the conversation where it stopped."
                )
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def failure_text(client: Client, failure: Failure) -> str:
    """A history failure's message. With a payload codec the message travels encoded (the history
    says "Encoded failure": adk_temporal.workflows.converter.adk_converter): decoded here."""
    if failure.HasField("encoded_attributes") and client.data_converter.payload_codec is not None:
        copy = Failure()
        copy.CopyFrom(failure)
        with contextlib.suppress(Exception):  # a key this process lacks: the encoded text is still an answer
            return str(await client.data_converter.decode_failure(copy)) or "unknown failure"
    return failure.message or "unknown failure"


def failure_check_delays() -> Iterator[float]:
    """Seconds between a waiting send's checks for a failing workflow task: a task that fails on
    its code does so at once, so the first check comes soon; later ones back off."""
    delay = TASK_FAILURE_CHECK_SECONDS
    while True:
        yield delay
        delay = min(delay * 2, TASK_FAILURE_CHECK_MAX_SECONDS)


async def workflow_task_failure(client: Client, workflow_id: str) -> str | None:
    """The worker's error if the workflow's latest workflow task failed (Temporal retries a failed
    task without end), else None. A task that timed out (its worker died) is not a failure: the
    next worker takes it over."""
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id), maximum_page_size=100
    )
    try:
        history = await client.workflow_service.get_workflow_execution_history_reverse(request)
    except RPCError:
        return None
    for event in history.history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            attributes = event.workflow_task_failed_event_attributes
            if attributes.cause not in _WORKER_FAILURES:
                return None  # routine (e.g. a signal arrived while the task completed): retried at once
            return await failure_text(client, attributes.failure)
        if event.event_type in _TASK_ENDS:
            return None
    return None


_WORKER_FAILURES = {
    # The worker could not run the workflow code: what a fix must be deployed for.
    WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
    WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR,
}
_TASK_ENDS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
}
