"""Where a W1 turn's CPU goes, against the floor's: per thread of the bench process, and with the
conversation's workflow sandboxed and not.

    python bench/bench_w1_threads.py [--turns 120]

Six kinds run on one worker process (the same stack bench_durable.py uses), one turn of each per
round: W1 through SessionWorkflow sandboxed (as `adkt worker` runs it) and unsandboxed; the
7-no-op-activity floor unsandboxed and sandboxed; and two floors that take W1 apart (bench/_bytes_floor.py):
the floor's 7 activities carrying a recorded W1 turn's inputs and results as plain JSON (what W1's
bytes cost Temporal), and the same whose last call also stores the 8 events a W1 turn stores, in one
write (what that write adds). What W1 costs beyond the second is the engine, its models and the
client's update. For each kind: wall-clock latency and process CPU per turn, as ratios to the
unsandboxed floor; the CPU each thread used per turn, read from /proc (the event loop's thread, the
workflow-activation threads, Temporal core's threads); and the time the garbage collector ran per
turn. Writes bench/results/w1-threads.json. Absolute numbers move with the machine's load; compare
within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _bytes_floor  # noqa: E402
from _bytes_floor import W1BytesFloorWorkflow  # noqa: E402
from _floor import SandboxedFloorWorkflow  # noqa: E402
from _stack import bench_stack  # noqa: E402
from bench_durable import (  # noqa: E402
    RESULTS,
    TASK_QUEUE,
    UNSANDBOXED_QUEUE,
    WORKER_OPTIONS,
    FloorWorkflow,
    noop,
    unsandboxed_worker,
)
from temporalio.api.enums.v1 import EventType  # noqa: E402
from temporalio.client import Client  # noqa: E402

from adk_core.sessions import GetSessionConfig, SessionService  # noqa: E402
from adk_temporal.worker import build_worker  # noqa: E402
from adk_temporal.workflows.contracts import session_workflow_id  # noqa: E402
from adkt.client import AdkClient, connect  # noqa: E402
from examples import w1  # noqa: E402


def thread_cpu_ms() -> dict[str, float]:
    """CPU ms each thread of this process has used, by thread name (the main thread as MAIN)."""
    ticks = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = collections.Counter()
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        except FileNotFoundError:  # the thread ended
            continue
        used["MAIN" if tid == str(os.getpid()) else name] += (int(fields[11]) + int(fields[12])) * 1000 / ticks
    return used


class GcClock:
    """Wall time spent in the garbage collector."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start


