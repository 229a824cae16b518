"""EvalSuiteWorkflow and EvalCaseWorkflow: eval suites that survive crashes.

    EvalSuiteWorkflow   lists the suite's cases (an activity, so the plan is in history), records the
                        run, starts one child EvalCaseWorkflow per case and trial (at most
                        max_concurrency at once), combines trials, records cases and the summary
    EvalCaseWorkflow    one trial: ``adk_core.eval.drive_case`` with a DurableCaseHost, then records
                        the trial; returns its result without events (they are in the session store)

Cases are named by import reference (activities.eval_cases), so any worker rebuilds them; the case
workflow imports the module through the sandbox (passed through: the very objects the worker's
activities use) and registers the case's apps. A SIGKILLed worker costs nothing done: on another
worker the case replays to where it was, every completed model and tool call read from history.

History: a case's history holds its own model and tool calls (bounded by its ``max_turns``); the
suite's holds only per-trial summaries, a few KB each.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from pydantic_core import to_json
from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from adk_core.errors import AdkError
    from adk_core.eval import EvalError, EvalResult, combine_trials, drive_case
    from adk_core.eval.results import summarize
    from adk_core.eval.store import CaseRecord, RunRecord, TrialRecord
    from adk_core.ids import escape_id_part, validate_id
    from adk_temporal.activities import eval_contracts as ec
    from adk_temporal.activities.eval_cases import find_case, register_case

    from ._eval_contracts import (
        EVAL_WORKFLOW_PREFIX,
        MAX_RUN_ID_LENGTH,
        EvalCaseInput,
        EvalProgress,
        EvalSuiteInput,
        EvalSuiteRunResult,
    )
    from ._eval_host import DurableCaseHost
    from .app_scope import worker_apps
    from .services import STORE_RETRY, STORE_TIMEOUT

__all__ = [
    "EVAL_WORKFLOW_PREFIX",
    "EvalCaseInput",
    "EvalCaseWorkflow",
    "EvalProgress",
    "EvalSuiteInput",
    "EvalSuiteRunResult",
    "EvalSuiteWorkflow",
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
        host = DurableCaseHost(case, apps, run_id=input.run_id, trial=input.trial)
        result = (await drive_case(case, host, trial=input.trial)).model_copy(update={"events": []})
        # A metric may measure a value that is not JSON; keep its repr rather than fail to return.
        result = EvalResult.model_validate_json(to_json(result, fallback=repr))
        if input.record:
            await _record(ec.RECORD_TRIAL, ec.RecordTrialInput(run_id=input.run_id, trial=TrialRecord.from_result(result)),
                          f"record {case.name} trial {input.trial}")  # fmt: skip
        return result


@workflow.defn(name="EvalSuiteWorkflow", failure_exception_types=[AdkError])
class EvalSuiteWorkflow:
    @workflow.init
    def __init__(self, input: EvalSuiteInput) -> None:
        self._progress = EvalProgress()
        self._stopped = False

    @workflow.query
    def progress(self) -> EvalProgress:
        return self._progress

    @workflow.run
    async def run(self, input: EvalSuiteInput) -> EvalSuiteRunResult:
        run_id = _run_id(input)
        started = workflow.now().timestamp()
        listed = await workflow.execute_activity(
            ec.LIST_CASES, ec.ListCasesInput(suite=input.suite, names=input.cases), result_type=ec.ListCasesResult,
            start_to_close_timeout=LIST_TIMEOUT, retry_policy=STORE_RETRY, summary=f"list {input.suite}",
        )
        plan = [(case.name, input.trials or case.trials) for case in listed.cases]
        suite = listed.suite or input.suite  # children import by module name, never by file path
        self._progress.total = sum(trials for _, trials in plan)
        if input.record:
            config = input.model_dump(exclude={"suite", "run_id", "record"}, exclude_defaults=True)
            run = RunRecord(run_id=run_id, suite=input.suite, mode="durable", config=config, start_time=started)
            await _record(ec.RECORD_RUN, ec.RecordRunInput(run=run), f"record run {run_id}")
        gate = asyncio.Semaphore(input.max_concurrency or max(self._progress.total, 1))

        async def trial(name: str, index: int) -> EvalResult | None:
            async with gate:
                if self._stopped:
                    self._progress.skipped += 1
                    return None
                label = f"{name}#{index}"
                self._progress.running.append(label)
                result = await self._run_trial(input, suite, run_id, name, index)
                self._progress.running.remove(label)
                self._count(result)
                if input.stop_on_first_failure and not result.passed:
                    self._stopped = True
                return result

        outcomes = await asyncio.gather(*(asyncio.gather(*(trial(n, t) for t in range(k))) for n, k in plan))
        results = [combine_trials(ran) for ran in ([r for r in o if r is not None] for o in outcomes) if ran]
        summary = summarize(results, skipped=len(plan) - len(results))
        ended = workflow.now().timestamp()
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

    async def _run_trial(self, input: EvalSuiteInput, suite: str, run_id: str, name: str, index: int) -> EvalResult:
        child = EvalCaseInput(suite=suite, case_name=name, run_id=run_id, trial=index, record=input.record)
        try:
            return await workflow.execute_child_workflow(
                EvalCaseWorkflow.run, child,
                id=f"{workflow.info().workflow_id}/case/{escape_id_part(name)}/{index}",
                static_summary=f"{name} (trial {index})",
            )
        except ChildWorkflowError as e:
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

    def _count(self, result: EvalResult) -> None:
        progress = self._progress
        progress.done += 1
        field = {"passed": "passed", "failed": "failed", "error": "errors", "terminated": "terminated",
                 "not_evaluated": "not_evaluated"}[result.status]  # fmt: skip
        setattr(progress, field, getattr(progress, field) + 1)


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
