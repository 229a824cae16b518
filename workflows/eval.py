"""EvalSuiteWorkflow and EvalCaseWorkflow: eval suites that survive crashes.

    EvalSuiteWorkflow   lists the suite's cases (an activity, so the plan is in history; only the
                        ``cases`` picked, when given: an unknown name fails the suite at once), records the
                        run, starts one child EvalCaseWorkflow per case and trial (at most
                        max_concurrency at once), combines trials, records cases and the summary
    EvalCaseWorkflow    one trial: ``adk_core.eval.drive_case`` with a DurableCaseHost, then records
                        the trial; returns its result without events (they are in the session store)

Cases are named by import reference (activities.eval_cases), so any worker rebuilds them; the case
workflow imports the module through the sandbox (passed through: the very objects the worker's
activities use) and registers the case's apps. A SIGKILLed worker costs nothing done: on another
worker the case replays to where it was, every completed model and tool call read from history.

History: a case's history holds its own model and tool calls (bounded by its ``max_turns``); the
suite's holds only per-trial summaries, a few KB each, about 6 events per trial. So a suite
continues as new when Temporal suggests it or its history reaches ``max_history_events`` (default
DEFAULT_MAX_HISTORY_EVENTS): it stops starting trials, waits for the running ones, and hands the
next run a SuiteCarry (a position in the plan and counters; the results are in the store, where the
last run reads them). Cancelling the suite cancels its running children and records the run
``cancelled``; a suite started again with ``resume=n`` (``adkt eval resume``) runs only the trials
the store does not hold.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from pydantic_core import to_json
from temporalio import workflow
from temporalio.exceptions import ApplicationError, CancelledError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from adk_core.errors import AdkError
    from adk_core.eval import (
        CaseApps,
        EvalCase,
        EvalError,
        EvalResult,
        EvalSummary,
        combine_trials,
        drive_case,
    )
    from adk_core.eval.results import summarize
    from adk_core.eval.store import CaseRecord, RunRecord, TrialRecord
    from adk_core.ids import escape_id_part, validate_id
    from adk_temporal.activities import eval_contracts as ec
    from adk_temporal.activities.eval_cases import find_case, register_case

    from ._eval_contracts import (
        DEFAULT_MAX_HISTORY_EVENTS,
        EVAL_WORKFLOW_PREFIX,
        MAX_RESULTS_INLINE,
        MAX_RUN_ID_LENGTH,
        MAX_TRIAL_RESTARTS,
        MAX_UNRECORDED_TRIALS,
        EvalCaseInput,
        EvalProgress,
        EvalSuiteInput,
        EvalSuiteRunResult,
        SuiteCarry,
    )
    from ._eval_host import DurableCaseHost, trial_key
    from .app_scope import worker_apps
    from .services import ACTIVITY_FAILURES, STORE_RETRY, STORE_TIMEOUT, StoredByLostTask

__all__ = [
    "EVAL_WORKFLOW_PREFIX",
    "EvalCaseInput",
    "EvalCaseWorkflow",
    "EvalProgress",
    "EvalSuiteInput",
    "EvalSuiteRunResult",
    "EvalSuiteWorkflow",
    "SuiteCarry",
]

LIST_TIMEOUT = timedelta(minutes=2)
"""Listing imports the cases' module on the worker, which may take a while the first time."""


async def _record(name: str, arg: object, summary: str) -> None:
    # A local activity, as the session store's own writes: one upsert does not need a task of its
    # own on the server, and running again after a crash writes the same row.
    await workflow.execute_local_activity(
        name, arg, start_to_close_timeout=STORE_TIMEOUT, retry_policy=STORE_RETRY, summary=summary
    )


