"""`adkt eval run|list|show|compare|rescore|cancel|resume|replay`: run eval suites in-process or durably, and read their results.

    adkt eval run examples.eval_chest_pain                 in this process (exit code 1 unless every case passed)
    adkt eval run examples.eval_chest_pain:cases --durable --trials 3 --parallel 4
    adkt eval run examples.eval_chest_pain --case chest-pain-escalation --case NAME   only these cases
    adkt eval list | show RUN [--case NAME] | compare RUN_A RUN_B
    adkt eval rescore RUN --metrics my_evals:metrics         new metrics on RUN's stored traces, as a new run
    adkt eval cancel RUN | resume RUN                        stop a durable run; go on with the trials it did not finish
    adkt eval replay RUN --trial CASE[#N]                    run one trial again from its recorded model responses

Results are stored in the sessions database (adk_core.eval.store). Durable runs always store them
(the worker's activities write them). In-process runs store them, with a copy of each trial's trace
as a session, when a database is configured (--database-url, ADK_DATABASE_URL, or a running
`adkt dev`); otherwise they only print. `list`, `show` and `compare` read the configured database,
or start the embedded Postgres under .adk/ that `--durable` runs without configuration wrote to.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from adkt.commands._common import run_async
from adkt.commands._devstate import resolve_database_url
from adkt.commands._render import err, out, print_event, short_json, timestamp
from adkt.settings import Settings

if TYPE_CHECKING:
    from adk_core.eval import EvalCase, EvalResult, EvalSuiteResult, MetricResult
    from adk_core.eval.store import EvalResultStore

evals = typer.Typer(help="Run eval suites and inspect their stored results.", no_args_is_help=True)
DatabaseUrl = Annotated[str | None, typer.Option("--database-url", help="results database (default: ADK_DATABASE_URL, then `adkt dev`)")]
STATUS_STYLE = {"passed": "green", "failed": "red", "error": "red", "terminated": "yellow", "not_evaluated": "magenta",
                "running": "cyan"}


class ModelCalls(enum.StrEnum):
    """EvalSuiteInput.model_calls, as the CLI offers it."""

    local_activity = "local_activity"
    activity = "activity"


def _styled(status: str | None) -> str:
    return f"[{STATUS_STYLE.get(status or '', 'dim')}]{status or '-'}[/]"


@evals.command("run")
def run(
    target: Annotated[str, typer.Argument(help="eval cases: module:attr, a module (its `cases`), or a .py file")],
    durable: Annotated[bool, typer.Option("--durable", help="run as EvalSuiteWorkflow on Temporal")] = False,
    case: Annotated[list[str] | None, typer.Option("--case", "-c", metavar="NAME", help="run only this case (repeat for more; default: all)")] = None,
    trials: Annotated[int | None, typer.Option("--trials", min=1, help="trials per case (default: each case's own)")] = None,
    parallel: Annotated[int | None, typer.Option("--parallel", min=1, help="at most N trials at once (default: all)")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="name of this run (default: a new one)")] = None,
    stop_on_first_failure: Annotated[bool, typer.Option("--stop-on-first-failure")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the suite result as JSON")] = False,
    address: Annotated[str | None, typer.Option("--address", help="Temporal address (with --durable)")] = None,
    model_calls: Annotated[ModelCalls, typer.Option(
        "--model-calls", case_sensitive=False,
        help="with --durable: trials call models as local activities (fast; a trial whose worker dies runs again from its "
             "last recorded step) or as activities of their own (calls of minutes; each call in Temporal's UI)",
    )] = ModelCalls.local_activity,
    database_url: DatabaseUrl = None,
) -> None:
    """Run every case of TARGET (or only those given with --case) and print a results table; exit code 1 when a case did not pass (failed, error, terminated or not evaluated)."""
    run_id = run_id or f"r-{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:4]}"
    options: dict[str, Any] = dict(
        trials=trials, parallel=parallel, run_id=run_id, stop=stop_on_first_failure, database_url=database_url,
        case_names=case or None,
    )
    coro = _durable(target, address=address, model_calls=model_calls.value, **options) if durable else _in_process(target, **options)
    result = run_async(coro)
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        _print_results(result, run_id)
    raise typer.Exit(0 if result.passed else 1)


def _progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err, transient=True)  # fmt: skip


async def _in_process(target: str, *, trials: int | None, parallel: int | None, run_id: str, stop: bool,
                      database_url: str | None, case_names: list[str] | None = None) -> EvalSuiteResult:  # fmt: skip
    from adk_core.eval import EvalSuiteResult, run_eval, select_cases
    from adk_core.eval.results import summarize
    from adk_core.runtime import wall_clock
    from adk_core.sql import migrate
    from adk_temporal.activities.eval_cases import load_cases

    picked = select_cases(load_cases(target), case_names, suite=target)  # an unknown name: before anything runs
    cases = [dataclasses.replace(c, trials=trials) if trials else c for c in picked]
    url = resolve_database_url(Settings.load(), database_url)
    if url:
        await migrate(url)
    else:
        err.print("[dim]no database configured: results are printed, not stored (--database-url or ADK_DATABASE_URL)[/]")
    started = wall_clock()
    async with _recorder(url, run_id, target, cases=case_names, trials=trials, max_concurrency=parallel,
                         stop_on_first_failure=stop or None) as record:  # fmt: skip
        gate, stopped = asyncio.Semaphore(parallel or len(cases)), asyncio.Event()
        with _progress() as progress:
            task = progress.add_task(f"eval {target}", total=len(cases))

            async def one(case: EvalCase) -> EvalResult | None:
                async with gate:
                    if stopped.is_set():
                        return None
                    result = await run_eval(case)
                if stop and not result.passed:
                    stopped.set()
                await record.trials(case, result)
                progress.advance(task)
                return result

            outcomes = await asyncio.gather(*(one(c) for c in cases))
        results = [r for r in outcomes if r is not None]
        suite = EvalSuiteResult(summary=summarize(results, skipped=len(outcomes) - len(results)), results=results,
                                duration_ms=(wall_clock() - started) * 1000.0)  # fmt: skip
        await record.finish(suite)
    return suite


@dataclasses.dataclass
class _Recorder:
    """Stores an in-process run: the run, each trial (its trace copied into a session), the cases."""

    store: EvalResultStore | None
    run_id: str

    async def trials(self, case: EvalCase, result: EvalResult) -> None:
        if self.store is None:
            return
        from adk_core.errors import AdkError
        from adk_core.eval.store import TrialRecord
        from adk_core.sessions.sql import DatabaseSessionService
        from adk_temporal.workflows._eval_host import EVAL_USER_ID, storage_app_name

        sessions = DatabaseSessionService(self.store.engine)
        for trial in result.all_trials():
            key = dict(app_name=storage_app_name(f"eval:{case.name}", self.run_id, trial.trial), user_id=EVAL_USER_ID,
                       session_id=f"{self.run_id}/{trial.trial}/main")  # fmt: skip
            try:
                session = await sessions.create_session(**key, state=case.initial_state_flat())
                await sessions.append_events(session, list(trial.events))
                ref = trial.session.model_copy(update=key) if trial.session else None
            except AdkError as e:  # a trace the store refuses (say a NUL in a tool result): keep the result
                err.print(f"[yellow]trace of {case.name} trial {trial.trial} not stored: {e}[/]")
                ref = None
            await self.store.record_trial(self.run_id, TrialRecord.from_result(trial).model_copy(update={"session": ref}))

    async def finish(self, suite: EvalSuiteResult) -> None:
        if self.store is not None:
            from adk_core.eval.store import CaseRecord

            await self.store.finish_run(self.run_id, status="passed" if suite.passed else "failed", summary=suite.summary,
                                        cases=[CaseRecord.from_result(r) for r in suite.results])  # fmt: skip


@contextlib.asynccontextmanager
async def _recorder(url: str | None, run_id: str, target: str, **config: object) -> AsyncIterator[_Recorder]:
    if not url:
        yield _Recorder(None, run_id)
        return
    from adk_core.eval.store import EvalResultStore, RunRecord

    store = EvalResultStore(url)
    try:
        config = {k: v for k, v in config.items() if v is not None}
        await store.start_run(RunRecord(run_id=run_id, suite=target, mode="in_process", config=config))
        yield _Recorder(store, run_id)
    finally:
        await store.close()


async def _durable(target: str, *, address: str | None, trials: int | None, parallel: int | None, run_id: str,
                   stop: bool, database_url: str | None, case_names: list[str] | None = None,
                   model_calls: str = "local_activity") -> EvalSuiteResult:  # fmt: skip
    from temporalio.common import WorkflowIDReusePolicy

    from adk_temporal.activities.eval_cases import normalize_ref
    from adk_temporal.workflows.eval import EvalSuiteInput

    ref = normalize_ref(target)  # workers import cases by module name
    suite_input = EvalSuiteInput(suite=ref, run_id=run_id, cases=case_names, trials=trials, max_concurrency=parallel,
                                 stop_on_first_failure=stop, model_calls=model_calls)  # fmt: skip
    return await _start_and_follow(suite_input, address=address, database_url=database_url,
                                   reuse=WorkflowIDReusePolicy.REJECT_DUPLICATE)  # fmt: skip


async def _start_and_follow(suite_input: Any, *, address: str | None, database_url: str | None, reuse: Any,
                            task_queue: str | None = None) -> EvalSuiteResult:  # fmt: skip
    """Start EvalSuiteWorkflow with ``suite_input`` (an EvalSuiteInput) on ``task_queue`` (default: the
    configured one) and show its progress until it ends."""
    from adk_core.eval import case_apps, select_cases
    from adk_temporal.activities.eval_cases import load_cases
    from adk_temporal.workflows.contracts import TASK_QUEUE
    from adk_temporal.workflows.eval import EVAL_WORKFLOW_PREFIX, EvalSuiteWorkflow
    from adkt.client import connect
    from adkt.commands._devstate import resolve
    from adkt.commands._stack import embedded_stack

    ref, run_id = suite_input.suite, suite_input.run_id
    cases = load_cases(ref)
    # An unknown --case fails here, before a workflow starts (the suite's worker would refuse it too).
    select_cases(cases, suite_input.cases, suite=ref)
    apps = [app for case in cases for app in case_apps(case).all()]
    settings = Settings.load()
    where = resolve(settings, address=address, database_url=database_url)
    async with contextlib.AsyncExitStack() as stack:
        if where.address is None:
            err.print("[dim]no Temporal configured and no `adkt dev` running: starting an embedded stack for this run[/]")
            running = await stack.enter_async_context(
                embedded_stack(apps, settings, database_url=where.database_url, eval_suites=[ref])
            )
            where = dataclasses.replace(where, address=running.temporal.address, namespace=running.temporal.namespace,
                                        database_url=running.database_url)  # fmt: skip
        # With the database: a large suite's result travels out of band (workflows.payload_storage).
        client = await connect(where.address, namespace=where.namespace, database_url=where.database_url)
        queue = task_queue or where.task_queue or TASK_QUEUE  # the base queue unless one queue serves all
        handle = await client.start_workflow(
            EvalSuiteWorkflow.run, suite_input, id=EVAL_WORKFLOW_PREFIX + run_id, task_queue=queue, id_reuse_policy=reuse,
        )
        err.print(f"[dim]workflow {handle.id} on task queue {queue}[/]")
        result_task = asyncio.ensure_future(handle.result())
        with _progress() as progress:
            task = progress.add_task(f"eval {ref}", total=None)
            while not result_task.done():
                with contextlib.suppress(Exception):  # no worker has picked the suite up yet
                    state = await handle.query(EvalSuiteWorkflow.progress, rpc_timeout=timedelta(seconds=2))
                    progress.update(task, total=state.total or None, completed=state.done)
                await asyncio.wait([result_task], timeout=0.5)
        return await result_task


# --- rendering ------------------------------------------------------------------------------------
def _mark(m: MetricResult) -> str:
    """✓ passed, ✗ failed, ? could not be evaluated."""
    return "✓" if m.passed else "✗" if m.evaluated else "?"


def _notes(result: EvalResult) -> str:
    if result.error is not None:
        return f"{result.error.phase} error: {result.error.message.splitlines()[0][:100]}"
    if result.not_evaluated_reason:
        return result.not_evaluated_reason
    failing = [name for name, m in result.metrics.items() if not m.passed and m.evaluated]
    parts = [f"failed: {', '.join(failing)}"] if failing else []
    if result.termination_reason:
        parts.append(f"stopped by {result.termination_reason}")
    return "; ".join(parts)


def _measured(measurements: dict[str, Any]) -> str:
    """The streaming metrics in a few words: first response, slowest tool, cost (adk_core.eval.streaming)."""
    parts = []
    first = measurements.get("time_to_first_response_ms")
    if isinstance(first, int | float):
        parts.append(f"first {first:.0f} ms")
    tools = measurements.get("tool_latency_ms")
    if isinstance(tools, dict):
        parts += [f"{name} {t['mean_ms']:.0f} ms" for name, t in tools.items() if isinstance(t, dict) and "mean_ms" in t]
    cost = measurements.get("cost_usd")
    if isinstance(cost, int | float):
        parts.append(f"${cost:.4f}")
    return " · ".join(parts) or "-"


def _print_results(suite: EvalSuiteResult, run_id: str) -> None:
    table = Table(title=f"eval run {run_id}")
    for column in ("case", "status", "trials", "pass^k", "turns", "ms", "tokens in/out", "measured", "notes"):
        table.add_column(column, overflow="fold")
    for r in suite.results:
        runs = r.all_trials()
        tokens = f"{r.token_usage.input}/{r.token_usage.output}" if r.token_usage else "-"
        table.add_row(escape(r.name), _styled(r.status), f"{sum(t.passed for t in runs)}/{len(runs)}", f"{r.pass_hat_k:.2f}",
                      str(r.turns), f"{r.duration_ms:.0f}", tokens, escape(_measured(r.measurements)),
                      escape(_notes(r)))  # fmt: skip
    out.print(table)
    omitted = getattr(suite, "results_omitted", 0)
    if omitted:
        out.print(f"[dim]{omitted} more cases are in the results store: adkt eval show {escape(run_id)}[/]")
    s = suite.summary
    out.print(f"{s.total} cases: [green]{s.passed} passed[/], {s.failed} failed, {s.errors} errors, {s.terminated} "
              f"terminated, {s.not_evaluated} not evaluated, {s.skipped} skipped · pass^{s.k} {s.pass_hat_k if s.pass_hat_k is not None else 0:.2f} · "
              f"{suite.duration_ms / 1000:.1f} s")  # fmt: skip


# --- reading stored runs --------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def _store(database_url: str | None) -> AsyncIterator[EvalResultStore]:
    """The results store of the configured database, else of the embedded Postgres under .adk/."""
    from adk_core.errors import ConfigurationError
    from adk_core.eval.store import EvalResultStore
    from adk_core.sql import migrate
    from adkt.embedded import EmbeddedPostgres

    settings = Settings.load()
    url = resolve_database_url(settings, database_url)
    async with contextlib.AsyncExitStack() as stack:
        if url is None:
            folder = settings.adk_dir / "postgres"
            if not (folder / "PG_VERSION").exists():
                raise ConfigurationError(
                    "no results database: pass --database-url, set ADK_DATABASE_URL, start `adkt dev`, or run "
                    "`adkt eval run ... --durable` once (it keeps results in the embedded Postgres under .adk/)"
                )
            url = (await stack.enter_async_context(EmbeddedPostgres(folder))).url
        await migrate(url)
        store = EvalResultStore(url)
        stack.push_async_callback(store.close)
        yield store


@evals.command("list")
def list_runs(limit: Annotated[int, typer.Option("--limit", "-n")] = 20, database_url: DatabaseUrl = None) -> None:
    """List stored eval runs, newest first."""
    run_async(_list(limit, database_url))


async def _list(limit: int, database_url: str | None) -> None:
    async with _store(database_url) as store:
        runs = await store.list_runs(limit=limit)
    table = Table(title="eval runs")
    for column in ("run", "suite", "mode", "status", "started", "s", "passed", "pass^k"):
        table.add_column(column, overflow="fold")
    for run in runs:
        s = run.summary
        seconds = f"{run.end_time - run.start_time:.1f}" if run.end_time else "-"
        table.add_row(escape(run.run_id), escape(run.suite), run.mode, _styled(run.status), timestamp(run.start_time), seconds,
                      f"{s.passed}/{s.total}" if s else "-", f"{s.pass_hat_k:.2f}" if s and s.pass_hat_k is not None else "-")  # fmt: skip
    out.print(table if runs else "no eval runs stored yet")


@evals.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="the run id (see `adkt eval list`)")],
    case: Annotated[str | None, typer.Option("--case", "-c", help="also print this case's metrics and trace")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Show a stored run: its cases, and with --case one case's metrics and trace."""
    run_async(_show(run_id, case, database_url))


