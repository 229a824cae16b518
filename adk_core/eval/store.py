"""Eval results in Postgres: suite runs, their cases and every trial, so runs can be listed and compared.

    store = EvalResultStore(url_or_engine)         # tables adk_eval_* (adk_core.sql.migrate)
    await store.start_run(RunRecord(...))          # the suite begins (status "running")
    await store.record_trial(run_id, TrialRecord.from_result(result))   # as each trial ends
    await store.finish_run(run_id, status=..., summary=..., cases=[CaseRecord.from_result(r), ...])
    await store.list_runs(); await store.get_run(run_id); compare_runs(a, b)

Every write is an upsert by its key, so a retried activity (or a crashed run recorded again) writes
the same row twice without harm. Traces are not copied here: a trial keeps a reference to the
session holding its events (``TrialRecord.session``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, Field
from pydantic_core import to_json
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from ..ids import validate_id
from ..runtime import wall_clock
from ..sql import SqlStore, dumps, jsonb, store_errors
from ..sql.held import driver_sql, held_connections
from ..sql.schema import eval_cases, eval_runs, eval_trials
from .metrics.base import MetricResult
from .results import EvalError, EvalResult, EvalSummary, SessionRef, TokenUsage, not_evaluated_reason
from .streaming import combine_measurements, flatten_measurements

RunMode = Literal["durable", "in_process"]


class RunRecord(BaseModel):
    run_id: str
    suite: str
    """What ran: the cases' import reference (``module:attr``)."""
    mode: RunMode
    status: str = "running"
    """``running`` until the suite ends, then ``passed`` or ``failed``."""
    config: dict[str, Any] = Field(default_factory=dict)
    summary: EvalSummary | None = None
    start_time: float = 0.0
    end_time: float | None = None


class TrialRecord(BaseModel):
    case_name: str
    trial: int = 0
    status: str
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    error: EvalError | None = None
    termination_reason: str | None = None
    turns: int = 0
    duration_ms: float = 0.0
    token_usage: TokenUsage | None = None
    session: SessionRef | None = None
    measurements: dict[str, Any] = Field(default_factory=dict)
    """What its streaming metrics measured (adk_core.eval.streaming)."""

    @property
    def not_evaluated_reason(self) -> str | None:
        """Why the trial is ``not_evaluated`` (None for any other status)."""
        return not_evaluated_reason(self.status, self.metrics)

    def to_result(self) -> EvalResult:
        """The trial as an EvalResult (no events: they are in its session)."""
        return EvalResult(
            name=self.case_name, status=self.status, trial=self.trial, metrics=self.metrics, error=self.error,
            termination_reason=self.termination_reason, turns=self.turns, duration_ms=self.duration_ms,
            token_usage=self.token_usage, session=self.session, measurements=self.measurements,
        )

    @classmethod
    def from_result(cls, result: EvalResult) -> TrialRecord:
        """One trial's result (``result.trials`` is ignored: record each trial on its own)."""
        return cls(
            case_name=result.name, trial=result.trial, status=result.status, metrics=result.metrics,
            error=result.error, termination_reason=result.termination_reason, turns=result.turns,
            duration_ms=result.duration_ms, token_usage=result.token_usage, session=result.session,
            measurements=result.measurements,
        )


class CaseRecord(BaseModel):
    case_name: str
    status: str
    trials: int = 1
    passed_trials: int = 0
    pass_hat_k: float | None = None
    duration_ms: float = 0.0
    token_usage: TokenUsage | None = None

    @classmethod
    def from_result(cls, result: EvalResult) -> CaseRecord:
        runs = result.all_trials()
        return cls(
            case_name=result.name, status=result.status, trials=len(runs), passed_trials=sum(r.passed for r in runs),
            pass_hat_k=result.pass_hat_k, duration_ms=result.duration_ms, token_usage=result.token_usage,
        )


class RunDetail(BaseModel):
    run: RunRecord
    cases: list[CaseRecord] = Field(default_factory=list)
    trials: list[TrialRecord] = Field(default_factory=list)

    def trials_of(self, case_name: str) -> list[TrialRecord]:
        return [t for t in self.trials if t.case_name == case_name]


