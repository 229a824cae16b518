"""CPU and wall time per session append: held connections (adk_core.sql.held) against checking a
connection out of SQLAlchemy's pool for each append, the path every append took before.

    python bench/bench_appends.py [--appends 2000]

Starts its own embedded Postgres (fsync off). Both paths run the same statement through the same
DatabaseSessionService, alternating in rounds so machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import migrate, open_engine
from adk_core.sql.held import held_connections
from adk_core.types import Content, Event
from adkt.embedded import EmbeddedPostgres

ROUNDS = 4


async def per_append(engine: AsyncEngine, appends: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per append of a W1-sized event (about 300 bytes of JSON)."""
    sessions = DatabaseSessionService(engine)
    session = await sessions.create_session(app_name="bench", user_id="u")
    events = [
        Event(invocation_id="inv", author="agent", content=Content.user(f"tool result {i}: " + "x" * 200))
        for i in range(appends)
    ]
    cpu, wall = time.process_time(), time.perf_counter()
    for e in events:
        await sessions.append_event(session, e)
        session.events.clear()
    return (time.process_time() - cpu) / appends * 1e3, (time.perf_counter() - wall) / appends * 1e3


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-appends-") as tmp:
        postgres = EmbeddedPostgres(Path(tmp) / "pg", durable=False)
        await postgres.start()
        try:
            await migrate(postgres.url)
            held, pooled = open_engine(postgres.url), open_engine(postgres.url)
            held_connections(pooled, size=0)  # this engine never holds: every append checks one out
            results: dict[str, list[tuple[float, float]]] = {"held connections": [], "pool checkout per append": []}
            await per_append(held, 200), await per_append(pooled, 200)  # warm up: connections, prepared statements
            for _ in range(ROUNDS):
                results["held connections"].append(await per_append(held, args.appends // ROUNDS))
                results["pool checkout per append"].append(await per_append(pooled, args.appends // ROUNDS))
            await held.dispose()
            await pooled.dispose()
        finally:
            await postgres.stop()
    base = sum(c for c, _ in results["pool checkout per append"]) / ROUNDS
    print(f"{'path':28} {'CPU ms/append':>14} {'wall ms/append':>15} {'CPU ratio':>10}")
    for name, runs in results.items():
        cpu = sum(c for c, _ in runs) / ROUNDS
        wall = sum(w for _, w in runs) / ROUNDS
        print(f"{name:28} {cpu:14.3f} {wall:15.3f} {cpu / base:10.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=2000)
    asyncio.run(main(parser.parse_args()))
