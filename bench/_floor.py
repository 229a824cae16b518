"""The floor workflow under Temporal's sandbox (its own module: the sandbox re-imports workflow
modules by name, which a script run as __main__ cannot offer)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow


@workflow.defn(name="BenchFloorSandboxedWorkflow")
class SandboxedFloorWorkflow:
    """The same 7 sequential no-op activities, run in the sandbox like our workflows."""

    @workflow.run
    async def run(self, x: int) -> int:
        for _ in range(7):
            x = await workflow.execute_activity("bench.noop", x, result_type=int, start_to_close_timeout=timedelta(seconds=30))
        return x
