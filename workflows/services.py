"""Session, artifact and memory services for workflow code: every call is an activity.

The engine inside a workflow talks to these exactly as it talks to the in-process services.
Session commits are not sent one by one: they are queued and ride along with the next model or
tool activity. A model activity stores them idempotently (in the background when its worker knows
their order: activities/_history.RideAlongWriter); a tool activity leaves them to the next model
call. Each says how many are stored; the rest stay queued and ride along again. Whatever is left
is flushed, waiting for the store, at the end of the invocation. That keeps a turn at the
activity count of its model and tool calls.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from adk_core.artifacts import ArtifactService
    from adk_core.errors import InvalidInputError, UnsupportedOperationError
    from adk_core.memory import MemoryEntry, MemoryService, SearchMemoryResponse
    from adk_core.sessions import GetSessionConfig, ListSessionsResponse, Session, SessionService
    from adk_core.sessions.base import apply_event_to_session, prepare_event_for_storage
    from adk_core.types import Event, Part
    from adk_temporal.activities import contracts as c

if TYPE_CHECKING:
    from ._turn_stream import TurnStream

STORE_TIMEOUT = timedelta(seconds=30)
STORE_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10), maximum_attempts=20
)
"""About two and a half minutes of retries: long enough to ride out a Postgres restart or
failover; errors about the data itself are non-retryable and stop at once (activities). Used for
artifacts and memory, which a tool or the model can do without."""
SESSION_STORE_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10))
"""No attempt limit, on purpose: a conversation cannot go on without its session, and giving up
would fail the workflow and lose what it holds (queued messages, idempotency keys, a turn's
events not yet stored). Only transient errors retry (a store outage); errors about the data are
non-retryable and fail the turn at once (activities._fail_fast_on_adk_errors)."""


class StoredByLostTask(BaseException):  # noqa: N818  (a signal, not an error)
    """A commit met an event id the store holds with other content, in a run whose model calls are
    local activities (``DurableSessionService.restart_on_conflict``, eval trials).

    Local activities are recorded in history only when their workflow task completes. A worker
    that died after one of them stored events leaves those events in the store while Temporal runs
    the task again from the last recorded point: the same event ids, but a model asked again answers
    otherwise. The new run is the one Temporal keeps, and it cannot be stored over the old one, so
    its owner starts over in sessions of its own (EvalCaseWorkflow). A BaseException, so the
    engine's error handling never turns it into an error event."""

    def __init__(self, key: c.SessionKey, message: str) -> None:
        super().__init__(f"session {key.session_id!r}: {message}")
        self.key = key


ACTIVITY_FAILURES = (ActivityError, ApplicationError, ActivityTimeoutError)
"""How a failed activity reaches workflow code: an ActivityError carrying what failed as its cause,
or, for a local activity, what failed itself (the activity's ApplicationError, or its timeout)."""
ActivityFailure = ActivityError | ApplicationError | ActivityTimeoutError


def failure_of(error: ActivityFailure) -> BaseException | None:
    """What failed in a failed activity (ACTIVITY_FAILURES)."""
    return error.cause if isinstance(error, ActivityError) else error


END_CANCELLED_TURN_PATCH = "end-cancelled-turn"
"""A workflow cancelled during a turn ends cancelled, after storing the turn's events and an error
event saying so (workflows/_invocation.py). Before it, the cancelled model or tool call failed the
turn as a ModelError or a tool error and the run went on; histories recorded so replay that way."""


def ends_cancelled() -> bool:
    """Whether Temporal asked this workflow to stop (a cancellation request from the server; not an
    inner task cancelled by asyncio, nor a cache eviction) and this run ends the cancelled way
    (END_CANCELLED_TURN_PATCH; runs recorded before go on as they did)."""
    return workflow.cancellation_reason() is not None and workflow.patched(END_CANCELLED_TURN_PATCH)


def raise_if_cancelled(error: BaseException) -> None:
    """Raise the workflow's cancellation when ``error`` is an activity or child workflow cancelled
    because the workflow is: otherwise the engine's error handling would take it for the call's
    failure (a ModelError a callback may recover from) and the turn would go on."""
    if cancelled_call(error):
        stop_if_cancelled()


def cancelled_call(error: BaseException) -> bool:
    """Whether ``error`` is an activity or child workflow failing as cancelled."""
    return isinstance(getattr(error, "cause", None), CancelledError)


