"""Floor workflows the sandbox can run (their own module: the sandbox re-imports workflow
modules by name, which a script run as __main__ cannot offer)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow


async def seven_noops(x: int) -> int:
    """W1's activity count: 7 sequential no-op activities (bench_durable.noop, by name)."""
    for _ in range(7):
        x = await workflow.execute_activity("bench.noop", x, result_type=int, start_to_close_timeout=timedelta(seconds=30))
    return x


@workflow.defn(name="BenchFloorSandboxedWorkflow")
class SandboxedFloorWorkflow:
    """The same 7 sequential no-op activities, run in the sandbox like our workflows."""

    @workflow.run
    async def run(self, x: int) -> int:
        return await seven_noops(x)


@workflow.defn(name="BenchFloorSessionWorkflow")
class FloorSessionWorkflow:
    """The floor shaped like a conversation: one long-lived workflow, each turn an update that runs
    the 7 sequential no-op activities (bench_replay.py replays a run of these turns against W1's)."""

    def __init__(self) -> None:
        self._closing = False

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self._closing and workflow.all_handlers_finished())

    @workflow.update
    async def turn(self, x: int) -> int:
        return await seven_noops(x)

    @workflow.signal
    def close(self) -> None:
        self._closing = True
