"""A burst: N brand-new conversations each sending one W1 turn at once, served by 2 worker processes,
against Temporal's floor (7 no-op activities) fired the same way at the same workers (issue 21).

Starts its own stack (bench/_stack.py: the tuned dev server, an embedded Postgres with fsync off), then
--workers worker processes (this file with --child: adk_temporal.worker.build_worker serving W1 and the
floor workflow on one task queue, with build_worker's default worker options unless
--workflow-tasks is given), and alternates, --repeats times:

  - W1 burst: --conversations sends (AdkClient.send, each to a new conversation) started together;
  - floor burst: as many floor workflows (client.execute_workflow) started together.

Per burst: wall time until the last one finished, throughput (completed / wall), p50/p99/max latency
of each send, failures by type; the workers' warnings (failed or timed-out workflow tasks) are
counted from their logs. Reported: W1 throughput / floor throughput (goal >= 0.95) and W1's p99.

A brand-new conversation's first workflow task is the expensive one (the sandbox's first
activation of SessionWorkflow); --workflow-tasks 100 (temporalio's own default) reproduces the
congestion collapse of issue 21: 100 such activations at once on one GIL-bound process each take
longer than the 10 s workflow task timeout, are retried, and the senders fail.

Run:  python bench/bench_burst.py [--conversations 1000] [--workers 2] [--repeats 1]
      [--workflow-tasks N]   the workers' max_concurrent_workflow_tasks (default: build_worker's)
Writes bench/results/burst.json (or --out).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

RESULTS = Path(__file__).resolve().parent / "results"
TASK_QUEUE = "bench-burst"
READY = "burst-worker-ready"
WORKER_START_SECONDS = 180.0
"""Bound on a worker process's start (imports and connections on a loaded 2-core machine)."""


# --- the worker processes ----------------------------------------------------------------------


async def child(address: str, database_url: str, workflow_tasks: int | None, cache: int, unsandboxed: bool = False) -> None:
    from _floor import SandboxedFloorWorkflow
    from bench_durable import FloorWorkflow, noop

    from adk_temporal.worker import build_worker, configure_logging
    from adkt.client import connect
    from adkt.commands.serve import worker_options
    from adkt.services import open_services
    from examples import w1

    configure_logging("WARNING")
    client = await connect(address)
    # The options `adkt worker --max-cached-workflows --max-workflow-tasks [--unsandboxed]` would give.
    options: dict[str, Any] = dict(max_concurrent_activities=200, max_concurrent_local_activities=200)
    options.update(worker_options(unsandboxed=unsandboxed, max_workflow_tasks=workflow_tasks, max_cached_workflows=cache))
    async with open_services(database_url) as services:
        worker = build_worker(
            client, [w1.app], task_queue=TASK_QUEUE, workflows=[FloorWorkflow, SandboxedFloorWorkflow],
            activities=[noop], **services, **options
        )
        async with worker:
            print(READY, flush=True)
            await asyncio.Event().wait()  # until the parent terminates this process


async def start_workers(args: argparse.Namespace, address: str, database_url: str, log_dir: Path) -> list[Any]:
    procs = []
    for n in range(args.workers):
        cmd = [sys.executable, __file__, "--child", "--address", address, "--database-url", database_url,
               "--cache", str(args.cache)]
        if args.workflow_tasks is not None:
            cmd += ["--workflow-tasks", str(args.workflow_tasks)]
        if args.unsandboxed:
            cmd += ["--unsandboxed"]
        log = open(log_dir / f"{args.out.stem}-worker-{n}.log", "w")  # noqa: SIM115 - closed with the process
        proc = await asyncio.create_subprocess_exec(*cmd, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=log)
        proc.log = log  # type: ignore[attr-defined]
        procs.append(proc)
    for proc in procs:
        line = await asyncio.wait_for(proc.stdout.readline(), WORKER_START_SECONDS)
        if READY not in line.decode():
            raise RuntimeError(f"a worker process did not start (exit {proc.returncode}); see {proc.log.name}")
    return procs


