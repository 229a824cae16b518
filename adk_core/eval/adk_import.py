"""Import google-adk eval sets (``*.evalset.json``, ``*.test.json``) as EvalCases.

Both of google-adk's file formats are read, with snake_case or camelCase keys:

- the EvalSet schema: ``{"eval_set_id", "eval_cases": [{"eval_id", "conversation": [{"user_content",
  "final_response", "intermediate_data": {"tool_uses": [...], "tool_responses": [...]}}],
  "session_input": {"state": {...}}}]}``; a case with a ``conversation_scenario`` (``starting_prompt``,
  ``conversation_plan``, ``user_persona``) gets a ``simulated_user`` instead of a script;
- the older list format: ``[{"query", "expected_tool_use": [{"tool_name", "tool_input"}], "reference"}]``
  (one case per file).

A static conversation becomes: the first user message, then a scripted user saying the next ones
in order. Its metrics are the criteria of a ``test_config.json`` beside the file (else google-adk's
defaults, ``tool_trajectory_avg_score`` 1.0 and ``response_match_score`` 0.8), every one of them kept
under its own name:

- ``tool_trajectory_avg_score`` -> ``tool_trajectory(per_turn=..., credit="all_or_nothing")`` with the
  criterion's ``match_type`` and ``ignore_args``: each turn scores 1 or 0 and the mean is compared with
  the threshold, as google-adk's TrajectoryEvaluator does, so an imported threshold means what it meant;
- ``response_match_score`` -> ``response_match(per_turn=...)`` (ROUGE-1 per turn, averaged);
- any other criterion -> a metric that reports itself *not evaluated*, naming the criterion, so the
  case is never counted as passed without it having been checked.

A ``conversation_scenario`` case runs with a simulated user (``user_simulator_model``) and gets the
same criteria; those that compare against an expected conversation, which a scenario does not have,
are not evaluated and say so.

Tools stay safe by default: give ``tool_mocks`` (``passthrough(...)`` for real tools). A tool with
responses recorded anywhere in the file (``tool_responses``) and no mock replays them: the recorded
response to a call with the same arguments, else the first recorded for that tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agents.base import BaseAgent
from ..app import App
from ..errors import ConfigurationError
from ..models.base import Model
from .adk_criteria import SPECS, Criterion, judged_criterion
from .adk_criteria import field_either_case as _get
from .case import EvalCase
from .metrics.base import Metric, unsupported_metric
from .metrics.response import response_match
from .metrics.trajectory import MatchType, tool_trajectory
from .mocks import ToolMock, ToolMocks
from .scopes import scoped_from_flat
from .termination import TerminateWhen
from .user_agents import UserAgents, scripted_user, simulated_user

DEFAULT_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
_MATCH_TYPES: dict[str, MatchType] = {"EXACT": "exact", "IN_ORDER": "in_order", "ANY_ORDER": "any_order"}
_NEEDS_EXPECTED_CONVERSATION = ("tool_trajectory_avg_score", "response_match_score")
_SUPPORTED = ", ".join(["tool_trajectory_avg_score", "response_match_score", *SPECS])


def load_adk_eval_set(
    path: str | Path,
    app_or_agent: App | BaseAgent,
    *,
    tool_mocks: ToolMocks | None = None,
    replay_recorded_tools: bool = True,
    trials: int = 1,
    user_simulator_model: str | Model | None = None,
    config_path: str | Path | None = None,
    judge_model: str | Model | None = None,
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
        judge_model: the judge for judged criteria (``final_response_match_v2``, ``rubric_*``,
            ``hallucinations_v1`` ...) instead of each criterion's ``judge_model_options.judge_model``;
            the criterion's ``num_samples`` still applies.
    """
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    config = Path(config_path) if config_path else path.with_name("test_config.json")
    criteria = _criteria(config)
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
    options = _Import(app_or_agent, criteria, mocks, trials, user_simulator_model, judge_model, str(config))
    return [_case(raw, set_id, options) for raw in raw_cases]


@dataclass(frozen=True)
class _Import:
    """What every case of one load_adk_eval_set call shares."""

    system: App | BaseAgent
    criteria: Mapping[str, Criterion]
    tool_mocks: dict[str, Any]
    trials: int
    simulator_model: str | Model | None
    judge_model: str | Model | None
    config: str


def _case(raw: Mapping[str, Any], set_id: str, options: _Import) -> EvalCase:
    name = f"{set_id}/{_get(raw, 'eval_id')}"
    system, tool_mocks, trials, simulator_model = options.system, options.tool_mocks, options.trials, options.simulator_model
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
        persona, plan = str(persona or "A typical user."), str(_get(scenario, "conversation_plan"))
        user = simulated_user(persona=persona, plan=plan, model=simulator_model)
        metrics = _metrics(options, None, rubrics=_get(raw, "rubrics") or (),
                           scenario=f"The user's persona:\n{persona}\n\nThe user's conversation plan:\n{plan}")  # fmt: skip
        return EvalCase(name, app_or_agent=system, tool_mocks=tool_mocks, user_agents=UserAgents(loop=user),
                        initial_state=initial_state, first_message=str(_get(scenario, "starting_prompt")),
                        metrics=metrics, trials=trials)  # fmt: skip
    turns = list(_get(raw, "conversation") or [])
    if not turns:
        raise ConfigurationError(f"eval case {name!r} has neither a conversation nor a conversation_scenario")
    users = [_text(_get(t, "user_content")) for t in turns]
    return EvalCase(
        name,
        app_or_agent=system,
        tool_mocks=tool_mocks,
        user_agents=UserAgents(loop=scripted_user("evalset_user", users[1:])) if len(users) > 1 else UserAgents(),
        initial_state=initial_state,
        first_message=users[0],
        terminate_when=TerminateWhen(max_turns=len(users)),
        metrics=_metrics(options, turns, rubrics=_get(raw, "rubrics") or ()),
        trials=trials,
    )


