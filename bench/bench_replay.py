"""The workflow side of a W1 turn alone: recorded histories replayed, no server, no activities, no database.

    python bench/bench_replay.py [--turns 18] [--repeats 15] [--profile FILE] [--out FILE]

`bench_durable.py` measures whole turns, and on this shared 2-core machine two of its runs minutes apart
differ by about 1 ms of CPU a turn: more than most changes to the workflow code move it. Replaying takes
the dev server, the activities, Postgres and the network out: what is left is what a worker spends on a
turn's workflow tasks (decoding activations, our workflow code and the engine inside it, encoding its
commands), run the way a live worker runs them (its sandbox, data converter and interceptors, through
``adk_temporal.replay.replayer``). The floor is replayed alternately with W1 in the same process, so a
machine that slows down slows both: six runs of 2-30 replays each read W1 minus the floor as 1.63-2.25
ms a turn, where bench_durable's CPU over the floor reads 6-9 ms from one run to the next.

It records, on its own stack (bench/_stack.py), one W1 conversation of ``--turns`` turns (kept within one
run: SessionWorkflow continues as new past 1,000 history events, about 21 W1 turns) and the floor shaped
the same way: one long-lived workflow taking ``--turns`` updates, each running 7 no-op activities
(``_floor.FloorSessionWorkflow``, unsandboxed, as bench_durable's floor). Then it replays the two in
turn, ``--repeats`` times each, and reports the process CPU per turn of each (medians), their
difference and ratio. Each replay also pays the replayer's set-up once (a few ms, spread over the
turns); the difference cancels it, so read the difference.

``--profile FILE`` writes a cProfile of the workflow activations of three more W1 replays (the workflow
threads' share: our workflow code, the engine, temporalio's instance; not the event loop's). The
numbers go to bench/results/replay.json (``--out``). A live W1 turn costs more than its replay: the
activities, the client and the Rust core's network work are not here (bench_durable.py has them).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _floor import FloorSessionWorkflow  # noqa: E402
from _stack import bench_stack  # noqa: E402
from bench_durable import WORKER_OPTIONS, noop  # noqa: E402
from temporalio.api.enums.v1 import EventType  # noqa: E402
from temporalio.client import WorkflowHistory  # noqa: E402
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner  # noqa: E402

from adk_temporal.replay import replayer  # noqa: E402
from adk_temporal.worker import build_worker  # noqa: E402
from adk_temporal.workflows import session_workflow_id  # noqa: E402
from adkt.client import AdkClient, connect  # noqa: E402
from examples import w1  # noqa: E402

TASK_QUEUE = "bench-replay"
RESULTS = ROOT / "bench" / "results"
_UPDATE_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
_CONTINUED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW


async def record(turns: int) -> tuple[WorkflowHistory, WorkflowHistory]:
    """One W1 conversation of ``turns`` turns and one floor session of as many, each a single run."""
    async with bench_stack() as stack:
        client = await connect(stack.temporal.address)
        adk = AdkClient(client, task_queue=TASK_QUEUE)
        worker = build_worker(client, [w1.app], task_queue=TASK_QUEUE, workflows=[FloorSessionWorkflow],
                              activities=[noop], **stack.services, **WORKER_OPTIONS)
        async with worker:
            conversation = f"replay-{uuid.uuid4().hex[:8]}"
            for _ in range(turns):
                w1.check_turn((await adk.send(w1.app.name, "u1", conversation, w1.USER_MESSAGE)).events)
            w1_id = session_workflow_id(w1.app.name, "u1", conversation)
            floor = await client.start_workflow(FloorSessionWorkflow.run, id=f"floor-{conversation}", task_queue=TASK_QUEUE)
            for turn in range(turns):
                await floor.execute_update(FloorSessionWorkflow.turn, turn)
            await floor.signal(FloorSessionWorkflow.close)
            await floor.result()
            w1_history = await client.get_workflow_handle(w1_id).fetch_history()
            floor_history = await floor.fetch_history()
    for name, history in (("W1", w1_history), ("floor", floor_history)):
        done = sum(1 for e in history.events if e.event_type == _UPDATE_COMPLETED)
        if done != turns or any(e.event_type == _CONTINUED for e in history.events):
            raise SystemExit(
                f"the {name} conversation did not keep its {turns} turns in one run (the run fetched holds {done}; "
                "SessionWorkflow continues as new past 1,000 history events): use fewer --turns"
            )
    return w1_history, floor_history


async def replay_cpu_ms(replaying: Replayer, history: WorkflowHistory) -> float:
    """Process CPU of one replay of ``history``, in ms."""
    start = time.process_time()
    await replaying.replay_workflow(history)  # raises the replay's failure, if any
    return (time.process_time() - start) * 1000


async def profile_activations(path: str, replay: Any) -> None:
    """cProfile of the workflow activations of three replays, written to ``path``. Activations run on
    the worker's workflow threads, one at a time here, where a profiler enabled on the event loop does
    not see them: this wraps temporalio's private ``_RunningWorkflow.activate`` (bench code only)."""
    from temporalio.worker import _workflow

    profile = cProfile.Profile(time.thread_time)
    activate = _workflow._RunningWorkflow.activate

    def profiled(self: Any, act: Any) -> Any:
        profile.enable()
        try:
            return activate(self, act)
        finally:
            profile.disable()

    _workflow._RunningWorkflow.activate = profiled  # type: ignore[method-assign]
    try:
        for _ in range(3):
            await replay()
    finally:
        _workflow._RunningWorkflow.activate = activate  # type: ignore[method-assign]
    profile.dump_stats(path)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    print(f"recording {args.turns} turns of W1 and of the floor...", flush=True)
    w1_history, floor_history = await record(args.turns)
    w1_replayer = replayer([w1.app])
    floor_replayer = Replayer(workflows=[FloorSessionWorkflow], workflow_runner=UnsandboxedWorkflowRunner())
    await replay_cpu_ms(w1_replayer, w1_history)  # warm: imports, compiled code, caches
    await replay_cpu_ms(floor_replayer, floor_history)
    w1_ms: list[float] = []
    floor_ms: list[float] = []
    for i in range(args.repeats):  # alternating, so drift in the machine's load falls on both alike
        order = ((w1_replayer, w1_history, w1_ms), (floor_replayer, floor_history, floor_ms))
        for replaying, history, into in order if i % 2 == 0 else reversed(order):
            into.append(await replay_cpu_ms(replaying, history) / args.turns)
    if args.profile:
        await profile_activations(args.profile, lambda: replay_cpu_ms(w1_replayer, w1_history))
    w1_median, floor_median = statistics.median(w1_ms), statistics.median(floor_ms)
    return {
        "turns": args.turns,
        "repeats": args.repeats,
        "w1_history_events": len(w1_history.events),
        "floor_history_events": len(floor_history.events),
        "w1_cpu_ms_per_turn": round(w1_median, 3),
        "floor_cpu_ms_per_turn": round(floor_median, 3),
        "w1_minus_floor_ms": round(w1_median - floor_median, 3),
        "ratio": round(w1_median / floor_median, 3),
        "w1_spread_ms": [round(min(w1_ms), 3), round(max(w1_ms), 3)],
        "floor_spread_ms": [round(min(floor_ms), 3), round(max(floor_ms), 3)],
        "python": sys.version.split()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=18, help="turns recorded (within one run: at most about 21)")
    parser.add_argument("--repeats", type=int, default=15, help="replays of each history, alternating")
    parser.add_argument("--profile", help="write a cProfile of W1 replays' workflow activations to this file")
    parser.add_argument("--out", type=Path, default=RESULTS / "replay.json")
    args = parser.parse_args()
    if args.turns < 1 or args.repeats < 1:
        parser.error("--turns and --repeats must be at least 1")
    results = asyncio.run(run(args))
    print(f"W1 workflow side {results['w1_cpu_ms_per_turn']:.3f} ms CPU a turn (spread {results['w1_spread_ms']}), "
          f"floor {results['floor_cpu_ms_per_turn']:.3f} ms (spread {results['floor_spread_ms']}): "
          f"W1 minus floor {results['w1_minus_floor_ms']:.3f} ms, ratio {results['ratio']:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
