"""The stack every durable bench runs on, started the same way for each.

A headless Temporal dev server on a free port (``TEMPORAL_DEV_ARGS``, the tuned transfer queue, unless
given other arguments), an embedded Postgres in a temporary folder with fsync off (the benches
measure Temporal and the engine, not the disk), both started at once, and the migrated stores
(``adkt.services.open_services``). Everything is stopped and removed on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from adkt.embedded import TEMPORAL_DEV_ARGS, EmbeddedPostgres, TemporalDevServer
from adkt.services import open_services


def cpu_seconds(worker_command: str | None = None) -> dict[str, float]:
    """CPU seconds so far, by kind of process: this one (``client``), and among its children the dev
    server (``temporal``), worker processes whose command line holds ``worker_command`` (``workers``)
    and the rest, Postgres (``postgres``)."""
    import psutil

    me = psutil.Process()
    own = me.cpu_times()
    totals = {"client": own.user + own.system, "workers": 0.0, "temporal": 0.0, "postgres": 0.0}
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            times = child.cpu_times()
            if "temporal" in child.name():
                kind = "temporal"
            elif worker_command is not None and worker_command in " ".join(child.cmdline()[:3]):
                kind = "workers"
            else:
                kind = "postgres"
            totals[kind] += times.user + times.system
    return totals


@dataclasses.dataclass(frozen=True)
class BenchStack:
    temporal: TemporalDevServer
    postgres: EmbeddedPostgres
    services: dict[str, Any]
    """build_worker's store arguments (session, artifact, memory services and payload storage)."""

    @property
    def database_url(self) -> str:
        return self.postgres.url


@contextlib.asynccontextmanager
async def bench_stack(dev_args: Sequence[str] = TEMPORAL_DEV_ARGS) -> AsyncIterator[BenchStack]:
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        temporal = TemporalDevServer(port=0, headless=True, extra_args=tuple(dev_args))
        postgres = EmbeddedPostgres(Path(tmp) / "pg", durable=False)
        await asyncio.gather(temporal.start(), postgres.start())
        try:
            async with open_services(postgres.url) as services:
                yield BenchStack(temporal, postgres, services)
        finally:
            await asyncio.gather(temporal.stop(), postgres.stop())
