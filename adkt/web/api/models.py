"""The HTTP API's request and response bodies. The OpenAPI schema is generated from these models
and the route table (endpoints.py), and the dispatcher validates every body against them, so the
documented shapes are the served shapes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adk_core.eval.store import RunDetail, RunRecord
from adk_core.types import Content, Event
from adk_temporal.workflows.contracts import PendingRequest

__all__ = [
    "AppInfo", "AppList", "CreateSessionBody", "Deleted", "ErrorBody", "EvalRunList", "ListSessionsQuery",
    "ListRunsQuery", "MessageBody", "PendingList", "PendingRequest", "ReplyBody", "RunDetail", "SessionDetail",
    "SessionList", "SessionSummary", "StreamDone", "StreamStart", "TurnResponse",
]


class _Body(BaseModel):
    # A misspelt field is an error that names it, not a silently ignored key.
    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    """Every error: what kind, and a message that says what to change."""

    error: str = Field(description="the error's kind, e.g. InvalidInput, SessionNotFound, MessageRejected")
    message: str = Field(description="what went wrong and how to fix it")


class AppInfo(BaseModel):
    name: str = Field(description="App.name: the {app} of every session path")
    agent: str | None = Field(None, description="the root agent's name, when the app is loaded here")
    description: str = ""
    spec: str | None = Field(None, description="module:attr the app was loaded from")


class AppList(BaseModel):
    apps: list[AppInfo]
    temporal_ui: str | None = Field(None, description="base URL of the Temporal UI, when one is known")
    namespace: str = "default"
    simulator_page: str | None = Field(None, description="path of the agent simulator's page on this server")


class SessionSummary(BaseModel):
    app_name: str
    user_id: str
    session_id: str
    state: dict[str, Any] = Field(default_factory=dict)
    last_update_time: float = 0.0
    workflow_id: str = Field(description="the conversation's SessionWorkflow id in Temporal")
    workflow_url: str | None = Field(None, description="the workflow in the Temporal UI, when its URL is known")


class SessionList(BaseModel):
    sessions: list[SessionSummary] = Field(description="newest first")


class SessionDetail(SessionSummary):
    events: list[Event] = Field(default_factory=list)
    worker_version: str | None = Field(
        None, description="the worker deployment version (name:build_id) the conversation's open run is on; "
        "null when it is not running or runs on unversioned workers (docs/versioning.md)",
    )


class ListSessionsQuery(_Body):
    user_id: str | None = Field(None, description="only this user's sessions")


class CreateSessionBody(_Body):
    session_id: str | None = Field(None, description="the new session's id; omitted: a new random id")
    state: dict[str, Any] | None = Field(None, description="initial state: session and user: keys; app: keys (shared by every user) need the operator role")


class Deleted(BaseModel):
    deleted: bool = True
    workflow_terminated: bool = Field(description="whether a running conversation workflow was terminated with it")


class MessageBody(_Body):
    """A user message: ``text`` or a full ``content`` (exactly one)."""

    text: str | None = None
    content: Content | None = None
    message_id: str | None = Field(
        None, description="idempotency key: the same id sent again returns the first turn instead of a second one"
    )
    partial: bool = Field(
        False, description="/messages/stream only: stream the model's output token by token as `partial` events "
        "(the committed `event`s are the same either way)",
    )

    @model_validator(mode="after")
    def _one_message(self) -> MessageBody:
        if (self.text is None) == (self.content is None):
            raise ValueError('send exactly one of "text" (a string) or "content" (an adk Content)')
        return self

    def message(self) -> str | Content:
        return self.text if self.text is not None else self.content  # type: ignore[return-value]


class TurnResponse(BaseModel):
    message_id: str
    invocation_id: str = ""
    final_text: str = ""
    events: list[Event]
    pending: list[PendingRequest] = Field(description="what the conversation waits for after this turn")


class PendingList(BaseModel):
    pending: list[PendingRequest]


class ReplyBody(_Body):
    """The answer to a pending request: ``{"confirmed": true|false}`` (and an optional payload) for a
    tool confirmation; the tool's final result (any JSON object) for a long-running tool."""

    response: dict[str, Any]
    reply_id: str | None = Field(None, description="idempotency key: the same id sent again is one reply")


class EvalRunList(BaseModel):
    runs: list[RunRecord] = Field(description="newest first")


class ListRunsQuery(_Body):
    limit: int = Field(20, ge=1, le=500, description="how many runs, newest first")


class StreamStart(BaseModel):
    """SSE ``start``: the message was accepted for sending."""

    message_id: str
    workflow_id: str
    workflow_url: str | None = None


class StreamDone(BaseModel):
    """SSE ``done``: the turn finished; what it waits for now, if anything."""

    message_id: str
    final_text: str = ""
    event_count: int
    pending: list[PendingRequest]
