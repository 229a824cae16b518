"""`adkt retention install|worker`: the adk-retention Temporal Schedule and the worker that runs its
passes (adk_temporal.retention; docs/security.md, "Retention")."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from adkt.commands._common import run_async
from adkt.commands._render import out
from adkt.commands.serve import DatabaseUrl

if TYPE_CHECKING:
    from adk_temporal.retention import RetentionInput

retention = typer.Typer(help="Remove old stream chunks, eval runs and unreferenced payloads on a schedule.",
                        no_args_is_help=True, rich_markup_mode=None)  # fmt: skip

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
Age = Annotated[str, typer.Option(help="an age such as 30m, 12h or 90d; 'never' keeps them")]


def parse_age(text: str, what: str) -> float | None:
    """Seconds in '90d', '12h', '30m', '45s' (or a plain number of seconds); None for 'never'."""
    if text.strip().lower() == "never":
        return None
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text.lower())
    if found is None:
        raise typer.BadParameter(f"{what} {text!r} is not an age: write e.g. 45s, 30m, 12h, 90d or never")
    return float(found[1]) * _UNITS[found[2] or "s"]


@retention.command("install")
def install(
    every: Annotated[str, typer.Option(help="how often a pass runs (e.g. 1h)")] = "1h",
    stream_chunks: Age = "1h",
    eval_runs: Age = "90d",
    payloads: Annotated[str, typer.Option(help="unreferenced stored payloads older than this go (at least 1h)")] = "1h",
    task_queue: Annotated[str, typer.Option(help="the queue `adkt retention worker` polls")] = "adk-retention",
    address: Annotated[str | None, typer.Option("--address", help="Temporal address (default: TEMPORAL_ADDRESS)")] = None,
) -> None:
    """Create or update the adk-retention schedule."""
    from adk_temporal.retention import RetentionInput

    interval = parse_age(every, "--every")
    if interval is None or interval < 60:
        raise typer.BadParameter("--every must be at least 1m")
    payload_age = parse_age(payloads, "--payloads")
    if payload_age is not None and payload_age < 3600:
        raise typer.BadParameter("--payloads must be at least 1h: a payload is stored before the history event "
                                 "that references it is recorded")  # fmt: skip
    settings = RetentionInput(stream_chunk_age=parse_age(stream_chunks, "--stream-chunks"),
                              eval_run_age=parse_age(eval_runs, "--eval-runs"), payload_age=payload_age)  # fmt: skip
    run_async(_install(address, task_queue, timedelta(seconds=interval), settings))


async def _install(address: str | None, task_queue: str, every: timedelta, settings: RetentionInput) -> None:
    from adk_temporal.retention import SCHEDULE_ID, install_schedule
    from adkt.client import connect

    client = await connect(address)
    await install_schedule(client, task_queue=task_queue, every=every, input=settings)
    out.print(f"schedule {SCHEDULE_ID}: every {every}, on task queue {task_queue} ({settings}); run "
              f"`adkt retention worker --task-queue {task_queue}` to serve it", markup=False)  # fmt: skip


@retention.command("worker")
def worker(
    task_queue: Annotated[str, typer.Option(help="the schedule's task queue")] = "adk-retention",
    address: Annotated[str | None, typer.Option("--address", help="Temporal address (default: TEMPORAL_ADDRESS)")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve the retention passes (needs the sessions database and Temporal)."""
    run_async(_worker(address, task_queue, database_url))


async def _worker(address: str | None, task_queue: str, database_url: str | None) -> None:
    from adk_core.errors import ConfigurationError
    from adk_core.sql import open_engine
    from adk_temporal.retention import retention_worker
    from adkt.client import connect
    from adkt.services import database_url as configured

    url = configured(database_url)
    if not url:
        raise ConfigurationError("the retention worker needs the sessions database: pass --database-url or set "
                                 "ADK_DATABASE_URL=postgresql+psycopg://...")  # fmt: skip
    client = await connect(address, database_url=url)
    engine = open_engine(url)
    try:
        out.print(f"retention worker on task queue {task_queue}", markup=False)
        await retention_worker(client, engine, task_queue=task_queue).run()
    finally:
        await engine.dispose()