async def _show(run_id: str, case: str | None, database_url: str | None) -> None:
    from adk_core.errors import ConfigurationError
    from adk_core.eval.store import case_status
    from adk_core.sessions.sql import DatabaseSessionService

    async with _store(database_url) as store:
        detail = await store.get_run(run_id)
        if detail is None:
            raise ConfigurationError(f"no eval run {run_id!r}; see `adkt eval list`")
        run = detail.run
        out.print(f"[bold]{run.run_id}[/] · {run.suite} · {run.mode} · {_styled(run.status)} · started {timestamp(run.start_time)}")
        table = Table()
        for column in ("case", "status", "trial", "turns", "ms", "metrics", "measured", "notes"):
            table.add_column(column, overflow="fold")
        names = list(dict.fromkeys(t.case_name for t in detail.trials))
        for name in names:
            for t in detail.trials_of(name):
                metrics = " ".join(f"{_mark(m)}{k}" for k, m in t.metrics.items())
                notes = (f"{t.error.phase} error: {t.error.message.splitlines()[0][:100]}" if t.error
                         else t.not_evaluated_reason or t.termination_reason or "")  # fmt: skip
                table.add_row(escape(name), _styled(case_status(detail, name)), str(t.trial), str(t.turns),
                              f"{t.duration_ms:.0f}", escape(metrics), escape(_measured(t.measurements)),
                              escape(notes))  # fmt: skip
        out.print(table)
        if case is None:
            return
        trials = detail.trials_of(case)
        if not trials:
            raise ConfigurationError(f"run {run_id!r} has no case {case!r}; its cases: {', '.join(names)}")
        sessions = DatabaseSessionService(store.engine)
        for t in trials:
            out.print(f"\n[bold]{case}[/] trial {t.trial}: {_styled(t.status)}")
            for name, m in t.metrics.items():
                evidence = escape(m.evidence[0]) if m.evidence else ""
                out.print(f"  {_mark(m)} {escape(name)} score={m.score} value={escape(short_json(m.value, 80))} {evidence}")
            if t.error:
                out.print(f"  [red]{t.error.phase} error ({t.error.error_type}):[/] {escape(t.error.message)}")
            ref = t.session
            session = await sessions.get_session(app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id) if ref else None
            if session is None:
                out.print("  [dim](no stored trace)[/]")
                continue
            out.print(f"  [dim]trace: adkt sessions show '{ref.app_name}' {ref.user_id} {ref.session_id}[/]")  # type: ignore[union-attr]
            for event in session.events:
                print_event(event)


