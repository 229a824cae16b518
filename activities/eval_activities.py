"""The eval activities: list a suite's cases, and record runs and trials in Postgres.

A separate class from AdkActivities (the worker registers both): model calls, judge calls and
mocked tools of an eval already go through ``adk.generate_content`` / ``adk.run_tool``; only the
bookkeeping is eval's own. Every write is an upsert (adk_core.eval.store), so retries are harmless.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from adk_core.eval import combine_trials, select_cases
from adk_core.eval.results import summarize
from adk_core.eval.store import CaseRecord, EvalResultStore
from adk_core.sessions import Session, SessionService
from adk_temporal.metrics import activity_metrics

from . import eval_contracts as ec
from .adk_activities import _fail_fast_on_adk_errors
from .apps import AppRegistry
from .eval_cases import load_cases, normalize_ref, register_case


class EvalActivities:
    """Register ``EvalActivities(store).all()`` with a worker (``build_worker`` does it).

    Args:
        store: where results go; None on a worker without a database, where recording fails
            (non-retryable) with what to configure.
        apps: the worker's apps, which gain each listed case's apps.
    """

    def __init__(self, store: EvalResultStore | None, apps: AppRegistry, *, sessions: SessionService | None = None) -> None:
        self.store = store
        self.apps = apps
        self.sessions = sessions
        """Where a trial's last events go when they come with its record (RecordTrialInput.events)."""

    def all(self) -> list:
        return [self.list_cases, self.record_run, self.record_trial, self.finish_run, self.recorded_trials,
                self.finish_from_store]

    def _store(self) -> EvalResultStore:
        if self.store is None:
            raise ApplicationError(
                "this worker has no eval result store (no sessions database); start it with a database URL, "
                "or start the suite with record=false",
                type="ConfigurationError",
                non_retryable=True,
            )
        return self.store

    def _sessions(self) -> SessionService:
        if self.sessions is None:
            raise ApplicationError("this worker has no session service to store the trial's events",
                                   type="ConfigurationError", non_retryable=True)  # fmt: skip
        return self.sessions

    @activity.defn(name=ec.LIST_CASES)
    @_fail_fast_on_adk_errors
    async def list_cases(self, input: ec.ListCasesInput) -> ec.ListCasesResult:
        self.apps.eval_suites.check(input.suite)  # before any import: refused unless registered
        cases = load_cases(input.suite)
        for case in cases:
            register_case(case, self.apps)  # this worker can now serve the cases' model and tool calls too
        # Unknown names fail the suite at once (InvalidInputError, not retried), listing the suite's cases.
        cases = select_cases(cases, input.names, suite=input.suite)
        return ec.ListCasesResult(
            cases=[ec.CaseInfo(name=c.name, trials=c.trials, description=c.description) for c in cases],
            suite=normalize_ref(input.suite),
        )

    @activity.defn(name=ec.RECORD_RUN)
    @_fail_fast_on_adk_errors
    async def record_run(self, input: ec.RecordRunInput) -> None:
        await self._store().start_run(input.run)

    @activity.defn(name=ec.RECORD_TRIAL)
    @_fail_fast_on_adk_errors
    async def record_trial(self, input: ec.RecordTrialInput) -> None:
        store = self._store()
        # The trial's last events before the record that points at them; idempotent by event id, so a
        # retry repeats harmlessly. Each batch is its session's whole unstored tail, in order, so a
        # ride-along write still running for the same session cannot reorder them.
        for batch in input.events:
            key = batch.key
            await self._sessions().append_events(
                Session(id=key.session_id, app_name=key.app_name, user_id=key.user_id), batch.events
            )
        await store.record_trial(input.run_id, input.trial)
        activity_metrics().eval_trials.add(1, {"status": input.trial.status})

    @activity.defn(name=ec.FINISH_RUN)
    @_fail_fast_on_adk_errors
    async def finish_run(self, input: ec.FinishRunInput) -> None:
        await self._store().finish_run(
            input.run_id, status=input.status, summary=input.summary, cases=input.cases, end_time=input.end_time
        )

    @activity.defn(name=ec.RECORDED_TRIALS)
    @_fail_fast_on_adk_errors
    async def recorded_trials(self, input: ec.RecordedTrialsInput) -> ec.RecordedTrialsResult:
        """The trials of a run the store holds: what a resumed suite does not run again."""
        detail = await self._store().get_run(input.run_id)
        trials = detail.trials if detail else []
        return ec.RecordedTrialsResult(
            trials=[ec.RecordedTrial(case_name=t.case_name, trial=t.trial, status=t.status) for t in trials]
        )

    @activity.defn(name=ec.FINISH_FROM_STORE)
    @_fail_fast_on_adk_errors
    async def finish_from_store(self, input: ec.FinishFromStoreInput) -> ec.FinishFromStoreResult:
        """Combine a run's stored trials into cases, record the cases, summary and status, and return them."""
        store = self._store()
        detail = await store.get_run(input.run_id)
        trials = detail.trials if detail else []
        by_case: dict[str, list] = {}
        for trial in sorted(trials, key=lambda t: t.trial):
            by_case.setdefault(trial.case_name, []).append(trial.to_result())
        results = [combine_trials(by_case[name]) for name in input.case_names if by_case.get(name)]
        summary = summarize(results, skipped=len(input.case_names) - len(results))
        status = "passed" if summary.skipped == 0 and results and all(r.passed for r in results) else "failed"
        await store.finish_run(input.run_id, status=status, summary=summary,
                               cases=[CaseRecord.from_result(r) for r in results], end_time=input.end_time)  # fmt: skip
        shown = results[: input.max_results]
        return ec.FinishFromStoreResult(summary=summary, results=shown, results_omitted=len(results) - len(shown),
                                        status=status)  # fmt: skip
