"""What entering a workflow's sandbox costs a W1 turn: temporalio's own entry against the one-step
entry workflows/sandbox.py installs, on one worker, in alternating blocks of turns.

    python bench/bench_sandbox_entry.py [--turns 60] [--pairs 12]

Both entries make the same swaps; only how they are made differs, so the two can alternate on one
conversation in one process (the shared machine's load then moves both alike). Per block: the CPU the
workflow-activation threads used per turn (thread CPU time around temporalio's sandboxed ``activate``,
which includes the entry), process CPU per turn and latency. Reported: each block, the means, and the
difference within each pair (one-step minus temporalio's). Writes bench/results/sandbox-entry.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _stack import bench_stack  # noqa: E402
from bench_durable import RESULTS, TASK_QUEUE, WORKER_OPTIONS  # noqa: E402
from temporalio.worker.workflow_sandbox import _runner  # noqa: E402

from adk_temporal.worker import build_worker  # noqa: E402
from adk_temporal.workflows import sandbox  # noqa: E402
from adkt.client import AdkClient, connect  # noqa: E402
from examples import w1  # noqa: E402

ONE_STEP = sandbox._SandboxEntry.applied
activation_cpu = [0.0]


def count_activation_cpu() -> None:
    activate = _runner._Instance.activate

    def timed(self, act):  # type: ignore[no-untyped-def]
        started = time.thread_time()
        try:
            return activate(self, act)
        finally:
            activation_cpu[0] += time.thread_time() - started

    _runner._Instance.activate = timed  # type: ignore[method-assign]


def use_entry(one_step: bool) -> None:
    sandbox._SandboxEntry.applied = ONE_STEP if one_step else (lambda self: self.importer.applied())  # type: ignore[method-assign]


async def run(turns: int, pairs: int) -> dict:
    count_activation_cpu()
    blocks: dict[str, list[dict[str, float]]] = {"temporalio": [], "one_step": []}
    async with bench_stack() as stack:
        client = await connect(stack.temporal.address)
        adk = AdkClient(client, task_queue=TASK_QUEUE)
        async with build_worker(client, [w1.app], task_queue=TASK_QUEUE, **stack.services, **WORKER_OPTIONS):
            conversation = f"entry-{uuid.uuid4().hex[:8]}"

            async def turn() -> None:
                w1.check_turn((await adk.send(w1.app.name, "u", conversation, w1.USER_MESSAGE)).events)

            for _ in range(20):  # warm up: the workflow cached, pools open
                await turn()
            for pair in range(pairs):
                for one_step in (True, False) if pair % 2 == 0 else (False, True):
                    use_entry(one_step)
                    activation_cpu[0] = 0.0
                    wall, cpu = time.perf_counter(), time.process_time()
                    for _ in range(turns):
                        await turn()
                    blocks["one_step" if one_step else "temporalio"].append({
                        "latency_ms": (time.perf_counter() - wall) * 1000 / turns,
                        "process_cpu_ms": (time.process_time() - cpu) * 1000 / turns,
                        "activation_cpu_ms": activation_cpu[0] * 1000 / turns,
                    })
            use_entry(True)
    diffs = [a["activation_cpu_ms"] - b["activation_cpu_ms"] for a, b in zip(blocks["one_step"], blocks["temporalio"], strict=True)]
    return {
        "turns_per_block": turns,
        "blocks": blocks,
        "mean": {k: {m: statistics.mean(b[m] for b in v) for m in v[0]} for k, v in blocks.items()},
        "activation_cpu_diff_ms": {"each_pair": diffs, "median": statistics.median(diffs), "mean": statistics.mean(diffs)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=60, help="turns per block")
    parser.add_argument("--pairs", type=int, default=12, help="pairs of blocks, alternating which goes first")
    parser.add_argument("--out", type=Path, default=RESULTS / "sandbox-entry.json")
    args = parser.parse_args()
    result = asyncio.run(run(args.turns, args.pairs))
    for kind, means in result["mean"].items():
        print(f"{kind:11} " + "  ".join(f"{m} {v:.3f}" for m, v in means.items()))
    diff = result["activation_cpu_diff_ms"]
    print(f"activation CPU a turn, one-step minus temporalio's: median {diff['median']:+.3f} ms, mean {diff['mean']:+.3f} ms")
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