@evals.command("rescore")
def rescore(
    run_id: Annotated[str, typer.Argument(help="the stored run whose traces to score again (see `adkt eval list`)")],
    metrics: Annotated[str, typer.Option("--metrics", help="module:attr: a Metric or a list of Metrics")],
    new_run_id: Annotated[str | None, typer.Option("--run-id", help="name of the new run (default: RUN-rescore-...)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the suite result as JSON")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Score a stored run's traces with new or changed metrics, without running the system again.

    The results are stored as a new run linked to RUN (its config names RUN and the metrics);
    `adkt eval compare RUN NEW` shows what changed. Judges call their model; the system's models and
    tools are not called. Exit code 1 when a case did not pass.
    """
    new_run_id = new_run_id or f"{run_id}-rescore-{uuid.uuid4().hex[:4]}"
    result = run_async(_rescore(run_id, metrics, new_run_id, database_url))
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        out.print(f"[dim]rescored {escape(run_id)} with {escape(metrics)}[/]")
        _print_results(result, new_run_id)
    raise typer.Exit(0 if result.passed else 1)


async def _rescore(run_id: str, metrics_ref: str, new_run_id: str, database_url: str | None) -> EvalSuiteResult:
    from adk_core.eval.rescore import load_metrics, rescore_run
    from adk_core.sessions.sql import DatabaseSessionService

    metrics = load_metrics(metrics_ref)
    async with _store(database_url) as store:
        return await rescore_run(store, DatabaseSessionService(store.engine), run_id, metrics, new_run_id=new_run_id,
                                 metrics_ref=metrics_ref)  # fmt: skip


@evals.command("compare")
def compare(
    run_a: Annotated[str, typer.Argument(help="the earlier run")],
    run_b: Annotated[str, typer.Argument(help="the later run")],
    database_url: DatabaseUrl = None,
) -> None:
    """Regressions and fixes between two runs, per case and per metric."""
    run_async(_compare(run_a, run_b, database_url))


async def _compare(run_a: str, run_b: str, database_url: str | None) -> None:
    from adk_core.errors import ConfigurationError
    from adk_core.eval.store import compare_runs

    async with _store(database_url) as store:
        details = [await store.get_run(r) for r in (run_a, run_b)]
    for run_id, detail in zip((run_a, run_b), details, strict=True):
        if detail is None:
            raise ConfigurationError(f"no eval run {run_id!r}; see `adkt eval list`")
    changes = compare_runs(details[0], details[1])  # type: ignore[arg-type]
    table = Table(title=f"{run_a} → {run_b}")
    for column in ("case", run_a, run_b, "change", "metrics"):
        table.add_column(column, overflow="fold")
    style = {"regression": "[red]regression[/]", "fix": "[green]fix[/]"}
    for change in changes:
        moved = [f"{style.get(m.change, m.change)} {escape(m.metric)}" for m in change.metrics if m.change != "same"]
        moved += [f"{escape(m.name)} {m.before:g} → {m.after:g}" for m in change.measurements
                  if m.before is not None and m.after is not None and _moved(m.before, m.after)]  # fmt: skip
        table.add_row(escape(change.case_name), _styled(change.before), _styled(change.after), style.get(change.change, change.change),
                      ", ".join(moved))  # fmt: skip
    out.print(table)
    regressions = _count(changes, "regression")
    fixes = _count(changes, "fix")
    out.print(f"{regressions[0]} case regressions, {fixes[0]} case fixes; {regressions[1]} metric regressions, {fixes[1]} metric fixes")


def _moved(before: float, after: float) -> bool:
    """A measurement worth showing in a comparison: it moved by more than a fifth."""
    return abs(after - before) > 0.2 * max(abs(before), abs(after), 1e-9)


def _count(changes: Sequence, kind: str) -> tuple[int, int]:
    return sum(c.change == kind for c in changes), sum(m.change == kind for c in changes for m in c.metrics)



# --- durable runs: cancel, resume; replaying one trial ---------------------------------------------
Address = Annotated[str | None, typer.Option("--address", help="Temporal address (default: configured, or `adkt dev`)")]


@evals.command("cancel")
def cancel(run_id: Annotated[str, typer.Argument(help="a running durable run")], address: Address = None) -> None:
    """Cancel a running durable suite: its running trials stop, finished ones stay recorded, and the
    run is stored as ``cancelled``. `adkt eval resume RUN` goes on from there."""
    from adkt.commands import _eval_ops as ops

    run_async(ops.cancel_run(run_id, address=address))


@evals.command("resume")
def resume(
    run_id: Annotated[str, typer.Argument(help="a cancelled (or failed) durable run")],
    as_json: Annotated[bool, typer.Option("--json", help="print the suite result as JSON")] = False,
    address: Address = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Go on with a stopped durable run: the same suite and options, under the same run id; trials it
    recorded are not run again. Exit code 1 unless every case passed."""
    from temporalio.common import WorkflowIDReusePolicy

    from adkt.commands import _eval_ops as ops

    suite_input, queue = run_async(ops.resume_input(run_id, address=address, database_url=database_url))
    err.print(f"[dim]resuming {escape(run_id)} (resume {suite_input.resume})[/]")
    result = run_async(_start_and_follow(suite_input, address=address, database_url=database_url,
                                         reuse=WorkflowIDReusePolicy.ALLOW_DUPLICATE, task_queue=queue))  # fmt: skip
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        _print_results(result, run_id)
    raise typer.Exit(0 if result.passed else 1)


@evals.command("replay")
def replay(
    run_id: Annotated[str, typer.Argument(help="a stored run")],
    trial: Annotated[str, typer.Option("--trial", help="CASE or CASE#N (trial N, default 0)")],
    cases: Annotated[str | None, typer.Option("--cases", help="the cases as they are now (default: the run's suite)")] = None,
    judges: Annotated[bool, typer.Option("--judges", help="let llm_judge metrics call their model")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Run one trial again in this process, its models answering from the recorded trace (no model calls),
    with the case's current code: callbacks, tools, metrics. Shows what changed; exit code 1 when the
    replay diverged from the recording (the agent asked something it has no answer for) or did not pass."""
    from adkt.commands import _eval_ops as ops

    ok = run_async(ops.replay(run_id, trial, cases_ref=cases, judges=judges, database_url=database_url))
    raise typer.Exit(0 if ok else 1)
