"""Where a W1 turn's CPU goes, function by function: thread CPU inside named functions, W1 against the floor.

    python bench/bench_w1_phases.py [--turns 60] [--rounds 2] [--out FILE]

`bench_w1_threads.py` splits a turn's CPU by thread; this splits it by function. One worker serves W1
through SessionWorkflow (sandboxed, as `adkt worker` runs it) and the unsandboxed 7-no-op-activity
floor; ``--rounds`` times, ``--turns`` W1 turns then as many floor workflows. Each function in
``PHASES`` is wrapped to add the CPU time of the thread it runs on (``time.thread_time_ns``) while it
runs, callees included, so the rows nest: temporalio's activation (``_WorkflowInstanceImpl.activate``)
holds running the workflow's code (``_run_once``), which holds scheduling its activities
(``workflow_start_activity``), and so on. Async functions are wrapped only where they never suspend
(``build_request``): around a suspension the clock would also count the next activation's work. The
activities' rows are their handlers on the event loop, whose CPU includes whatever the loop ran
while they awaited the server: read them against the floor's no-op, not alone.

What it is for: a change to the engine or the glue shows up here as microseconds a turn in the row
it touches, where a full bench_durable.py run cannot tell 0.3 ms from the machine's drift. Each
wrapper costs about a microsecond a call, so rows with many calls read a little high. It relies on
temporalio's private names (checked against 1.35); a name it cannot find is reported and skipped.
Writes bench/results/w1-phases.json.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import importlib
import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _stack import bench_stack  # noqa: E402
from bench_durable import RESULTS, TASK_QUEUE, WORKER_OPTIONS, FloorWorkflow, noop  # noqa: E402

from adk_temporal.worker import build_worker  # noqa: E402
from adkt.client import AdkClient, connect  # noqa: E402
from examples import w1  # noqa: E402

PHASES: tuple[tuple[str, str, bool], ...] = (
    # (module, qualified name, async): temporalio's activation and its parts
    ("temporalio.worker._workflow", "_RunningWorkflow.activate", False),
    ("temporalio.worker._workflow_instance", "_WorkflowInstanceImpl.activate", False),
    ("temporalio.worker._workflow_instance", "_WorkflowInstanceImpl._apply", False),
    ("temporalio.worker._workflow_instance", "_WorkflowInstanceImpl._apply_resolve_activity", False),
    ("temporalio.worker._workflow_instance", "_WorkflowInstanceImpl._convert_payloads", False),
    ("temporalio.worker._workflow_instance", "_WorkflowInstanceImpl._run_once", False),
    ("temporalio.worker._workflow_instance", "_WorkflowInstanceImpl.workflow_start_activity", False),
    ("temporalio.worker._workflow_instance", "_ActivityHandle._apply_schedule_command", False),
    ("temporalio.worker._workflow_instance", "_WorkflowInstanceImpl._check_condition", False),
    # the engine and our glue, inside _run_once
    ("adk_core.flow.llm_flow", "build_request", True),
    ("adk_core.flow.llm_flow", "_add_contents", False),
    ("adk_core.flow.llm_flow", "resolve_context", True),
    ("adk_core.flow.llm_flow", "_model_event", False),
    ("adk_temporal.workflows.runtime", "TemporalRuntime._answer_slot", False),
    ("adk_temporal.workflows.runtime", "TemporalRuntime.new_id", False),
    ("adk_temporal.workflows.runtime", "TemporalRuntime.now", False),
    ("adk_temporal.workflows._outcomes", "KeptOutcomes.add", False),
    # payload conversion, in the workflow and the activities alike
    ("adk_temporal.workflows.converter", "AdkPayloadConverter.to_payloads", False),
    # the activities' handlers, on the event loop
    ("temporalio.worker._activity", "_ActivityWorker._handle_start_activity_task", True),
)

_cpu_ns: collections.Counter[str] = collections.Counter()
_calls: collections.Counter[str] = collections.Counter()


def _key(qualname: str, args: tuple[Any, ...]) -> str:
    if qualname.endswith("_handle_start_activity_task"):
        return f"{qualname} [{args[2].activity_type}]"  # (self, task_token, start, running_activity)
    return qualname


def _wrapped(qualname: str, original: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    if is_async:
        @functools.wraps(original)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time_ns()
            try:
                return await original(*args, **kwargs)
            finally:
                key = _key(qualname, args)
                _cpu_ns[key] += time.thread_time_ns() - started
                _calls[key] += 1
        return timed_async

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time_ns()
        try:
            return original(*args, **kwargs)
        finally:
            _cpu_ns[qualname] += time.thread_time_ns() - started
            _calls[qualname] += 1
    return timed


def install() -> list[str]:
    """Wrap every PHASES function that exists; returns the names that could not be found."""
    missing = []
    for module_name, qualname, is_async in PHASES:
        try:
            owner: Any = importlib.import_module(module_name)
            *path, name = qualname.split(".")
            for part in path:
                owner = getattr(owner, part)
            setattr(owner, name, _wrapped(qualname, getattr(owner, name), is_async))
        except (ImportError, AttributeError):
            missing.append(f"{module_name}:{qualname}")
    return missing


def per_turn(turns: int) -> dict[str, dict[str, float]]:
    return {
        key: {"us_per_turn": round(_cpu_ns[key] / turns / 1e3, 1), "calls_per_turn": round(_calls[key] / turns, 2)}
        for key in sorted(_cpu_ns, key=lambda k: -_cpu_ns[k])
    }


async def run(turns: int, rounds: int) -> dict[str, Any]:
    missing = install()
    results: dict[str, Any] = {"turns": turns, "rounds": rounds, "missing": missing, "w1": [], "floor": []}
    async with bench_stack() as stack:
        client = await connect(stack.temporal.address)
        adk = AdkClient(client, task_queue=TASK_QUEUE)
        worker = build_worker(
            client, [w1.app], task_queue=TASK_QUEUE, workflows=[FloorWorkflow], activities=[noop],
            **stack.services, **WORKER_OPTIONS,
        )
        async with worker:
            conversation = f"phases-{uuid.uuid4().hex[:8]}"
            for _ in range(5):  # warm: the conversation exists, every statement is prepared
                await adk.send("w1", "u1", conversation, w1.USER_MESSAGE)
                await client.execute_workflow(FloorWorkflow.run, 0, id=f"phases-floor-{uuid.uuid4().hex}", task_queue=TASK_QUEUE)
            for _ in range(rounds):
                _cpu_ns.clear()
                _calls.clear()
                for _ in range(turns):
                    w1.check_turn((await adk.send("w1", "u1", conversation, w1.USER_MESSAGE)).events)
                results["w1"].append(per_turn(turns))
                _cpu_ns.clear()
                _calls.clear()
                for _ in range(turns):
                    await client.execute_workflow(
                        FloorWorkflow.run, 0, id=f"phases-floor-{uuid.uuid4().hex}", task_queue=TASK_QUEUE
                    )
                results["floor"].append(per_turn(turns))
    return results


def report(results: dict[str, Any]) -> None:
    if results["missing"]:
        print("not found (skipped):", ", ".join(results["missing"]))
    names = list(dict.fromkeys(k for kind in ("w1", "floor") for r in results[kind] for k in r))
    print(f"{'function':72s} {'W1 us/turn':>22s} {'floor us/turn':>22s}  calls a turn (W1, floor)")
    for name in names:
        w1_us = [r.get(name, {}).get("us_per_turn", 0.0) for r in results["w1"]]
        floor_us = [r.get(name, {}).get("us_per_turn", 0.0) for r in results["floor"]]
        calls = (results["w1"][0].get(name, {}).get("calls_per_turn", 0), results["floor"][0].get(name, {}).get("calls_per_turn", 0))
        print(f"{name[:72]:72s} {', '.join(f'{x:.0f}' for x in w1_us):>22s} {', '.join(f'{x:.0f}' for x in floor_us):>22s}  {calls[0]}, {calls[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=60, help="W1 turns, then as many floor workflows, per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "w1-phases.json")
    args = parser.parse_args()
    results = asyncio.run(run(args.turns, args.rounds))
    report(results)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
