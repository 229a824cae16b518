"""Evaluation: run an agent system against simulated users with every side effect intercepted,
then score the event trace (the design of docs/eval.md). Engine-neutral: the same case loop runs
in-process (``run_eval``) and inside a Temporal workflow (``drive_case`` with a durable host).

    from adk_core.eval import EvalCase, UserAgents, ToolMock, TerminateWhen, run_eval, scripted_user

Module map: case (EvalCase), mocks + interception (tool safety), user_agents, bridge, state_change
(with_state_change), scopes, termination (TerminateWhen and its query language), trace, metrics/,
apps (the apps a case runs), host (CaseHost, LocalCaseHost), driver (drive_case), runner (run_eval),
suite (run_eval_suite), results, scoring (evaluate_trace), adk_import (google-adk eval sets),
adk_criteria (google-adk's judged criteria through llm_judge), rescore (new metrics on a stored run's
traces), pytest_helper (assert_eval_passes).
"""

from ..errors import EvalToolError, EvalUserAgentError
from .adk_import import load_adk_eval_set
from .apps import CaseApps, case_apps
from .bridge import Bridge, YieldInfo
from .case import EvalCase
from .driver import drive_case
from .host import CaseHost, LocalCaseHost
from .metrics import (
    Metric,
    MetricContext,
    MetricResult,
    event_count_metric,
    llm_judge,
    metric,
    response_match,
    rouge1,
    state_metric,
    tool_trajectory,
    unsupported_metric,
)
from .mocks import MockToolContext, ToolMock, passthrough
from .pytest_helper import assert_eval_passes, format_report
from .results import (
    EvalError,
    EvalResult,
    EvalSuiteResult,
    EvalSummary,
    SessionRef,
    TokenUsage,
    combine_trials,
)
from .runner import run_eval
from .scoring import evaluate_trace
from .state_change import with_state_change
from .suite import run_eval_suite, select_cases
from .termination import TerminateWhen, matches
from .trace import Trace
from .user_agents import END_CONVERSATION, ScriptedUserAgent, UserAgents, scripted_user, simulated_user

__all__ = [
    "END_CONVERSATION",
    "Bridge",
    "CaseApps",
    "CaseHost",
    "EvalCase",
    "EvalError",
    "EvalResult",
    "EvalSuiteResult",
    "EvalSummary",
    "EvalToolError",
    "EvalUserAgentError",
    "LocalCaseHost",
    "Metric",
    "MetricContext",
    "MetricResult",
    "MockToolContext",
    "ScriptedUserAgent",
    "SessionRef",
    "TerminateWhen",
    "TokenUsage",
    "ToolMock",
    "Trace",
    "UserAgents",
    "YieldInfo",
    "assert_eval_passes",
    "case_apps",
    "combine_trials",
    "drive_case",
    "evaluate_trace",
    "event_count_metric",
    "format_report",
    "llm_judge",
    "load_adk_eval_set",
    "matches",
    "metric",
    "passthrough",
    "response_match",
    "rouge1",
    "run_eval",
    "run_eval_suite",
    "select_cases",
    "scripted_user",
    "simulated_user",
    "state_metric",
    "tool_trajectory",
    "unsupported_metric",
    "with_state_change",
]