def stop_if_cancelled() -> None:
    """Raise the workflow's cancellation if Temporal asked for it. Checked where a turn is about to
    make its next call and after each turn: a cancellation that reached only a call that then
    completed anyway (a child workflow, an artifact or memory activity), or one some handler took
    for a failure, still ends the run."""
    if ends_cancelled():
        raise asyncio.CancelledError(f"the workflow was cancelled: {workflow.cancellation_reason() or 'no reason given'}")


def stored_by_lost_task(error: ActivityFailure) -> bool:
    """Whether an activity failed on an event stored with other content (EventConflictError)."""
    cause = failure_of(error)
    return isinstance(cause, ApplicationError) and cause.type == "EventConflictError"


class DurableSessionService(SessionService):
    """One session per workflow: commits queue up in ``unacked`` until an activity stores them."""

    def __init__(self, key: c.SessionKey) -> None:
        self.key = key
        self.unacked: list[Event] = []
        self.stored_through: str | None = None
        """The newest event known stored with everything before it: what the next commit follows."""
        self._order: dict[str, int] = {}
        self.stored_elsewhere: set[str] = set()
        """Ids of events a child workflow already stored: applied here, not stored again."""
        self.unloaded_through: str | None = None
        """The newest stored event not held in the workflow's session copy (see history_cursor)."""
        self._empty = False
        """Loaded without events, and nothing stored since: the next commit starts the session."""
        self.stored_ahead: dict[str, Event] = {}
        """Answers their model call stored (ModelCallInput.answer), by id, as the call stored them:
        committed, each is checked against this and applied, not stored again."""
        self.restart_on_conflict = False
        """Raise StoredByLostTask on a conflicting commit rather than fail the turn: set where model
        calls are local activities and the owner can start over (an eval trial)."""

    # The engine's commit path ------------------------------------------------------------------
    async def append_event(self, session: Session, event: Event) -> Event:
        if prepare_event_for_storage(event) is None:
            return event
        stored = self.stored_ahead.pop(event.id, None)
        if stored is not None and event != stored:
            # TemporalRuntime._answer_slot lets a call store its answer only where nothing can
            # change the event made of it; reaching here means a path it does not know of.
            raise ApplicationError(
                f"event {event.id!r} of session {self.key.session_id!r} differs from the answer its model call "
                "stored; the model call's answer is kept and this turn stops",
                type="EventConflictError", non_retryable=True,
            )
        apply_event_to_session(session, event)  # drops temp: keys from the event's delta
        if stored is not None:
            # Stored by its model call, right after everything the call carried: with nothing
            # queued since, it is the newest stored event.
            self.stored_through = None if self.unacked else event.id
            self._empty = False
            return event
        if event.id in self.stored_elsewhere:
            # Stored by a child workflow, possibly interleaved with a sibling's: the order is unknown.
            self.stored_elsewhere.discard(event.id)
            self.stored_through = None
            self._empty = False
            return event
        self._order[event.id] = len(self._order)
        self.unacked.append(event)
        return event

    def take_commits(self) -> list[Event]:
        """Events to send with the next activity. They stay queued until it succeeds."""
        return list(self.unacked)

    def commit_after(self) -> str | None:
        """The stored event the queued commits follow (None: unknown, the activity reads back;
        SESSION_START: none, the session is empty)."""
        if self.stored_through is None and self._empty:
            return c.SESSION_START
        return self.stored_through

    def acknowledge(self, events: list[Event]) -> None:
        if not events:
            return
        stored = {e.id for e in events}
        self.unacked = [e for e in self.unacked if e.id not in stored]
        # A batch is always a prefix of the queue when taken, so its last event is stored with
        # everything before it; concurrent batches may come back out of order, hence the max.
        last = events[-1].id
        current = self._order.get(self.stored_through or "", -1)
        if self._order.get(last, -1) >= current:
            self.stored_through = last

    async def flush(self, stream: TurnStream | None = None) -> None:
        """Store every queued event now (end of invocation, before continue-as-new). With the turn's
        ``stream``, events that are the turn's latest go to its followers too once stored."""
        # An answer its call stored is committed before the next step of the turn; one still here
        # was never committed (its turn failed or was cancelled): forget it. Were it committed
        # later all the same, it would be stored again, an idempotent repeat.
        self.stored_ahead.clear()
        events = self.take_commits()
        if not events:
            return
        commit = c.AppendEventsInput(key=self.key, events=events, after=self.commit_after(),
                                     stream_to=stream.committed(events) if stream is not None else None)
        await self._store(c.APPEND_EVENTS, commit, c.AppendEventsResult, summary=f"commit {len(events)} event(s)")
        self.acknowledge(events)

    async def load(
        self, *, create_if_missing: bool, initial_state: dict[str, Any] | None, tail_events: int, minimal_tail: bool = True,
        expect_new: bool = False,
    ) -> c.LoadSessionResult:
        """Load the session this workflow serves; its tail becomes the workflow's session copy.
        ``expect_new``: it is most likely new, so the store creates it first (LoadSessionInput)."""
        result = await self._read(create_if_missing, initial_state, tail_events, minimal_tail, expect_new)
        self.unloaded_through = result.unloaded_through
        events = result.session.events
        self.stored_through = events[-1].id if events else result.unloaded_through
        self._empty = self.stored_through is None
        return result

    async def read_recent(self, count: int) -> list[Event]:
        """The session's last ``count`` stored events, leaving the workflow's copy as it is."""
        return (await self._read(False, None, count, False)).session.events

    async def _read(
        self, create_if_missing: bool, initial_state: dict[str, Any] | None, tail_events: int, minimal_tail: bool,
        expect_new: bool = False,
    ) -> c.LoadSessionResult:
        return await self._store(
            c.LOAD_SESSION,
            c.LoadSessionInput(
                key=self.key, create_if_missing=create_if_missing, initial_state=initial_state, tail_events=tail_events,
                minimal_tail=minimal_tail, expect_new=expect_new,
            ),
            c.LoadSessionResult,
            summary=f"load session {self.key.session_id}",
        )

    async def _store(self, name: str, arg: Any, result_type: type, *, summary: str) -> Any:
        # The session's own loads and commits retry until the store is back (SESSION_STORE_RETRY).
        # Local activities: one round trip less per commit, and the session store is on every worker.
        try:
            return await workflow.execute_local_activity(
                name, arg, result_type=result_type, start_to_close_timeout=STORE_TIMEOUT,
                retry_policy=SESSION_STORE_RETRY, summary=summary,
            )
        except ACTIVITY_FAILURES as e:
            raise_if_cancelled(e)
            self.check_lost_task(e)
            raise

    def check_lost_task(self, error: ActivityFailure) -> None:
        """Raise StoredByLostTask for a conflicting commit, where the owner starts over on one."""
        if self.restart_on_conflict and stored_by_lost_task(error):
            cause = failure_of(error)
            raise StoredByLostTask(self.key, str(cause.message if isinstance(cause, ApplicationError) else cause))

    # The rest of the contract: a workflow serves one session ---------------------------------
    # What a durable run cannot offer raises UnsupportedOperationError, an AdkError: the turn fails
    # with the message (and the session stores it), where any other error in a child workflow
    # would fail its workflow task over and over. Workflow code may not read the store freely
    # (each read would be an activity in the run's history, and other sessions change under it);
    # tools run as activities with the worker's real SessionService, so they can.
    async def create_session(self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        raise _unsupported(
            "create_session", "a durable run serves only the session its workflow was started for; start another "
            "conversation from a client (AdkClient.send creates its session), or create it in a tool"
        )

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        if (app_name, user_id, session_id) != (self.key.app_name, self.key.user_id, self.key.session_id):
            raise _unsupported(
                "get_session of another session",
                f"a durable run can read only its own session ({self.key.app_name}/{self.key.user_id}/"
                f"{self.key.session_id}); read other sessions from a client or in a tool",
            )
        await self.flush()
        tail = config.num_recent_events if config and config.num_recent_events else 10_000
        result = await self._read(False, None, tail, False)
        return result.session

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        raise _unsupported(
            "list_sessions", "list sessions outside workflow code (adkt sessions list, a SessionService in your client) or in a tool"
        )

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        raise _unsupported(
            "delete_session", "delete sessions outside workflow code (a SessionService in your client) or in a tool"
        )

    async def delete_user(self, *, app_name: str, user_id: str) -> None:
        raise _unsupported(
            "delete_user", "delete users outside workflow code (`adkt users delete`, adk_temporal.deletion) or in a tool"
        )

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        raise _unsupported(
            "get_user_state", "read the user's state from session.state (its user: keys) inside a durable run"
        )

    async def get_app_state(self, *, app_name: str) -> dict[str, Any]:
        raise _unsupported("get_app_state", "read the app's state from session.state (its app: keys) inside a durable run")


def _unsupported(method: str, instead: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(f"{method} is not available inside a durable run (workflow code): {instead}")


ARTIFACT_SAVE_ID_PATCH = "artifact-save-id"
"""Saves give the activity a save id, drawn in workflow code; runs that saved before it existed
replay without drawing it (a draw moves every later id of the run)."""


class DurableArtifactService(ArtifactService):
    def __init__(self, key: c.SessionKey) -> None:
        self.key = key

    async def _call(self, summary: str, op: type[c.ArtifactOpBase], **fields: Any) -> c.ArtifactCallResult:
        key = c.SessionKey(app_name=fields.pop("app_name"), user_id=fields.pop("user_id"), session_id=fields.pop("session_id"))
        try:
            call = c.ArtifactCallInput(op(key=key, **fields))
        except ValidationError as e:
            # In workflow code a ValidationError would fail the workflow task over and over; this fails the call.
            raise InvalidInputError(f"{summary}: {e}") from None
        return await workflow.execute_activity(
            c.ARTIFACTS, call, result_type=c.ArtifactCallResult,
            start_to_close_timeout=STORE_TIMEOUT, retry_policy=STORE_RETRY, summary=summary,
        )

    async def save_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part,
                            save_id: str | None = None) -> int:
        # One id for every attempt of the activity, made here so a replay makes the same one: a
        # retry of an attempt that committed gets the version stored instead of storing another.
        if save_id is None and workflow.patched(ARTIFACT_SAVE_ID_PATCH):
            save_id = str(workflow.uuid4())
        result = await self._call(f"save artifact {filename}", c.SaveArtifact, app_name=app_name, user_id=user_id,
                                  session_id=session_id, filename=filename, artifact=artifact, save_id=save_id)
        assert result.version is not None  # a save always answers with its version
        return result.version

    async def load_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str,
                            version: int | None = None) -> Part | None:
        result = await self._call(f"load artifact {filename}", c.LoadArtifact, app_name=app_name, user_id=user_id,
                                  session_id=session_id, filename=filename, version=version)
        return result.artifact

    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        result = await self._call("list artifacts", c.ListArtifacts, app_name=app_name, user_id=user_id,
                                  session_id=session_id)
        return result.names

    async def delete_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None:
        await self._call(f"delete artifact {filename}", c.DeleteArtifact, app_name=app_name, user_id=user_id,
                         session_id=session_id, filename=filename)

    async def list_versions(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> list[int]:
        result = await self._call(f"versions of {filename}", c.ListArtifactVersions, app_name=app_name, user_id=user_id,
                                  session_id=session_id, filename=filename)
        return result.versions


MEMORY_FLUSH_PATCH = "memory-add-flushes-first"


class DurableMemoryService(MemoryService):
    def __init__(self, key: c.SessionKey, sessions: DurableSessionService | None = None) -> None:
        self.key = key
        self._sessions = sessions
        """The workflow's own session service: its queued events are stored before the activity
        reads the session, so memory gets the whole conversation so far."""

    async def add_session_to_memory(self, session: Session) -> None:
        key = c.SessionKey(app_name=session.app_name, user_id=session.user_id, session_id=session.id)
        # Patched: runs that added their session to memory before the flush existed replay without it.
        if self._sessions is not None and key == self._sessions.key and workflow.patched(MEMORY_FLUSH_PATCH):
            await self._sessions.flush()
        await workflow.execute_activity(
            c.MEMORY, c.MemoryCallInput(key=key, op="add_session"), result_type=c.MemoryCallResult,
            start_to_close_timeout=STORE_TIMEOUT, retry_policy=STORE_RETRY, summary="add session to memory",
        )

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        key = c.SessionKey(app_name=app_name, user_id=user_id, session_id=self.key.session_id)
        result = await workflow.execute_activity(
            c.MEMORY, c.MemoryCallInput(key=key, op="search", query=query), result_type=c.MemoryCallResult,
            start_to_close_timeout=STORE_TIMEOUT, retry_policy=STORE_RETRY, summary=f"search memory: {query[:40]}",
        )
        return SearchMemoryResponse(memories=[MemoryEntry.model_validate(m) for m in result.memories])
