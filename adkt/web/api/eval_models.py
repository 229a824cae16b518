"""Request and response bodies of the eval endpoints (eval_endpoints.py): starting a run, following
it, a trial's trace, two runs compared and a suite's trend."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from adk_core.eval.store import CaseChange, RunRecord, TrialRecord
from adk_core.types import Event
from adk_temporal.workflows.eval import EvalProgress

__all__ = [
    "CompareQuery", "EvalRunProgress", "EvalRunStarted", "EvalSuiteList", "JudgeView", "MetricPoint",
    "RunComparison", "StartEvalRunBody", "StateChange", "SuiteCase", "SuiteTrend", "SuitesQuery", "TraceQuery",
    "TrendPoint", "TrendQuery", "TrialTrace",
]


class _Body(BaseModel):
    model_config = {"extra": "forbid"}


def _module_form(value: str) -> str:
    value = value.strip()
    if not value or value.partition(":")[0].endswith(".py"):
        raise ValueError("name the suite as module:attr or a module (workers import suites by module, not by file)")
    return value


class SuitesQuery(_Body):
    suite: str | None = Field(None, description="also list this suite's cases (``cases`` in the answer)")

    @field_validator("suite")
    @classmethod
    def _module_form(cls, value: str | None) -> str | None:
        return None if value is None else _module_form(value)


class SuiteCase(BaseModel):
    name: str
    trials: int = Field(description="the case's own trials per run")
    description: str = ""


class EvalSuiteList(BaseModel):
    suites: list[str] = Field(description="suite references this server offers to start (module:attr or module)")
    allowed_modules: list[str] = Field(description="modules (and packages) whose suites a run may name")
    task_queue: str = Field(description="the task queue suites start on (a worker must poll it)")
    cases: list[SuiteCase] | None = Field(
        None, description="with ?suite=REF: that suite's cases in order, the names a run's ``cases`` may pick"
    )


class StartEvalRunBody(_Body):
    suite: str = Field(description="the cases' import reference: module:attr or module (no file paths)")
    trials: int | None = Field(None, ge=1, le=100, description="trials per case (default: each case's own)")
    parallel: int | None = Field(None, ge=1, le=500, description="at most this many trials at once (default: all)")
    run_id: str | None = Field(None, description="the run's name (default: a new one)")
    cases: list[str] | None = Field(
        None, min_length=1, description="only these cases, by name (default: all; GET /evals/suites?suite=REF lists them)"
    )
    stop_on_first_failure: bool = False

    @field_validator("suite")
    @classmethod
    def _module_form(cls, value: str) -> str:
        return _module_form(value)


class EvalRunStarted(BaseModel):
    run_id: str
    workflow_id: str
    workflow_url: str | None = None


Phase = Literal["running", "completed", "failed", "canceled", "terminated", "timed_out", "not_found"]


class EvalRunProgress(BaseModel):
    """Where a run is: its EvalSuiteWorkflow's status and ``progress`` query (trials, not cases)."""

    run_id: str
    workflow_id: str
    workflow_url: str | None = None
    status: Phase = Field(description="the workflow's status; not_found: no workflow (an in-process run)")
    progress: EvalProgress | None = Field(None, description="the workflow's last answer to its progress query")
    error: str | None = Field(None, description="why the workflow failed, when it did")


class TraceQuery(_Body):
    case: str = Field(description="the case's name")
    trial: int = Field(0, ge=0, description="the trial's index")


class StateChange(BaseModel):
    key: str
    value: Any = None
    event_index: int = Field(description="the (last) event of the trace that wrote it")
    author: str


class JudgeView(BaseModel):
    """A metric's verdict and why: a judge's rationale (one line per sample), or a metric's evidence."""

    metric: str
    passed: bool
    evaluated: bool = True
    score: float | None = None
    judge: bool = Field(description="an llm_judge (a model gave the rationale)")
    rationale: list[str] = Field(default_factory=list)


class TrialTrace(BaseModel):
    run_id: str
    trial: TrialRecord
    events: list[Event] = Field(default_factory=list, description="the trial's main session (its trace)")
    stored: bool = Field(description="whether the trace's session is stored (an in-process run without a database keeps none)")
    state_before: dict[str, Any] = Field(
        default_factory=dict,
        description="the state the trial started with, except keys the trial wrote (the store keeps their last value only)",
    )
    state_after: dict[str, Any] = Field(default_factory=dict)
    changes: list[StateChange] = Field(default_factory=list, description="keys the trial's events wrote, in order")
    judges: list[JudgeView] = Field(default_factory=list)


class CompareQuery(_Body):
    a: str = Field(description="the earlier run")
    b: str = Field(description="the later run")


class RunComparison(BaseModel):
    a: RunRecord
    b: RunRecord
    cases: list[CaseChange]
    regressions: int = Field(description="cases and metrics that passed in a and do not in b")
    fixes: int


class TrendQuery(_Body):
    suite: str
    limit: int = Field(20, ge=2, le=100, description="how many of the suite's newest runs")


class MetricPoint(BaseModel):
    score: float | None = Field(None, description="mean score over the run's trials (None: the metric gives none)")
    pass_rate: float = Field(description="share of the run's trials the metric passed")
    trials: int


class TrendPoint(BaseModel):
    run_id: str
    start_time: float
    status: str
    metrics: dict[str, MetricPoint] = Field(default_factory=dict)


class SuiteTrend(BaseModel):
    suite: str
    metrics: list[str] = Field(description="every metric any of the runs scored")
    runs: list[TrendPoint] = Field(description="oldest first")
