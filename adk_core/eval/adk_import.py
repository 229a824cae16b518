"""Import google-adk eval sets (``*.evalset.json``, ``*.test.json``) as EvalCases.

Both of google-adk's file formats are read, with snake_case or camelCase keys:

- the EvalSet schema: ``{"eval_set_id", "eval_cases": [{"eval_id", "conversation": [{"user_content",
  "final_response", "intermediate_data": {"tool_uses": [...], "tool_responses": [...]}}],
  "session_input": {"state": {...}}}]}``; a case with a ``conversation_scenario`` (``starting_prompt``,
  ``conversation_plan``, ``user_persona``) gets a ``simulated_user`` instead of a script;
- the older list format: ``[{"query", "expected_tool_use": [{"tool_name", "tool_input"}], "reference"}]``
  (one case per file).

A static conversation becomes: the first user message, then a scripted user saying the next ones
in order; metrics ``tool_trajectory(per_turn=...)`` and ``response_match(per_turn=...)`` with the
thresholds of a ``test_config.json`` beside the file (google-adk's criteria keys
``tool_trajectory_avg_score`` and ``response_match_score``), else google-adk's defaults 1.0 / 0.8.

Tools stay safe by default: give ``tool_mocks`` (``passthrough(...)`` for real tools). A tool with
responses recorded anywhere in the file (``tool_responses``) and no mock replays them: the recorded
response to a call with the same arguments, else the first recorded for that tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..agents.base import BaseAgent
from ..app import App
from ..errors import ConfigurationError
from ..models.base import Model
from .case import EvalCase
from .metrics.base import Metric
from .metrics.response import response_match
from .metrics.trajectory import MatchType, tool_trajectory
from .mocks import ToolMock, ToolMocks
from .scopes import scoped_from_flat
from .termination import TerminateWhen
from .user_agents import UserAgents, scripted_user, simulated_user

DEFAULT_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
_MATCH_TYPES = {"EXACT": "exact", "IN_ORDER": "in_order", "ANY_ORDER": "any_order"}


def load_adk_eval_set(
    path: str | Path,
    app_or_agent: App | BaseAgent,
    *,
    tool_mocks: ToolMocks | None = None,
    replay_recorded_tools: bool = True,
    trials: int = 1,
    user_simulator_model: str | Model | None = None,
    config_path: str | Path | None = None,
) -> list[EvalCase]:
    """Read a google-adk eval set file into EvalCases for ``app_or_agent``.

    Args:
        path: a ``*.evalset.json`` or ``*.test.json`` file.
        app_or_agent: the system under test.
        tool_mocks: mocks / passthroughs for its tools (see EvalCase.tool_mocks).
        replay_recorded_tools: mock unmocked tools with the responses recorded in the file.
        trials: trials per case.
        user_simulator_model: the model playing the user in ``conversation_scenario`` cases.
        config_path: a google-adk ``test_config.json``; default: the one beside ``path``, if any.
    """
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    criteria = _criteria(Path(config_path) if config_path else path.with_name("test_config.json"))
    if isinstance(data, list):
        raw_cases = [{"eval_id": path.name.split(".")[0], "conversation": [_old_turn(t) for t in data]}]
        set_id = path.name.split(".")[0]
    elif isinstance(data, Mapping):
        raw_cases = list(_get(data, "eval_cases") or [])
        set_id = str(_get(data, "eval_set_id") or path.name.split(".")[0])
    else:
        raise ConfigurationError(f"{path}: not a google-adk eval set (expected an object with eval_cases, or a list)")
    if not raw_cases:
        raise ConfigurationError(f"{path}: the eval set has no eval cases")
    mocks = dict(tool_mocks or {})
    if replay_recorded_tools:
        turns = [t for raw in raw_cases for t in _get(raw, "conversation") or []]
        mocks = {**_recorded_mocks(turns), **mocks}
    return [_case(raw, set_id, app_or_agent, criteria, mocks, trials, user_simulator_model) for raw in raw_cases]


def _case(
    raw: Mapping[str, Any], set_id: str, system: App | BaseAgent, criteria: Mapping[str, Any], tool_mocks: dict[str, Any],
    trials: int, simulator_model: str | Model | None,
) -> EvalCase:
    name = f"{set_id}/{_get(raw, 'eval_id')}"
    session_input = _get(raw, "session_input") or {}
    initial_state = scoped_from_flat(_get(session_input, "state") or {})
    scenario = _get(raw, "conversation_scenario")
    if scenario:
        if simulator_model is None:
            raise ConfigurationError(
                f"eval case {name!r} is a conversation_scenario: pass user_simulator_model= (the model playing the user)"
            )
        persona = _get(scenario, "user_persona")
        if isinstance(persona, Mapping):
            persona = _get(persona, "description") or json.dumps(persona)
        user = simulated_user(persona=str(persona or "A typical user."), plan=str(_get(scenario, "conversation_plan")),
                              model=simulator_model)
        return EvalCase(name, app_or_agent=system, tool_mocks=tool_mocks, user_agents=UserAgents(loop=user),
                        initial_state=initial_state, first_message=str(_get(scenario, "starting_prompt")), trials=trials)
    turns = list(_get(raw, "conversation") or [])
    if not turns:
        raise ConfigurationError(f"eval case {name!r} has neither a conversation nor a conversation_scenario")
    users = [_text(_get(t, "user_content")) for t in turns]
    metrics: list[Metric] = []
    trajectory = criteria.get("tool_trajectory_avg_score")
    if trajectory is not None:
        threshold, match = _threshold(trajectory, 1.0)
        metrics.append(tool_trajectory(per_turn=[_tool_uses(_get(t, "intermediate_data")) for t in turns],
                                       match=match, threshold=threshold, name="tool_trajectory_avg_score"))
    response = criteria.get("response_match_score")
    references = [_text(_get(t, "final_response")) if _get(t, "final_response") else None for t in turns]
    if response is not None and any(r is not None for r in references):
        threshold, _ = _threshold(response, 0.8)
        metrics.append(response_match(per_turn=references, threshold=threshold, name="response_match_score"))
    return EvalCase(
        name,
        app_or_agent=system,
        tool_mocks=tool_mocks,
        user_agents=UserAgents(loop=scripted_user("evalset_user", users[1:])) if len(users) > 1 else UserAgents(),
        initial_state=initial_state,
        first_message=users[0],
        terminate_when=TerminateWhen(max_turns=len(users)),
        metrics=metrics,
        trials=trials,
    )


def _get(data: Any, snake: str) -> Any:
    """``data[snake]`` or its camelCase twin (google-adk writes either)."""
    if not isinstance(data, Mapping):
        return None
    if snake in data:
        return data[snake]
    head, *rest = snake.split("_")
    return data.get(head + "".join(w.capitalize() for w in rest))


def _text(content: Any) -> str:
    parts = _get(content, "parts") or []
    return "".join(str(p.get("text") or "") for p in parts if isinstance(p, Mapping))


def _tool_uses(intermediate: Any) -> list[dict[str, Any]]:
    uses = _get(intermediate, "tool_uses")
    if uses is None:  # the InvocationEvents shape: calls inside the recorded events
        uses = [
            _get(part, "function_call")
            for event in _get(intermediate, "invocation_events") or []
            for part in _get(_get(event, "content"), "parts") or []
            if _get(part, "function_call")
        ]
    return [{"name": u["name"], "args": dict(u.get("args") or {})} for u in uses or []]


def _recorded_mocks(turns: Sequence[Any]) -> dict[str, ToolMock]:
    recorded: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    for turn in turns:
        intermediate = _get(turn, "intermediate_data")
        calls = {u.get("id"): dict(u.get("args") or {}) for u in _get(intermediate, "tool_uses") or []}
        for response in _get(intermediate, "tool_responses") or []:
            recorded.setdefault(response["name"], []).append((calls.get(response.get("id"), {}), response.get("response")))
    return {name: _replay(pairs) for name, pairs in recorded.items()}


def _replay(pairs: list[tuple[dict[str, Any], Any]]) -> ToolMock:
    def execute(args: dict[str, Any]) -> Any:
        return next((response for recorded_args, response in pairs if recorded_args == args), pairs[0][1])

    return ToolMock(execute=execute)


def _old_turn(item: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "user_content": {"parts": [{"text": item.get("query", "")}]},
        "final_response": {"parts": [{"text": item["reference"]}]} if item.get("reference") is not None else None,
        "intermediate_data": {"tool_uses": [
            {"name": t["tool_name"], "args": t.get("tool_input") or {}} for t in item.get("expected_tool_use") or []
        ]},
    }


def _criteria(config: Path) -> dict[str, Any]:
    if not config.is_file():
        return dict(DEFAULT_CRITERIA)
    criteria = json.loads(config.read_text(encoding="utf-8")).get("criteria") or {}
    return {k: v for k, v in criteria.items() if k in DEFAULT_CRITERIA}


def _threshold(criterion: Any, default: float) -> tuple[float, MatchType]:
    if isinstance(criterion, int | float):
        return float(criterion), "exact"
    if isinstance(criterion, Mapping):
        match = _MATCH_TYPES.get(str(_get(criterion, "match_type") or "EXACT").upper(), "exact")
        return float(criterion.get("threshold", default)), match  # type: ignore[return-value]
    return default, "exact"
