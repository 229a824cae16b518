"""What `adkt eval cancel|resume|replay` do (adkt/commands/eval.py declares the commands)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from rich.markup import escape
from rich.table import Table
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from adk_core.errors import ConfigurationError
from adkt.commands._render import err, out
from adkt.settings import Settings

CANCEL_WAIT_S = 30.0
"""How long `adkt eval cancel` waits for the suite to close (its running trials stop first)."""


@contextlib.asynccontextmanager
async def _client(address: str | None) -> AsyncIterator[Client]:
    from adkt.client import connect
    from adkt.commands._devstate import resolve

    where = resolve(Settings.load(), address=address, database_url=None)
    if where.address is None:
        raise ConfigurationError(
            "no Temporal to reach: pass --address, set TEMPORAL_ADDRESS, or run the command where `adkt dev` runs"
        )
    yield await connect(where.address, namespace=where.namespace)


def _workflow_id(run_id: str) -> str:
    from adk_temporal.workflows.eval import EVAL_WORKFLOW_PREFIX

    return EVAL_WORKFLOW_PREFIX + run_id


async def _status(client: Client, run_id: str) -> WorkflowExecutionStatus | None:
    try:
        return (await client.get_workflow_handle(_workflow_id(run_id)).describe()).status
    except RPCError:
        return None  # no such workflow (an in-process run, or one removed by retention)


async def cancel_run(run_id: str, *, address: str | None) -> None:
    """Request cancellation of the run's suite workflow and wait (bounded) until it closed."""
    from adk_temporal.workflows.eval import EvalSuiteWorkflow

    async with _client(address) as client:
        status = await _status(client, run_id)
        if status is None:
            raise ConfigurationError(f"no durable eval run {run_id!r} (workflow {_workflow_id(run_id)}); see `adkt eval list`")
        if status != WorkflowExecutionStatus.RUNNING:
            raise ConfigurationError(f"eval run {run_id!r} is not running (its workflow is {status.name.lower()})")
        handle = client.get_workflow_handle(_workflow_id(run_id))
        progress = await handle.query(EvalSuiteWorkflow.progress)
        await handle.cancel()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CANCEL_WAIT_S
        while loop.time() < deadline and await _status(client, run_id) == WorkflowExecutionStatus.RUNNING:
            await asyncio.sleep(0.2)
        if await _status(client, run_id) == WorkflowExecutionStatus.RUNNING:
            raise ConfigurationError(f"eval run {run_id!r} did not stop within {CANCEL_WAIT_S:.0f} s; is a worker running?")
    out.print(f"cancelled {escape(run_id)} after {progress.done} of {progress.total} trials; "
              f"`adkt eval resume {escape(run_id)}` runs the rest")  # fmt: skip


async def resume_input(run_id: str, *, address: str | None, database_url: str | None) -> tuple[Any, str | None]:
    """The EvalSuiteInput that resumes ``run_id``, after checking that its workflow is not running,
    and the task queue it ran on (None when Temporal no longer knows it: then the configured one)."""
    from adk_temporal.workflows.eval import EvalSuiteInput
    from adkt.commands.eval import _store

    async with _store(database_url) as store:
        detail = await store.get_run(run_id)
    if detail is None:
        raise ConfigurationError(f"no eval run {run_id!r}; see `adkt eval list`")
    if detail.run.status in ("passed", "failed") and detail.run.end_time is not None:
        raise ConfigurationError(f"eval run {run_id!r} finished ({detail.run.status}); nothing to resume")
    try:
        suite_input = EvalSuiteInput.resume_of(detail.run)
    except ValueError as e:
        raise ConfigurationError(str(e)) from None
    queue: str | None = None
    running = False
    with contextlib.suppress(ConfigurationError):  # without a reachable Temporal, starting it will say so
        async with _client(address) as client:
            with contextlib.suppress(RPCError):  # Temporal no longer knows the run: the configured queue
                described = await client.get_workflow_handle(_workflow_id(run_id)).describe()
                running = described.status == WorkflowExecutionStatus.RUNNING
                queue = described.task_queue  # resume where the run ran: its workers serve the suite
    if running:
        raise ConfigurationError(f"eval run {run_id!r} is still running; `adkt eval cancel {run_id}` first")
    return suite_input, queue


def _trial_id(trial: str) -> tuple[str, int]:
    name, _, number = trial.partition("#")
    if not name or (number and not number.isdigit()):
        raise ConfigurationError(f"--trial {trial!r}: give CASE or CASE#N, e.g. chest-pain-escalation#0")
    return name, int(number or 0)


async def replay(run_id: str, trial: str, *, cases_ref: str | None, judges: bool, database_url: str | None) -> bool:
    """Replay one trial and print what changed; True when it reproduced the recording and passed."""
    from adk_core.eval.replay import replay_trial
    from adk_core.sessions.sql import DatabaseSessionService
    from adk_temporal.activities.eval_cases import find_case
    from adkt.commands.eval import _mark, _store, _styled

    name, number = _trial_id(trial)
    async with _store(database_url) as store:
        detail = await store.get_run(run_id)
        if detail is None:
            raise ConfigurationError(f"no eval run {run_id!r}; see `adkt eval list`")
        case = find_case(cases_ref or detail.run.suite, name)
        result = await replay_trial(store, DatabaseSessionService(store.engine), run_id, case, trial=number, judges=judges)
    replayed, recorded = result.replayed, result.recorded
    out.print(f"[bold]replay of {escape(name)}#{number}[/] from run {escape(run_id)}: recorded {_styled(recorded.status)}, "
              f"replayed {_styled(replayed.status)}")  # fmt: skip
    table = Table()
    for column in ("metric", "recorded", "replayed"):
        table.add_column(column, overflow="fold")
    for metric in sorted({*recorded.metrics, *replayed.metrics}):
        before, after = recorded.metrics.get(metric), replayed.metrics.get(metric)
        table.add_row(escape(metric), f"{_mark(before)} {before.score}" if before else "-",
                      f"{_mark(after)} {after.score}" if after else "-")  # fmt: skip
    out.print(table)
    if result.diverged:
        err.print(f"[red]diverged:[/] {escape(result.diverged)}")
    for change in result.trace_changes:
        out.print(f"[yellow]trace:[/] {escape(change)}")
    if result.unused_responses:
        out.print(f"[dim]recorded responses not asked for: {result.unused_responses}[/]")
    if result.reproduced:
        out.print("[green]reproduced the recorded trace and verdicts[/]")
    return result.diverged is None and replayed.passed