def _json(value: Any, what: str) -> Any:
    return jsonb(_json_text(value, what))


def _json_text(value: Any, what: str) -> str:
    # Metric values are whatever the metric measured; anything that is not JSON is kept as its repr.
    return dumps(json.loads(to_json(value, fallback=repr)), what)


_TRIAL_COLUMNS = (
    "run_id", "case_name", "trial", "status", "metrics", "error", "termination_reason", "turns", "duration_ms",
    "input_tokens", "output_tokens", "session_app_name", "session_user_id", "session_id", "measurements", "record_time",
)
_JSON_COLUMNS = {"metrics", "error", "measurements"}
_RECORD_TRIAL = driver_sql(sa.text(
    # The run's row first (a case workflow started on its own records into a run nobody started):
    # the foreign key is checked at the end of the statement, after the CTE's insert.
    "WITH run AS (INSERT INTO adk_eval_runs (run_id, suite, mode, status, start_time) "
    "VALUES (:run_id, '', 'durable', 'running', :record_time) ON CONFLICT (run_id) DO NOTHING) "
    f"INSERT INTO adk_eval_trials ({', '.join(_TRIAL_COLUMNS)}) VALUES ("
    + ", ".join(f"CAST(:{c} AS jsonb)" if c in _JSON_COLUMNS else f":{c}" for c in _TRIAL_COLUMNS)
    + ") ON CONFLICT (run_id, case_name, trial) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in _TRIAL_COLUMNS if c not in ("run_id", "case_name", "trial"))
    + " RETURNING 1"
))


def _tokens(usage: TokenUsage | None) -> dict[str, int | None]:
    return {"input_tokens": usage.input if usage else None, "output_tokens": usage.output if usage else None}


def _usage(row: Any) -> TokenUsage | None:
    if row.input_tokens is None and row.output_tokens is None:
        return None
    return TokenUsage(input=row.input_tokens or 0, output=row.output_tokens or 0)


def _upsert(table: sa.Table, values: dict[str, Any], keys: Sequence[str]) -> Any:
    statement = pg_insert(table).values(**values)
    return statement.on_conflict_do_update(
        index_elements=list(keys), set_={k: statement.excluded[k] for k in values if k not in keys}
    )


_cases_insert = pg_insert(eval_cases)
_CASES_UPSERT = _cases_insert.on_conflict_do_update(
    index_elements=[eval_cases.c.run_id, eval_cases.c.case_name],
    set_={c.name: _cases_insert.excluded[c.name] for c in eval_cases.c if c.name not in ("run_id", "case_name")},
)
"""A case row, inserted or replaced; executed with one parameter set per case."""


