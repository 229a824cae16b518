"""One turn with many sequential tool calls: what it costs Temporal's history, per 1,000 calls.

Starts its own stack (tuned headless dev server, embedded Postgres with fsync off, one in-process
worker), then sends ONE message to a SessionWorkflow whose scripted model calls the tool
``step(i)`` ``--calls`` times in a row and then answers "done" (max_llm_calls raised to allow it).

Reported: wall time and this process's CPU time for the turn (the worker and a thin client); the
workflow tasks' thread CPU, median by fifth of the turn (a step that costs the same at the turn's
end as at its start keeps the turn linear in its tool calls: temporalio's
``_RunningWorkflow.activate`` is wrapped to time them); for every run of the conversation's workflow (continue-as-new
makes more than one): history events and bytes; the largest single history event (an upper bound
on the largest payload, since a payload travels inside one event) against Temporal's 512 KB
payload warning and 2 MB payload limit; per-run events and bytes against the 10,240-event /
10 MB history warnings (50K events / 50 MB hard limits). Also the same per 1,000 calls.

Run:  cd /work/main && .venv/bin/python -m bench.bench_long_turn --calls 1000
Writes bench/results/long-turn-<calls>.json.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # _stack, also under python -m bench.bench_long_turn

from _stack import bench_stack  # noqa: E402
from temporalio.api.history.v1 import History  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.worker import _workflow as temporal_workflow_worker  # noqa: E402

from adk_core import App, LlmAgent, LlmRequest, LlmResponse, ScriptedModel  # noqa: E402
from adk_core.models import function_call_response, text_response  # noqa: E402
from adk_temporal.worker import build_worker  # noqa: E402
from adk_temporal.workflows import session_workflow_id  # noqa: E402
from adkt.client import AdkClient, connect  # noqa: E402

APP = "long-turn"
TASK_QUEUE = "bench-long-turn"
PAYLOAD_WARNING = 512 * 1024
PAYLOAD_LIMIT = 2 * 1024 * 1024
HISTORY_EVENTS_WARNING = 10_240
HISTORY_BYTES_WARNING = 10 * 1024 * 1024
RESULTS = Path(__file__).resolve().parent / "results"


async def step(i: int) -> dict:
    """Do step i."""
    return {"done": i}


def long_turn_app(calls: int) -> App:
    """A model that calls step(0), step(1), ... step(calls - 1), one per model call, then says done.
    It reads only the newest content (the last step's result), so the bench's own model does the
    same work at every call; counting the turn's tool results at every call (as W1's script does)
    would cost it time in proportion to the turn so far, which is the harness, not the framework."""

    def script(request: LlmRequest) -> LlmResponse:
        newest = request.contents[-1]
        done = next((p.function_response.response for p in newest.parts if p.function_response is not None), None)
        n = 0 if done is None else done["done"] + 1
        return function_call_response("step", {"i": n}) if n < calls else text_response("done")

    agent = LlmAgent(name="worker", model=ScriptedModel(script, name="long-turn-scripted"),
                     instruction="Call step until told otherwise.", tools=[step])
    return App(name=APP, root_agent=agent)


class ActivationTimes:
    """Thread CPU of each workflow activation (temporalio's ``_RunningWorkflow.activate``), in order."""

    def __init__(self) -> None:
        self.us: list[float] = []
        self._original = temporal_workflow_worker._RunningWorkflow.activate

    def __enter__(self) -> ActivationTimes:
        original, times = self._original, self.us

        def timed(running: Any, activation: Any) -> Any:
            started = time.thread_time_ns()
            try:
                return original(running, activation)
            finally:
                times.append((time.thread_time_ns() - started) / 1e3)

        temporal_workflow_worker._RunningWorkflow.activate = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        temporal_workflow_worker._RunningWorkflow.activate = self._original  # type: ignore[method-assign]

    def median_by_fifth(self) -> list[float]:
        fifth = len(self.us) // 5
        return [round(statistics.median(self.us[i * fifth:(i + 1) * fifth]), 1) for i in range(5)] if fifth else []


async def run_histories(client: Client, workflow_id: str) -> list[dict[str, Any]]:
    runs = []
    # The conversation's runs and those of the child that finishes a turn outgrowing one run
    # (id "<conversation>/turn/<message id>").
    async for execution in client.list_workflows(f'WorkflowId STARTS_WITH "{workflow_id}"'):
        history = await client.get_workflow_handle(execution.id, run_id=execution.run_id).fetch_history()
        events = list(history.events)
        largest = max(events, key=lambda e: e.ByteSize())
        runs.append({
            "workflow_id": execution.id,
            "run_id": execution.run_id,
            "start": execution.start_time.isoformat(),
            "events": len(events),
            "bytes": History(events=events).ByteSize(),
            "largest_event_bytes": largest.ByteSize(),
            "largest_event_kind": largest.WhichOneof("attributes"),
        })
    return sorted(runs, key=lambda r: r["start"])


async def bench(calls: int) -> dict[str, Any]:
    async with bench_stack() as stack:
        # The database URL too: a value over 256 KB would travel out of band (payload_storage).
        client = await connect(stack.temporal.address, database_url=stack.database_url)
        adk = AdkClient(client, task_queue=TASK_QUEUE)
        worker = build_worker(client, [long_turn_app(calls)], task_queue=TASK_QUEUE, **stack.services)
        async with worker:
            session = f"s-{uuid.uuid4().hex[:8]}"
            with ActivationTimes() as activations:
                t0, cpu0 = time.perf_counter(), time.process_time()
                result = await adk.send(APP, "u1", session, "go", max_llm_calls=calls + 10)
                wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            assert result.final_text == "done", result.final_text
            sessions = stack.services["session_service"]
            stored = await sessions.get_session(app_name=APP, user_id="u1", session_id=session)
            assert stored is not None
            runs = await run_histories(client, session_workflow_id(APP, "u1", session))
    total_events = sum(r["events"] for r in runs)
    total_bytes = sum(r["bytes"] for r in runs)
    largest = max(r["largest_event_bytes"] for r in runs)
    per = 1000 / calls
    return {
        "calls": calls,
        "wall_seconds": wall,
        "process_cpu_seconds": cpu,
        "workflow_task_cpu_us_median_by_fifth": activations.median_by_fifth(),
        "workflow_tasks": len(activations.us),
        "stored_session_events": len(stored.events),
        "runs": runs,
        "history_events": total_events,
        "history_bytes": total_bytes,
        "largest_event_bytes": largest,
        "max_run_events": max(r["events"] for r in runs),
        "max_run_bytes": max(r["bytes"] for r in runs),
        "per_1000_calls": {"wall_seconds": wall * per, "history_events": total_events * per,
                           "history_bytes": total_bytes * per},
        "within_limits": {
            "largest_event_under_512KB_warning": largest < PAYLOAD_WARNING,
            "largest_event_under_2MB_limit": largest < PAYLOAD_LIMIT,
            "every_run_under_10240_events": all(r["events"] < HISTORY_EVENTS_WARNING for r in runs),
            "every_run_under_10MB": all(r["bytes"] < HISTORY_BYTES_WARNING for r in runs),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000, help="sequential tool calls in the one turn")
    args = parser.parse_args()
    out = asyncio.run(bench(args.calls))
    print(json.dumps(out, indent=2))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"long-turn-{args.calls}.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
