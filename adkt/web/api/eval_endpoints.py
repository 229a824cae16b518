"""The eval endpoints beyond listing runs: start a suite durably, follow it, open a trial's trace,
compare two runs, a suite's trend, and a chat session exported as an eval case.

Starting runs code on a worker, so every eval endpoint is an operator's, and a run may name only a
suite whose module this server was told the worker allows (``ApiBackend.eval_suites``: the worker
refuses any other suite too, but the page should not start what is bound to fail).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from typing import Any

from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ActivityError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from adk_core.errors import ConfigurationError, InvalidInputError, SessionNotFoundError
from adk_core.eval import EvalCase, select_cases
from adk_core.eval.store import EvalResultStore, RunDetail, compare_runs
from adk_core.ids import validate_id
from adk_core.simulator import SimulatorExport, export_events
from adk_core.state import TEMP_PREFIX
from adk_core.types import REQUEST_CONFIRMATION_FUNCTION, Event
from adk_temporal.activities.eval_cases import load_cases
from adk_temporal.workflows.contracts import TASK_QUEUE
from adk_temporal.workflows.eval import EVAL_WORKFLOW_PREFIX, EvalSuiteInput, EvalSuiteWorkflow

from .errors import ApiError, NotFoundError, NoWorkerError
from .eval_models import (
    CompareQuery,
    EvalRunProgress,
    EvalRunStarted,
    EvalSuiteList,
    JudgeView,
    MetricPoint,
    RunComparison,
    StartEvalRunBody,
    StateChange,
    SuiteCase,
    SuitesQuery,
    SuiteTrend,
    TraceQuery,
    TrendPoint,
    TrendQuery,
    TrialTrace,
)
from .routes import Call, Endpoint

TEMPORAL_SECONDS = 2.0
"""How long a progress read waits for Temporal (describe, query, the failure's reason)."""
SUITES_FROM_RUNS = 200
"""How many of the newest stored runs the suite picker looks through for suites run before."""

class RunStateError(ApiError):
    """The run is not in a state the request needs (cancel a closed run, resume a running one)."""

    status = 409


_PHASE = {
    WorkflowExecutionStatus.RUNNING: "running", WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.FAILED: "failed", WorkflowExecutionStatus.CANCELED: "canceled",
    WorkflowExecutionStatus.TERMINATED: "terminated", WorkflowExecutionStatus.TIMED_OUT: "timed_out",
    WorkflowExecutionStatus.CONTINUED_AS_NEW: "running",
}  # fmt: skip


def _evals(call: Call) -> EvalResultStore:
    if call.backend.evals is None:
        raise NotFoundError("this server has no eval results store; start it with a database URL")
    return call.backend.evals


async def _run(call: Call, run_id: str) -> RunDetail:
    validate_id("eval run id", run_id)
    run = await _evals(call).get_run(run_id)
    if run is None:
        raise NotFoundError(f"no eval run {run_id!r}; GET /api/v1/evals/runs lists the stored ones")
    return run


def _queue(call: Call) -> str:
    # Suites start where `adkt eval run --durable` starts them: the base queue, unless one queue serves all.
    return call.backend.client.task_queue or TASK_QUEUE


async def list_suites(call: Call) -> EvalSuiteList:
    query: SuitesQuery | None = call.query
    allowed = call.backend.eval_suites
    ran = [r.suite for r in await _evals(call).list_runs(limit=SUITES_FROM_RUNS)]
    offered = [ref for ref in dict.fromkeys([*call.backend.eval_refs, *ran]) if ref and allowed.allows(ref, from_workflow=True)]
    cases = None
    if query is not None and query.suite:
        _check_allowed(call, query.suite)
        cases = [SuiteCase(name=c.name, trials=c.trials, description=c.description) for c in await _load_cases(query.suite)]
    return EvalSuiteList(suites=offered, allowed_modules=allowed.modules(), task_queue=_queue(call), cases=cases)


async def _load_cases(suite: str) -> list[EvalCase]:
    """The suite's cases, imported here (only suites of allowed modules: the operator named them for
    the worker). A thread: a module's first import may take a while, and must not stall the server."""
    return await asyncio.to_thread(load_cases, suite)


async def _check_picked(suite: str, names: list[str] | None) -> None:
    """Refuse picked case names the suite does not have, before anything starts. When this server
    cannot import the suite (its code is only where the worker runs), the worker's listing refuses
    them instead: the run fails at once with the same message."""
    if names is None:
        return
    try:
        cases = await _load_cases(suite)
    except ConfigurationError:
        return
    select_cases(cases, names, suite=suite)


async def start_run(call: Call) -> EvalRunStarted:
    body: StartEvalRunBody = call.body
    backend = call.backend
    _evals(call)  # a run the page could not show: refused before anything starts
    run_id = body.run_id or f"r-{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:4]}"
    validate_id("eval run id", run_id)
    queue = _queue(call)
    await _check_startable(call, body.suite, queue)
    await _check_picked(body.suite, body.cases)
    suite_input = EvalSuiteInput(suite=body.suite, run_id=run_id, cases=body.cases, trials=body.trials,
                                 max_concurrency=body.parallel, stop_on_first_failure=body.stop_on_first_failure)  # fmt: skip
    workflow_id = EVAL_WORKFLOW_PREFIX + run_id
    # REJECT_DUPLICATE: a run id names one run; starting it again would mix two runs' trials.
    try:
        await backend.client.client.start_workflow(
            EvalSuiteWorkflow.run, suite_input, id=workflow_id, task_queue=queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )  # fmt: skip
    except WorkflowAlreadyStartedError:
        raise RunStateError(
            f"eval run id {run_id!r} is taken (workflow {workflow_id!r} ran or runs); leave run_id out for a new one, "
            f"or resume a stopped run with POST /api/v1/evals/runs/{run_id}/resume"
        ) from None
    return EvalRunStarted(run_id=run_id, workflow_id=workflow_id, workflow_url=backend.workflow_url(workflow_id))


async def cancel_run(call: Call) -> EvalRunProgress:
    """Ask the run's suite workflow to cancel: running trials stop, finished ones stay recorded, the run
    is stored ``cancelled`` (workflows/eval.py). Answers at once; the page follows the progress."""
    _evals(call)
    run_id = call.path["run_id"]
    handle = call.backend.client.client.get_workflow_handle(EVAL_WORKFLOW_PREFIX + run_id)
    status = await _workflow_status(handle, run_id)
    if status != WorkflowExecutionStatus.RUNNING:
        raise RunStateError(f"eval run {run_id!r} is not running (its workflow is {_PHASE.get(status, 'closed') if status else 'closed'}); "
                            "nothing to cancel")  # fmt: skip
    await handle.cancel()
    return await run_progress(call)


async def resume_run(call: Call) -> EvalRunStarted:
    """Go on with a cancelled or failed durable run under the same id: the same suite and options, the
    trials it recorded not run again (``EvalSuiteInput.resume_of``, what `adkt eval resume` starts)."""
    run_id = call.path["run_id"]
    detail = await _run(call, run_id)
    backend = call.backend
    handle = backend.client.client.get_workflow_handle(EVAL_WORKFLOW_PREFIX + run_id)
    if detail.run.status in ("passed", "failed") and detail.run.end_time is not None:
        raise RunStateError(f"eval run {run_id!r} finished ({detail.run.status}); nothing to resume")
    queue = _queue(call)
    try:
        async with asyncio.timeout(TEMPORAL_SECONDS):
            described = await handle.describe()
        if described.status == WorkflowExecutionStatus.RUNNING:
            raise RunStateError(f"eval run {run_id!r} is still running; cancel it first")
        queue = described.task_queue or queue  # resume where the run ran: its workers serve the suite
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:  # no workflow left (retention): resume from the store
            raise
    try:
        suite_input = EvalSuiteInput.resume_of(detail.run)
    except ValueError as e:
        raise InvalidInputError(str(e)) from None
    await _check_startable(call, suite_input.suite, queue)
    await backend.client.client.start_workflow(
        EvalSuiteWorkflow.run, suite_input, id=handle.id, task_queue=queue,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,  # the closed run's id, on purpose
    )  # fmt: skip
    return EvalRunStarted(run_id=run_id, workflow_id=handle.id, workflow_url=backend.workflow_url(handle.id))


async def _workflow_status(handle: WorkflowHandle[Any, Any], run_id: str) -> WorkflowExecutionStatus | None:
    try:
        async with asyncio.timeout(TEMPORAL_SECONDS):
            return (await handle.describe()).status
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
        raise NotFoundError(f"no durable eval run {run_id!r} (no workflow {handle.id!r}); an in-process run has none") from None


async def _check_startable(call: Call, suite: str, queue: str) -> None:
    """Refuse a suite outside the allowed modules, and a queue no worker polls (the run would only wait)."""
    backend = call.backend
    _check_allowed(call, suite)
    if not await backend.has_worker(queue):
        raise NoWorkerError(
            f"no worker polls task queue {queue!r}, where eval suites start; nothing was started. Start one with "
            f"`adkt worker --eval-suite {suite.partition(':')[0]}` (same TEMPORAL_ADDRESS and ADK_DATABASE_URL), "
            "or use `adkt dev`"
        )


def _check_allowed(call: Call, suite: str) -> None:
    backend = call.backend
    if not backend.eval_suites.allows(suite, from_workflow=True):
        allowed = ", ".join(backend.eval_suites.modules()) or "none"
        raise InvalidInputError(
            f"eval suite {suite!r} is not one this server may start (its worker would refuse to import it). "
            f"Suites may come from: {allowed}. Serve the suite's module: `adkt dev` allows the modules of its working "
            "directory; `adkt web --eval-suite MODULE` with a worker started with `adkt worker --eval-suite MODULE`"
        )


async def run_progress(call: Call) -> EvalRunProgress:
    run_id = call.path["run_id"]
    workflow_id = EVAL_WORKFLOW_PREFIX + run_id
    backend = call.backend
    store = _evals(call)
    handle: WorkflowHandle[Any, Any] = backend.client.client.get_workflow_handle(workflow_id)
    answer = EvalRunProgress(run_id=run_id, workflow_id=workflow_id, workflow_url=backend.workflow_url(workflow_id),
                             status="not_found")  # fmt: skip
    try:
        async with asyncio.timeout(TEMPORAL_SECONDS):
            description = await handle.describe()
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
        if await store.get_run(run_id) is None:
            raise NotFoundError(f"no eval run {run_id!r}: no workflow {workflow_id!r} and nothing stored") from None
        return answer  # an in-process run: stored, never a workflow
    answer.status = _PHASE.get(description.status, "running") if description.status else "running"  # type: ignore[assignment]
    try:
        async with asyncio.timeout(TEMPORAL_SECONDS):
            answer.progress = await handle.query(EvalSuiteWorkflow.progress)
    except (RPCError, TimeoutError, Exception):  # noqa: BLE001 - not picked up yet, or closed and evicted: no numbers
        answer.progress = None
    if answer.status == "failed":
        answer.error = await _failure(handle)
    return answer


async def _failure(handle: WorkflowHandle[Any, Any]) -> str:
    try:
        async with asyncio.timeout(TEMPORAL_SECONDS):
            await handle.result()
    except WorkflowFailureError as e:
        cause = e.cause
        while isinstance(cause, ActivityError) and cause.cause is not None:
            cause = cause.cause  # "Activity task failed" says nothing: the activity's own error does (a picked case unknown)
        return str(getattr(cause, "message", "") or cause or e)
    except TimeoutError:
        return "the workflow failed (Temporal did not say why in time; see it in the Temporal UI)"
    return ""


async def trial_trace(call: Call) -> TrialTrace:
    query: TraceQuery = call.query
    run_id = call.path["run_id"]
    detail = await _run(call, run_id)
    trial = next((t for t in detail.trials if t.case_name == query.case and t.trial == query.trial), None)
    if trial is None:
        have = ", ".join(sorted({f"{t.case_name}#{t.trial}" for t in detail.trials})) or "none yet"
        raise NotFoundError(f"run {run_id!r} has no trial {query.trial} of case {query.case!r}; it has {have}")
    judges = [JudgeView(metric=name, passed=m.passed, evaluated=m.evaluated, score=m.score, rationale=m.evidence,
                        judge=isinstance(m.value, dict) and "votes_passed" in m.value)
              for name, m in trial.metrics.items()]  # fmt: skip
    ref = trial.session
    session = None
    if ref is not None:
        session = await call.backend.sessions.get_session(app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id)
    if session is None:
        return TrialTrace(run_id=run_id, trial=trial, stored=False, judges=judges)
    changes = state_changes(session.events)
    written = {c.key for c in changes}
    before = {k: v for k, v in session.state.items() if k not in written}
    return TrialTrace(run_id=run_id, trial=trial, stored=True, events=session.events, state_before=before,
                      state_after=dict(session.state), changes=changes, judges=judges)  # fmt: skip


def state_changes(events: list[Event]) -> list[StateChange]:
    """Each key the events wrote, with its last value and which event wrote it last, in that order."""
    last: dict[str, StateChange] = {}
    for index, event in enumerate(events):
        for key, value in event.actions.state_delta.items():
            if not key.startswith(TEMP_PREFIX):
                last.pop(key, None)
                last[key] = StateChange(key=key, value=value, event_index=index, author=event.author)
    return list(last.values())


async def compare(call: Call) -> RunComparison:
    query: CompareQuery = call.query
    a, b = await _run(call, query.a), await _run(call, query.b)
    cases = compare_runs(a, b)
    count = lambda kind: sum(c.change == kind for c in cases) + sum(m.change == kind for c in cases for m in c.metrics)  # noqa: E731
    return RunComparison(a=a.run, b=b.run, cases=cases, regressions=count("regression"), fixes=count("fix"))


async def trend(call: Call) -> SuiteTrend:
    query: TrendQuery = call.query
    store = _evals(call)
    runs = await store.list_runs(limit=query.limit, suite=query.suite)
    points = []
    for record in reversed(runs):  # oldest first: the chart reads left to right
        detail = await store.get_run(record.run_id)
        if detail is None:  # deleted between the two reads
            continue
        points.append(TrendPoint(run_id=record.run_id, start_time=record.start_time, status=record.status,
                                 metrics=metric_points(detail)))  # fmt: skip
    names = sorted({name for p in points for name in p.metrics})
    return SuiteTrend(suite=query.suite, metrics=names, runs=points)


def metric_points(detail: RunDetail) -> dict[str, MetricPoint]:
    """Per metric over a run's trials: the mean score and the share of trials it passed."""
    found: dict[str, MetricPoint] = {}
    for name in dict.fromkeys(n for t in detail.trials for n in t.metrics):
        results = [t.metrics[name] for t in detail.trials if name in t.metrics]
        scores = [r.score for r in results if r.score is not None]
        found[name] = MetricPoint(score=sum(scores) / len(scores) if scores else None,
                                  pass_rate=sum(r.passed for r in results) / len(results), trials=len(results))  # fmt: skip
    return found


async def session_as_case(call: Call) -> SimulatorExport:
    app, user, session_id = call.path["app"], call.path["user"], call.path["session"]
    session = await call.backend.sessions.get_session(app_name=app, user_id=user, session_id=session_id)
    if session is None:
        raise SessionNotFoundError(f"no session {session_id!r} for app {app!r}, user {user!r}; send a message first")
    asked = sorted({c.args.get("originalFunctionCall", {}).get("name", "a tool") for e in session.events
                    for c in e.function_calls() if c.name == REQUEST_CONFIRMATION_FUNCTION})  # fmt: skip
    if asked:
        # The replay counts each agent's model answers, and the engine's confirmation request would count
        # as one: the case would fail on its first confirmation. Refused now, not as a file that cannot run.
        raise InvalidInputError(
            f"session {session_id!r} asked to confirm {', '.join(asked)}; a saved case cannot replay tool confirmations "
            "yet. Save a conversation without confirmations, or write the case with EvalCase and a tool_mocks entry"
        )
    exported = export_events(session_id, session.events, app_name=app)
    if not exported.user_messages:
        raise InvalidInputError(f"session {session_id!r} holds no user message yet; chat first, then save it as a case")
    return exported


_RUN = "/evals/runs/{run_id}"

EVAL_ENDPOINTS: list[Endpoint] = [
    Endpoint("GET", "/evals/suites", list_suites, "Eval suites this server may start", EvalSuiteList,
             query=SuitesQuery, errors=(400, 422), operator=True,
             description="With ?suite=REF, also that suite's cases (imported here), the names POST /evals/runs "
             "may pick in ``cases``."),
    Endpoint("POST", "/evals/runs", start_run, "Start an eval suite durably (EvalSuiteWorkflow)", EvalRunStarted,
             body=StartEvalRunBody, status=201, errors=(400, 422, 503), operator=True,
             description="Only suites of the modules the server allows (GET /evals/suites); ``cases`` runs only "
             "those (an unknown name is a 400 listing the suite's cases); follow it with "
             "GET /evals/runs/{run_id}/progress."),
    Endpoint("POST", _RUN + "/cancel", cancel_run, "Cancel a running durable run (finished trials stay recorded)",
             EvalRunProgress, errors=(400, 404, 409), operator=True),
    Endpoint("POST", _RUN + "/resume", resume_run, "Resume a cancelled or failed durable run under its id",
             EvalRunStarted, status=201, errors=(400, 404, 409, 503), operator=True),
    Endpoint("GET", _RUN + "/progress", run_progress, "A run's workflow status and trial counts", EvalRunProgress,
             errors=(400, 404), operator=True),
    Endpoint("GET", _RUN + "/trace", trial_trace, "One trial: its trace, state and every metric's rationale",
             TrialTrace, query=TraceQuery, errors=(400, 404, 422), operator=True),
    Endpoint("GET", "/evals/compare", compare, "Two runs side by side: regressions and fixes per case and metric",
             RunComparison, query=CompareQuery, errors=(400, 404, 422), operator=True),
    Endpoint("GET", "/evals/trend", trend, "Per metric, a suite's runs over time", SuiteTrend, query=TrendQuery,
             errors=(422,), operator=True),
    Endpoint("GET", "/apps/{app}/users/{user}/sessions/{session}/eval-case", session_as_case,
             "A chat session as an eval case (a simulator export: eval_case(export, app) replays it)",
             SimulatorExport, errors=(400, 404)),
]  # fmt: skip
