"""Events: the append-only record of everything that happens in a session."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .content import Content, FunctionCall, FunctionResponse

REQUEST_CONFIRMATION_FUNCTION = "adk_request_confirmation"
"""Name of the function call an agent emits to ask a human to confirm a tool call."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")


class ToolConfirmation(_Model):
    """A request for (or a reply to) confirming one tool call."""

    hint: str = ""
    confirmed: bool = False
    payload: Any = None


class EventCompaction(_Model):
    """A summary that stands in for the events between two timestamps."""

    start_timestamp: float
    end_timestamp: float
    compacted_content: Content

    def holds(self, timestamp: float) -> bool:
        """Whether ``timestamp`` is in the range (both ends included): an event stored before this
        compaction with that timestamp is one it may cover (adk_core.flow.contents.apply_compactions)."""
        return self.start_timestamp <= timestamp <= self.end_timestamp


class EventActions(_Model):
    """Side effects an event carries; the session store applies them when the event is appended."""

    state_delta: dict[str, Any] = Field(default_factory=dict)
    artifact_delta: dict[str, int] = Field(default_factory=dict)
    transfer_to_agent: str | None = None
    escalate: bool | None = None
    skip_summarization: bool | None = None
    requested_tool_confirmations: dict[str, ToolConfirmation] = Field(default_factory=dict)
    end_of_agent: bool | None = None
    compaction: EventCompaction | None = None

    def is_empty(self) -> bool:
        return self == _EMPTY_ACTIONS

    def merge(self, other: EventActions) -> None:
        """Fold ``other`` into this one (later values win), used when tool results are merged."""
        self.state_delta.update(other.state_delta)
        self.artifact_delta.update(other.artifact_delta)
        self.requested_tool_confirmations.update(other.requested_tool_confirmations)
        for name in ("transfer_to_agent", "escalate", "skip_summarization", "end_of_agent", "compaction"):
            value = getattr(other, name)
            if value is not None:
                setattr(self, name, value)


_EMPTY_ACTIONS = EventActions()


class ModelOutput(_Model):
    """A model's response as an event holds it: the response fields of ``Event``."""

    content: Content | None = None
    turn_complete: bool | None = None
    finish_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    interrupted: bool | None = None
    usage_metadata: dict[str, Any] | None = None
    custom_metadata: dict[str, Any] | None = None
    model_version: str | None = None


class CallbackResponse(_Model):
    """On a model event whose response a model callback (a plugin's or the agent's) gave instead of
    the model: which callback, and what the model said. Replay (adk_core.eval.replay) reads it to
    hand the model's own response to the callbacks again, and no made-up one as a model's."""

    callback: Literal["before_model_callback", "after_model_callback"]
    """``before_model_callback``: it answered, no model was called. ``after_model_callback``: it
    replaced the model's response (returned another, or edited it in place)."""
    model_response: ModelOutput | None = None
    """What the model answered before an ``after_model_callback`` replaced it (None for a
    ``before_model_callback``)."""


def _is_none(value: object) -> bool:
    return value is None


class Event(_Model):
    """One entry in a session's history.

    ``id`` and ``timestamp`` come from the runtime (never the wall clock directly), so an event
    produced inside a Temporal workflow is the same on replay.
    """

    id: str = ""
    invocation_id: str = ""
    author: str
    branch: str | None = None
    timestamp: float = 0.0
    content: Content | None = None
    partial: bool | None = None
    turn_complete: bool | None = None
    finish_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    interrupted: bool | None = None
    long_running_tool_ids: list[str] | None = None
    usage_metadata: dict[str, Any] | None = None
    custom_metadata: dict[str, Any] | None = None
    model_version: str | None = None
    actions: EventActions = Field(default_factory=EventActions)
    callback_response: CallbackResponse | None = Field(default=None, exclude_if=_is_none)
    """Set only when a model callback gave this event's response (see CallbackResponse). Left out
    of the JSON when None (``exclude_if``, pydantic 2.12): every other event serializes as before."""

    def function_calls(self) -> list[FunctionCall]:
        return self.content.function_calls() if self.content else []

    def function_responses(self) -> list[FunctionResponse]:
        return self.content.function_responses() if self.content else []

    @property
    def text(self) -> str:
        return self.content.text if self.content else ""

    def is_final_response(self) -> bool:
        """True when this event ends the agent's turn: text for the user, nothing left to run."""
        if self.actions.skip_summarization or self.long_running_tool_ids:
            return True
        if self.partial:
            return False
        return not self.function_calls() and not self.function_responses()