@workflow.defn(name="EvalCaseWorkflow", failure_exception_types=[AdkError])
class EvalCaseWorkflow:
    @workflow.run
    async def run(self, input: EvalCaseInput) -> EvalResult:
        registry = worker_apps()
        # Before any import: a suite this worker did not register is refused (fails this workflow once).
        registry.eval_suites.check(input.suite, from_workflow=True)
        with workflow.unsafe.imports_passed_through():
            case = find_case(input.suite, input.case_name)  # an AdkError here fails the workflow, once
        apps = register_case(case, registry)
        return await self._drive(input, case, apps)

    async def _drive(self, input: EvalCaseInput, case: EvalCase, apps: CaseApps) -> EvalResult:
        """The trial, recorded; started over in new sessions when a lost workflow task left other
        answers in its sessions (StoredByLostTask: only with local model calls), at most
        MAX_TRIAL_RESTARTS times."""
        local = input.model_calls == "local_activity"
        for restart in range(MAX_TRIAL_RESTARTS + 1):
            host = DurableCaseHost(case, apps, run_id=input.run_id, trial=input.trial, attempt=input.attempt,
                                   mocks_local=input.mocks_local, model_calls_local=local, restart=restart)  # fmt: skip
            try:
                result = (await drive_case(case, host, trial=input.trial)).model_copy(update={"events": []})
                # A metric may measure a value that is not JSON; keep its repr rather than fail to return.
                result = EvalResult.model_validate_json(to_json(result, fallback=repr))
                await self._record(input, case, host, result)
                return result
            except StoredByLostTask as lost:
                workflow.logger.warning("eval trial %s#%d starts over in new sessions: %s", case.name, input.trial, lost)
        raise ApplicationError(
            f"trial {input.trial} of case {case.name!r} lost its workflow task {MAX_TRIAL_RESTARTS + 1} times after "
            "storing events (workers dying mid-trial); look at the workers' logs, or run the suite with "
            "model_calls='activity'",
            type="EvalTrialLost", non_retryable=True,
        )

    async def _record(self, input: EvalCaseInput, case: EvalCase, host: DurableCaseHost, result: EvalResult) -> None:
        """Record the trial, with its sessions' last events when the invocations left them queued."""
        if not input.record:
            await host.flush()
            return
        events = host.unstored()
        record = ec.RecordTrialInput(run_id=input.run_id, trial=TrialRecord.from_result(result), events=events)
        try:
            await _record(ec.RECORD_TRIAL, record, f"record {case.name} trial {input.trial}")
        except ACTIVITY_FAILURES as e:
            host.check_lost_task(e)
            raise
        host.stored(events)


