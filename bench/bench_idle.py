"""Open idle conversations held by one worker, and what a message to an evicted one costs.

Starts its own stack (bench/_stack.py: the tuned dev server, an embedded Postgres with fsync off) and
one in-process worker serving W1 (examples/w1.py) with ``max_cached_workflows`` (default 1,000), then:

  1. opens --conversations conversations (default 10,000), one W1 turn each, --concurrency at a
     time; they stay open, each waiting for its next message (the idle timeout is an hour);
  2. reports this process's memory (RSS, which is the worker plus a thin client), what each open
     conversation costs in it and in Postgres, and the Temporal timers they hold;
  3. sends, interleaved round by round, a W1 turn to a conversation evicted from the worker's cache
     (the oldest ones: the cache holds the newest ``max_cached_workflows``; each is used once, so
     each is cold) and to one that is cached (a conversation used the round before, so hot);
     reports the mean of each and their ratio (goal: cold / hot <= 1.5);
  4. checks that none was lost: every conversation still runs and holds exactly its turns' events.

While opening it records this process's garbage-collection pauses (GcPauses): a full collection
walks every cached conversation's objects while holding the GIL, and a pause over 2 s fails the
workflow task that was running (temporalio's deadlock detector; the task is retried).

Run:  python bench/bench_idle.py [--conversations 10000] [--rounds 40] [--cache 1000]
Writes bench/results/idle.json.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _stack import bench_stack  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_core.sql import open_engine  # noqa: E402
from adk_temporal.worker import build_worker  # noqa: E402
from adkt.client import AdkClient, connect  # noqa: E402
from examples import w1  # noqa: E402

TASK_QUEUE = "bench-idle"
USER = "idle-user"
RESULTS = Path(__file__).resolve().parent / "results"
EVENTS_PER_TURN = 8
"""W1 stores the user message, 4 model events and 3 tool results per turn."""


class GcPauses:
    """The cyclic collector's pauses in this process (gc.callbacks): each one holds the GIL, so a
    long one stalls every workflow activation of the worker (its deadlock detector fires at 2 s)."""

    def __init__(self) -> None:
        self.seconds: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._started = 0.0

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds[info["generation"]].append(time.perf_counter() - self._started)

    def summary(self) -> dict[str, Any]:
        full = self.seconds[2]
        return {
            "collections": {f"gen{g}": len(s) for g, s in self.seconds.items()},
            "full_collection_max_ms": round(max(full) * 1000, 1) if full else None,
            "full_collection_mean_ms": round(statistics.fmean(full) * 1000, 1) if full else None,
            "any_collection_max_ms": round(max(max(s, default=0.0) for s in self.seconds.values()) * 1000, 1),
        }


def rss_mb() -> float:
    """This process's resident memory, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


async def turn(adk: AdkClient, session_id: str) -> float:
    """One W1 turn in ``session_id``; its wall time in ms (checked, so a wrong turn fails the bench)."""
    t0 = time.perf_counter()
    result = await adk.send(w1.app.name, USER, session_id, w1.USER_MESSAGE)
    elapsed = (time.perf_counter() - t0) * 1000
    w1.check_turn(result.events)
    return elapsed


async def open_conversations(adk: AdkClient, ids: list[str], concurrency: int) -> float:
    """One turn in each of ``ids`` (oldest first, so the newest are the cached ones); seconds taken."""
    semaphore = asyncio.Semaphore(concurrency)
    done = 0
    t0 = time.perf_counter()

    async def one(session_id: str) -> None:
        nonlocal done
        async with semaphore:
            await turn(adk, session_id)
        done += 1
        if done % 1000 == 0:
            print(f"  {done} open ({time.perf_counter() - t0:.0f} s)", flush=True)

    # In waves of `concurrency`, so the order of first turns (and so the cache's LRU order) follows ids.
    for start in range(0, len(ids), concurrency):
        await asyncio.gather(*(one(i) for i in ids[start:start + concurrency]))
    return time.perf_counter() - t0


