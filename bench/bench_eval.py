"""An eval suite with a realistic 1 s model, 20 trials at once: durable wall time vs in-process, worker CPU per trial.

Each case: the user asks for a lookup, the model (a scripted model that sleeps LATENCY_S per call)
calls the ``lookup`` tool (mocked), then answers; one metric checks the answer. Two model calls and
one tool call per case, so a case takes at least 2 s of model time and a suite of N cases, 20 at
once, at least N / 20 * 2 s.

    in-process   adk_core.eval.run_eval_suite (in-memory sessions, nothing stored)
    durable      EvalSuiteWorkflow on one headless dev server (TEMPORAL_DEV_ARGS), sessions and
                 results in an embedded Postgres (fsync off), one in-process worker (build_worker);
                 twice: model calls as local activities (the default, ``durable``) and as activities
                 of their own (``model_calls="activity"``, ``durable ... activities``)

Reports wall seconds of each, the ratio durable / in-process (target <= 1.15 at 1 s latency), and
CPU per trial: this process (the worker, plus the client's few calls) and the dev server's and
Postgres's processes (psutil), measured over the durable run alone.

Run:  cd /work/main && .ci-venv/bin/python bench/bench_eval.py [--cases 100] [--latency-ms 1000] [--parallel 20] [--sequential]
Writes bench/results/eval.json (eval-<latency>ms-p<parallel>.json when either differs from the default).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
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
LATENCY_S = 1.0
JITTER = 0.0
"""Model latency spread: each call takes LATENCY_S * (1 +- JITTER), fixed per case and call (``--jitter``)."""
PARALLEL = 20
TARGET_RATIO = 1.15
SUITE = "bench_eval:cases"
WORKER_OPTIONS: dict[str, Any] = dict(
    max_concurrent_workflow_tasks=100, max_concurrent_activities=200, max_concurrent_local_activities=200,
    max_cached_workflows=1000,
)
RESULTS = ROOT / "bench" / "results"
MODEL_CALLS = {"": "local_activity", "_activities": "activity"}
"""Durable runs by EvalSuiteInput.model_calls: the default (local activities) and activities of their own."""


class SleepyModel:
    """A scripted model (a function of the request) that takes LATENCY_S per call."""

    name = "sleepy-scripted"

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        responses = [r.response for c in request.contents for r in c.function_responses()]
        await asyncio.sleep(_latency(request, call=len(responses)))
        yield text_response(f"value {responses[-1]['value']}") if responses else function_call_response("lookup", {"key": "k"})


def _latency(request: LlmRequest, call: int) -> float:
    """LATENCY_S, spread by +-JITTER: the same for a case's call in every run (a hash of the case's
    message and the call's number), so in-process and durable runs wait exactly as long."""
    if not JITTER:
        return LATENCY_S
    first = next((p.text for c in request.contents for p in c.parts if p.text), "")
    u = int(hashlib.sha256(f"{first}/{call}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return LATENCY_S * (1 + JITTER * (2 * u - 1))


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


def _server_cpu() -> dict[str, float]:
    """CPU seconds so far of the dev server and Postgres this process started (_stack.cpu_seconds)."""
    from _stack import cpu_seconds

    totals = cpu_seconds()
    return {"temporal": totals["temporal"], "postgres": totals["postgres"]}


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
    modes = [("parallel", args.parallel), *([("sequential", 1)] if args.sequential else [])]
    console.print(f"in-process: {len(suite)} cases, {args.latency_ms:.0f} ms per model call")
    for mode, concurrency in modes:
        name = f"in_process_{mode}"
        wall[name] = await _timed(lambda c=concurrency: run_eval_suite(suite, max_concurrency=c), len(suite), cpu, name)

    async with bench_stack() as stack:
        client = await connect(stack.temporal.address, namespace=stack.temporal.namespace,
                               database_url=stack.database_url)
        worker = build_worker(client, [], task_queue="bench-eval", eval_cases=[SUITE], **stack.services, **WORKER_OPTIONS)
        task = asyncio.create_task(worker.run())

        async def durable(concurrency: int | None, selected: list[str] = names,
                          model_calls: str = "local_activity") -> EvalSuiteRunResult:  # fmt: skip
            run_id = f"bench-{uuid.uuid4().hex[:8]}"
            return await client.execute_workflow(
                EvalSuiteWorkflow.run,
                EvalSuiteInput(suite=SUITE, run_id=run_id, cases=selected, max_concurrency=concurrency,
                               model_calls=model_calls),  # fmt: skip
                id=f"adk-eval/{run_id}", task_queue="bench-eval", result_type=EvalSuiteRunResult,
            )

        server_cpu: dict[str, dict[str, float]] = {}
        try:
            console.print("durable: warm-up (5 cases, each way of calling models)")
            for calls in MODEL_CALLS.values():
                await durable(None, names[:5], calls)
            for mode, concurrency in modes:
                for suffix, calls in MODEL_CALLS.items():
                    name = f"durable_{mode}{suffix}"
                    before = _server_cpu()
                    wall[name] = await _timed(lambda c=concurrency, m=calls: durable(c, model_calls=m), len(suite), cpu, name)
                    after = _server_cpu()
                    server_cpu[name] = {kind: after[kind] - before[kind] for kind in after}
        finally:
            await worker.shutdown()
            await asyncio.gather(task, return_exceptions=True)
    per_trial = 1000.0 / len(suite)
    ratios = {
        f"durable{suffix}/in_process, {mode}": wall[f"durable_{mode}{suffix}"] / wall[f"in_process_{mode}"]
        for mode, _ in modes for suffix in MODEL_CALLS
    }
    return {
        "cases": len(suite), "latency_ms": args.latency_ms, "jitter": args.jitter, "parallel": args.parallel, "model_calls_per_case": 2,
        "wall_s": wall, "cpu_s": cpu, "cpus": os.cpu_count(), "load_average": os.getloadavg(),
        "worker_cpu_ms_per_trial": {k: v * per_trial for k, v in cpu.items() if k.startswith("durable")},
        "server_cpu_ms_per_trial": {k: sum(v.values()) * per_trial for k, v in server_cpu.items()},
        "temporal_cpu_ms_per_trial": {k: v["temporal"] * per_trial for k, v in server_cpu.items()},
        "postgres_cpu_ms_per_trial": {k: v["postgres"] * per_trial for k, v in server_cpu.items()},
        "ratios": ratios, "target_ratio": TARGET_RATIO,
        "meets_target": ratios["durable/in_process, parallel"] <= TARGET_RATIO,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=N_CASES)
    parser.add_argument("--latency-ms", type=float, default=LATENCY_S * 1000)
    parser.add_argument("--parallel", type=int, default=PARALLEL, help="trials at once (default 20)")
    parser.add_argument("--jitter", type=float, default=JITTER,
                        help="spread model latency by +- this fraction (0.5: 0.5-1.5 s at 1 s), the same per call in every run")
    parser.add_argument("--sequential", action="store_true", help="also one trial at a time (slow at 1 s latency)")
    args = parser.parse_args()
    import bench_eval  # the module the worker serves: its latency is the one that counts

    bench_eval.LATENCY_S = args.latency_ms / 1000
    bench_eval.JITTER = args.jitter
    console = Console()
    results = asyncio.run(run_bench(args, console))
    spread = f" (+-{args.jitter:.0%})" if args.jitter else ""
    table = Table(title=f"{results['cases']} eval cases, {args.latency_ms:.0f} ms{spread} per model call, 2 calls per case, "
                        f"{args.parallel} at once")  # fmt: skip
    for column in ("run", "wall s", "ms per case", "CPU ms per case (this process)"):
        table.add_column(column)
    for name, seconds in results["wall_s"].items():
        per_case = 1000 / results["cases"]
        table.add_row(name.replace("_", " "), f"{seconds:.2f}", f"{seconds * per_case:.1f}",
                      f"{results['cpu_s'][name] * per_case:.1f}")
    console.print(table)
    for name, ratio in results["ratios"].items():
        console.print(f"{name}: {ratio:.3f}x (target <= {TARGET_RATIO}x)")
    for name, ms in results["worker_cpu_ms_per_trial"].items():
        temporal, postgres = results["temporal_cpu_ms_per_trial"][name], results["postgres_cpu_ms_per_trial"][name]
        console.print(f"{name}: worker CPU {ms:.1f} ms per trial, dev server {temporal:.1f} ms, Postgres {postgres:.1f} ms")
    console.print(f"load average during the run: {results['load_average']}")
    RESULTS.mkdir(exist_ok=True)
    default = args.latency_ms == LATENCY_S * 1000 and args.parallel == PARALLEL
    spread = f"-jitter{args.jitter:g}" if args.jitter else ""
    name = f"eval{spread}.json" if default else f"eval-{args.latency_ms:.0f}ms-p{args.parallel}{spread}.json"
    (RESULTS / name).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
