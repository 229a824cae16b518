"""The session store at 1,000,000 events: append and "last 10 events" vs the same at 1,000 (issue 21).

Starts an embedded Postgres (fsync off: this measures the queries, not the disk), migrates, and fills
two sessions of one user with bulk SQL (INSERT ... SELECT FROM generate_series, the events' stored
JSON built from one real event's form, not one append at a time):

  small   --small events (default 1,000)
  big     --big events (default 1,000,000)

then, interleaved round by round (--rounds, default 300) so noise hits both alike, times through
DatabaseSessionService:

  append   append_event of one user event with a session and a user: state key
  last 10  get_session(num_recent_events=10)

and reports mean and median ms of each on each session, and big / small (goal <= 1.2). The small
session is also measured before the big one is loaded, so table growth shows apart from session
size. EXPLAIN (ANALYZE, BUFFERS) of the last-10 read on the big session goes into the JSON.

Run:  python bench/bench_session_scale.py [--big 1000000] [--small 1000] [--rounds 300]
Writes bench/results/session-scale.json (or --out).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402

from adk_core.sessions import GetSessionConfig  # noqa: E402
from adk_core.sessions.sql import DatabaseSessionService  # noqa: E402
from adk_core.sql import migrate  # noqa: E402
from adk_core.types import Content, Event, EventActions  # noqa: E402
from adkt.embedded import EmbeddedPostgres  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
APP, USER = "scale", "u1"
LAST = 10
CHUNK = 200_000
"""Rows per bulk INSERT: one statement per chunk keeps each transaction's memory bounded."""

FILL = sa.text(
    """INSERT INTO adk_events (app_name, user_id, session_id, id, seq, invocation_id, author, branch, timestamp, event)
SELECT :app, :user, :sid, 'e' || i, i, 'inv', 'user', NULL, :t0 + i * 0.001,
       jsonb_set(jsonb_set(CAST(:template AS jsonb), '{id}', to_jsonb('e' || i)),
                 '{timestamp}', to_jsonb(:t0 + i * 0.001))
FROM generate_series(CAST(:lo AS bigint), CAST(:hi AS bigint)) AS i"""
)


async def fill(service: DatabaseSessionService, session_id: str, n: int) -> float:
    """Store ``n`` events in ``session_id`` (seq 1..n) by bulk SQL; seconds taken."""
    t0 = time.time()
    template = Event(
        id="e0", author="user", invocation_id="inv", timestamp=t0, content=Content.user("a stored message of some length")
    ).model_dump(mode="json")
    started = time.perf_counter()
    for lo in range(1, n + 1, CHUNK):
        hi = min(n, lo + CHUNK - 1)
        async with service.engine.begin() as conn:
            await conn.execute(FILL, {"app": APP, "user": USER, "sid": session_id, "t0": t0,
                                      "template": json.dumps(template), "lo": lo, "hi": hi})
    async with service.engine.begin() as conn:
        await conn.execute(sa.text("UPDATE adk_sessions SET last_seq = :n WHERE app_name = :app AND user_id = :user "
                                   "AND id = :sid"), {"n": n, "app": APP, "user": USER, "sid": session_id})
    async with service.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(sa.text("VACUUM ANALYZE adk_events"))
    return time.perf_counter() - started


def timed(samples: list[float], fn: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        t = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t) * 1000)

    return run


