"""The worker entry point: `python worker.py --app module:attr` or `adkt worker --app module:attr`.

A worker serves one or more apps: it runs their workflows (the engine, callbacks and plugins)
and activities (model calls, tools, session I/O). Sessions live in Postgres at
ADK_DATABASE_URL (or --database-url).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.converter import StorageDriver
from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import PollerBehaviorSimpleMaximum, Worker, WorkerDeploymentConfig

from adk_core import App, BaseAgent
from adk_core.artifacts import ArtifactService
from adk_core.errors import ConfigurationError
from adk_core.eval.store import EvalResultStore
from adk_core.memory import MemoryService
from adk_core.models.pricing import PriceTable
from adk_core.sessions import SessionService
from adk_temporal.activities import AdkActivities, AppRegistry
from adk_temporal.activities.eval_activities import EvalActivities
from adk_temporal.activities.eval_allow import EvalSuites
from adk_temporal.activities.eval_cases import register_cases
from adk_temporal.heap import freeze_startup_heap
from adk_temporal.metrics import runtime_with_metrics
from adk_temporal.workflows import TASK_QUEUE, AdkPlugin, app_task_queue
from adk_temporal.workflows.converter import adk_converter
from adk_temporal.workflows.payload_storage import with_payload_storage

LOG_LEVEL_ENV = "ADK_LOG_LEVEL"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries that log routine steps at INFO: a request per model call (httpx), a dozen lines per
# migration check at startup (alembic).
_CHATTY_LOGGERS = ("httpx", "httpcore", "alembic")


def configure_logging(level: str | int | None = None, *, metrics_port: int | None = None) -> None:
    """Send log records to stderr with time, level and logger name, for a worker process.

    ``level`` is a name ("DEBUG", "info") or a number; None reads $ADK_LOG_LEVEL, else INFO.
    Workflow task failures reach this log both ways temporalio reports them: Python's warning
    "Failed activation on workflow ..." (an exception in workflow code; dropped when nothing configures
    logging) and the Rust core's "Failing workflow task ..." (e.g. a nondeterminism error), which by
    default goes to stderr in its own format and is forwarded here instead, as logger
    ``temporalio.core``. That takes the process's default Temporal runtime, so call this before any
    client connects.

    ``metrics_port``: also serve Prometheus metrics on that port (``/metrics``): Temporal's SDK
    metrics and the ADK's (adk_temporal.metrics, docs/observability.md), through the SDK's own
    ``PrometheusConfig`` on this same runtime.

    Only entry points call this (``python worker.py``, ``adkt worker``): library modules create
    loggers and leave handlers, levels and formats to the process that runs them.
    """
    if level is None:
        level = os.environ.get(LOG_LEVEL_ENV) or "INFO"
    if isinstance(level, str):
        name = level.strip().upper()
        resolved = logging.getLevelName(name)
        if not isinstance(resolved, int):
            raise ConfigurationError(
                f"unknown log level {level!r}; use DEBUG, INFO, WARNING or ERROR (--log-level or ${LOG_LEVEL_ENV})"
            )
        level = resolved
    logging.basicConfig(level=level, format=LOG_FORMAT, force=True)
    for name in _CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    # The core is chatty below WARN; DEBUG gets its INFO, not its own DEBUG.
    core_level = "INFO" if level <= logging.DEBUG else "WARN" if level <= logging.WARNING else "ERROR"
    forwarding = LogForwardingConfig(logger=logging.getLogger("temporalio.core"), append_target_to_name=False)
    telemetry = TelemetryConfig(
        logging=LoggingConfig(filter=TelemetryFilter(core_level=core_level, other_level="ERROR"), forwarding=forwarding)
    )
    Runtime.set_default(runtime_with_metrics(telemetry, metrics_port), error_if_already_set=False)


def load_app(spec: str) -> App:
    """Import ``module:attr`` (an App, or a root agent that becomes an App named after it)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"--app {spec!r} must look like 'package.module:app'")
    try:
        value = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigurationError(f"cannot load app {spec!r}: {e}; run from the folder that contains it") from None
    if isinstance(value, App):
        return value
    if isinstance(value, BaseAgent):
        return App(name=value.name, root_agent=value)
    raise ConfigurationError(f"{spec!r} is a {type(value).__name__}; point --app at an App or an agent")


DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS = 10
"""Workflow tasks one worker process runs at once (temporalio's default: 100). Workflow code is
CPU-bound Python sharing one GIL, so more at once adds no throughput, only time per task: with 100
brand-new conversations at once (each first activation builds a sandbox), every task took 5-13 s
on a loaded 2-core machine, passed the 10 s workflow task timeout and was retried, and the senders
failed (congestion collapse, issue 21). Tasks beyond this wait on the server, where waiting costs
no timeout. Slots held across the completion round trip leave room for a few more than cores."""

WORKFLOW_TASK_POLLS = PollerBehaviorSimpleMaximum(maximum=DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS)
"""Polls for workflow tasks one worker keeps open: as many as its default workflow task slots (10),
not temporalio's 5. A burst of new conversations queues their workflow tasks on the server; 5 polls
handed them out 1.7 s late on average while the workers sat 70% idle (1,000 new W1 conversations on 2
workers: 61-64 s with 5 polls, 36-39 s with these; bench/bench_burst.py, docs/scaling.md). A worker
given ``max_concurrent_workflow_task_polls`` or a poller behavior of its own keeps it."""

NONSTICKY_POLL_RATIO = 0.1
"""Of those polls, the share on the task queue every worker polls (a new conversation's first task);
the rest poll this worker's own sticky queue (the next tasks of conversations it holds). With 10 polls
that is 1 and 9, the 1 that temporalio's 5 polls at 0.2 had: more polls on the shared queue let one
worker take the first tasks of many new conversations in a row, and with them those conversations
(tests/integration/test_scale_out.py: one worker of three with 1.4-1.5x the others' share, as with
temporalio's autoscaling polls). At 0.1 the workers' shares spread 2-30% over 19 runs, against 3-17%
with temporalio's 5 polls: the price of the burst's 1.7x."""

DEFAULT_GRACEFUL_SHUTDOWN = timedelta(seconds=30)
"""How long a stopping worker lets in-flight activities finish (a model call or a tool mid-way)
before Temporal cancels them; a Kubernetes pod's default termination grace period is 30 s too."""


@dataclass(frozen=True)
class WorkerVersion:
    """A worker's place in a Temporal Worker Deployment: the deployment's name and this build's id."""

    deployment_name: str
    build_id: str

    def __post_init__(self) -> None:
        for label, value in (("deployment name", self.deployment_name), ("build id", self.build_id)):
            if not value or not value.strip() or any(c in value for c in ":/ "):
                raise ConfigurationError(
                    f"{label} {value!r} must be non-empty, without ':', '/' or spaces "
                    "(e.g. --deployment-name support-desk --build-id 2026-11-27.1)"
                )

    def __str__(self) -> str:
        return f"{self.deployment_name}:{self.build_id}"

    def config(self) -> WorkerDeploymentConfig:
        # PINNED by default: a run finishes on the code that started it. SessionWorkflow moves
        # itself at turn boundaries; a user's own workflows may declare their own behaviour.
        return WorkerDeploymentConfig(
            version=WorkerDeploymentVersion(self.deployment_name, self.build_id),
            use_worker_versioning=True,
            default_versioning_behavior=VersioningBehavior.PINNED,
        )