async def run(turns: int) -> dict:
    gc_clock = GcClock()
    async with bench_stack() as stack:
        client = await connect(stack.temporal.address)
        sandboxed, unsandboxed = AdkClient(client, task_queue=TASK_QUEUE), AdkClient(client, task_queue=UNSANDBOXED_QUEUE)
        worker = build_worker(client, [w1.app], task_queue=TASK_QUEUE,
                              workflows=[FloorWorkflow, SandboxedFloorWorkflow, W1BytesFloorWorkflow],
                              activities=[noop, _bytes_floor.echo, _bytes_floor.echo_store], **stack.services, **WORKER_OPTIONS)
        plain = unsandboxed_worker(client, stack.services, UNSANDBOXED_QUEUE, **WORKER_OPTIONS)
        async with worker, plain:
            conversation, count = uuid.uuid4().hex[:8], 0

            async def floor(workflow: type, arg: object = 0) -> None:
                nonlocal count
                count += 1
                await client.execute_workflow(workflow.run, arg, id=f"floor-{conversation}-{count}", task_queue=TASK_QUEUE)

            async def turn(adk: AdkClient, session: str) -> None:
                w1.check_turn((await adk.send(w1.app.name, "u", session, w1.USER_MESSAGE)).events)

            await turn(sandboxed, f"s-{conversation}")
            await turn(sandboxed, f"s-{conversation}")
            await record_w1_turn(client, stack.services["session_service"], f"s-{conversation}")

            kinds: dict[str, Callable[[], Awaitable[None]]] = {
                "w1_sandboxed": lambda: turn(sandboxed, f"s-{conversation}"),
                "w1_unsandboxed": lambda: turn(unsandboxed, f"u-{conversation}"),
                "floor": lambda: floor(FloorWorkflow),
                "floor_sandboxed": lambda: floor(SandboxedFloorWorkflow),
                "floor_w1_bytes": lambda: floor(W1BytesFloorWorkflow, False),
                "floor_w1_bytes_store": lambda: floor(W1BytesFloorWorkflow, True),
            }
            for one in kinds.values():  # warm-up
                for _ in range(5):
                    await one()
            wall, cpu, gc_s = collections.Counter(), collections.Counter(), collections.Counter()
            threads: dict[str, collections.Counter] = {k: collections.Counter() for k in kinds}
            # One turn of each kind per round, the order rotating: the machine's load, which moves
            # over seconds, falls on every kind alike (blocks of 30 turns a kind read 0.99x-1.10x
            # for the same code minutes apart).
            order = list(kinds)
            for round_ in range(turns):
                for kind in order[round_ % len(order):] + order[:round_ % len(order)]:
                    before, t, c, g = thread_cpu_ms(), time.perf_counter(), time.process_time(), gc_clock.seconds
                    await kinds[kind]()
                    wall[kind] += time.perf_counter() - t
                    cpu[kind] += time.process_time() - c
                    gc_s[kind] += gc_clock.seconds - g
                    for name, ms in thread_cpu_ms().items():
                        threads[kind][name] += ms - before.get(name, 0.0)
    n = turns
    return {
        "turns": n,
        "kinds": {
            kind: {
                "latency_ms": round(wall[kind] * 1000 / n, 2),
                "cpu_ms": round(cpu[kind] * 1000 / n, 2),
                "latency_ratio_to_floor": round(wall[kind] / wall["floor"], 3),
                "cpu_ratio_to_floor": round(cpu[kind] / cpu["floor"], 3),
                "gc_ms": round(gc_s[kind] * 1000 / n, 2),
                "threads_cpu_ms": {name: round(ms / n, 2) for name, ms in threads[kind].most_common() if ms > 0},
            }
            for kind in kinds
        },
    }


async def record_w1_turn(client: Client, sessions: SessionService, session_id: str) -> None:
    """What the bytes floor carries and stores (bench/_bytes_floor.py): the last W1 turn's activity inputs
    and results, read from its workflow's history, and the events it stored, read from the store."""
    history = await client.get_workflow_handle(session_workflow_id(w1.app.name, "u", session_id)).fetch_history()
    accepted = [i for i, e in enumerate(history.events)
                if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED][-1]
    inputs, results = [], []
    for e in history.events[accepted:]:
        if e.HasField("activity_task_scheduled_event_attributes"):
            inputs.append(json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data))
        elif e.HasField("activity_task_completed_event_attributes"):
            results.append(json.loads(e.activity_task_completed_event_attributes.result.payloads[0].data))
    assert len(inputs) == len(results) == 7, (len(inputs), len(results))
    _bytes_floor.W1_CALLS[:] = list(zip(inputs, results, strict=True))
    session = await sessions.get_session(app_name=w1.app.name, user_id="u", session_id=session_id,
                                         config=GetSessionConfig(num_recent_events=8))
    assert session is not None and len(session.events) == 8, "a W1 turn stores 8 events"
    _bytes_floor.W1_EVENTS[:] = session.events
    _bytes_floor.STORE.sessions = sessions
    _bytes_floor.STORE.session = await sessions.create_session(app_name=w1.app.name, user_id="u",
                                                         session_id=f"bytes-{uuid.uuid4().hex[:8]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=120, help="turns per kind, one of each kind per round")
    parser.add_argument("--out", type=Path, default=RESULTS / "w1-threads.json")
    args = parser.parse_args()
    results = asyncio.run(run(args.turns))
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    for kind, r in results["kinds"].items():
        print(f"{kind:16s} latency {r['latency_ms']:6.1f} ms ({r['latency_ratio_to_floor']:.3f}x)  "
              f"cpu {r['cpu_ms']:5.1f} ms ({r['cpu_ratio_to_floor']:.3f}x)  gc {r['gc_ms']:.2f} ms")
        print(f"{'':16s} threads {r['threads_cpu_ms']}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
