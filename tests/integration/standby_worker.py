"""A replacement worker for the crash tests, started before the kill and held until it: its imports
(about 3 s of a worker's 4 s start on a 2-core machine) overlap the wait for the dead worker's heartbeat
timeout instead of following it.

    python -m tests.integration.standby_worker GO_FILE WORKER_ARGS...

imports what ``python worker.py WORKER_ARGS`` runs (the worker command and the modules of its
``--app`` and ``--eval`` references), then waits for GO_FILE to exist (at most STANDBY_SECONDS)
and only then runs the worker: it has not connected to Temporal, polled a queue or seen a workflow
before GO_FILE, so what takes over after the kill is still a fresh worker process that replays the
histories it is given.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

STANDBY_SECONDS = 120.0

# What `adkt worker` imports on its way to polling (adkt.commands.serve._worker imports most lazily).
WORKER_MODULES = (
    "adkt.main", "adkt.commands.serve", "adk_temporal.worker", "adk_temporal.health", "adkt.client",
    "adkt.commands._apps", "adkt.commands._stack", "adkt.commands.check", "adkt.services",
    "temporalio.worker",
)


def _preload(args: list[str]) -> None:
    apps = [value for option, value in zip(args, args[1:], strict=False) if option in ("--app", "--eval")]
    for module in (*WORKER_MODULES, *(spec.partition(":")[0] for spec in apps)):
        importlib.import_module(module)


def wait_for_go(go: Path) -> None:
    """Return once ``go`` exists; exit the process after STANDBY_SECONDS without it."""
    deadline = time.monotonic() + STANDBY_SECONDS
    while not go.exists():
        if time.monotonic() > deadline:
            sys.exit(f"standby worker: {go} did not appear within {STANDBY_SECONDS:g} s")
        time.sleep(0.02)


def main(go: Path, args: list[str]) -> None:
    _preload(args)
    wait_for_go(go)
    from adk_temporal.worker import main as worker_main

    worker_main(args)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
