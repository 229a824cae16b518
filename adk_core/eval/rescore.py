"""rescore_run: score a stored run's traces again with new or changed metrics, stored as a new run.

The system under test does not run again: each trial is scored on the trace its run stored (the
trial's session; durable runs always keep it, in-process runs when a database was configured), so
its models and tools are not called. Judges (``llm_judge``) do call their own model. The new run's
config names the run it rescored (``rescored_from``) and the metrics (``metrics``), and
``adkt eval compare OLD NEW`` shows what the new metrics change.

A trial whose run failed before scoring (an ``error`` in the system or a user agent) keeps that
error: its trace is not a finished conversation. A ``terminated`` trial stays terminated.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigurationError
from ..runtime import wall_clock
from ..sessions import SessionService
from .metrics.base import JudgeRun, Metric, MetricContext, check_metrics, evaluate_metrics
from .results import (
    EvalError,
    EvalResult,
    EvalSuiteResult,
    combine_trials,
    metric_error,
    status_of,
    summarize,
)
from .scoring import run_judge_in_process
from .store import CaseRecord, EvalResultStore, RunRecord, TrialRecord
from .trace import Trace


def load_metrics(ref: str) -> list[Metric]:
    """The metrics ``module:attr`` names: a Metric or a list of them."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"metrics {ref!r}: give module:attr, e.g. my_evals:metrics (a Metric or a list of them)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigurationError(f"cannot import metrics {ref!r}: {e}; run from the folder that contains the module") from None
    if not hasattr(module, attr):
        raise ConfigurationError(f"module {module_name!r} has no attribute {attr!r} (metrics {ref!r})")
    value: Any = getattr(module, attr)
    metrics = list(value) if isinstance(value, list | tuple) else [value]
    check_metrics(metrics, where=f"metrics {ref!r}")
    if not metrics:
        raise ConfigurationError(f"metrics {ref!r} is an empty list; name at least one metric")
    return metrics


async def rescore_run(
    store: EvalResultStore,
    sessions: SessionService,
    run_id: str,
    metrics: Sequence[Metric],
    *,
    new_run_id: str,
    metrics_ref: str = "",
    run_judge: JudgeRun | None = run_judge_in_process,
) -> EvalSuiteResult:
    """Score every trial of stored run ``run_id`` with ``metrics``, store the results as run ``new_run_id``.

    Args:
        store: the results store holding ``run_id``.
        sessions: the session store holding its traces (the same database).
        run_id: the run to rescore.
        metrics: the metrics to score each trial's trace with (instead of the run's own).
        new_run_id: the id of the new run.
        metrics_ref: where the metrics came from (``module:attr``), recorded in the new run's config.
        run_judge: how judges call their model (default: in this process).
    """
    check_metrics(metrics, where="rescore metrics")
    if new_run_id == run_id:
        raise ConfigurationError(f"rescoring run {run_id!r} needs a new run id for its results, not the same one")
    detail = await store.get_run(run_id)
    if detail is None:
        raise ConfigurationError(f"no eval run {run_id!r}; see `adkt eval list`")
    if not detail.trials:
        raise ConfigurationError(f"eval run {run_id!r} has no recorded trials to rescore")
    started = wall_clock()
    await store.start_run(RunRecord(run_id=new_run_id, suite=detail.run.suite, mode=detail.run.mode, start_time=started,
                                    config={"rescored_from": run_id, "metrics": metrics_ref}))  # fmt: skip
    by_case: dict[str, list[EvalResult]] = {}
    for trial in detail.trials:
        result = await _rescore(trial, metrics, sessions, run_judge)
        await store.record_trial(new_run_id, TrialRecord.from_result(result))
        by_case.setdefault(trial.case_name, []).append(result)
    results = [combine_trials(trials) for trials in by_case.values()]
    suite = EvalSuiteResult(summary=summarize(results), results=results, duration_ms=(wall_clock() - started) * 1000.0)
    await store.finish_run(new_run_id, status="passed" if suite.passed else "failed", summary=suite.summary,
                           cases=[CaseRecord.from_result(r) for r in results])  # fmt: skip
    return suite


async def _rescore(trial: TrialRecord, metrics: Sequence[Metric], sessions: SessionService, run_judge: JudgeRun | None) -> EvalResult:
    base = EvalResult(name=trial.case_name, status="error", trial=trial.trial, turns=trial.turns, duration_ms=trial.duration_ms,
                      token_usage=trial.token_usage, termination_reason=trial.termination_reason,
                      session=trial.session)  # fmt: skip
    if trial.status == "error" and trial.error is not None and trial.error.phase != "metric":
        return base.model_copy(update={"error": trial.error})  # the run failed before scoring: nothing to rescore
    ref = trial.session
    session = await sessions.get_session(app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id) if ref else None
    if session is None:
        return base.model_copy(update={"error": EvalError(
            phase="metric", error_type="NotFoundError",
            message="the trial's trace was not stored (an in-process run without a database), so it cannot be rescored",
        )})  # fmt: skip
    results, errors = await evaluate_metrics(metrics, Trace.from_session(session), MetricContext(run_judge=run_judge))
    if errors:
        return base.model_copy(update={"metrics": results, "error": metric_error(errors)})
    status = "terminated" if trial.status == "terminated" else status_of(results)
    return base.model_copy(update={"metrics": results, "status": status})