class AdkWorker:
    """The Temporal workers of one ADK worker process: one per task queue it polls, sharing one
    client, one plugin and one AppRegistry.

    By default each app has its own task queue (workflows.app_task_queue), and the base queue
    (workflows.TASK_QUEUE) serves eval suites where asked; with an explicit ``task_queue`` one
    Temporal worker serves every app on it. Run it like a Temporal Worker: ``await w.run()`` / ``await w.shutdown()``,
    or ``async with w:``.
    """

    def __init__(self, workers: Sequence[Worker], apps: AppRegistry) -> None:
        self.workers = list(workers)
        self.apps = apps
        self._stop_requested = False
        self._runs: list[asyncio.Task[None]] = []

    @property
    def stopping(self) -> bool:
        """Shutdown was asked: no new tasks are taken while the ones in flight finish."""
        return self._stop_requested

    @property
    def task_queues(self) -> list[str]:
        return [w.task_queue for w in self.workers]

    def register(self, app: App) -> App:
        """Serve ``app`` too; it must be on a queue this worker polls (an explicit ``task_queue``)."""
        return self.apps.register(app)

    async def run(self) -> None:
        freeze_startup_heap()
        if self._stop_requested:
            return
        tasks = self._runs = [asyncio.create_task(w.run()) for w in self.workers]
        try:
            # One worker failing (e.g. a lost connection past its retries) stops them all, so the
            # process exits and its supervisor restarts it, as with a single Temporal worker.
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()  # re-raises the first worker's failure
        finally:
            if any(not t.done() for t in tasks):
                await self.shutdown()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.apps.close()  # after the last activity: stdio MCP servers stop with the worker

    async def shutdown(self) -> None:
        """Stop polling and wait for in-flight tasks. Safe before ``run`` started (it then returns at
        once) and while its workers are still starting: a worker whose run is pending sees the
        request as soon as it starts, where checking ``is_running`` alone would miss it and leave
        ``run`` polling forever."""
        self._stop_requested = True
        pending = {id(w) for w, t in zip(self.workers, self._runs, strict=False) if not t.done()}
        stopping = [w.shutdown() for w in self.workers if w.is_running or id(w) in pending]
        await asyncio.gather(*stopping, return_exceptions=True)

    async def __aenter__(self) -> AdkWorker:
        freeze_startup_heap()
        for w in self.workers:
            await w.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await asyncio.gather(*(w.__aexit__(*exc) for w in self.workers))
        await self.apps.close()