async def postgres_figures(database_url: str) -> dict[str, Any]:
    engine = open_engine(database_url)
    try:
        async with engine.connect() as conn:
            size = (await conn.execute(text("SELECT pg_database_size(current_database())"))).scalar_one()
            counts = (await conn.execute(text(
                "SELECT session_id, count(*) FROM adk_events WHERE user_id = :u GROUP BY session_id"
            ), {"u": USER})).all()
    finally:
        await engine.dispose()
    return {"database_bytes": int(size), "events_by_session": {s: int(n) for s, n in counts}}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "conversations": args.conversations, "max_cached_workflows": args.cache, "rounds": args.rounds,
        "python": sys.version.split()[0], "cpus": os.cpu_count(),
    }
    async with bench_stack() as stack:
        client = await connect(stack.temporal.address)
        adk = AdkClient(client, task_queue=TASK_QUEUE, search_attributes=False)
        worker = build_worker(
            client, [w1.app], task_queue=TASK_QUEUE, **stack.services,
            # build_worker's default max_concurrent_workflow_tasks: what a deployed worker runs.
            max_cached_workflows=args.cache, max_concurrent_activities=200, max_concurrent_local_activities=200,
        )
        async with worker:
            await turn(adk, "warmup")  # imports, sandbox and connections, before the baseline
            base_rss = rss_mb()
            before = await postgres_figures(stack.database_url)
            tag = uuid.uuid4().hex[:6]
            ids = [f"idle-{tag}-{n:05d}" for n in range(args.conversations)]
            print(f"opening {len(ids)} conversations ({args.concurrency} at a time)...", flush=True)
            with GcPauses() as pauses:
                seconds = await open_conversations(adk, ids, args.concurrency)
            results["gc_while_opening"] = pauses.summary()
            print(json.dumps(results["gc_while_opening"]), flush=True)
            after = await postgres_figures(stack.database_url)
            rss = rss_mb()
            results["open"] = {
                "seconds": round(seconds, 1), "turns_per_second": round(len(ids) / seconds, 1),
                "rss_mb_before": round(base_rss, 1), "rss_mb_after": round(rss, 1),
                "rss_kb_per_conversation": round((rss - base_rss) * 1024 / len(ids), 1),
                "cached_workflows": min(args.cache, len(ids)),
                "postgres_bytes_per_conversation": round(
                    (after["database_bytes"] - before["database_bytes"]) / len(ids)),
                "timers_per_idle_conversation": 1,  # IdleClock: one timer per conversation (workflows/session.py)
            }
            print(json.dumps(results["open"], indent=2), flush=True)

            # Cold: the oldest conversations, evicted (the cache holds the newest); each used once.
            # Hot: the conversation used in the round before, still cached.
            cold_ms: list[float] = []
            hot_ms: list[float] = []
            hot_id = ids[-1]
            for r in range(args.rounds):
                cold_ms.append(await turn(adk, ids[r]))
                hot_ms.append(await turn(adk, hot_id))
            results["message"] = {
                "cold_ms_mean": round(statistics.fmean(cold_ms), 1),
                "hot_ms_mean": round(statistics.fmean(hot_ms), 1),
                "cold_ms_median": round(statistics.median(cold_ms), 1),
                "hot_ms_median": round(statistics.median(hot_ms), 1),
                "cold_over_hot": round(statistics.fmean(cold_ms) / statistics.fmean(hot_ms), 2),
                "goal": 1.5,
            }
            print(json.dumps(results["message"], indent=2), flush=True)

            # None lost: every conversation still open, each with exactly its turns' events.
            running = (await client.count_workflows(
                'WorkflowType="SessionWorkflow" AND ExecutionStatus="Running"')).count
            final = await postgres_figures(stack.database_url)
            expected = {i: EVENTS_PER_TURN for i in ids}
            for r in range(args.rounds):
                expected[ids[r]] += EVENTS_PER_TURN
            expected[hot_id] += args.rounds * EVENTS_PER_TURN
            wrong = [i for i in ids if final["events_by_session"].get(i) != expected[i]]
            results["lost"] = {
                "running_workflows": running, "expected_running": len(ids) + 1,  # + the warm-up conversation
                "sessions_with_wrong_event_count": len(wrong),
            }
            print(json.dumps(results["lost"], indent=2), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=40, help="cold/hot message pairs")
    parser.add_argument("--cache", type=int, default=1000, help="the worker's max_cached_workflows")
    parser.add_argument("--out", type=Path, default=RESULTS / "idle.json")
    args = parser.parse_args()
    if args.rounds >= args.conversations - args.cache:
        parser.error("--rounds must be below --conversations minus --cache (the cold ones must be evicted)")
    results = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
