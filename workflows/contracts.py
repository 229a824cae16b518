"""Workflow inputs, results, updates and queries: plain pydantic models, so
``temporal workflow start --type AgentRunWorkflow --input '{...}'`` works from the CLI."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from adk_core.ids import escape_id_part, validate_id
from adk_core.types import Content, Event

TASK_QUEUE = "adk"
"""The base task queue: eval suites, and every app when a deployment names one queue for all."""


def app_task_queue(app_name: str) -> str:
    """The task queue of ``app_name``'s workflows and activities, unless a deployment names one queue
    for everything (``--task-queue`` / ADK_TASK_QUEUE). One queue per app means a worker only ever
    receives work for apps it serves: an app's own worker can run beside `adkt dev` without either
    picking up the other's conversations."""
    return f"{TASK_QUEUE}.{app_name}"


def _as_content(value: Any) -> Any:
    # A plain string is a user message: keeps CLI-started runs short to type.
    return Content.user(value) if isinstance(value, str) else value


class TurnContinuation(BaseModel):
    """The rest of an invocation that outgrew one workflow run (docs/durability.md, "Long turns"):
    it resumes from the stored session at its next model call."""

    invocation_id: str
    llm_calls: int
    """Model calls the invocation made before, counted against its max_llm_calls."""
    user_content: Content | None = None
    events_before: int = 0
    """Events the invocation made in earlier runs (they are in the session store)."""


class AgentRunInput(BaseModel):
    """One invocation: a message into a session, the events out."""

    app_name: str
    user_id: str
    session_id: str
    message: Content | None = None
    state_delta: dict[str, Any] | None = None
    create_session: bool = True
    initial_state: dict[str, Any] | None = None
    max_llm_calls: int = 500
    wait_for_replies: bool = True
    """Wait (durably, as long as it takes) for tool confirmations inside this run, answered with
    the ``reply`` update; False ends the run at the request, ADK style."""
    continuation: TurnContinuation | None = None
    """Resume this invocation instead of starting one (``message`` is then None)."""

    _coerce = field_validator("message", mode="before")(_as_content)


class AgentRunResult(BaseModel):
    session_id: str
    invocation_id: str
    events: list[Event]
    final_text: str = ""
    events_omitted: int = 0
    """Earlier events of the invocation left out to keep this result small (they are stored)."""


class SendMessage(BaseModel):
    message: Content
    state_delta: dict[str, Any] | None = None
    max_llm_calls: int = 500
    message_id: str | None = None
    """The idempotency key of this message (the client's update id by default): sending the same
    id again returns the first turn's result instead of running a second turn."""
    streaming_mode: Literal["none", "sse"] = "none"
    """"sse": the turn's model calls stream, and their partial events reach clients that follow
    the turn's stream (AdkClient.stream(partial=True)) without entering workflow history."""

    _coerce = field_validator("message", mode="before")(_as_content)


class TurnResult(BaseModel):
    invocation_id: str = ""
    events: list[Event] = Field(default_factory=list)
    final_text: str = ""
    message_id: str = ""
    events_omitted: int = 0
    """Earlier events of the turn left out to keep this result small (a turn of thousands of tool
    calls): ``events`` holds the newest ones; all of them are in the session store."""

    def events_after(self, after: int) -> tuple[list[Event], int]:
        """The turn's events from index ``after`` on that this result holds, and the index of the
        first of them: past ``after`` when the result left out older events than that."""
        return _kept_after(self.events, self.events_omitted, after)


def _kept_after(kept: list[Event], omitted: int, after: int) -> tuple[list[Event], int]:
    """Of a turn's newest events ``kept`` (``omitted`` older ones left out), those from the turn's
    index ``after`` on, and the index of the first of them."""
    start = max(0, after - omitted)
    return kept[start:], start + omitted


class TurnOutcome(BaseModel):
    """A finished turn as the workflow keeps it: its result, or why it failed."""

    message_id: str
    result: TurnResult | None = None
    error_type: str | None = None
    error_message: str | None = None
    failed_events: list[Event] = Field(default_factory=list)
    """A failed turn's newest events (its error event last), within the result's byte budget, so
    that a client following the turn sees every event it made before the failure."""
    failed_events_omitted: int = 0

    def failed_events_after(self, after: int) -> tuple[list[Event], int]:
        """As TurnResult.events_after, for a failed turn's events."""
        return _kept_after(self.failed_events, self.failed_events_omitted, after)


class TurnFailure(BaseModel):
    error_type: str | None = None
    error_message: str | None = None


