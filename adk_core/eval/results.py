"""Results: the seed's EvalResult / EvalSuiteResult, plus trials and pass^k.

pydantic models, JSON round-trip stable, so a durable run can return them from workflows and
store them as they are.

A trial is ``not_evaluated`` when nothing checked it: the case has no metrics, or a metric could
not run (``MetricResult.evaluated`` False, e.g. a google-adk criterion the importer cannot run) and
no other metric failed. It is never passed: it counts apart in the summary and fails the suite.

pass^k (tau-bench): the chance that k independent trials of a case all pass, estimated from n >= k
trials with c passes as C(c, k) / C(n, k); with k = n it is 1 when every trial passed, else 0. A
suite's pass^k is the mean over its cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import InvalidInputError
from ..types import Event
from .metrics.base import MetricResult
from .streaming import combine_measurements

Status = Literal["passed", "failed", "error", "terminated", "not_evaluated"]
Phase = Literal["system", "user_agent", "metric"]
TerminationReason = Literal["max_turns", "max_duration", "state_matches"]


NO_METRICS = "the case has no metrics: add metrics=[...] to say what it must show"


def status_of(metrics: Mapping[str, MetricResult]) -> Status:
    """A finished trial's status from its metrics: ``failed`` when one that ran failed, else
    ``not_evaluated`` when there are none or one could not run, else ``passed``."""
    if any(m.evaluated and not m.passed for m in metrics.values()):
        return "failed"
    if not metrics or not all(m.evaluated for m in metrics.values()):
        return "not_evaluated"
    return "passed"


def not_evaluated_reason(status: str, metrics: Mapping[str, MetricResult]) -> str | None:
    """Why a ``not_evaluated`` trial was not: no metrics, or which metrics could not run and why."""
    if status != "not_evaluated":
        return None
    if not metrics:
        return NO_METRICS
    skipped = [f"{name} ({'; '.join(m.evidence) or 'no reason given'})" for name, m in metrics.items() if not m.evaluated]
    return "not evaluated: " + ", ".join(skipped)


def metric_error(errors: Mapping[str, str]) -> EvalError:
    """The ``error`` of a trial whose metrics raised (``errors``: metric name -> ``"Type: message"``)."""
    return EvalError(
        phase="metric",
        message="; ".join(f"metric {name!r}: {text}" for name, text in errors.items()),
        error_type=next(iter(errors.values())).split(":", 1)[0],
    )


class TokenUsage(BaseModel):
    input: int = 0
    output: int = 0


class EvalError(BaseModel):
    """Why a trial is ``error``: where it happened, and the error's text (type name apart)."""

    phase: Phase
    message: str
    error_type: str = ""


class SessionRef(BaseModel):
    """Where a trial's main session (its trace) lives."""

    app_name: str
    user_id: str
    session_id: str


class EvalResult(BaseModel):
    """One case: the seed's fields for one trial, plus every trial when there were several.

    With ``trials`` > 1, the top-level fields are those of the first trial that did not pass (the
    one to look at), or of the first trial when all passed; ``status`` is ``passed`` only when every
    trial passed; ``duration_ms`` and ``token_usage`` add up all trials.
    """

    name: str
    status: Status
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    events: list[Event] = Field(default_factory=list)
    duration_ms: float = 0.0
    turns: int = 0
    token_usage: TokenUsage | None = None
    error: EvalError | None = None
    termination_reason: TerminationReason | None = None
    trial: int = 0
    session: SessionRef | None = None
    trials: list[EvalResult] = Field(default_factory=list)
    """Every trial's result (each with its own ``trials`` empty) when the case ran more than one."""
    measurements: dict[str, Any] = Field(default_factory=dict)
    """What the case's streaming metrics measured (adk_core.eval.streaming), by name; with several
    trials, the mean per trial."""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def not_evaluated_reason(self) -> str | None:
        """Why the case is ``not_evaluated`` (None for any other status)."""
        return not_evaluated_reason(self.status, self.metrics)

    def all_trials(self) -> list[EvalResult]:
        return self.trials or [self]

    def pass_hat(self, k: int) -> float:
        """pass^k for this case from its trials (k must not exceed the number of trials)."""
        runs = self.all_trials()
        if not 1 <= k <= len(runs):
            raise InvalidInputError(f"pass^{k} needs 1 <= k <= {len(runs)} trials; ask for a k in that range, or run more trials")
        return comb(sum(r.passed for r in runs), k) / comb(len(runs), k)

    @property
    def pass_hat_k(self) -> float:
        """pass^k with k = the number of trials: 1.0 when every trial passed, else 0.0."""
        return self.pass_hat(len(self.all_trials()))


def combine_trials(results: Sequence[EvalResult]) -> EvalResult:
    """One case's result from its trials' results (in trial order)."""
    if not results:
        raise InvalidInputError("combine_trials needs at least one trial result; pass the results of every trial of the case")
    if len(results) == 1:
        return results[0]
    shown = next((r for r in results if not r.passed), results[0])
    usages = [r.token_usage for r in results if r.token_usage is not None]
    return shown.model_copy(
        update={
            "status": "passed" if all(r.passed for r in results) else shown.status,
            "duration_ms": sum(r.duration_ms for r in results),
            "token_usage": TokenUsage(input=sum(u.input for u in usages), output=sum(u.output for u in usages))
            if usages else None,
            "trials": list(results),
            "measurements": combine_measurements([r.measurements for r in results]),
        }
    )


class EvalSummary(BaseModel):
    """Counts by status (the seed's total/passed/failed/errors, plus terminated, not evaluated and skipped) and pass^k."""

    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    terminated: int = 0
    not_evaluated: int = 0
    """Cases nothing checked (no metrics, or a metric that could not run): never passed."""
    skipped: int = 0
    """Cases not run because an earlier one failed (stop_on_first_failure)."""
    pass_hat_k: float | None = None
    """Mean pass^k over the cases, k = the fewest trials any case ran (None without results)."""
    k: int = 1
    measurements: dict[str, Any] = Field(default_factory=dict)
    """The mean over cases of each case's measurements (adk_core.eval.streaming)."""


class EvalSuiteResult(BaseModel):
    summary: EvalSummary
    results: list[EvalResult] = Field(default_factory=list)
    duration_ms: float = 0.0

    @property
    def passed(self) -> bool:
        """Every case ran and passed; a suite without results never passes."""
        return bool(self.results) and self.summary.skipped == 0 and all(r.passed for r in self.results)

    def pass_hat(self, k: int) -> float:
        """Mean pass^k over the cases (each needs at least k trials)."""
        return sum(r.pass_hat(k) for r in self.results) / len(self.results) if self.results else 0.0


def summarize(results: Sequence[EvalResult], *, skipped: int = 0) -> EvalSummary:
    k = min((len(r.all_trials()) for r in results), default=1)
    return EvalSummary(
        total=len(results) + skipped,
        passed=sum(r.status == "passed" for r in results),
        failed=sum(r.status == "failed" for r in results),
        errors=sum(r.status == "error" for r in results),
        terminated=sum(r.status == "terminated" for r in results),
        not_evaluated=sum(r.status == "not_evaluated" for r in results),
        skipped=skipped,
        pass_hat_k=sum(r.pass_hat(k) for r in results) / len(results) if results else None,
        k=k,
        measurements=combine_measurements([r.measurements for r in results]),
    )