async def stop_workers(procs: list[Any]) -> None:
    for proc in procs:
        if proc.returncode is None:
            proc.terminate()
    for proc in procs:
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        proc.log.close()


def warnings_in(paths: list[Path]) -> dict[str, int]:
    """The workers' warnings by kind: failed activations, and workflow tasks that timed out on the server."""
    counts = {"warnings": 0, "workflow_task_timeouts": 0, "failed_activations": 0}
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            if " WARNING " in line or " ERROR " in line:
                counts["warnings"] += 1
            if "Failed activation" in line:
                counts["failed_activations"] += 1
            # The core completing a task the server already timed out gets "not found".
            if "Task not found when completing" in line:
                counts["workflow_task_timeouts"] += 1
    return counts


# --- the bursts ---------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def timed_burst(n: int, one: Any, timeout: float) -> dict[str, Any]:
    """burst(), with the CPU each kind of process spent on it: ms per item."""
    from _stack import cpu_seconds

    before = cpu_seconds(worker_command="bench_burst")
    result = await burst(n, one, timeout)
    after = cpu_seconds(worker_command="bench_burst")
    result["cpu_ms_each"] = {kind: round((after[kind] - before[kind]) * 1000 / n, 1) for kind in after}
    return result


async def burst(n: int, one: Any, timeout: float) -> dict[str, Any]:
    """Start ``one(i)`` for i in range(n) together; wall time, throughput and latency of the successes.
    Whatever has not finished after ``timeout`` seconds is cancelled and counted as unfinished."""
    latencies: list[float] = []
    failures: dict[str, int] = {}

    async def timed(i: int) -> None:
        t = time.perf_counter()
        try:
            await one(i)
        except Exception as e:  # noqa: BLE001 - counted and reported by type, the burst goes on
            failures[type(e).__name__] = failures.get(type(e).__name__, 0) + 1
            return
        latencies.append((time.perf_counter() - t) * 1000)

    t0 = time.perf_counter()
    tasks = [asyncio.ensure_future(timed(i)) for i in range(n)]
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    wall = time.perf_counter() - t0
    return {
        "started": n, "completed": len(latencies), "failures": failures, "unfinished": len(pending),
        "seconds": round(wall, 2),
        "per_second": round(len(latencies) / wall, 2),
        "p50_ms": round(percentile(latencies, 50)) if latencies else None,
        "p99_ms": round(percentile(latencies, 99)) if latencies else None,
        "max_ms": round(max(latencies)) if latencies else None,
        "mean_ms": round(statistics.fmean(latencies)) if latencies else None,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from _floor import SandboxedFloorWorkflow
    from _stack import bench_stack
    from bench_durable import FloorWorkflow

    import adkt.client
    from adkt.client import AdkClient, connect
    from examples import w1

    results: dict[str, Any] = {
        "conversations": args.conversations, "workers": args.workers, "repeats": args.repeats,
        "max_concurrent_workflow_tasks": args.workflow_tasks or "build_worker default",
        "max_cached_workflows": args.cache, "unsandboxed_workers": args.unsandboxed, "burst_timeout_seconds": args.burst_timeout, "python": sys.version.split()[0], "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
    }
    if args.failure_check_seconds is not None:
        # How often each waiting send asks Temporal whether its workflow task keeps failing: with
        # N sends in flight that is N / this history reads a second on the server.
        adkt.client.TASK_FAILURE_CHECK_SECONDS = args.failure_check_seconds
    results["failure_check_seconds"] = adkt.client.TASK_FAILURE_CHECK_SECONDS
    log_dir = args.out.parent
    async with bench_stack() as stack:
        client = await connect(stack.temporal.address)
        adk = AdkClient(client, task_queue=TASK_QUEUE, search_attributes=False)
        procs = await start_workers(args, stack.temporal.address, stack.database_url, log_dir)
        try:
            # Warm both workers (imports, sandbox, connections): a few turns and floors at once.
            await asyncio.gather(*(adk.send(w1.app.name, "u", f"warm-{i}", w1.USER_MESSAGE) for i in range(8)))
            await asyncio.gather(*(client.execute_workflow(
                FloorWorkflow.run, 0, id=f"warm-floor-{i}", task_queue=TASK_QUEUE) for i in range(8)))
            rounds = []
            for r in range(args.repeats):
                tag = uuid.uuid4().hex[:6]

                async def w1_turn(i: int, tag: str = tag) -> None:
                    result = await adk.send(w1.app.name, "u", f"burst-{tag}-{i}", w1.USER_MESSAGE)
                    w1.check_turn(result.events)

                async def floor(i: int, tag: str = tag) -> None:
                    got = await client.execute_workflow(
                        FloorWorkflow.run, 0, id=f"burst-floor-{tag}-{i}", task_queue=TASK_QUEUE)
                    assert got == 7, got

                async def sandboxed_floor(i: int, tag: str = tag) -> None:
                    got = await client.execute_workflow(
                        SandboxedFloorWorkflow.run, 0, id=f"burst-floor-sbx-{tag}-{i}", task_queue=TASK_QUEUE)
                    assert got == 7, got

                print(f"round {r + 1}: W1 burst of {args.conversations}...", flush=True)
                session = await timed_burst(args.conversations, w1_turn, args.burst_timeout)
                print(json.dumps(session), flush=True)
                print(f"round {r + 1}: floor burst of {args.conversations}...", flush=True)
                floor_result = await timed_burst(args.conversations, floor, args.burst_timeout)
                print(json.dumps(floor_result), flush=True)
                entry = {"session": session, "floor": floor_result,
                         "throughput_ratio": round(session["per_second"] / floor_result["per_second"], 3)}
                if args.sandboxed_floor:
                    print(f"round {r + 1}: sandboxed floor burst of {args.conversations}...", flush=True)
                    entry["floor_sandboxed"] = await timed_burst(args.conversations, sandboxed_floor, args.burst_timeout)
                    print(json.dumps(entry["floor_sandboxed"]), flush=True)
                    entry["throughput_ratio_to_sandboxed_floor"] = round(
                        session["per_second"] / entry["floor_sandboxed"]["per_second"], 3)
                rounds.append(entry)
            results["rounds"] = rounds
            results["throughput_ratio"] = round(
                sum(r["session"]["per_second"] for r in rounds) / sum(r["floor"]["per_second"] for r in rounds), 3)
            results["goal"] = ">= 0.95"
        finally:
            await stop_workers(procs)
        results["worker_log"] = warnings_in([log_dir / f"{args.out.stem}-worker-{n}.log" for n in range(args.workers)])
    results["load_average_at_end"] = os.getloadavg()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--workflow-tasks", type=int, default=None,
                        help="the workers' max_concurrent_workflow_tasks (default: build_worker's)")
    parser.add_argument("--cache", type=int, default=2000, help="the workers' max_cached_workflows")
    parser.add_argument("--burst-timeout", type=float, default=600.0,
                        help="seconds a burst may take; what has not finished then is cancelled and counted")
    parser.add_argument("--sandboxed-floor", action="store_true",
                        help="also a burst of the floor run in the sandbox, as W1 is (BenchFloorSandboxedWorkflow)")
    parser.add_argument("--unsandboxed", action="store_true",
                        help="workers run W1 without Temporal's sandbox, as `adkt worker --unsandboxed` does")
    parser.add_argument("--failure-check-seconds", type=float, default=None,
                        help="adkt.client.TASK_FAILURE_CHECK_SECONDS for this run (default: the client's)")
    parser.add_argument("--out", type=Path, default=RESULTS / "burst.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(child(args.address, args.database_url, args.workflow_tasks, args.cache, args.unsandboxed))
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    results = asyncio.run(run(args))
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: results[k] for k in ("throughput_ratio", "worker_log") if k in results}))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