class CarriedTurns(BaseModel):
    done: dict[str, str] = Field(default_factory=dict)
    """message id -> invocation id of recent turns (bounded), for idempotency across runs."""
    outcomes: list[TurnOutcome] = Field(default_factory=list)
    """The last few turns in full."""
    failed: dict[str, TurnFailure] = Field(default_factory=dict)
    """message id -> why its turn failed, for recent failed turns (bounded): a failed message sent
    again gets its failure, as within one run, instead of a second turn."""
    queued: list[SendMessage] = Field(default_factory=list)
    """Messages not yet run, handed over when the conversation moves to a new worker version
    (docs/versioning.md): they run on the new version, in order."""
    moved_from: str | None = None
    """The worker deployment version (``name:build_id``) the previous run ran on, when this run
    started because the conversation moved to a new version."""
    idle_since: float | None = None
    """When the conversation went idle (epoch seconds), when the previous run renewed itself while
    idle (``SessionWorkflowInput.renew_idle_run_after_seconds``): the idle timeout counts from then."""


class SessionWorkflowInput(BaseModel):
    """A conversation. The workflow id is derived from (app, user, session): see session_workflow_id."""

    app_name: str
    user_id: str
    session_id: str
    initial_state: dict[str, Any] | None = None
    idle_timeout_seconds: float = 3600.0
    """An idle conversation ends after this; the next message starts it again."""
    renew_idle_run_after_seconds: float | None = 300.0
    """A conversation idle this long continues as new, when its run's history is long enough
    (workflows/session.py, RENEW_MIN_HISTORY_EVENTS) that a worker without it cached would replay
    a good part of it for the next message; the new run holds a few events. None: never."""
    max_turns_per_run: int | None = None
    """Continue-as-new after this many turns in one run, besides whenever Temporal suggests it
    (bounds history size by turns; small values make continue-as-new cheap to test)."""
    max_history_events: int = 1000
    """Continue-as-new (between turns) once the run's history has this many events. A worker that
    takes over a conversation replays its run from the start; unbounded, a run of a few thousand
    events took longer than the 10 s workflow task timeout to replay on a loaded worker, so the
    task timed out again and again and the conversation stopped (chaos bench)."""
    carried: CarriedTurns | None = None
    """What a run hands to the next one at continue-as-new: recent turns, so a repeated message
    id still returns its first result and clients following a queued turn still find it."""


class TurnQuery(BaseModel):
    message_id: str
    after: int = 0
    """Return the turn's events from this index on."""


class TurnStatus(BaseModel):
    """A message's progress, for clients that follow a queued turn or stream one."""

    state: Literal["queued", "running", "done", "failed", "unknown"]
    position: int = 0
    events: list[Event] = Field(default_factory=list)
    """The turn's events from ``after`` on (all of them once done or failed)."""
    first: int | None = None
    """The index in the turn of ``events[0]``: ``after``, or past it when a finished turn's result
    left out older events (TurnResult.events_omitted). None from workers before this field: ``after``."""
    result: TurnResult | None = None
    error_type: str | None = None
    error_message: str | None = None


class PendingRequest(BaseModel):
    """Something the run waits for from outside: a tool confirmation or a long-running tool's result."""

    kind: Literal["tool_confirmation", "long_running_tool"]
    call_id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    hint: str = ""
    agent: str = ""


class Reply(BaseModel):
    """The answer to a pending request: for a confirmation ``{"confirmed": true}`` (and an optional
    payload); for a long-running tool, its final result."""

    call_id: str
    response: dict[str, Any]
    reply_id: str | None = None
    """The idempotency key of this reply: sending it again returns the first result."""


class AgentToolInput(BaseModel):
    app_name: str
    agent_name: str
    user_id: str
    session_id: str
    args: dict[str, Any]
    state: dict[str, Any] = Field(default_factory=dict)
    max_llm_calls: int = 500


class AgentToolResult(BaseModel):
    response: Any = None
    state_delta: dict[str, Any] = Field(default_factory=dict)


class AgentBranchInput(BaseModel):
    """A ParallelAgent branch run as a child workflow, inside its parent's invocation."""

    app_name: str
    user_id: str
    session_id: str
    agent_name: str
    branch: str
    invocation_id: str
    user_content: Content | None = None
    max_llm_calls: int = 500


class AgentBranchResult(BaseModel):
    events: list[Event]
    """The branch's events, already stored."""


def session_workflow_id(app_name: str, user_id: str, session_id: str) -> str:
    """``adk-session/{app}/{user}/{session}``, each part with '%' and '/' escaped: distinct
    (app, user, session) triples never share a workflow, whatever characters their ids hold."""
    parts = (escape_id_part(validate_id(kind, value)) for kind, value in
             (("app name", app_name), ("user id", user_id), ("session id", session_id)))
    return "adk-session/" + "/".join(parts)


def final_text(events: list[Event]) -> str:
    for event in reversed(events):
        if event.is_final_response() and event.text:
            return event.text
    return ""