def build_worker(
    client: Client,
    apps: Sequence[App],
    *,
    session_service: SessionService,
    artifact_service: ArtifactService | None = None,
    memory_service: MemoryService | None = None,
    task_queue: str | None = None,
    passthrough_modules: Sequence[str] = (),
    tracing: bool = False,
    payload_storage: StorageDriver | None = None,
    eval_cases: Sequence[str] = (),
    eval_suites: Sequence[str] = (),
    serve_eval_suites: bool | None = None,
    deployment: WorkerVersion | None = None,
    graceful_shutdown: timedelta = DEFAULT_GRACEFUL_SHUTDOWN,
    prices: PriceTable | None = None,
    **worker_options: Any,
) -> AdkWorker:
    """A worker for ``apps``. ``client`` may come from ``adkt.client.connect`` or be any client:
    the ADK plugin is added here if the client does not carry it.

    ``task_queue``: None (the default) polls each app's own queue (workflows.app_task_queue); a
    name polls that one queue for every app (clients must then use the same name:
    ``AdkClient(task_queue=...)``, ADK_TASK_QUEUE).

    ``serve_eval_suites``: also poll the base queue, where `adkt eval run --durable` starts eval
    suites. Default: when ``eval_cases`` are given or there are no apps. Temporal allows one worker
    per task queue in a process, so a second worker in the same process leaves it False.

    ``eval_cases``: import references of eval cases (``module:attr``) this worker serves from the
    start, so its activities find their agents even before an eval workflow ran here. Eval results
    go to the session service's database when it has one (``DatabaseSessionService``).

    ``eval_suites``: module or package names (or ``module:attr`` references) whose eval suites this
    worker may import on first use. An eval workflow naming any other suite than these and
    ``eval_cases`` is refused before anything is imported (activities.eval_allow): a suite named in
    workflow input would otherwise run its module's code on the worker.

    ``deployment``: this worker's version (``WorkerVersion(deployment_name, build_id)``). Runs are
    then pinned to the version they started on, and conversations move to the current version at
    a turn boundary (docs/versioning.md). None (the default, and ``adkt dev``): unversioned.

    ``graceful_shutdown``: on shutdown, how long in-flight activities (model calls, tools) may run
    to completion before they are cancelled.

    ``prices``: model prices for the cost of each call (default: ``PriceTable.default()``).

    ``worker_options`` go to each Temporal ``Worker``; ``max_concurrent_workflow_tasks`` defaults to
    ``DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS`` (unless a ``tuner`` is given), not temporalio's 100."""
    registry = AppRegistry(apps, eval_suites=EvalSuites(eval_suites))
    register_cases(eval_cases, registry)
    modules = {type(app.root_agent).__module__ for app in apps} | set(passthrough_modules)
    plugin = AdkPlugin(
        AdkActivities(session_service, artifact_service=artifact_service, memory_service=memory_service, apps=registry,
                      prices=prices),
        passthrough_modules=sorted(m for m in modules if not m.startswith("adk_core")),
        tracing=tracing,
        payload_storage=payload_storage,
        eval_activities=EvalActivities(_eval_store(session_service), registry, sessions=session_service),
    )
    # The worker's plugin carries the converter, workflows and activities; a client-side AdkPlugin
    # would be applied a second time, so the worker gets a copy of the client without it.
    config = client.config()
    config["plugins"] = [p for p in config.get("plugins", []) if not isinstance(p, AdkPlugin)]
    # The client's converter keeps its codec (a user's encryption); ours converts the values.
    config["data_converter"] = with_payload_storage(adk_converter(config.get("data_converter")), payload_storage)
    client = Client(**config)
    # A conversation's next task waits this long on the sticky queue of the worker that ran the
    # last one before any worker may take it: 10 s by default, which a dead worker adds to every
    # recovery. Caching still serves the common case; a busy live worker losing one task to a peer
    # costs a replay of a bounded run (SessionWorkflowInput.max_history_events).
    worker_options.setdefault("sticky_queue_schedule_to_start_timeout", timedelta(seconds=3))
    worker_options.setdefault("graceful_shutdown_timeout", graceful_shutdown)
    worker_options.setdefault("workflow_task_poller_behavior", WORKFLOW_TASK_POLLS)
    worker_options.setdefault("nonsticky_to_sticky_poll_ratio", NONSTICKY_POLL_RATIO)
    if "tuner" not in worker_options:  # a tuner sets every slot count itself; temporalio refuses both
        worker_options.setdefault("max_concurrent_workflow_tasks", DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS)
    if deployment is not None:
        worker_options.setdefault("deployment_config", deployment.config())
    if task_queue is not None:
        queues = [task_queue]
    else:
        if serve_eval_suites is None:
            serve_eval_suites = bool(eval_cases) or not apps
        queues = [app_task_queue(app.name) for app in apps] + ([TASK_QUEUE] if serve_eval_suites else [])
    workers = [Worker(client, task_queue=queue, plugins=[plugin], **worker_options) for queue in queues]
    return AdkWorker(workers, registry)


def _eval_store(session_service: SessionService) -> EvalResultStore | None:
    engine = getattr(session_service, "engine", None)
    return EvalResultStore(engine) if isinstance(engine, AsyncEngine) else None


def main(argv: Sequence[str] | None = None) -> None:
    """``python worker.py ...`` is ``adkt worker ...``: one parser, one set of options and defaults."""
    from adkt.main import main as adkt_main

    adkt_main(["worker", *(sys.argv[1:] if argv is None else argv)], prog_name="worker.py")


if __name__ == "__main__":
    main()
