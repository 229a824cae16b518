"""`adkt worker` and `adkt migrate`: what a production deployment runs."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Annotated, Any

import typer

from adkt.commands._common import run_async
from adkt.commands._devstate import resolve
from adkt.commands._render import err
from adkt.settings import Settings

GRACEFUL_SHUTDOWN_SECONDS = 30.0
"""adk_temporal.worker.DEFAULT_GRACEFUL_SHUTDOWN, written out so `adkt --help` need not import the worker."""
MAX_WORKFLOW_TASKS = 10
"""adk_temporal.worker.DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS, written out for the same reason."""

MetricsPort = Annotated[
    int | None,
    typer.Option("--metrics-port", envvar="ADK_METRICS_PORT", min=1, max=65535,
                 help="serve Prometheus metrics (Temporal's and the ADK's) at /metrics on this port (default: none)"),
]
DatabaseUrl = Annotated[str | None, typer.Option("--database-url", help="sessions database (default: ADK_DATABASE_URL)")]


def worker(
    app: Annotated[
        list[str] | None, typer.Option("--app", help="an app: path/to/agent.py[:attr], agent.yaml, a folder or module:attr (repeatable)")
    ] = None,
    address: Annotated[str | None, typer.Option("--address", help="Temporal address (default: TEMPORAL_ADDRESS)")] = None,
    database_url: DatabaseUrl = None,
    task_queue: Annotated[
        str | None,
        typer.Option("--task-queue", help="one queue for every app (default: ADK_TASK_QUEUE, else a queue per app)"),
    ] = None,
    unsandboxed: Annotated[
        bool,
        typer.Option(
            "--unsandboxed",
            help="run workflow code without Temporal's sandbox: faster, for apps whose callbacks you trust to be deterministic",
        ),
    ] = False,
    log_level: Annotated[
        str | None, typer.Option("--log-level", help="DEBUG, INFO, WARNING... (default: ADK_LOG_LEVEL or INFO)")
    ] = None,
    eval_cases: Annotated[
        list[str] | None, typer.Option("--eval", help="module:attr of eval cases to serve durably (repeatable)")
    ] = None,
    eval_suites: Annotated[
        list[str] | None,
        typer.Option("--eval-suite", help="a module or package whose eval suites this worker may import when an eval "
                     "workflow names them (repeatable); no other suite is imported (docs/security.md)"),
    ] = None,
    deployment_name: Annotated[
        str | None,
        typer.Option("--deployment-name", envvar="ADK_DEPLOYMENT_NAME",
                     help="Temporal Worker Deployment this worker belongs to (with --build-id; default: unversioned)"),
    ] = None,
    build_id: Annotated[
        str | None,
        typer.Option("--build-id", envvar="ADK_BUILD_ID",
                     help="this build's id in the deployment: runs stay on the build they started on (docs/versioning.md)"),
    ] = None,
    graceful_timeout: Annotated[
        float,
        typer.Option("--graceful-timeout", envvar="ADK_GRACEFUL_SHUTDOWN_SECONDS", min=0,
                     help="on SIGTERM/SIGINT, seconds in-flight model and tool calls may run before they are cancelled"),
    ] = GRACEFUL_SHUTDOWN_SECONDS,
    health_port: Annotated[
        int | None,
        typer.Option("--health-port", envvar="ADK_HEALTH_PORT", min=0, max=65535,
                     help="serve /livez and /readyz on this port for an orchestrator's probes (default: none)"),
    ] = None,
    metrics_port: MetricsPort = None,
    prices: Annotated[
        str | None,
        typer.Option("--prices", envvar="ADK_PRICES",
                     help="TOML or JSON file of model prices, added to the defaults (docs/observability.md)"),
    ] = None,
    tracing: Annotated[
        bool,
        typer.Option("--tracing", envvar="ADK_TRACING",
                     help="export OpenTelemetry traces with OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (docs/observability.md)"),
    ] = False,
    max_workflow_tasks: Annotated[
        int | None,
        typer.Option("--max-workflow-tasks", envvar="ADK_MAX_WORKFLOW_TASKS", min=1,
                     help=f"workflow tasks run at once (default {MAX_WORKFLOW_TASKS}: more only lengthens each on one "
                     "GIL; docs/scaling.md)"),
    ] = None,
    max_cached_workflows: Annotated[
        int | None,
        typer.Option("--max-cached-workflows", envvar="ADK_MAX_CACHED_WORKFLOWS", min=0,
                     help="conversations kept in memory between turns (default 1000); an evicted one replays its "
                     "current run on its next message (docs/scaling.md)"),
    ] = None,
    workflow_task_polls: Annotated[
        int | None,
        typer.Option("--workflow-task-polls", envvar="ADK_WORKFLOW_TASK_POLLS", min=1,
                     help=f"polls for workflow tasks kept open (default {MAX_WORKFLOW_TASKS}; more take a burst of new "
                     "conversations sooner, and spread them less evenly over workers: docs/scaling.md)"),
    ] = None,
) -> None:
    """Run a worker for the apps (and eval cases) until SIGINT/SIGTERM (then finish in-flight tasks and exit)."""
    if not app and not eval_cases:
        raise typer.BadParameter("give at least one --app module:attr (or --eval module:attr)")
    deployment_name, build_id = deployment_name or None, build_id or None  # an empty env var is unset
    if (deployment_name is None) != (build_id is None):
        raise typer.BadParameter(
            "give --deployment-name and --build-id together (or ADK_DEPLOYMENT_NAME and ADK_BUILD_ID), or neither "
            "for an unversioned worker"
        )
    run_async(_worker(
        app or [], address, database_url, task_queue, log_level, eval_cases or [],
        deployment=(deployment_name, build_id) if deployment_name and build_id else None,
        graceful_timeout=graceful_timeout, health_port=health_port, metrics_port=metrics_port, prices=prices,
        tracing=tracing, eval_suites=eval_suites or [],
        options=worker_options(unsandboxed=unsandboxed, max_workflow_tasks=max_workflow_tasks,
                               max_cached_workflows=max_cached_workflows, workflow_task_polls=workflow_task_polls),
    ))


def worker_options(*, unsandboxed: bool = False, max_workflow_tasks: int | None = None,
                   max_cached_workflows: int | None = None, workflow_task_polls: int | None = None) -> dict[str, Any]:
    """The Temporal Worker options `adkt worker`'s flags ask for; build_worker's defaults fill the rest."""
    from temporalio.worker import PollerBehaviorSimpleMaximum, UnsandboxedWorkflowRunner

    options: dict[str, Any] = {"workflow_runner": UnsandboxedWorkflowRunner()} if unsandboxed else {}
    if max_workflow_tasks is not None:
        options["max_concurrent_workflow_tasks"] = max_workflow_tasks
    if max_cached_workflows is not None:
        options["max_cached_workflows"] = max_cached_workflows
    if workflow_task_polls is not None:
        options["workflow_task_poller_behavior"] = PollerBehaviorSimpleMaximum(maximum=workflow_task_polls)
    return options


async def _worker(
    specs: list[str], address: str | None, database_url: str | None, task_queue: str | None,
    log_level: str | None = None, eval_cases: list[str] | None = None, *, deployment: tuple[str, str] | None = None,
    graceful_timeout: float = GRACEFUL_SHUTDOWN_SECONDS, health_port: int | None = None,
    metrics_port: int | None = None, prices: str | None = None, tracing: bool = False,
    eval_suites: list[str] | None = None, options: dict[str, Any] | None = None,
) -> None:
    """`adkt worker` itself; ``options`` (worker_options) go to build_worker."""
    from adk_temporal.health import serving_health
    from adk_temporal.worker import WorkerVersion, build_worker, configure_logging
    from adkt.client import connect
    from adkt.commands._apps import load_app
    from adkt.commands._stack import wait_for_signal
    from adkt.commands.check import warn_if_nondeterministic
    from adkt.services import open_services

    # The same logging as `python worker.py`, whose _main this command does not go through.
    configure_logging(log_level, metrics_port=metrics_port)
    from adk_core.models.pricing import PriceTable

    price_table = PriceTable.default().merged(PriceTable.load(prices)) if prices else None
    if tracing:
        from adk_temporal.tracing import configure_tracing

        tracer_provider = configure_tracing("adk-worker")
    version = WorkerVersion(*deployment) if deployment else None
    settings = Settings.load()
    target = resolve(settings, address=address, database_url=database_url)
    apps = [load_app(spec) for spec in specs]
    await warn_if_nondeterministic(apps)  # workflow code that would not replay (adkt check)
    client = await connect(target.address, namespace=target.namespace)
    async with open_services(_require_url(target.database_url)) as services:
        queue = task_queue or target.task_queue
        built = build_worker(
            client, apps, task_queue=queue, eval_cases=eval_cases or (), eval_suites=eval_suites or (),
            deployment=version,
            graceful_shutdown=timedelta(seconds=graceful_timeout), prices=price_table, tracing=tracing,
            **services, **(options or {}),
        )
        served = [a.name for a in apps] + [f"eval {ref}" for ref in eval_cases or ()]
        queues = ", ".join(built.task_queues)
        where = f" as version {version}" if version else ""
        err.print(f"worker for {', '.join(served)} on task queues {queues} at {client.service_client.config.target_host}{where}")
        task = asyncio.create_task(built.run())
        async with serving_health(built, client, health_port) as health_url:
            if health_url:
                err.print(f"health: {health_url}/livez and {health_url}/readyz")
            if metrics_port is not None:
                err.print(f"metrics: http://127.0.0.1:{metrics_port}/metrics")
            try:
                await wait_for_signal(task)
            finally:
                if not task.done():
                    err.print(f"stopping: in-flight activities have {graceful_timeout:g} s to finish")
                    await built.shutdown()  # finishes in-flight activities within the graceful timeout
                await asyncio.gather(task, return_exceptions=True)
    if tracing:
        tracer_provider.shutdown()  # sends the spans still batched
    err.print("worker stopped")


def migrate(database_url: DatabaseUrl = None) -> None:
    """Create or upgrade the sessions, memory and artifact tables."""
    run_async(_migrate(database_url))


async def _migrate(database_url: str | None) -> None:
    from adk_core.sql import migrate as migrate_database
    from adkt.commands._database import database_url as sessions_database

    # With nothing configured: the embedded Postgres under .adk, the one `adkt run` uses.
    async with sessions_database(database_url, create=True) as url:
        before = await _schema(url)
        await migrate_database(url)
        after = await _schema(url)
    err.print(_migration_report(before, after), markup=False)


async def _schema(url: str) -> tuple[str | None, set[str]]:
    """The database's Alembic revision (None: never migrated) and its tables."""
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    from adk_core.sql import open_engine

    engine = open_engine(url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            query = sa.text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            tables = set((await conn.execute(query)).scalars())
            revision = None
            if VERSION_TABLE in tables:
                revision = (await conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}"))).scalar()
    finally:
        await engine.dispose()
    return revision, tables - {VERSION_TABLE}


VERSION_TABLE = "adk_alembic_version"
"""adk_core/sql/migrations/env.py's version table (that module only imports inside Alembic)."""


def _migration_report(before: tuple[str | None, set[str]], after: tuple[str | None, set[str]]) -> str:
    (old, old_tables), (new, new_tables) = before, after
    created = sorted(new_tables - old_tables)
    if old == new:
        return f"database already at the newest schema (revision {new}); nothing to do"
    made = f": created {', '.join(created)}" if created else ""
    if old is None:
        return f"database created at schema revision {new}{made}"
    return f"database upgraded from schema revision {old} to {new}{made}"


def _require_url(url: str | None) -> str:
    from adk_core.errors import ConfigurationError

    if not url:
        raise ConfigurationError(
            "no sessions database: pass --database-url, set ADK_DATABASE_URL=postgresql+psycopg://..., "
            "or start `adkt dev`, which runs an embedded Postgres"
        )
    return url
