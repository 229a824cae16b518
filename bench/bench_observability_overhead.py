"""What metrics + tracing cost a W1 turn, as deployed: two `python worker.py` processes, one plain and
one with `--metrics-port` and `--tracing` (exporting with OTLP to a receiver in this process).

W1 turns through SessionWorkflow, interleaved round by round (plain, observed, observed, plain...),
so drift in the machine's load hits both alike; the observed worker's endpoint is scraped once per
round, as Prometheus would every few seconds.

Run:  cd /work/main && .ci-venv/bin/python -m bench.bench_observability_overhead [--turns 100] [--quick]
      [--out bench/results/observability-overhead.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from adkt.client import AdkClient, connect
from bench._stack import bench_stack
from examples import w1

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that accepts and counts export requests (what a collector costs the
    worker is the export, not what the collector does with it)."""

    exports = 0

    def do_POST(self) -> None:  # noqa: N802  (http.server's naming)
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).exports += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


async def main(turns: int, warmup: int, json_path: Path | None = None) -> None:
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    metrics_port = _free_port()
    async with bench_stack() as stack:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_", "OTEL_"))}
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{receiver.server_address[1]}"
        queues = {kind: f"bench-obs-{kind}-{uuid.uuid4().hex[:6]}" for kind in ("plain", "observed")}
        extra = {"plain": [], "observed": ["--metrics-port", str(metrics_port), "--tracing"]}
        workers = {}
        with tempfile.TemporaryDirectory() as logs:
            for kind, queue in queues.items():
                command = [sys.executable, "worker.py", "--app", "examples.w1:app", "--address", stack.temporal.address,
                           "--database-url", stack.database_url, "--task-queue", queue, *extra[kind]]  # fmt: skip
                with (Path(logs) / f"{kind}.log").open("wb") as out:
                    workers[kind] = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                result = await _bench(stack.temporal.address, queues, metrics_port, turns, warmup, Path(logs), workers)
            finally:
                for process in workers.values():
                    process.send_signal(signal.SIGINT)
                    process.wait(timeout=60)
    receiver.shutdown()
    print(f"  OTLP export requests received: {_Receiver.exports}")
    if json_path is not None:
        result |= {"otlp_export_requests": _Receiver.exports, "python": platform.python_version(), "cpus": os.cpu_count()}
        json_path.write_text(json.dumps(result, indent=2) + "\n")
        print(f"  written to {json_path}")


async def _bench(address: str, queues: dict[str, str], metrics_port: int, turns: int, warmup: int, logs: Path,
                 workers: dict[str, subprocess.Popen]) -> dict:  # fmt: skip
    for kind in queues:
        for _ in range(600):  # bounded: 60 s
            if workers[kind].poll() is not None:
                raise SystemExit((logs / f"{kind}.log").read_text())
            if "worker for w1" in (logs / f"{kind}.log").read_text():
                break
            await asyncio.sleep(0.1)
    client = await connect(address)
    adks = {kind: AdkClient(client, task_queue=queue) for kind, queue in queues.items()}
    times: dict[str, list[float]] = {kind: [] for kind in queues}
    async with httpx.AsyncClient(timeout=10) as http:
        for i in range(warmup + turns):
            for kind in ("plain", "observed") if i % 2 == 0 else ("observed", "plain"):
                started = time.perf_counter()
                result = await adks[kind].send("w1", "u", f"s-{kind}", w1.USER_MESSAGE)
                elapsed = time.perf_counter() - started
                w1.check_turn(result.events)
                if i >= warmup:
                    times[kind].append(elapsed)
            scrape = await http.get(f"http://127.0.0.1:{metrics_port}/metrics")
            assert scrape.status_code == 200
    plain, observed = statistics.median(times["plain"]), statistics.median(times["observed"])
    print(f"W1 turns through SessionWorkflow, {turns} each, interleaved, worker processes plain vs "
          "--metrics-port --tracing (medians):")  # fmt: skip
    print(f"  plain: {plain * 1000:.1f} ms/turn   observed: {observed * 1000:.1f} ms/turn   ratio: {observed / plain:.3f}")
    means = {k: statistics.mean(v) * 1000 for k, v in times.items()}
    print(f"  means: plain {means['plain']:.1f} ms, observed {means['observed']:.1f} ms")
    print("  ", *[line for line in scrape.text.splitlines() if line.startswith("adk_turns_completed_total")])
    return {
        "workload": "W1 through SessionWorkflow, worker.py processes plain vs --metrics-port --tracing, interleaved",
        "turns": turns,
        "warmup": warmup,
        "median_ms": {k: statistics.median(v) * 1000 for k, v in times.items()},
        "mean_ms": means,
        "ratio_median": observed / plain,
        "ratio_mean": means["observed"] / means["plain"],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="30 turns each, 3 warm-up (one short run)")
    parser.add_argument("--out", type=Path, default=None, help="also write the numbers as JSON to this file")
    args = parser.parse_args()
    if args.quick:
        args.turns, args.warmup = 30, 3
    asyncio.run(main(args.turns, args.warmup, args.out))
