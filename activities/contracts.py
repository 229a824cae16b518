"""What crosses the workflow/activity boundary: one input and one result type per activity.

Plain pydantic models (no live objects): sessions by key, events and requests as data. Fields
may be added with defaults without breaking running workflows.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, RootModel
from temporalio.exceptions import ApplicationError

from adk_core.models.base import LlmRequest, LlmResponse
from adk_core.sessions import Session
from adk_core.types import Content, Event, EventActions, Part, ToolConfirmation

from .streaming import StreamTarget, TurnEventsTarget

GENERATE_CONTENT = "adk.generate_content"
RUN_TOOL = "adk.run_tool"
APPEND_EVENTS = "adk.append_events"
LOAD_SESSION = "adk.load_session"
ARTIFACTS = "adk.artifacts"
MEMORY = "adk.memory"
ACTIVITY_NAMES = (GENERATE_CONTENT, RUN_TOOL, APPEND_EVENTS, LOAD_SESSION, ARTIFACTS, MEMORY)

MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
"""The largest single value a durable run carries. Values over 256 KiB travel out of band
(workflows.payload_storage); anything larger than this is refused where it is made."""


def payload_too_large(size: int) -> ApplicationError:
    """The error for a value of ``size`` bytes over ``MAX_PAYLOAD_BYTES``: not retried, since the same
    call would make the same value again."""
    return ApplicationError(
        f"a value of {size / 2**20:.1f} MiB cannot travel through a durable run (at most "
        f"{MAX_PAYLOAD_BYTES // 2**20} MiB per value). Have the tool store large data as an artifact and "
        "return its name, or ask the model for a shorter answer",
        type="PayloadTooLarge",
        non_retryable=True,
    )


class SessionKey(BaseModel):
    app_name: str
    user_id: str
    session_id: str


class LoadSessionInput(BaseModel):
    key: SessionKey
    create_if_missing: bool = True
    initial_state: dict[str, Any] | None = None
    tail_events: int = 20
    """At most this many recent events come into the workflow; older ones stay in the store and
    reach the model by reference."""
    minimal_tail: bool = True
    """Bring only the suffix a new invocation needs (from the last agent event or the oldest
    unanswered long-running call); False brings all ``tail_events``."""
    expect_new: bool = False
    """With ``create_if_missing``: the session is most likely new (an eval trial's), so create it
    first and read it only if it exists already (one query less for a new session)."""


class LoadSessionResult(BaseModel):
    session: Session
    """State, and the most recent events (at most tail_events)."""
    unloaded_through: str | None = None
    """The newest stored event older than the loaded ones; None when all events were loaded."""
    created: bool = False


class AppendEventsInput(BaseModel):
    key: SessionKey
    events: list[Event]
    after: str | None = None
    """The stored event these follow, when known (feeds the worker's cache)."""
    stream_to: TurnEventsTarget | None = None
    """The turn's stream when a client follows it and these are the turn's latest events: once
    stored, they are written there too (activities/streaming.publish_committed)."""


class AppendEventsResult(BaseModel):
    appended: int


SESSION_START = ""
"""``commit_after`` / ``after`` of events that start a session the workflow knows to be empty (None
means: not known)."""


class AnswerSlot(BaseModel):
    """The event a model call's answer is stored as: the workflow's id and timestamp for it (the
    workflow's clock when it made the call: no worker clock mixes into the session's order), and
    where it belongs."""

    event_id: str
    timestamp: float
    invocation_id: str
    author: str
    branch: str | None = None
    last_attempt: int = 0
    """The call's last allowed attempt (its retry policy's maximum_attempts; 0: no limit). That
    attempt returns its answer without storing it: its result lost, no attempt would follow to
    find the answer, and the store would hold one the workflow never saw."""


class ModelCallInput(BaseModel):
    app_name: str
    agent_name: str
    key: SessionKey
    request: LlmRequest
    stream: bool = False
    commit: list[Event] = Field(default_factory=list)
    """Events the workflow made since its last activity; stored (idempotently) before the call
    returns, and readable by the request's history reference."""
    commit_after: str | None = None
    """The stored event ``commit`` follows, when the workflow knows it (lets the worker's cache
    take the events without reading them back); SESSION_START when the session holds none yet."""
    stream_to: StreamTarget | None = None
    """Where a streamed call's partials go (activities/streaming.py); the result never carries them."""
    answer: AnswerSlot | None = None
    """Set when the workflow takes the call's response as it is (no callback can change it): if the
    response is the agent's answer (one final response, no function calls), the call stores it as
    this event, after ``commit``, before it returns. The turn then ends without a commit of its own."""
    defer_commit: bool = False
    """Store ``commit`` only with the answer (``answer``): a call that returns function calls stores
    nothing, and the events ride along with the next activity, until the call that ends the turn
    stores them all and its answer in one write. The model reads them from the input meanwhile.
    The workflow sets it for a turn's first events only (workflows/runtime.py, DEFER_*)."""


class ModelCallResult(BaseModel):
    responses: list[LlmResponse]
    stored_commits: int | None = None
    """How many of the input's ``commit`` events were known stored when the call returned (None:
    all). The worker writes the rest in the background; they stay queued in the workflow and ride
    along with the next activity, which acknowledges them (activities/_history.RideAlongWriter)."""
    answer_stored: bool = False
    """The call stored its response as the input's ``answer`` event, after every ``commit`` event.
    An attempt that finds the answer an earlier attempt stored returns that answer instead of
    calling the model again."""


class ToolCallInput(BaseModel):
    app_name: str
    agent_name: str
    tool_name: str
    args: dict[str, Any]
    function_call_id: str | None
    invocation_id: str
    branch: str | None = None
    key: SessionKey
    state: dict[str, Any] = Field(default_factory=dict)
    """The session state as the tool call sees it (committed state plus this call's delta)."""
    user_content: Content | None = None
    tool_confirmation: ToolConfirmation | None = None
    retry_errors: bool = False
    commit: list[Event] = Field(default_factory=list)
    commit_after: str | None = None


class ToolCallResult(BaseModel):
    response: Any = None
    actions: EventActions = Field(default_factory=EventActions)
    error_type: str | None = None
    error_message: str | None = None
    """Set when the tool raised (and was not to be retried): the engine turns it into an error
    response the model sees, as in-process."""
    error_class: str | None = None
    """``module:qualname`` of the exception's class, so the engine can hand on_tool_error
    callbacks an instance of that class (adk_core.errors.RemoteError.rebuilt)."""
    error_args: list[Any] | None = None
    """The exception's args when they are plain JSON; the class is rebuilt from them."""
    stored_commits: int | None = None
    """How many of the input's ``commit`` events were known stored when the call returned (None:
    all). The worker writes the rest in the background; they stay queued in the workflow and ride
    along with the next activity, which acknowledges them (activities/_history.RideAlongWriter)."""


class ArtifactOpBase(BaseModel):
    key: SessionKey


class ArtifactFileOp(ArtifactOpBase):
    """An operation on one artifact (every op but ``list``)."""

    filename: str


class SaveArtifact(ArtifactFileOp):
    op: Literal["save"] = "save"
    artifact: Part
    save_id: str | None = None
    """Made by the workflow, so every attempt of the activity carries the same one: a retry of a
    save that committed returns the version stored (ArtifactService.save_artifact). None in runs
    that scheduled the save before save ids existed."""


class LoadArtifact(ArtifactFileOp):
    op: Literal["load"] = "load"
    version: int | None = None
    """None: the newest version."""


class ListArtifacts(ArtifactOpBase):
    op: Literal["list"] = "list"


class DeleteArtifact(ArtifactFileOp):
    op: Literal["delete"] = "delete"


class ListArtifactVersions(ArtifactFileOp):
    op: Literal["versions"] = "versions"


ArtifactOp = Annotated[
    SaveArtifact | LoadArtifact | ListArtifacts | DeleteArtifact | ListArtifactVersions, Field(discriminator="op")
]


class ArtifactCallInput(RootModel[ArtifactOp]):
    """One artifact operation, chosen by ``op``; each carries exactly the fields it uses. The JSON is
    flat (``{"op": "save", "key": ..., "filename": ..., "artifact": ...}``), as before the union, so
    inputs scheduled by running workflows still parse."""


class ArtifactCallResult(BaseModel):
    version: int | None = None
    artifact: Part | None = None
    names: list[str] = Field(default_factory=list)
    versions: list[int] = Field(default_factory=list)


class MemoryCallInput(BaseModel):
    key: SessionKey
    op: Literal["search", "add_session"]
    query: str = ""


class MemoryCallResult(BaseModel):
    memories: list[dict[str, Any]] = Field(default_factory=list)
