"""What the Prometheus metrics cost a W1 turn: one worker process's turns with metrics off and on.

Two workers on one stack, each on its own task queue and its own Temporal runtime: one without
metrics (the SDK's no-op meter), one with ``runtime_with_metrics`` (the SDK's Prometheus exporter,
our instruments recording every turn, model call and tool call). W1 turns through SessionWorkflow,
interleaved round by round (off, on, off, on...), so drift in the machine's load hits both alike.
The endpoint is scraped once per round, as Prometheus would every few seconds.

Run:  cd /work/main && .ci-venv/bin/python -m bench.bench_metrics_overhead [--turns 100]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import time
import uuid

import httpx
from temporalio.client import Client
from temporalio.runtime import TelemetryConfig

from adk_core import App
from adk_temporal.metrics import runtime_with_metrics
from adk_temporal.worker import build_worker
from adk_temporal.workflows import AdkPlugin
from adkt.client import AdkClient
from bench._stack import bench_stack
from examples import w1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def main(turns: int, warmup: int) -> None:
    async with bench_stack() as stack:
        port = _free_port()
        runtimes = {"off": runtime_with_metrics(TelemetryConfig(), None),
                    "on": runtime_with_metrics(TelemetryConfig(), port, host="127.0.0.1")}  # fmt: skip
        clients, workers, runs = {}, [], []
        for kind, runtime in runtimes.items():
            client = await Client.connect(stack.temporal.address, runtime=runtime, plugins=[AdkPlugin()])
            queue = f"bench-metrics-{kind}-{uuid.uuid4().hex[:6]}"
            app = App(name=f"w1_{kind}", root_agent=w1.build_agent())
            worker = build_worker(client, [app], task_queue=queue, **stack.services)
            workers.append(worker)
            runs.append(asyncio.create_task(worker.run()))
            clients[kind] = (AdkClient(client, task_queue=queue), app.name)
        times: dict[str, list[float]] = {"off": [], "on": []}
        try:
            async with httpx.AsyncClient(timeout=10) as http:
                for i in range(warmup + turns):
                    for kind in ("off", "on") if i % 2 == 0 else ("on", "off"):
                        adk, app_name = clients[kind]
                        started = time.perf_counter()
                        result = await adk.send(app_name, "u", "s1", w1.USER_MESSAGE)
                        elapsed = time.perf_counter() - started
                        w1.check_turn(result.events)
                        if i >= warmup:
                            times[kind].append(elapsed)
                    scrape = await http.get(f"http://127.0.0.1:{port}/metrics")
                    assert scrape.status_code == 200
            lines = [line for line in scrape.text.splitlines() if line.startswith("adk_turns_completed_total")]
        finally:
            for worker in workers:
                await worker.shutdown()
            await asyncio.gather(*runs, return_exceptions=True)
    off, on = statistics.median(times["off"]), statistics.median(times["on"])
    print(f"W1 turns through SessionWorkflow, {turns} each, interleaved (medians):")
    print(f"  metrics off: {off * 1000:.1f} ms/turn   on: {on * 1000:.1f} ms/turn   on/off: {on / off:.3f}")
    print(f"  means: off {statistics.mean(times['off']) * 1000:.1f} ms, on {statistics.mean(times['on']) * 1000:.1f} ms")
    print("  last scrape:", *lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.warmup))
