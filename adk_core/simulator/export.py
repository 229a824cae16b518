"""A simulator session as an eval case: a conversation played once by a person becomes a
regression test (docs/simulator.md, "Export as an eval case").

``export_session`` reads what the person answered, per agent and in order, with the tool calls
they made and the tool results the agents saw (from the next request of the same agent), and the
user's messages. ``eval_case`` turns that into an ``EvalCase``: the targeted agents replay the
person's answers instead of waiting for one (``SimulatorReplayPlugin`` takes the place of
``SimulatorPlugin``), recorded tool results become ``ToolMock``s, later user messages a
``scripted_user``, and the person's tool calls the expected ``tool_trajectory``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ..app import App
from ..errors import ConfigurationError, EvalToolError
from ..flow.contents import CONTEXT_HEADER
from ..plugins.base import BasePlugin
from ..types import REQUEST_CONFIRMATION_FUNCTION, Event
from . import rules
from .errors import SimulatorInputError
from .models import SessionView, is_abandoned, request_payload, to_llm_response
from .plugin import SimulatorPlugin
from .service import SimulatorService

if TYPE_CHECKING:
    from ..agents.base import BaseAgent
    from ..agents.context import CallbackContext
    from ..eval import EvalCase, Metric
    from ..eval.mocks import ToolMocks
    from ..models.base import LlmRequest, LlmResponse

EXPORT_FORMAT: Literal["adk-simulator-export/1"] = "adk-simulator-export/1"


class RecordedToolCall(BaseModel):
    """A function call a person answered with, and the result its agent saw (None: not recorded,
    e.g. the run stopped first, or a durable request held it only by reference)."""

    agent_name: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    response: dict[str, Any] | None = None


class SimulatorExport(BaseModel):
    """A simulator session's answered turns, as JSON (``adkt sim export``) or for ``eval_case``."""

    format: Literal["adk-simulator-export/1"] = EXPORT_FORMAT
    session_id: str
    description: str = ""
    app_name: str | None = None
    user_messages: list[str] = Field(default_factory=list)
    answers: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """agent name -> the person's answers (``GenerateContentResponse``) in the order asked."""
    tool_calls: list[RecordedToolCall] = Field(default_factory=list)


async def export_session(service: SimulatorService, session_id: str) -> SimulatorExport:
    """The answered turns of simulator session ``session_id`` (pending ones are left out)."""
    return export_view(await service.view(session_id))


def export_view(view: SessionView) -> SimulatorExport:
    answers: dict[str, list[dict[str, Any]]] = {}
    calls: list[tuple[RecordedToolCall, str | None]] = []
    user_messages: list[str] = []
    for turn in view.timeline:
        request = turn.request.llm_request or {}
        messages = _user_messages(request)
        if len(messages) > len(user_messages):
            user_messages = messages
        results = _function_responses(request)
        for call, call_id in calls:  # the results this agent saw for its earlier calls
            if call.response is None and call.agent_name == turn.agent_name:
                call.response = results.get(call_id or "") or results.get(call.name)
        if turn.response is None or is_abandoned(turn.response.llm_response):
            continue  # pending, or closed unanswered (the run that asked was gone)
        response = turn.response.llm_response or {}
        answers.setdefault(turn.agent_name, []).append(response)
        for part in _parts(response):
            if "function_call" in part:
                fc = part["function_call"]
                calls.append((RecordedToolCall(agent_name=turn.agent_name, name=fc["name"], args=fc.get("args") or {}),
                              fc.get("id")))
    return SimulatorExport(
        session_id=view.session.id, description=view.session.description, app_name=view.session.app_name,
        user_messages=user_messages, answers=answers, tool_calls=[call for call, _ in calls],
    )


def export_events(
    session_id: str, events: Sequence[Event], *, app_name: str | None = None, description: str = ""
) -> SimulatorExport:
    """A stored conversation (a dev chat session's events) in the same export: each agent's model
    answers in order, the user's messages, and the tool calls with the results the agents saw. So
    ``eval_case`` replays a chat as it replays a simulator session (the dev page's "Save as eval case").

    Framework events are not answers: tool confirmation requests (the engine makes them) are left
    out, and a session holding one cannot be replayed (the answer count would no longer line up).
    """
    answers: dict[str, list[dict[str, Any]]] = {}
    calls: dict[str, RecordedToolCall] = {}
    ordered: list[RecordedToolCall] = []
    user_messages: list[str] = []
    for event in events:
        if event.partial or event.content is None:
            continue
        for result in event.function_responses():
            call = calls.get(result.id or "")
            if call is not None and call.response is None:
                call.response = result.response
        if event.author == "user":
            text = "".join(p.text or "" for p in event.content.parts if not p.thought)
            if text:
                user_messages.append(text)
            continue
        made = [c for c in event.function_calls() if c.name != REQUEST_CONFIRMATION_FUNCTION]
        if event.content.role != "model" or (event.function_calls() and not made):
            continue
        content = event.content.model_dump(mode="json", exclude_none=True)
        answers.setdefault(event.author, []).append({"candidates": [{"content": content}]})
        for fc in made:
            recorded = RecordedToolCall(agent_name=event.author, name=fc.name, args=dict(fc.args or {}))
            ordered.append(recorded)
            if fc.id:
                calls[fc.id] = recorded
    return SimulatorExport(
        session_id=session_id, description=description or f"dev chat session {session_id}", app_name=app_name,
        user_messages=user_messages, answers=answers, tool_calls=ordered,
    )


def _parts(response: dict[str, Any]) -> list[dict[str, Any]]:
    candidates = response.get("candidates") or [{}]
    return (candidates[0].get("content") or {}).get("parts") or []


