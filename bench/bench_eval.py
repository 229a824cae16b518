"""A 100-case eval suite with a 50 ms model: durable vs in-process, parallel vs sequential.

Each case: the user asks for a lookup, the model (a scripted model that sleeps 50 ms per call) calls
the ``lookup`` tool (mocked), then answers; one metric checks the answer. Two model calls and one
tool call per case, so a case costs at least 100 ms of model time.

    in-process   adk_core.eval.run_eval_suite (in-memory sessions, nothing stored)
    durable      EvalSuiteWorkflow on one headless dev server (TEMPORAL_DEV_ARGS), sessions and
                 results in an embedded Postgres (fsync off), one in-process worker (build_worker)
    sequential   one case at a time (parallel=False / max_concurrency=1)
    parallel     all cases at once (or --parallel N)

Run:  cd /work/main && .venv/bin/python bench/bench_eval.py [--cases 100] [--latency-ms 50] [--parallel N]
Writes bench/results/eval.json (eval-parallel<N>.json with --parallel N).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # workers import the cases as bench_eval:cases

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from adk_core import LlmAgent, LlmRequest, LlmResponse  # noqa: E402
from adk_core.eval import EvalCase, EvalSuiteResult, ToolMock, metric, run_eval_suite  # noqa: E402
from adk_core.models import function_call_response, text_response  # noqa: E402

N_CASES = 100
LATENCY_S = 0.05
SUITE = "bench_eval:cases"
WORKER_OPTIONS: dict[str, Any] = dict(
    max_concurrent_workflow_tasks=100, max_concurrent_activities=200, max_concurrent_local_activities=200,
    max_cached_workflows=1000,
)
RESULTS = ROOT / "bench" / "results"


class SleepyModel:
    """A scripted model (a function of the request) that takes LATENCY_S per call."""

    name = "sleepy-scripted"

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        await asyncio.sleep(LATENCY_S)
        responses = [r.response for c in request.contents for r in c.function_responses()]
        yield text_response(f"value {responses[-1]['value']}") if responses else function_call_response("lookup", {"key": "k"})


def lookup(key: str) -> dict:
    """Look a key up in an external service."""
    raise RuntimeError("mocked in eval")


def _value(i: int) -> Callable[[dict], dict]:
    return lambda args: {"value": i}


def _case(i: int) -> EvalCase:
    return EvalCase(
        f"bench-{i:03d}",
        app_or_agent=LlmAgent(name="calc", model=SleepyModel(), tools=[lookup]),
        tool_mocks={"lookup": ToolMock(execute=_value(i))},
        first_message=f"look up k for case {i}",
        metrics=[metric("answered", lambda trace, i=i: trace.final_response() == f"value {i}")],
    )


cases = [_case(i) for i in range(N_CASES)]


def _check(result: EvalSuiteResult, n: int) -> None:
    if result.summary.passed != n:
        raise SystemExit(f"expected {n} passed cases, got {result.summary}")


async def _timed(fn: Callable[[], Awaitable[EvalSuiteResult]], n: int, cpu: dict[str, float], name: str) -> float:
    """Wall seconds of ``fn``; its CPU seconds (this process: worker, client and in-process runs) go to ``cpu``."""
    c0, t0 = time.process_time(), time.perf_counter()
    _check(await fn(), n)
    cpu[name] = time.process_time() - c0
    return time.perf_counter() - t0


async def run_bench(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    from _stack import bench_stack

    from adk_temporal.activities.eval_cases import load_cases
    from adk_temporal.worker import build_worker
    from adk_temporal.workflows.eval import EvalSuiteInput, EvalSuiteRunResult, EvalSuiteWorkflow
    from adkt.client import connect

    suite = load_cases(SUITE)[: args.cases]  # the objects the worker serves (bench_eval, not __main__)
    names = [c.name for c in suite]
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    console.print(f"in-process: {len(suite)} cases, {args.latency_ms} ms per model call")
    sequential, parallel = "in_process_sequential", "in_process_parallel"
    wall[sequential] = await _timed(lambda: run_eval_suite(suite, parallel=False), len(suite), cpu, sequential)
    wall[parallel] = await _timed(lambda: run_eval_suite(suite, max_concurrency=args.parallel), len(suite), cpu, parallel)

    async with bench_stack() as stack:
        client = await connect(stack.temporal.address, namespace=stack.temporal.namespace,
                               database_url=stack.database_url)
        worker = build_worker(client, [], task_queue="bench-eval", eval_cases=[SUITE], **stack.services, **WORKER_OPTIONS)
        task = asyncio.create_task(worker.run())

        async def durable(concurrency: int | None, selected: list[str] = names) -> EvalSuiteRunResult:
            run_id = f"bench-{uuid.uuid4().hex[:8]}"
            return await client.execute_workflow(
                EvalSuiteWorkflow.run,
                EvalSuiteInput(suite=SUITE, run_id=run_id, cases=selected, max_concurrency=concurrency),
                id=f"adk-eval/{run_id}", task_queue="bench-eval", result_type=EvalSuiteRunResult,
            )

        try:
            console.print("durable: warm-up (5 cases)")
            await durable(None, names[:5])
            for name, concurrency in (("durable_sequential", 1), ("durable_parallel", args.parallel)):
                wall[name] = await _timed(lambda c=concurrency: durable(c), len(suite), cpu, name)
        finally:
            await worker.shutdown()
            await asyncio.gather(task, return_exceptions=True)
    return {
        "cases": len(suite), "latency_ms": args.latency_ms, "parallel": args.parallel or "all",
        "model_calls_per_case": 2, "wall_s": wall, "cpu_s": cpu, "cpus": os.cpu_count(),
        "ratios": {
            "durable/in_process, sequential": wall["durable_sequential"] / wall["in_process_sequential"],
            "durable/in_process, parallel": wall["durable_parallel"] / wall["in_process_parallel"],
            "sequential/parallel, in-process": wall["in_process_sequential"] / wall["in_process_parallel"],
            "sequential/parallel, durable": wall["durable_sequential"] / wall["durable_parallel"],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=N_CASES)
    parser.add_argument("--latency-ms", type=float, default=LATENCY_S * 1000)
    parser.add_argument("--parallel", type=int, default=None, help="trials at once when parallel (default: all)")
    args = parser.parse_args()
    import bench_eval  # the module the worker serves: its latency is the one that counts

    bench_eval.LATENCY_S = args.latency_ms / 1000
    console = Console()
    results = asyncio.run(run_bench(args, console))
    table = Table(title=f"{results['cases']} eval cases, {args.latency_ms:.0f} ms per model call, 2 calls per case")
    for column in ("run", "wall s", "ms per case", "CPU ms per case"):
        table.add_column(column)
    for name, seconds in results["wall_s"].items():
        per_case = 1000 / results["cases"]
        table.add_row(name.replace("_", " "), f"{seconds:.2f}", f"{seconds * per_case:.1f}",
                      f"{results['cpu_s'][name] * per_case:.1f}")
    console.print(table)
    for name, ratio in results["ratios"].items():
        console.print(f"{name}: {ratio:.2f}x")
    RESULTS.mkdir(exist_ok=True)
    name = "eval.json" if args.parallel is None else f"eval-parallel{args.parallel}.json"
    (RESULTS / name).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