async def measure(service: DatabaseSessionService, sessions: dict[str, Any], rounds: int) -> dict[str, dict[str, Any]]:
    """Append and last-10, each session in turn within a round; ms per call by session and operation."""
    samples: dict[str, dict[str, list[float]]] = {name: {"append": [], "last10": []} for name in sessions}
    counter = [0]

    async def append(session: Any) -> None:
        counter[0] += 1
        i = counter[0]
        event = Event(id=str(uuid.uuid4()), author="user", invocation_id="inv", timestamp=time.time(),
                      content=Content.user(f"message {i}"),
                      actions=EventActions(state_delta={f"k{i % 10}": i, "user:last": i}))
        await service.append_event(session, event)
        session.events.clear()  # keep the caller's copy small: only the store is measured

    async def last(session: Any) -> None:
        got = await service.get_session(app_name=APP, user_id=USER, session_id=session.id,
                                        config=GetSessionConfig(num_recent_events=LAST))
        assert got is not None and len(got.events) == LAST, got

    for r in range(rounds + 5):  # the first 5 rounds warm connections and plans
        for name, session in sessions.items():
            for op, fn in (("append", append), ("last10", last)):
                if r < 5:
                    await fn(session)
                else:
                    await timed(samples[name][op], lambda fn=fn, s=session: fn(s))()
    return {
        name: {op: {"mean_ms": round(statistics.fmean(v), 3), "median_ms": round(statistics.median(v), 3),
                    "p99_ms": round(sorted(v)[int(0.99 * (len(v) - 1))], 3), "calls": len(v)}
               for op, v in ops.items()}
        for name, ops in samples.items()
    }


async def explain_last(service: DatabaseSessionService, session_id: str) -> str:
    # The shape of the store's "last N events" read (newest first by seq, on the session's index),
    # written from the public table so the bench does not reach into the store's private statements.
    from adk_core.sql.schema import events

    statement = (sa.select(events.c.seq, events.c.event)
                 .where(events.c.app_name == APP, events.c.user_id == USER, events.c.session_id == session_id)
                 .order_by(events.c.seq.desc()).limit(LAST))  # fmt: skip
    sql = str(statement.compile(dialect=service.engine.dialect, compile_kwargs={"literal_binds": True}))
    async with service.engine.connect() as conn:
        rows = await conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        return "\n".join(r[0] for r in rows)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"small": args.small, "big": args.big, "rounds": args.rounds, "cpus": os.cpu_count(),
                               "load_average_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pg", durable=False)
        await server.start()
        try:
            await migrate(server.url)
            service = DatabaseSessionService(server.url)
            try:
                small = await service.create_session(app_name=APP, user_id=USER, session_id="small")
                big = await service.create_session(app_name=APP, user_id=USER, session_id="big")
                results["fill_small_seconds"] = round(await fill(service, "small", args.small), 1)
                print("small session filled; measuring it alone...", flush=True)
                results["small_before_big"] = (await measure(service, {"small": small}, args.rounds))["small"]
                print(f"filling the big session with {args.big:,} events...", flush=True)
                results["fill_big_seconds"] = round(await fill(service, "big", args.big), 1)
                async with service.engine.connect() as conn:
                    results["events_table_bytes"] = (await conn.execute(
                        sa.text("SELECT pg_total_relation_size('adk_events')"))).scalar_one()
                print("measuring small and big, interleaved...", flush=True)
                both = await measure(service, {"small": small, "big": big}, args.rounds)
                results["measured"] = both
                results["ratio_big_over_small"] = {
                    op: {"mean": round(both["big"][op]["mean_ms"] / both["small"][op]["mean_ms"], 3),
                         "median": round(both["big"][op]["median_ms"] / both["small"][op]["median_ms"], 3)}
                    for op in ("append", "last10")
                }
                results["ratio_small_after_over_before"] = {
                    op: round(both["small"][op]["median_ms"] / results["small_before_big"][op]["median_ms"], 3)
                    for op in ("append", "last10")
                }
                results["goal"] = "<= 1.2"
                results["explain_last10_big"] = await explain_last(service, "big")
            finally:
                await service.close()
        finally:
            await server.stop()
    results["load_average_at_end"] = os.getloadavg()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--big", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--out", type=Path, default=RESULTS / "session-scale.json")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: results[k] for k in ("ratio_big_over_small", "ratio_small_after_over_before", "measured")},
                     indent=2))
    print(results["explain_last10_big"])
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
