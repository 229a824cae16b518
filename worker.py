"""The worker entry point: `python worker.py --app module:attr` or `adkt worker --app module:attr`.

A worker serves one or more apps: it runs their workflows (the engine, callbacks and plugins)
and activities (model calls, tools, session I/O). Sessions live in Postgres at
ADK_DATABASE_URL (or --database-url).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client
from temporalio.converter import StorageDriver
from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import Worker

from activities import AdkActivities, register_app
from activities.eval_activities import EvalActivities
from activities.eval_cases import register_cases
from adk_core import App, BaseAgent
from adk_core.artifacts import ArtifactService
from adk_core.errors import ConfigurationError
from adk_core.eval.store import EvalResultStore
from adk_core.memory import MemoryService
from adk_core.sessions import SessionService
from workflows import TASK_QUEUE, AdkPlugin
from workflows.converter import adk_data_converter
from workflows.payload_storage import with_payload_storage

# Named, not __name__: `python worker.py` runs this module as __main__.
logger = logging.getLogger("worker")

LOG_LEVEL_ENV = "ADK_LOG_LEVEL"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries that log routine steps at INFO: a request per model call (httpx), a dozen lines per
# migration check at startup (alembic).
_CHATTY_LOGGERS = ("httpx", "httpcore", "alembic")


def configure_logging(level: str | int | None = None) -> None:
    """Send log records to stderr with time, level and logger name, for a worker process.

    ``level`` is a name ("DEBUG", "info") or a number; None reads $ADK_LOG_LEVEL, else INFO.
    Workflow task failures reach this log both ways temporalio reports them: Python's warning
    "Failed activation on workflow ..." (an exception in workflow code; dropped when nothing configures
    logging) and the Rust core's "Failing workflow task ..." (e.g. a nondeterminism error), which by
    default goes to stderr in its own format and is forwarded here instead, as logger
    ``temporalio.core``. That takes the process's default Temporal runtime, so call this before any
    client connects.

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
    Runtime.set_default(Runtime(telemetry=telemetry), error_if_already_set=False)


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


def build_worker(
    client: Client,
    apps: Sequence[App],
    *,
    session_service: SessionService,
    artifact_service: ArtifactService | None = None,
    memory_service: MemoryService | None = None,
    task_queue: str = TASK_QUEUE,
    passthrough_modules: Sequence[str] = (),
    tracing: bool = False,
    payload_storage: StorageDriver | None = None,
    eval_cases: Sequence[str] = (),
    **worker_options: Any,
) -> Worker:
    """A Worker for ``apps``. ``client`` may come from ``adkt.client.connect`` or be any client:
    the ADK plugin is added here if the client does not carry it.

    ``eval_cases``: import references of eval cases (``module:attr``) this worker serves from the
    start, so its activities find their agents even before an eval workflow ran here. Eval results
    go to the session service's database when it has one (``DatabaseSessionService``)."""
    for app in apps:
        register_app(app)
    register_cases(eval_cases)
    modules = {type(app.root_agent).__module__ for app in apps} | set(passthrough_modules)
    plugin = AdkPlugin(
        AdkActivities(session_service, artifact_service=artifact_service, memory_service=memory_service),
        passthrough_modules=sorted(m for m in modules if not m.startswith("adk_core")),
        tracing=tracing,
        payload_storage=payload_storage,
        eval_activities=EvalActivities(_eval_store(session_service)),
    )
    # The worker's plugin carries the converter, workflows and activities; a client-side AdkPlugin
    # would be applied a second time, so the worker gets a copy of the client without it.
    config = client.config()
    config["plugins"] = [p for p in config.get("plugins", []) if not isinstance(p, AdkPlugin)]
    config["data_converter"] = with_payload_storage(adk_data_converter, payload_storage)
    client = Client(**config)
    # A conversation's next task waits this long on the sticky queue of the worker that ran the
    # last one before any worker may take it: 10 s by default, which a dead worker adds to every
    # recovery. Caching still serves the common case; a busy live worker losing one task to a peer
    # costs a replay of a bounded run (SessionWorkflowInput.max_history_events).
    worker_options.setdefault("sticky_queue_schedule_to_start_timeout", timedelta(seconds=3))
    return Worker(client, task_queue=task_queue, plugins=[plugin], **worker_options)


def _eval_store(session_service: SessionService) -> EvalResultStore | None:
    engine = getattr(session_service, "engine", None)
    return EvalResultStore(engine) if isinstance(engine, AsyncEngine) else None


async def _main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--app", action="append", default=[], help="module:attr of an App (repeatable)")
    parser.add_argument("--address", default=None, help="Temporal address (default: TEMPORAL_ADDRESS / localhost:7233)")
    parser.add_argument("--database-url", default=None, help="sessions database (default: ADK_DATABASE_URL)")
    parser.add_argument("--task-queue", default=TASK_QUEUE)
    parser.add_argument("--eval", action="append", default=[], help="module:attr of eval cases to serve (repeatable)")
    parser.add_argument("--log-level", default=None, help=f"DEBUG, INFO, WARNING... (default: ${LOG_LEVEL_ENV} or INFO)")
    args = parser.parse_args(argv)
    if not args.app and not args.eval:
        parser.error("give at least one --app (or --eval)")
    configure_logging(args.log_level)
    from adkt.client import connect
    from adkt.services import open_services

    apps = [load_app(spec) for spec in args.app]
    client = await connect(args.address)
    async with open_services(args.database_url) as services:
        worker = build_worker(client, apps, task_queue=args.task_queue, eval_cases=args.eval, **services)
        logger.info(
            "worker for %s on task queue %r at %s",
            ", ".join(app.name for app in apps), args.task_queue, client.service_client.config.target_host,
        )
        await worker.run()


if __name__ == "__main__":
    asyncio.run(_main())