class EvalResultStore(SqlStore):
    """Suite runs, cases and trials in the adk_eval_* tables.

    Args:
        url_or_engine: a ``postgresql+psycopg://`` URL, or an ``AsyncEngine`` the caller owns.
    """

    def __init__(self, url_or_engine: str | URL | AsyncEngine, *, engine_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(url_or_engine, engine_kwargs)

    @store_errors
    async def start_run(self, run: RunRecord) -> None:
        """Create (or overwrite) the run's row."""
        validate_id("eval run id", run.run_id)
        values = {
            "run_id": run.run_id, "suite": run.suite, "mode": run.mode, "status": run.status,
            "config": _json(run.config, "eval run config"), "start_time": run.start_time or wall_clock(),
            "summary": None, "end_time": None,
        }
        async with self.engine.begin() as conn:
            await conn.execute(_upsert(eval_runs, values, ["run_id"]))

    @store_errors
    async def record_trial(self, run_id: str, trial: TrialRecord) -> None:
        """Store one trial's result (again: the same row). A run not started yet gets a bare row,
        so a case workflow started on its own still records."""
        validate_id("eval run id", run_id)
        session = trial.session
        values = {
            "run_id": run_id, "case_name": trial.case_name, "trial": trial.trial, "status": trial.status,
            "metrics": _json_text(trial.metrics, "eval metrics"),
            "error": _json_text(trial.error, "eval error") if trial.error else None,
            "termination_reason": trial.termination_reason, "turns": trial.turns, "duration_ms": trial.duration_ms,
            **_tokens(trial.token_usage),
            "session_app_name": session.app_name if session else None,
            "session_user_id": session.user_id if session else None,
            "session_id": session.session_id if session else None,
            "measurements": _json_text(trial.measurements, "eval measurements"),
            "record_time": wall_clock(),
        }
        # One statement on a held autocommit connection: a suite records every trial, and through a
        # pooled transaction the bookkeeping cost more CPU than the row (adk_core.sql.held).
        await held_connections(self.engine).fetch_first_rows([(_RECORD_TRIAL, values)])

    @store_errors
    async def finish_run(
        self, run_id: str, *, status: str, summary: EvalSummary, cases: Sequence[CaseRecord], end_time: float | None = None
    ) -> None:
        """Close the run: its status and summary, and one row per case (trials combined)."""
        rows = [
            {
                "run_id": run_id, "case_name": case.case_name, "status": case.status, "trials": case.trials,
                "passed_trials": case.passed_trials, "pass_hat_k": case.pass_hat_k,
                "duration_ms": case.duration_ms, **_tokens(case.token_usage),
            }
            for case in cases
        ]  # fmt: skip
        async with self.engine.begin() as conn:
            if rows:
                # One statement, executed for every row (psycopg pipelines them): a statement per case
                # took 1-2 ms each, 150 ms at the end of a 100-case suite (bench/bench_eval.py).
                await conn.execute(_CASES_UPSERT, rows)
            await conn.execute(
                sa.update(eval_runs).where(eval_runs.c.run_id == run_id).values(
                    status=status, summary=_json(summary, "eval summary"),
                    end_time=end_time or wall_clock(),
                )
            )

    @store_errors
    async def list_runs(self, *, limit: int = 20, suite: str | None = None) -> list[RunRecord]:
        """The newest runs first (only those of ``suite``, when given: a trend across runs)."""
        query = sa.select(eval_runs).order_by(eval_runs.c.start_time.desc()).limit(limit)
        if suite is not None:
            query = query.where(eval_runs.c.suite == suite)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [_run(row) for row in rows]

    @store_errors
    async def get_run(self, run_id: str) -> RunDetail | None:
        async with self.engine.connect() as conn:
            run = (await conn.execute(sa.select(eval_runs).where(eval_runs.c.run_id == run_id))).first()
            if run is None:
                return None
            cases = (await conn.execute(
                sa.select(eval_cases).where(eval_cases.c.run_id == run_id).order_by(eval_cases.c.case_name)
            )).all()
            trials = (await conn.execute(
                sa.select(eval_trials).where(eval_trials.c.run_id == run_id)
                .order_by(eval_trials.c.case_name, eval_trials.c.trial)
            )).all()
        return RunDetail(run=_run(run), cases=[_case(r) for r in cases], trials=[_trial(r) for r in trials])


def _run(row: Any) -> RunRecord:
    return RunRecord(
        run_id=row.run_id, suite=row.suite, mode=row.mode, status=row.status, config=row.config or {},
        summary=EvalSummary.model_validate(row.summary) if row.summary else None,
        start_time=row.start_time, end_time=row.end_time,
    )


def _case(row: Any) -> CaseRecord:
    return CaseRecord(
        case_name=row.case_name, status=row.status, trials=row.trials, passed_trials=row.passed_trials,
        pass_hat_k=row.pass_hat_k, duration_ms=row.duration_ms, token_usage=_usage(row),
    )


def _trial(row: Any) -> TrialRecord:
    session = (
        SessionRef(app_name=row.session_app_name, user_id=row.session_user_id, session_id=row.session_id)
        if row.session_id else None
    )
    return TrialRecord(
        case_name=row.case_name, trial=row.trial, status=row.status,
        metrics={k: MetricResult.model_validate(v) for k, v in (row.metrics or {}).items()},
        error=EvalError.model_validate(row.error) if row.error else None,
        termination_reason=row.termination_reason, turns=row.turns, duration_ms=row.duration_ms,
        token_usage=_usage(row), session=session, measurements=row.measurements or {},
    )


# --- comparing two runs ------------------------------------------------------------------------------
Change = Literal["regression", "fix", "same", "added", "removed"]


class MetricChange(BaseModel):
    metric: str
    before: bool | None = None
    """Passed in every trial of the first run (None: not scored there)."""
    after: bool | None = None
    score_before: float | None = None
    score_after: float | None = None
    change: Change = "same"


class MeasurementChange(BaseModel):
    """One number a streaming metric measured (dotted path, e.g. ``tool_latency_ms.lookup.mean_ms``),
    the mean per trial in each run; what counts as worse is the reader's call (lower is not always better)."""

    name: str
    before: float | None = None
    after: float | None = None


class CaseChange(BaseModel):
    case_name: str
    before: str | None = None
    """The case's status in the first run (None: not in it)."""
    after: str | None = None
    change: Change = "same"
    metrics: list[MetricChange] = Field(default_factory=list)
    measurements: list[MeasurementChange] = Field(default_factory=list)


def _measured(trials: Sequence[TrialRecord]) -> dict[str, float]:
    return flatten_measurements(combine_measurements([t.measurements for t in trials]))


def _change(before: bool | None, after: bool | None) -> Change:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    if before and not after:
        return "regression"
    if after and not before:
        return "fix"
    return "same"


def case_status(run: RunDetail, case_name: str) -> str | None:
    """The case's status: its case row, or (a run still going) what its trials so far say."""
    row = next((c for c in run.cases if c.case_name == case_name), None)
    if row is not None:
        return row.status
    trials = run.trials_of(case_name)
    if not trials:
        return None
    return next((t.status for t in trials if t.status != "passed"), "passed")


def _metrics(trials: Sequence[TrialRecord]) -> dict[str, tuple[bool, float | None]]:
    """Per metric: passed in every trial, and the mean score."""
    names = list(dict.fromkeys(name for t in trials for name in t.metrics))
    found = {}
    for name in names:
        results = [t.metrics[name] for t in trials if name in t.metrics]
        scores = [r.score for r in results if r.score is not None]
        found[name] = (all(r.passed for r in results), sum(scores) / len(scores) if scores else None)
    return found


def compare_runs(before: RunDetail, after: RunDetail) -> list[CaseChange]:
    """Per case (and per metric of each case): what got worse (``regression``), what got better
    (``fix``), what stayed, and cases or metrics only one run has. A case passes when all its
    trials passed; a metric passes when it passed in every trial."""
    names = list(dict.fromkeys([*(c.case_name for c in before.cases), *(t.case_name for t in before.trials),
                                *(c.case_name for c in after.cases), *(t.case_name for t in after.trials)]))
    changes = []
    for name in sorted(names):
        status_a, status_b = case_status(before, name), case_status(after, name)
        metrics_a, metrics_b = _metrics(before.trials_of(name)), _metrics(after.trials_of(name))
        metric_changes = []
        for metric in sorted({*metrics_a, *metrics_b}):
            passed_a, score_a = metrics_a.get(metric, (None, None))
            passed_b, score_b = metrics_b.get(metric, (None, None))
            metric_changes.append(MetricChange(metric=metric, before=passed_a, after=passed_b, score_before=score_a,
                                               score_after=score_b, change=_change(passed_a, passed_b)))
        measured_a, measured_b = _measured(before.trials_of(name)), _measured(after.trials_of(name))
        measured = [MeasurementChange(name=key, before=measured_a.get(key), after=measured_b.get(key))
                    for key in sorted({*measured_a, *measured_b})]  # fmt: skip
        changes.append(CaseChange(
            case_name=name, before=status_a, after=status_b, metrics=metric_changes, measurements=measured,
            change=_change(None if status_a is None else status_a == "passed",
                           None if status_b is None else status_b == "passed"),
        ))
    return changes
