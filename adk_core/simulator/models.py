"""The simulator's entities (as the seed defines them) and the payloads they carry.

Payloads use the Generative Language API's JSON shapes (``GenerateContentRequest`` /
``GenerateContentResponse``, snake_case), so what a person sees is what a Gemini model would get.
Times are epoch seconds, like every other store in this project.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..models.base import LlmRequest, LlmResponse
from ..types import Content, FunctionCall, Part

SessionStatus = Literal["active", "completed"]
PayloadType = Literal["request", "response"]


ABANDONED_KEY = "adk_abandoned"
"""The key of the response that closes a request whose asker is gone (``abandoned_response``)."""


def abandoned_response(reason: str) -> dict[str, Any]:
    """The response stored for a request nobody waits for any more (the run that asked was cancelled
    or ended): it takes the request out of the queue, so the requests behind it can be answered.
    Not an answer: exports leave it out, and a person cannot submit one."""
    return {ABANDONED_KEY: reason}


def is_abandoned(response: dict[str, Any] | None) -> bool:
    return isinstance(response, dict) and ABANDONED_KEY in response


class SimulatorSession(BaseModel):
    """A run of conversations played by a person. One per ADK session the plugin serves."""

    id: str
    """UUIDv4."""
    created_at: float
    description: str = ""
    """At most 500 characters (longer ones are truncated)."""
    status: SessionStatus = "active"
    """``active`` -> ``completed``, never back."""
    app_name: str | None = None
    user_id: str | None = None
    adk_session_id: str | None = None
    """The ADK session whose model requests come here (None for sessions made by hand)."""


class ReplyTo(BaseModel):
    """Where a decision for a request goes. None: the agent waits in the same process as the
    service (in-process runs); a workflow id: the durable run waiting on its ``submit_decision`` update."""

    workflow_id: str | None = None
    run_id: str | None = None


class SessionEvent(BaseModel):
    """One request from an agent or one response from the person. Exactly one payload is set."""

    event_id: str
    session_id: str
    timestamp: float
    turn_id: str
    """UUIDv4 shared by a request and its response."""
    agent_name: str
    llm_request: dict[str, Any] | None = None
    llm_response: dict[str, Any] | None = None
    reply_to: ReplyTo | None = None

    @property
    def payload_type(self) -> PayloadType:
        return "request" if self.llm_request is not None else "response"


class Turn(BaseModel):
    turn_id: str
    agent_name: str
    request: SessionEvent
    response: SessionEvent | None = None


class SessionSummary(BaseModel):
    session: SimulatorSession
    pending_count: int = 0
    turn_count: int = 0
    last_activity: float | None = None


class SessionView(BaseModel):
    """A session as the page shows it: the head of its queue, what waits behind it, and every turn."""

    session: SimulatorSession
    head: SessionEvent | None = None
    pending: list[SessionEvent] = Field(default_factory=list)
    timeline: list[Turn] = Field(default_factory=list)


class FunctionCallDecision(BaseModel):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Decision(BaseModel):
    """What a person answers: a text, one or more function calls, or both (text first); or a
    full ``GenerateContentResponse`` as ``response``."""

    text: str | None = None
    function_calls: list[FunctionCallDecision] = Field(default_factory=list)
    response: dict[str, Any] | None = None

    def to_response(self) -> dict[str, Any]:
        if self.response is not None:
            return self.response
        parts: list[dict[str, Any]] = []
        if self.text:
            parts.append({"text": self.text})
        for call in self.function_calls:
            parts.append({"function_call": {"name": call.name, "args": call.args}})
        if not parts:
            return {"candidates": []}
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finish_reason": "STOP"}]}


# --- payload conversions -----------------------------------------------------------------------


def request_payload(request: LlmRequest) -> dict[str, Any]:
    """An LlmRequest as a ``GenerateContentRequest`` JSON object."""
    config = request.config
    payload: dict[str, Any] = {
        "model": request.model,
        "contents": [c.model_dump(mode="json", exclude_none=True) for c in request.contents],
    }
    if config.system_instruction:
        payload["system_instruction"] = {"parts": [{"text": config.system_instruction}]}
    if config.tools:
        payload["tools"] = [{"function_declarations": [_with_ordering(t.model_dump(mode="json", exclude_none=True))
                                                       for t in config.tools]}]  # fmt: skip
    if config.tool_choice:
        payload["tool_config"] = {"function_calling_config": {"mode": config.tool_choice}}
    generation = config.model_dump(
        mode="json", exclude_none=True, exclude={"system_instruction", "tools", "tool_choice", "labels"}
    )
    if generation:
        payload["generation_config"] = generation
    if request.history is not None:
        # Older turns stay in the session store (durable runs); say so rather than hide it.
        payload["history"] = request.history.model_dump(mode="json", exclude_none=True)
    return payload


def _with_ordering(declaration: dict[str, Any]) -> dict[str, Any]:
    """The declaration with its arguments' order spelled out (``property_ordering``, as Gemini's
    schema has it): Postgres stores the request as JSONB, which sorts object keys (shortest first),
    and the simulator's form lists arguments in the order the tool declares them."""
    parameters = declaration.get("parameters")
    if isinstance(parameters, dict) and isinstance(parameters.get("properties"), dict):
        parameters.setdefault("property_ordering", list(parameters["properties"]))
    return declaration


def function_declarations(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """name -> declaration of the tools a stored request offers."""
    found: dict[str, dict[str, Any]] = {}
    for tool in request.get("tools") or []:
        for declaration in tool.get("function_declarations") or []:
            found[declaration["name"]] = declaration
    return found


def to_llm_response(response: dict[str, Any]) -> LlmResponse:
    """The first candidate of a ``GenerateContentResponse`` as the engine's LlmResponse."""
    candidate = response["candidates"][0]
    content = candidate.get("content") or {}
    parts: list[Part] = []
    for part in content.get("parts") or []:
        if "function_call" in part:
            call = part["function_call"]
            parts.append(Part(function_call=FunctionCall(name=call["name"], args=call.get("args") or {}, id=call.get("id"))))
        elif part.get("text") is not None:
            parts.append(Part(text=part["text"]))
    return LlmResponse(
        content=Content(role="model", parts=parts),
        finish_reason=candidate.get("finish_reason") or "STOP",
        turn_complete=True,
        custom_metadata={"simulated": True},
    )