def _user_messages(request: dict[str, Any]) -> list[str]:
    """The user's own messages in a request: user-role text, not another agent's retold turn."""
    found = []
    for content in request.get("contents") or []:
        parts = content.get("parts") or []
        if content.get("role") != "user" or not parts or any("text" not in p for p in parts):
            continue
        if parts[0]["text"] == CONTEXT_HEADER:
            continue
        found.append("".join(p["text"] for p in parts))
    return found


def _function_responses(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """call id (and tool name, for the latest) -> the result, from a request's function responses."""
    found: dict[str, dict[str, Any]] = {}
    for content in request.get("contents") or []:
        for part in content.get("parts") or []:
            if "function_response" in part:
                fr = part["function_response"]
                found[fr["name"]] = fr.get("response") or {}
                if fr.get("id"):
                    found[fr["id"]] = fr.get("response") or {}
    return found


class SimulatorReplayPlugin(BasePlugin):
    """Answers each recorded agent's model requests with the person's answers, in order.

    Each answer is checked against today's request with the rules a person's answer passes (its
    function calls name offered tools, with arguments their schema accepts), so a changed tool
    fails the replay. The position is the number of that agent's model turns already in the session (its events with
    model content), so it needs no memory of its own: trials and workflow replays start over.
    Agents without recorded answers keep their model.
    """

    def __init__(self, answers: Mapping[str, Sequence[dict[str, Any]]], *, name: str = "simulator_replay") -> None:
        super().__init__(name)
        self.answers = {agent: list(responses) for agent, responses in answers.items()}

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        agent = callback_context.agent_name
        recorded = self.answers.get(agent)
        if recorded is None:
            return None
        session = callback_context.invocation_context.session
        position = sum(
            1 for e in session.events
            if e.author == agent and not e.partial and e.content is not None and e.content.role == "model"
        )  # fmt: skip
        if position >= len(recorded):
            raise ConfigurationError(
                f"agent {agent!r} asked its model a {position + 1}. time, but the person answered it "
                f"{len(recorded)} time(s) in the recorded simulator session; the agent now behaves "
                "differently: record the session again, or add answers to the export's 'answers'"
            )
        answer = recorded[position]
        try:  # the rules a person's answer had to pass still hold against today's request
            rules.check_decision(request_payload(llm_request), answer)
        except SimulatorInputError as e:
            raise SimulatorInputError(
                f"the person's answer {position + 1} to agent {agent!r} no longer fits its request: {e}; "
                "the agent's tools changed since the session was recorded: record it again"
            ) from None
        return to_llm_response(answer)


def eval_case(
    export: SimulatorExport,
    app_or_agent: App | BaseAgent,
    *,
    name: str | None = None,
    tool_mocks: ToolMocks | None = None,
    metrics: Sequence[Metric] | None = None,
    trajectory_match: Literal["exact", "in_order", "any_order"] = "exact",
    **case_options: Any,
) -> EvalCase:
    """An EvalCase that replays ``export`` against ``app_or_agent`` (the app the person played).

    Args:
        export: from ``export_session`` (or ``SimulatorExport.model_validate_json`` of a file).
        app_or_agent: the system under test; its SimulatorPlugins are left out.
        name: the case's name (default: ``simulator-<session id>``).
        tool_mocks: added to (and overriding) the mocks built from the recorded tool results.
        metrics: replace the default, a ``tool_trajectory`` of the person's tool calls
            (``trajectory_match``: use ``in_order`` when untargeted agents call tools too).
        case_options: any other ``EvalCase`` field (``initial_state``, ``terminate_when``, ...).
    """
    from ..eval import EvalCase, ToolMock, UserAgents, scripted_user, tool_trajectory

    if isinstance(app_or_agent, App):
        plugins = [p for p in app_or_agent.plugins if not isinstance(p, SimulatorPlugin)]
        app = App(name=app_or_agent.name, root_agent=app_or_agent.root_agent,
                  plugins=[SimulatorReplayPlugin(export.answers), *plugins])
    else:
        app = App(name=export.app_name or "simulated", root_agent=app_or_agent,
                  plugins=[SimulatorReplayPlugin(export.answers)])
    if not export.user_messages:
        raise ConfigurationError(
            f"simulator session {export.session_id} holds no user message to open the case with; "
            "set export.user_messages (the session's requests held the conversation only by reference)"
        )
    mocks: dict[str, Any] = {name_: ToolMock(execute=_replay_tool(name_, export)) for name_ in
                             {c.name for c in export.tool_calls if c.response is not None}}
    mocks.update(tool_mocks or {})
    later = export.user_messages[1:]
    return EvalCase(
        name=name or f"simulator-{export.session_id}",
        description=export.description or f"replay of simulator session {export.session_id}",
        app_or_agent=app,
        tool_mocks=mocks,
        user_agents=UserAgents(loop=scripted_user("recorded_user", later)) if later else UserAgents(),
        first_message=export.user_messages[0],
        metrics=list(metrics) if metrics is not None else [
            tool_trajectory([(c.name, c.args) for c in export.tool_calls], match=trajectory_match)
        ],
        **case_options,
    )


def _replay_tool(tool_name: str, export: SimulatorExport) -> Any:
    recorded = [(c.args, c.response) for c in export.tool_calls if c.name == tool_name and c.response is not None]

    def execute(args: dict[str, Any]) -> Any:
        for recorded_args, response in recorded:
            if recorded_args == args:
                return response
        raise EvalToolError(
            f"tool {tool_name!r} was called with {json.dumps(args, sort_keys=True)}, which the recorded simulator "
            f"session never saw (it saw {[a for a, _ in recorded]}); pass tool_mocks={{{tool_name!r}: ...}}"
        )

    return execute
