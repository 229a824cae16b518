"""The worker entry point: `python worker.py --app module:attr` or `adkt worker --app module:attr`.

A worker serves one or more apps: it runs their workflows (the engine, callbacks and plugins)
and activities (model calls, tools, session I/O). Sessions live in Postgres at
ADK_DATABASE_URL (or --database-url).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
from collections.abc import Sequence
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from activities import AdkActivities, register_app
from adk_core import App, BaseAgent
from adk_core.artifacts import ArtifactService
from adk_core.errors import ConfigurationError
from adk_core.memory import MemoryService
from adk_core.sessions import SessionService
from workflows import TASK_QUEUE, AdkPlugin
from workflows.converter import adk_data_converter


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
    **worker_options: Any,
) -> Worker:
    """A Worker for ``apps``. ``client`` may come from ``adkt.client.connect`` or be any client:
    the ADK plugin is added here if the client does not carry it."""
    for app in apps:
        register_app(app)
    modules = {type(app.root_agent).__module__ for app in apps} | set(passthrough_modules)
    plugin = AdkPlugin(
        AdkActivities(session_service, artifact_service=artifact_service, memory_service=memory_service),
        passthrough_modules=sorted(m for m in modules if not m.startswith("adk_core")),
        tracing=tracing,
    )
    # The worker's plugin carries the converter, workflows and activities; a client-side AdkPlugin
    # would be applied a second time, so the worker gets a copy of the client without it.
    config = client.config()
    config["plugins"] = [p for p in config.get("plugins", []) if not isinstance(p, AdkPlugin)]
    config["data_converter"] = adk_data_converter
    client = Client(**config)
    return Worker(client, task_queue=task_queue, plugins=[plugin], **worker_options)


async def _main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--app", action="append", required=True, help="module:attr of an App (repeatable)")
    parser.add_argument("--address", default=None, help="Temporal address (default: TEMPORAL_ADDRESS / localhost:7233)")
    parser.add_argument("--database-url", default=None, help="sessions database (default: ADK_DATABASE_URL)")
    parser.add_argument("--task-queue", default=TASK_QUEUE)
    args = parser.parse_args(argv)
    from adkt.client import connect
    from adkt.services import open_services

    apps = [load_app(spec) for spec in args.app]
    client = await connect(args.address)
    async with open_services(args.database_url) as services:
        worker = build_worker(client, apps, task_queue=args.task_queue, **services)
        await worker.run()


if __name__ == "__main__":
    asyncio.run(_main())