def _metrics(options: _Import, turns: Sequence[Any] | None, *, rubrics: Sequence[Any] = (), scenario: str | None = None) -> list[Metric]:
    """One metric per criterion, named after it; ``turns`` None: a conversation_scenario case
    (``scenario``: its persona and plan, for the judges)."""
    metrics: list[Metric] = []
    references = ([_text(_get(t, "final_response")) if _get(t, "final_response") else None for t in turns]
                  if turns is not None else None)  # fmt: skip
    for name, criterion in options.criteria.items():
        if turns is None and name in _NEEDS_EXPECTED_CONVERSATION:
            metrics.append(unsupported_metric(name, (
                f"criterion {name!r} needs an expected conversation to compare with; a conversation_scenario "
                "case has none (score scenarios with criteria that judge the conversation itself)"
            )))
        elif name == "tool_trajectory_avg_score":
            assert turns is not None
            metrics.append(tool_trajectory(
                per_turn=[_tool_uses(_get(t, "intermediate_data")) for t in turns], match=criterion.match,
                compare_args=not criterion.ignore_args, threshold=criterion.threshold, credit="all_or_nothing", name=name,
            ))  # fmt: skip
        elif name in SPECS:
            metrics.append(judged_criterion(
                name, criterion, where=f"{options.config}: criterion {name!r}", references=references,
                case_rubrics=rubrics, scenario=scenario, judge_model=options.judge_model,
            ))  # fmt: skip
        elif name == "response_match_score":
            assert references is not None
            if any(r is not None for r in references):
                metrics.append(response_match(per_turn=references, threshold=criterion.threshold, name=name))
            else:
                metrics.append(unsupported_metric(name, (
                    f"criterion {name!r} compares final responses, and no turn of this case has a final_response; "
                    "record one in the eval set, or leave the criterion out of test_config.json"
                )))
        else:
            metrics.append(unsupported_metric(name, (
                f"criterion {name!r} is not supported by this importer, so it was not run (supported: {_SUPPORTED}); "
                "score it with a metric of your own (EvalCase(metrics=[...])), or leave it out of test_config.json"
            )))
    return metrics


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
        uses = _get(intermediate, "tool_uses") or []
        by_id = {u["id"]: dict(u.get("args") or {}) for u in uses if u.get("id")}
        by_tool: dict[str, list[dict[str, Any]]] = {}
        for u in uses:
            by_tool.setdefault(u["name"], []).append(dict(u.get("args") or {}))
        answered: dict[str, int] = {}
        for response in _get(intermediate, "tool_responses") or []:
            name = response["name"]
            nth = answered[name] = answered.get(name, -1) + 1
            args = by_id.get(response.get("id"))
            if args is None:
                # The id is optional (hand-written sets omit it): the n-th response of a tool in the
                # turn answers its n-th call, rather than every response taking one call's arguments.
                same_tool = by_tool.get(name, [])
                args = same_tool[nth] if nth < len(same_tool) else {}
            recorded.setdefault(name, []).append((args, response.get("response")))
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


def _criteria(config: Path) -> dict[str, Criterion]:
    raw: Any = DEFAULT_CRITERIA
    if config.is_file():
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ConfigurationError(f"{config}: not JSON ({e}); fix the file or pass config_path= another one") from e
        raw = _get(data, "criteria") if isinstance(data, Mapping) else None
        if not isinstance(raw, Mapping):
            raise ConfigurationError(
                f'{config}: expected {{"criteria": {{"tool_trajectory_avg_score": 1.0, ...}}}}; give each criterion '
                "a threshold or an object with one"
            )
    return {str(name): _criterion(config, str(name), value) for name, value in raw.items()}


def _criterion(config: Path, name: str, value: Any) -> Criterion:
    where = f"{config}: criterion {name!r}"
    options: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
    threshold = options.get("threshold") if isinstance(value, Mapping) else value
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
        raise ConfigurationError(
            f'{where}: threshold must be a number from 0 to 1, not {threshold!r}; write "{name}": 0.8 or '
            f'"{name}": {{"threshold": 0.8, ...}}'
        )
    match_type = str(_get(options, "match_type") or "EXACT").upper()
    if match_type not in _MATCH_TYPES:
        raise ConfigurationError(
            f"{where}: match_type must be one of {', '.join(_MATCH_TYPES)}, not {_get(options, 'match_type')!r}"
        )
    ignore_args = _get(options, "ignore_args") or False
    if not isinstance(ignore_args, bool):
        raise ConfigurationError(f"{where}: ignore_args must be true or false, not {ignore_args!r}")
    return Criterion(float(threshold), _MATCH_TYPES[match_type], ignore_args, dict(options))