@workflow.defn(name="EvalSuiteWorkflow", failure_exception_types=[AdkError])
class EvalSuiteWorkflow:
    """The suite: plan, children, results. Continues as new (carrying a position and counters,
    never results: the children recorded those) once its history is long; a cancelled suite
    records itself ``cancelled``, and ``resume`` runs only the trials the store does not hold."""

    @workflow.init
    def __init__(self, input: EvalSuiteInput) -> None:
        carry = input.carry
        self._progress = carry.progress.model_copy(deep=True) if carry else EvalProgress()
        self._stopped = carry.stopped if carry else False

    @workflow.query
    def progress(self) -> EvalProgress:
        return self._progress

    @workflow.run
    async def run(self, input: EvalSuiteInput) -> EvalSuiteRunResult:
        run_id = _run_id(input)
        carry = input.carry
        started = carry.start_time if carry else workflow.now().timestamp()
        listed = await workflow.execute_activity(
            ec.LIST_CASES, ec.ListCasesInput(suite=input.suite, names=input.cases), result_type=ec.ListCasesResult,
            start_to_close_timeout=LIST_TIMEOUT, retry_policy=STORE_RETRY, summary=f"list {input.suite}",
        )
        plan = [(case.name, t) for case in listed.cases for t in range(input.trials or case.trials)]
        suite = listed.suite or input.suite  # children import by module name, never by file path
        if not input.record and len(plan) > MAX_UNRECORDED_TRIALS:
            raise ApplicationError(
                f"eval suite {input.suite!r} has {len(plan)} trials; without the results store (record=false) a suite "
                f"holds every result itself and runs at most {MAX_UNRECORDED_TRIALS}: start it with record=true",
                type="InvalidInputError", non_retryable=True,
            )  # fmt: skip
        if carry is None:
            self._progress.total = len(plan)
            if input.record:
                config = input.model_dump(exclude={"suite", "run_id", "record", "carry"}, exclude_defaults=True)
                run = RunRecord(run_id=run_id, suite=input.suite, mode="durable", config=config, start_time=started)
                await _record(ec.RECORD_RUN, ec.RecordRunInput(run=run), f"record run {run_id}")
        done = await self._recorded(input, run_id, count=carry is None)
        try:
            results, next_index = await self._run_trials(input, suite, run_id, plan, carry.next if carry else 0, done)
        except asyncio.CancelledError:
            if input.record:
                await self._record_cancelled(run_id)
            raise
        if next_index < len(plan) and not self._stopped:
            # History is long: the children still running have finished; the next run starts from next_index.
            hops = carry.hops + 1 if carry else 1
            workflow.continue_as_new(input.model_copy(update={"carry": SuiteCarry(
                next=next_index, progress=self._progress, stopped=self._stopped, start_time=started, hops=hops,
            )}))  # fmt: skip
        self._progress.skipped = self._progress.total - self._progress.done
        ended = workflow.now().timestamp()
        if carry is None and not input.resume:
            return await self._finish_in_memory(input, run_id, plan, results, started, ended)
        return await self._finish_from_store(input, run_id, listed, started, ended)

    async def _recorded(self, input: EvalSuiteInput, run_id: str, *, count: bool) -> set[tuple[str, int]]:
        """On a resume, the trials the store already holds (counted once, on the resume's first run)."""
        if not (input.resume and input.record):
            return set()
        found = await workflow.execute_activity(
            ec.RECORDED_TRIALS, ec.RecordedTrialsInput(run_id=run_id), result_type=ec.RecordedTrialsResult,
            start_to_close_timeout=STORE_TIMEOUT, retry_policy=STORE_RETRY, summary=f"trials {run_id} recorded",
        )
        if count:
            for trial in found.trials:
                self._count(trial.status)
        return {(t.case_name, t.trial) for t in found.trials}

    async def _run_trials(
        self, input: EvalSuiteInput, suite: str, run_id: str, plan: list[tuple[str, int]], index: int,
        done: set[tuple[str, int]],
    ) -> tuple[dict[str, list[EvalResult]], int]:
        """Start trials in plan order from ``index``, at most max_concurrency at once, until the plan
        is done, a failure stops it, or the history is long enough to continue as new; then wait for
        the running ones. Returns this run's results by case and where the next run starts."""
        limit = input.max_concurrency or max(len(plan), 1)
        results: dict[str, list[EvalResult]] = {}
        running: list[asyncio.Task[None]] = []

        async def trial(name: str, number: int) -> None:
            label = f"{name}#{number}"
            self._progress.running.append(label)
            try:
                result = await self._run_trial(input, suite, run_id, name, number)
            finally:
                self._progress.running.remove(label)  # a failed trial frees its slot too
            self._count(result.status)
            results.setdefault(name, []).append(result)
            if input.stop_on_first_failure and not result.passed:
                self._stopped = True

        try:
            while index < len(plan) and not self._stopped:
                if (plan[index][0], plan[index][1]) in done:
                    index += 1
                    continue
                await workflow.wait_condition(lambda: len(self._progress.running) < limit)
                if self._stopped or self._history_full(input) or any(_failed(t) for t in running):
                    break  # a trial that raised (not a failed case: a bug, a store down) fails the suite below
                running.append(asyncio.create_task(trial(*plan[index])))
                index += 1
            await asyncio.gather(*running)
        except asyncio.CancelledError:
            for task in running:
                task.cancel()
            raise
        for trials in results.values():
            trials.sort(key=lambda r: r.trial)
        return results, index

    def _history_full(self, input: EvalSuiteInput) -> bool:
        if not input.record:
            return False  # nothing carries the results: one run holds them (MAX_UNRECORDED_TRIALS)
        info = workflow.info()
        limit = input.max_history_events or DEFAULT_MAX_HISTORY_EVENTS
        return info.is_continue_as_new_suggested() or info.get_current_history_length() >= limit

    async def _finish_in_memory(
        self, input: EvalSuiteInput, run_id: str, plan: list[tuple[str, int]], by_case: dict[str, list[EvalResult]],
        started: float, ended: float,
    ) -> EvalSuiteRunResult:
        """One run did it all: the results are here (the same steps as before continue-as-new existed,
        so recorded histories of such suites replay)."""
        names = list(dict.fromkeys(name for name, _ in plan))
        results = [combine_trials(by_case[n]) for n in names if by_case.get(n)]
        summary = summarize(results, skipped=len(names) - len(results))
        passed = summary.skipped == 0 and all(r.passed for r in results)
        if input.record:
            finish = ec.FinishRunInput(
                run_id=run_id, status="passed" if passed else "failed", summary=summary,
                cases=[CaseRecord.from_result(r) for r in results], end_time=ended,
            )
            await _record(ec.FINISH_RUN, finish, f"record results of {run_id}")
        return EvalSuiteRunResult(
            run_id=run_id, suite=input.suite, summary=summary, results=results, duration_ms=(ended - started) * 1000.0
        )

    async def _finish_from_store(
        self, input: EvalSuiteInput, run_id: str, listed: ec.ListCasesResult, started: float, ended: float
    ) -> EvalSuiteRunResult:
        """Several runs (or a resume) did it: the results store has every trial."""
        finished = await workflow.execute_activity(
            ec.FINISH_FROM_STORE,
            ec.FinishFromStoreInput(run_id=run_id, case_names=[c.name for c in listed.cases], end_time=ended,
                                    max_results=MAX_RESULTS_INLINE),
            result_type=ec.FinishFromStoreResult, start_to_close_timeout=LIST_TIMEOUT, retry_policy=STORE_RETRY,
            summary=f"record results of {run_id}",
        )  # fmt: skip
        return EvalSuiteRunResult(
            run_id=run_id, suite=input.suite, summary=finished.summary, results=finished.results,
            results_omitted=finished.results_omitted, duration_ms=(ended - started) * 1000.0,
            continued_as_new=input.carry.hops if input.carry else 0,
        )

    async def _record_cancelled(self, run_id: str) -> None:
        """Mark the run ``cancelled`` with the counts so far (trials), so `adkt eval resume` can go on."""
        p = self._progress
        summary = EvalSummary(total=p.total, passed=p.passed, failed=p.failed, errors=p.errors, terminated=p.terminated,
                              not_evaluated=p.not_evaluated, skipped=p.total - p.done)  # fmt: skip
        finish = ec.FinishRunInput(run_id=run_id, status="cancelled", summary=summary, end_time=workflow.now().timestamp())
        await _record(ec.FINISH_RUN, finish, f"record {run_id} cancelled")

    async def _run_trial(self, input: EvalSuiteInput, suite: str, run_id: str, name: str, index: int) -> EvalResult:
        attempt = input.resume
        child = EvalCaseInput(suite=suite, case_name=name, run_id=run_id, trial=index, record=input.record,
                              attempt=attempt, mocks_local=True, model_calls=input.model_calls)  # fmt: skip
        try:
            return await workflow.execute_child_workflow(
                EvalCaseWorkflow.run, child,
                id=f"{workflow.info().workflow_id}/case/{escape_id_part(name)}/{trial_key(index, attempt)}",
                static_summary=f"{name} (trial {index})",
            )
        except ChildWorkflowError as e:
            if isinstance(e.cause, CancelledError):
                raise asyncio.CancelledError from e  # the suite is being cancelled: not the case's failure
            # The case could not run at all (its module failed to import, a bug): an error result,
            # recorded here since the child could not record it.
            cause = e.cause
            message = cause.message if isinstance(cause, ApplicationError) else str(cause or e)
            error_type = cause.type if isinstance(cause, ApplicationError) and cause.type else type(cause or e).__name__
            result = EvalResult(name=name, status="error", trial=index,
                                error=EvalError(phase="system", message=message, error_type=error_type))  # fmt: skip
            if input.record:
                trial = TrialRecord.from_result(result)
                await _record(ec.RECORD_TRIAL, ec.RecordTrialInput(run_id=run_id, trial=trial), f"record {name} failure")
            return result

    def _count(self, status: str) -> None:
        progress = self._progress
        progress.done += 1
        field = {"passed": "passed", "failed": "failed", "error": "errors", "terminated": "terminated",
                 "not_evaluated": "not_evaluated"}.get(status, "errors")  # fmt: skip
        setattr(progress, field, getattr(progress, field) + 1)


def _failed(task: asyncio.Task[None]) -> bool:
    return task.done() and not task.cancelled() and task.exception() is not None


def _run_id(input: EvalSuiteInput) -> str:
    workflow_id = workflow.info().workflow_id
    run_id = input.run_id or workflow_id.removeprefix(EVAL_WORKFLOW_PREFIX)
    validate_id("eval run id", run_id)
    if len(run_id) > MAX_RUN_ID_LENGTH:
        raise ApplicationError(
            f"eval run id {run_id[:40]!r}... is {len(run_id)} characters; at most {MAX_RUN_ID_LENGTH} (it becomes part "
            "of session ids): pass a shorter run_id",
            type="InvalidInputError",
            non_retryable=True,
        )
    return run_id
