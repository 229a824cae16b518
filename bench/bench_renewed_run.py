"""A message to a long conversation on a worker that does not have it cached: renewed while idle or not.

Starts its own stack (bench/_stack.py) and a worker serving W1 (examples/w1.py), and has --conversations
pairs of conversations each take --turns W1 turns (default 18: a run of about 900 history events, just
under SessionWorkflow's 1,000-event continue-as-new). One of each pair is started with
``renew_idle_run_after_seconds=1`` (it continues as new once idle a second), the other with 0 (never).
After a few idle seconds the worker is shut down and a new one started, with empty caches, as when a
conversation comes back to a worker that evicted it or to another worker. Then, interleaved pair by
pair, one W1 turn to each conversation (cold: the worker replays its run) and a second one (hot: it is
cached now). Reports the medians, cold / hot for each kind (issue 21's goal: <= 1.5) and the runs'
history lengths.

Run:  python bench/bench_renewed_run.py [--conversations 10] [--turns 18]
Writes bench/results/renewed-run.json (or --out).
"""

from __future__ import annotations

import argparse
import asyncio
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

from adk_temporal.worker import build_worker  # noqa: E402
from adk_temporal.workflows import session_workflow_id  # noqa: E402
from adkt.client import AdkClient, connect  # noqa: E402
from examples import w1  # noqa: E402

TASK_QUEUE = "bench-renewed-run"
KINDS = {"renewed": 1.0, "not_renewed": 0.0}
"""renew_idle_run_after_seconds per kind (0: never)."""


async def turn(client: AdkClient, session_id: str) -> float:
    started = time.perf_counter()
    result = await client.send(w1.app.name, "u", session_id, w1.USER_MESSAGE)
    assert result.final_text == w1.EXPECTED_FINAL_TEXT, result.final_text
    return (time.perf_counter() - started) * 1000


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"conversations": args.conversations, "turns": args.turns, "cpus": os.cpu_count(),
                               "load_average_at_start": os.getloadavg()}
    async with bench_stack() as stack:
        temporal = await connect(stack.temporal.address, namespace=stack.temporal.namespace, database_url=stack.database_url)
        clients = {kind: AdkClient(temporal, task_queue=TASK_QUEUE, renew_idle_run_after_seconds=renew)
                   for kind, renew in KINDS.items()}
        sessions = {kind: [f"{kind}-{i}-{uuid.uuid4().hex[:6]}" for i in range(args.conversations)] for kind in KINDS}

        first = build_worker(temporal, [w1.app], task_queue=TASK_QUEUE, **stack.services)
        running = asyncio.create_task(first.run())
        print(f"{args.conversations} pairs of conversations, {args.turns} W1 turns each...", flush=True)
        for i in range(args.conversations):
            for kind in KINDS:
                for _ in range(args.turns):
                    await turn(clients[kind], sessions[kind][i])
        await asyncio.sleep(3)  # idle: the renewing kind continues as new
        results["history_events_before_the_message"] = {
            kind: statistics.median([
                (await temporal.get_workflow_handle(session_workflow_id(w1.app.name, "u", sid)).describe()).history_length
                for sid in sessions[kind]
            ]) for kind in KINDS
        }
        await first.shutdown()
        await running

        second = build_worker(temporal, [w1.app], task_queue=TASK_QUEUE, **stack.services)
        running = asyncio.create_task(second.run())
        try:
            await turn(clients["renewed"], f"warm-up-{uuid.uuid4().hex[:6]}")  # the new worker's first sandbox
            ms: dict[str, dict[str, list[float]]] = {kind: {"cold": [], "hot": []} for kind in KINDS}
            for i in range(args.conversations):
                order = list(KINDS) if i % 2 == 0 else list(reversed(KINDS))
                for kind in order:
                    ms[kind]["cold"].append(await turn(clients[kind], sessions[kind][i]))
                    ms[kind]["hot"].append(await turn(clients[kind], sessions[kind][i]))
        finally:
            await second.shutdown()
            await running
    results["median_ms"] = {kind: {k: round(statistics.median(v), 1) for k, v in by.items()} for kind, by in ms.items()}
    results["cold_over_hot"] = {kind: round(statistics.median(by["cold"]) / statistics.median(by["hot"]), 2)
                                for kind, by in ms.items()}
    results["samples_ms"] = {kind: {k: [round(x, 1) for x in v] for k, v in by.items()} for kind, by in ms.items()}
    results["load_average_at_end"] = os.getloadavg()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--turns", type=int, default=18)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "renewed-run.json")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: results[k] for k in ("history_events_before_the_message", "median_ms", "cold_over_hot")}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
