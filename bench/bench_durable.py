"""W1 on Temporal: our durable workflows against Temporal's own floor, all in one run on one dev server.

Starts its own stack: a headless Temporal dev server (TEMPORAL_DEV_ARGS, i.e. the tuned transfer
queue, or with --stock the same arguments without history.transferProcessorMaxPollRPS), an embedded
Postgres in a temporary folder (fsync off: this measures Temporal overhead, not disk), migrations,
and one in-process worker (build_worker) that also hosts the floor workflow.

Measures (see bench/README.md, "Durable W1"):
  1. sequential turn latency: W1 via SessionWorkflow (one conversation, turn after turn), W1 via
     AgentRunWorkflow (a fresh workflow and session per turn), and the floor (a workflow of 7
     sequential no-op activities), interleaved round by round; ms/turn, ratios to the floor, and
     CPU ms/turn of this process (worker + client). Also AgentRunWorkflow on a second worker with
     UnsandboxedWorkflowRunner, interleaved in the same rounds.
  2. history bytes per model call: a 50-turn conversation through AgentRunWorkflow (one workflow per
     turn, same session): adk.generate_content input bytes at turn 1 vs turn 50; and through
     SessionWorkflow: history growth per turn.
  3. 50 concurrent conversations: turns/s vs floor workflows/s at concurrency 50, in phases W1, floor,
     floor, W1 of --seconds/2 each (drift in the machine's load falls on both alike).
  4. the same turn through temporalio's google-adk integration (temporalio.google_adk, google-adk 2.x),
     in a subprocess against the same dev server (it needs a newer google-adk than this venv's; see
     --peer-path).

Run:  cd /work/main && /work/venv/bin/python bench/bench_durable.py [--stock] [--turns 60] [--seconds 20]
      [--profile [--profile-kind session|agent_run]]   cProfile of the worker over extra turns
      [--quick]     the sequential turns only (for iterating on a speedup)
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import cProfile
import io
import json
import logging
import os
import pstats
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # _floor and _stack, also when a subprocess imports this module

from _floor import SandboxedFloorWorkflow  # noqa: E402
from _stack import bench_stack  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from temporalio import activity, workflow  # noqa: E402
from temporalio.api.history.v1 import History  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.contrib.pydantic import pydantic_data_converter  # noqa: E402
from temporalio.worker import UnsandboxedWorkflowRunner, Worker  # noqa: E402

from adk_temporal.activities import AdkActivities, AppRegistry  # noqa: E402
from adk_temporal.activities.contracts import GENERATE_CONTENT  # noqa: E402
from adk_temporal.worker import build_worker  # noqa: E402
from adk_temporal.workflows import AdkPlugin, session_workflow_id  # noqa: E402
from adkt.client import AdkClient, connect  # noqa: E402
from adkt.embedded import TEMPORAL_DEV_ARGS  # noqa: E402
from examples import w1  # noqa: E402

TASK_QUEUE = "bench-durable"
UNSANDBOXED_QUEUE = "bench-durable-unsandboxed"
CONCURRENCY = 50
HISTORY_TURNS = 50
# The same worker options for W1 and the floor (both run on the one worker).
WORKER_OPTIONS: dict[str, Any] = dict(
    max_concurrent_workflow_tasks=100,
    max_concurrent_activities=200,
    max_concurrent_local_activities=200,
    max_cached_workflows=1000,
)
RESULTS = Path(__file__).resolve().parent / "results"
PEER_PATH = os.environ.get("ADKT_PEER_PATH", "/tmp/adkt-peer")


def stock_dev_args() -> tuple[str, ...]:
    """TEMPORAL_DEV_ARGS without the transferProcessorMaxPollRPS setting."""
    args = list(TEMPORAL_DEV_ARGS)
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "--dynamic-config-value" and args[i + 1].startswith("history.transferProcessorMaxPollRPS"):
            i += 2
            continue
        out.append(args[i])
        i += 1
    return tuple(out)


# --- the floor --------------------------------------------------------------------------------


@activity.defn(name="bench.noop")
async def noop(x: int) -> int:
    return x + 1


@workflow.defn(name="BenchFloorWorkflow", sandboxed=False)
class FloorWorkflow:
    """Temporal's own cost for W1's activity count: 7 sequential no-op activities."""

    @workflow.run
    async def run(self, x: int) -> int:
        for _ in range(7):
            x = await workflow.execute_activity(noop, x, start_to_close_timeout=timedelta(seconds=30))
        return x


# --- measuring helpers ------------------------------------------------------------------------


class Series:
    def __init__(self) -> None:
        self.ms: list[float] = []
        self.cpu_ms: list[float] = []

    async def measure(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        c0, t0 = time.process_time(), time.perf_counter()
        result = await fn()
        t1, c1 = time.perf_counter(), time.process_time()
        self.ms.append((t1 - t0) * 1000)
        self.cpu_ms.append((c1 - c0) * 1000)
        return result

    def summary(self) -> dict[str, float]:
        return {
            "turns": len(self.ms),
            "mean_ms": statistics.fmean(self.ms),
            "median_ms": statistics.median(self.ms),
            "cpu_ms_per_turn": statistics.fmean(self.cpu_ms),
        }


def paired_ratio_ci(xs: list[float], ys: list[float], resamples: int = 2000) -> tuple[float, float]:
    """95% bootstrap interval of mean(xs) / mean(ys), resampling whole rounds (xs[i] and ys[i] ran in
    the same round, so drift that hits both stays paired). Seeded: the same data gives the same
    interval."""
    rng = random.Random(0)
    n = len(xs)
    ratios = []
    for _ in range(resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        ratios.append(sum(xs[i] for i in picks) / sum(ys[i] for i in picks))
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def _history_bytes(events: Any) -> int:
    return History(events=list(events)).ByteSize()


def model_call_bytes(history: Any) -> dict[str, float]:
    """Input payload bytes of every adk.generate_content ActivityTaskScheduled event, and totals."""
    inputs = []
    by_kind: dict[str, int] = {}
    for event in history.events:
        kind = event.WhichOneof("attributes") or "?"
        if event.HasField("activity_task_scheduled_event_attributes"):
            kind += ":" + event.activity_task_scheduled_event_attributes.activity_type.name
        if event.HasField("marker_recorded_event_attributes"):
            details = event.marker_recorded_event_attributes.details
            try:  # a local activity's marker: details["data"] is JSON naming the activity type
                kind += ":" + json.loads(details["data"].payloads[0].data).get("activity_type", "")
            except Exception:
                pass
        by_kind[kind] = by_kind.get(kind, 0) + event.ByteSize()
        if event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == GENERATE_CONTENT:
                inputs.append(sum(p.ByteSize() for p in attrs.input.payloads))
    total = _history_bytes(history.events)
    return {
        "model_calls": len(inputs),
        "model_input_bytes_per_call": statistics.fmean(inputs) if inputs else 0.0,
        "model_input_bytes_max": max(inputs) if inputs else 0,
        "history_bytes": total,
        "history_bytes_per_model_call": total / max(1, len(inputs)),
        "events": len(history.events),
        "bytes_by_event_kind": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
    }


class WarningCounter(logging.Handler):
    """Counts the worker's warnings (failed workflow activations, activity retries); the bench logs
    them to bench/results/durable-<mode>.log."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


WARNINGS = WarningCounter()


class ProfilingExecutor(concurrent.futures.ThreadPoolExecutor):
    """Workflow activations run on these threads: profile each call on its own thread, merge later."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.enabled = False
        self._local = threading.local()
        self.profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        def run() -> Any:
            if not self.enabled:
                return fn(*args, **kwargs)
            prof = getattr(self._local, "prof", None)
            if prof is None:
                prof = self._local.prof = cProfile.Profile()
                with self._lock:
                    self.profiles.append(prof)
            prof.enable()
            try:
                return fn(*args, **kwargs)
            finally:
                prof.disable()

        return super().submit(run)


# --- the bench --------------------------------------------------------------------------------


def unsandboxed_worker(client: Client, services: dict[str, Any], task_queue: str, **options: Any) -> Worker:
    """build_worker's steps with UnsandboxedWorkflowRunner. build_worker cannot take a runner: the
    AdkPlugin it adds sets workflow_runner, and a plugin's value replaces the Worker argument."""
    stores = {k: v for k, v in services.items() if k != "payload_storage"}
    plugin = AdkPlugin(
        AdkActivities(**stores, apps=AppRegistry([w1.app])), passthrough_modules=["examples.w1"], payload_storage=services.get("payload_storage")
    )
    plugin.workflow_runner = UnsandboxedWorkflowRunner()
    config = client.config()
    config["plugins"] = [p for p in config.get("plugins", []) if not isinstance(p, AdkPlugin)]
    config["data_converter"] = pydantic_data_converter
    return Worker(Client(**config), task_queue=task_queue, plugins=[plugin], **options)


async def run_bench(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    mode = "stock" if args.stock else "tuned"
    dev_args = stock_dev_args() if args.stock else TEMPORAL_DEV_ARGS
    results: dict[str, Any] = {
        "mode": mode,
        "dev_server_args": list(dev_args),
        "turns": args.turns,
        "warmup": args.warmup,
        "worker_options": WORKER_OPTIONS,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    t0 = time.perf_counter()
    async with bench_stack(dev_args) as stack:
        address = stack.temporal.address
        console.print(f"[dim]dev server {address} ({mode}), postgres :{stack.postgres.port}, "
                      f"up in {time.perf_counter() - t0:.1f}s[/]")
        client = await connect(address)
        adk = AdkClient(client, task_queue=TASK_QUEUE)
        adk_unsbx = AdkClient(client, task_queue=UNSANDBOXED_QUEUE)
        profiler_pool = ProfilingExecutor(max_workers=max(4, WORKER_OPTIONS["max_concurrent_workflow_tasks"]))
        main = build_worker(
            client, [w1.app], task_queue=TASK_QUEUE, workflows=[FloorWorkflow, SandboxedFloorWorkflow],
            activities=[noop],
            workflow_task_executor=profiler_pool, **stack.services, **WORKER_OPTIONS,
        )
        unsbx = unsandboxed_worker(client, stack.services, UNSANDBOXED_QUEUE, **WORKER_OPTIONS)
        async with main, unsbx:
            await sequential(args, client, adk, adk_unsbx, results, console)
            if not args.quick:
                await histories(client, adk, results, console)
                await concurrent_load(args, client, adk, results, console)
            if args.profile:
                results["profile"] = await profile_turns(args, adk, profiler_pool, console)
        if not args.quick:
            results["peer"] = await peer_integration(args, address, results, console)
    return results


async def floor_once(client: Client) -> int:
    return await client.execute_workflow(
        FloorWorkflow.run, 0, id=f"bench-floor/{uuid.uuid4().hex[:12]}", task_queue=TASK_QUEUE
    )


async def sequential(
    args: argparse.Namespace, client: Client, adk: AdkClient, adk_unsbx: AdkClient, results: dict, console: Console
) -> None:
    kinds = {
        "session": Series(),
        "agent_run": Series(),
        "agent_run_unsandboxed": Series(),
        "session_unsandboxed": Series(),
        "floor": Series(),
        "floor_sandboxed": Series(),
    }
    if args.kinds:  # the floors are always measured: every ratio needs them
        kinds = {name: series for name, series in kinds.items() if name.startswith("floor") or name in args.kinds}
    conv = f"conv-{uuid.uuid4().hex[:8]}"

    async def session_turn() -> None:
        result = await adk.send("w1", "u1", conv, w1.USER_MESSAGE)
        w1.check_turn(result.events)

    async def agent_run_turn(client_: AdkClient) -> None:
        result = await client_.run_once("w1", "u1", f"fresh-{uuid.uuid4().hex[:12]}", w1.USER_MESSAGE)
        w1.check_turn(result.events)

    async def floor_turn() -> None:
        assert await floor_once(client) == 7

    async def sandboxed_floor_turn() -> None:
        got = await client.execute_workflow(
            SandboxedFloorWorkflow.run, 0, id=f"bench-floor-sbx/{uuid.uuid4().hex[:12]}", task_queue=TASK_QUEUE
        )
        assert got == 7

    async def session_unsandboxed_turn() -> None:
        result = await adk_unsbx.send("w1", "u1", conv + "-unsbx", w1.USER_MESSAGE)
        w1.check_turn(result.events)

    with console.status("sequential turns"):
        for i in range(args.warmup + args.turns):
            # Interleaved, so drift and noise hit every kind alike.
            steps = [
                ("session", session_turn),
                ("agent_run", lambda: agent_run_turn(adk)),
                ("agent_run_unsandboxed", lambda: agent_run_turn(adk_unsbx)),
                ("session_unsandboxed", session_unsandboxed_turn),
                ("floor", floor_turn),
                ("floor_sandboxed", sandboxed_floor_turn),
            ]
            for name, fn in steps:
                if name not in kinds:
                    continue
                if i < args.warmup:
                    await fn()
                else:
                    await kinds[name].measure(fn)
    seq = {name: s.summary() for name, s in kinds.items()}
    floor = seq["floor"]["mean_ms"]
    for name, s in seq.items():
        s["ratio_to_floor"] = s["mean_ms"] / floor
        s["ratio_to_floor_ci95"] = paired_ratio_ci(kinds[name].ms, kinds["floor"].ms)
        s["median_ratio_to_floor"] = s["median_ms"] / seq["floor"]["median_ms"]
        s["cpu_ratio_to_floor"] = s["cpu_ms_per_turn"] / seq["floor"]["cpu_ms_per_turn"]
        # The same as differences: the floor's own CPU moves by 1-3 ms between runs on this machine,
        # which hides a change of a few tenths of a millisecond in a ratio but not in these.
        s["ms_over_floor"] = s["mean_ms"] - floor
        s["cpu_ms_over_floor"] = s["cpu_ms_per_turn"] - seq["floor"]["cpu_ms_per_turn"]
        # The same runner on both sides: sandboxed kinds against the sandboxed floor, unsandboxed
        # kinds against the unsandboxed one.
        same = "floor" if "unsandboxed" in name or name == "floor" else "floor_sandboxed"
        s["ratio_to_same_runner_floor"] = s["mean_ms"] / seq[same]["mean_ms"]
    results["sequential"] = seq


async def histories(client: Client, adk: AdkClient, results: dict, console: Console) -> None:
    out: dict[str, Any] = {}
    sid = f"hist-{uuid.uuid4().hex[:8]}"
    ids = []
    with console.status(f"{HISTORY_TURNS}-turn conversation through AgentRunWorkflow"):
        for turn in range(1, HISTORY_TURNS + 1):
            wid = f"bench-hist/{sid}/{turn}"
            result = await adk.run_once("w1", "u1", sid, w1.USER_MESSAGE, workflow_id=wid)
            w1.check_turn(result.events)
            ids.append(wid)
    first = model_call_bytes(await client.get_workflow_handle(ids[0]).fetch_history())
    last = model_call_bytes(await client.get_workflow_handle(ids[-1]).fetch_history())
    out["agent_run"] = {
        "turn1": first,
        "turn50": last,
        "model_input_ratio": last["model_input_bytes_per_call"] / first["model_input_bytes_per_call"],
        "history_per_model_call_ratio": last["history_bytes_per_model_call"] / first["history_bytes_per_model_call"],
    }

    conv = f"hist-conv-{uuid.uuid4().hex[:8]}"
    wid = session_workflow_id("w1", "u1", conv)
    with console.status(f"{HISTORY_TURNS}-turn conversation through SessionWorkflow"):
        sizes = {}
        for turn in range(1, HISTORY_TURNS + 1):
            result = await adk.send("w1", "u1", conv, w1.USER_MESSAGE)
            w1.check_turn(result.events)
            if turn in (1, HISTORY_TURNS):
                hist = await client.get_workflow_handle(wid).fetch_history()
                sizes[turn] = (model_call_bytes(hist), hist.run_id)
    (h1, run1), (h50, run50) = sizes[1], sizes[HISTORY_TURNS]
    out["session"] = {
        "after_turn1": h1,
        "after_turn50": h50,
        "continued_as_new": run1 != run50,
        "history_bytes_per_turn": h50["history_bytes"] / HISTORY_TURNS,
        "growth_bytes_per_turn_after_turn1": (h50["history_bytes"] - h1["history_bytes"]) / (HISTORY_TURNS - 1),
        "model_input_ratio": h50["model_input_bytes_max"] / h1["model_input_bytes_max"],
    }
    results["history"] = out


async def concurrent_load(args: argparse.Namespace, client: Client, adk: AdkClient, results: dict, console: Console) -> None:
    async def for_seconds(turn: Callable[[int], Awaitable[None]], seconds: float, warm: bool) -> dict[str, Any]:
        done = [0] * CONCURRENCY
        latencies: list[float] = []
        deadline = 0.0

        async def loop(i: int) -> None:
            while time.perf_counter() < deadline:
                t = time.perf_counter()
                await turn(i)
                latencies.append((time.perf_counter() - t) * 1000)
                done[i] += 1

        if warm:
            await asyncio.gather(*(turn(i) for i in range(CONCURRENCY)))  # start every conversation once
        c0, t0 = time.process_time(), time.perf_counter()
        deadline = t0 + seconds
        await asyncio.gather(*(loop(i) for i in range(CONCURRENCY)))
        return {"completed": sum(done), "seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                "latencies": latencies}

    def summed(phases: list[dict[str, Any]]) -> dict[str, float]:
        n, wall, cpu = (sum(p[k] for p in phases) for k in ("completed", "seconds", "cpu"))
        return {
            "completed": n,
            "seconds": wall,
            "per_second": n / wall,
            "mean_latency_ms": statistics.fmean(ms for p in phases for ms in p["latencies"]),
            "cpu_ms_per_turn": cpu * 1000 / n,
            "cpu_utilisation": cpu / wall,
            "phases_per_second": [round(p["completed"] / p["seconds"], 2) for p in phases],
        }

    run_tag = uuid.uuid4().hex[:6]

    async def w1_turn(i: int) -> None:
        result = await adk.send("w1", "u1", f"load-{run_tag}-{i}", w1.USER_MESSAGE)
        w1.check_turn(result.events)

    async def floor_turn(i: int) -> None:
        assert await floor_once(client) == 7

    # W1, floor, floor, W1, each for half of --seconds: a machine whose load drifts during the
    # phases (this one is shared) weighs on both kinds alike, where one phase each after the other
    # read 0.95-1.30 for the same code.
    phases: dict[str, list[dict[str, Any]]] = {"session": [], "floor": []}
    for kind in ("session", "floor", "floor", "session"):
        turn = w1_turn if kind == "session" else floor_turn
        with console.status(f"{CONCURRENCY} concurrent {'conversations' if kind == 'session' else 'floor workflows'}"):
            phases[kind].append(await for_seconds(turn, args.seconds / 2, warm=not phases[kind]))
    session, floor = summed(phases["session"]), summed(phases["floor"])
    results["concurrent"] = {
        "concurrency": CONCURRENCY,
        "session": session,
        "floor": floor,
        "ratio_to_floor": session["per_second"] / floor["per_second"],
    }


async def profile_turns(args: argparse.Namespace, adk: AdkClient, pool: ProfilingExecutor, console: Console) -> dict:
    """cProfile of the event loop thread (client, activities, worker glue) and the workflow threads
    over `--profile-turns` sequential turns: SessionWorkflow turns of one conversation, or with
    `--profile-kind agent_run` AgentRunWorkflow turns (a fresh workflow and session each)."""
    conv = f"prof-{uuid.uuid4().hex[:12]}"
    await adk.send("w1", "u1", conv, w1.USER_MESSAGE)  # the conversation's workflow exists before profiling
    loop_prof = cProfile.Profile()
    pool.enabled = True
    loop_prof.enable()
    with console.status(f"profiling {args.profile_kind} turns"):
        for _ in range(args.profile_turns):
            if args.profile_kind == "session":
                result = await adk.send("w1", "u1", conv, w1.USER_MESSAGE)
            else:
                result = await adk.run_once("w1", "u1", f"prof-{uuid.uuid4().hex[:12]}", w1.USER_MESSAGE)
            w1.check_turn(result.events)
    loop_prof.disable()
    pool.enabled = False
    out = {}
    for name, profiles in (("event_loop", [loop_prof]), ("workflow_threads", pool.profiles)):
        if not profiles:
            continue
        buf = io.StringIO()
        stats = pstats.Stats(profiles[0], stream=buf)
        for p in profiles[1:]:
            stats.add(p)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
        text = buf.getvalue()
        path = RESULTS / f"profile-{name}.txt"
        path.write_text(text)
        out[name] = str(path.relative_to(ROOT))
    console.print(f"[dim]profiles written: {out}[/]")
    return out


# --- temporalio's google-adk integration, in a subprocess --------------------------------------


async def peer_integration(args: argparse.Namespace, address: str, results: dict, console: Console) -> dict:
    if args.no_peer:
        return {"skipped": "--no-peer"}
    if not Path(PEER_PATH, "temporalio", "google_adk").is_dir():
        return {
            "skipped": f"temporalio-google-adk not found at {PEER_PATH}: it needs google-adk>=2.8 (this venv "
            f"has an older one), so it lives apart: pip install --target {PEER_PATH} temporalio-google-adk"
        }
    cmd = [sys.executable, "-c", "from bench.bench_durable import peer_child_main; peer_child_main()",
           "--address", address, "--turns", str(args.turns), "--warmup", str(args.warmup)]
    env = dict(os.environ, PYTHONPATH=PEER_PATH)
    with console.status("temporalio google-adk integration (subprocess)"):
        proc = await asyncio.create_subprocess_exec(
            *cmd, env=env, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = await proc.communicate()
    lines = out.decode().strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].startswith("{"):
        return {"error": f"peer subprocess failed (exit {proc.returncode}): {err.decode()[-2000:]}"}
    peer = json.loads(lines[-1])
    floor_ms = results["sequential"]["floor"]["mean_ms"]
    peer["ratio_to_main_floor"] = peer["w1"]["mean_ms"] / floor_ms
    return peer


@activity.defn(name="add")
async def add(a: int, b: int) -> dict:
    """Add two integers."""
    return {"sum": a + b}


@activity.defn(name="lookup")
async def lookup(key: str) -> dict:
    """Look up a key."""
    return {"value": key.upper()}


def _register_peer_model() -> None:
    """W1's scripted model as a google-adk BaseLlm, registered so the integration's model activity
    (LLMRegistry.new_llm(request.model)) finds it by the name "w1-scripted"."""
    from google.adk.models import BaseLlm, LLMRegistry
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class W1ScriptedLlm(BaseLlm):
        model: str = "w1-scripted"

        @classmethod
        def supported_models(cls) -> list[str]:
            return [r"w1-scripted"]

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            n = 0
            for content in reversed(llm_request.contents):
                parts = content.parts or []
                if content.role == "user" and any(p.text for p in parts):
                    break
                n += sum(1 for p in parts if p.function_response is not None)
            if n == 0:
                part = types.Part.from_function_call(name="add", args={"a": 1, "b": 2})
            elif n == 1:
                part = types.Part.from_function_call(name="lookup", args={"key": "x"})
            elif n == 2:
                part = types.Part.from_function_call(name="add", args={"a": 3, "b": 4})
            else:
                part = types.Part(text="done")
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    LLMRegistry.register(W1ScriptedLlm)


@workflow.defn(name="PeerW1Workflow")
class PeerW1Workflow:
    """W1 the way temporalio's google-adk integration runs agents: a google-adk Runner in the
    workflow, TemporalModel (model calls as activities), tools as activities (activity_as_tool),
    an in-memory session, nothing persisted."""

    @workflow.run
    async def run(self, message: str) -> dict:
        from google.adk.agents import LlmAgent
        from google.adk.runners import InMemoryRunner
        from google.genai import types
        from temporalio.google_adk import TemporalModel
        from temporalio.google_adk.workflow import activity_as_tool

        timeout = timedelta(seconds=30)
        agent = LlmAgent(
            name="assistant",
            model=TemporalModel("w1-scripted"),
            instruction="You are a helpful assistant. Use the tools add and lookup when asked.",
            tools=[activity_as_tool(add, start_to_close_timeout=timeout),
                   activity_as_tool(lookup, start_to_close_timeout=timeout)],
        )
        runner = InMemoryRunner(agent=agent, app_name="w1")
        session = await runner.session_service.create_session(app_name="w1", user_id="u1")
        results, texts = [], []
        async for event in runner.run_async(
            user_id="u1", session_id=session.id, new_message=types.Content(role="user", parts=[types.Part(text=message)])
        ):
            results += [r.response for r in event.get_function_responses()]
            if event.is_final_response() and event.content and event.content.parts:
                texts += [p.text for p in event.content.parts if p.text]
        return {"results": results, "texts": texts}


def peer_child_main() -> None:
    """Entry point of the subprocess (run with PYTHONPATH=PEER_PATH: google-adk 2.x and
    temporalio.google_adk). Imported as bench.bench_durable, so the sandbox can pass it through."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    import warnings

    warnings.simplefilter("ignore")
    print(json.dumps(asyncio.run(_peer_child(args))), flush=True)
    # Skip interpreter finalization: with google-adk 2.x's grpc threads it can abort
    # ("PyGILState_Release ... must be current") after the measurement is done.
    os._exit(0)


async def _peer_child(args: argparse.Namespace) -> dict:
    import importlib.metadata

    from temporalio.google_adk import GoogleAdkPlugin
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    _register_peer_model()
    queue = "bench-peer"
    client = await Client.connect(args.address, plugins=[GoogleAdkPlugin()])
    runner = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("bench"))
    worker = Worker(
        client, task_queue=queue, workflows=[PeerW1Workflow, FloorWorkflow], activities=[add, lookup, noop],
        workflow_runner=runner, **WORKER_OPTIONS,
    )
    series = {"w1": Series(), "floor": Series()}

    async def w1_turn() -> None:
        out = await client.execute_workflow(
            PeerW1Workflow.run, w1.USER_MESSAGE, id=f"bench-peer/{uuid.uuid4().hex[:12]}", task_queue=queue
        )
        assert out["results"] == w1.EXPECTED_TOOL_RESULTS, out
        assert out["texts"] and out["texts"][-1] == w1.EXPECTED_FINAL_TEXT, out

    async def floor_turn() -> None:
        r = await client.execute_workflow(FloorWorkflow.run, 0, id=f"bench-peer-floor/{uuid.uuid4().hex[:12]}",
                                          task_queue=queue)
        assert r == 7

    async with worker:
        for i in range(args.warmup + args.turns):
            for name, fn in (("w1", w1_turn), ("floor", floor_turn)):
                if i < args.warmup:
                    await fn()
                else:
                    await series[name].measure(fn)
    out: dict[str, Any] = {name: s.summary() for name, s in series.items()}
    out["versions"] = {d: importlib.metadata.version(d) for d in ("google-adk", "temporalio-google-adk", "temporalio")}
    return out


# --- output -------------------------------------------------------------------------------------


def render(results: dict, console: Console) -> None:
    seq = results["sequential"]
    t = Table(title=f"W1 on Temporal, {results['mode']} dev server: sequential turns ({results['turns']} each, interleaved)")
    for col in ("kind", "mean ms", "median ms", "ratio mean", "95% interval", "ratio median", "CPU ms/turn",
                "CPU ratio", "CPU ms over floor", "ratio, same-runner floor"):
        t.add_column(col, justify="right" if col != "kind" else "left")
    labels = {
        "session": "W1 SessionWorkflow (steady state)",
        "agent_run": "W1 AgentRunWorkflow (fresh, sandboxed)",
        "agent_run_unsandboxed": "W1 AgentRunWorkflow (fresh, unsandboxed)",
        "session_unsandboxed": "W1 SessionWorkflow (steady state, unsandboxed)",
        "floor": "floor: 7 no-op activities (unsandboxed)",
        "floor_sandboxed": "floor: 7 no-op activities (sandboxed)",
    }
    for name, label in labels.items():
        if name not in seq:
            continue
        s = seq[name]
        low, high = s["ratio_to_floor_ci95"]
        t.add_row(label, f"{s['mean_ms']:.1f}", f"{s['median_ms']:.1f}", f"{s['ratio_to_floor']:.2f}",
                  f"{low:.2f}-{high:.2f}", f"{s['median_ratio_to_floor']:.2f}", f"{s['cpu_ms_per_turn']:.1f}", f"{s['cpu_ratio_to_floor']:.2f}",
                  f"{s['cpu_ms_over_floor']:.2f}", f"{s['ratio_to_same_runner_floor']:.2f}")
    if "history" not in results:  # --quick
        console.print(t)
        return
    peer = results.get("peer", {})
    if "w1" in peer:
        p, pf = peer["w1"], peer["floor"]
        t.add_row("temporalio google-adk integration (subprocess)", f"{p['mean_ms']:.1f}", f"{p['median_ms']:.1f}",
                  f"{peer['ratio_to_main_floor']:.2f}", "", "", f"{p['cpu_ms_per_turn']:.1f}", "", "")
        t.add_row("  its own floor (subprocess worker)", f"{pf['mean_ms']:.1f}", f"{pf['median_ms']:.1f}",
                  f"{p['mean_ms'] / pf['mean_ms']:.2f} (own)", "", "", f"{pf['cpu_ms_per_turn']:.1f}",
                  f"{p['cpu_ms_per_turn'] / pf['cpu_ms_per_turn']:.2f} (own)", "")
    console.print(t)
    if "w1" not in peer:
        console.print(f"[yellow]temporalio google-adk integration left out:[/] {peer.get('skipped') or peer.get('error')}")

    h = results["history"]
    t = Table(title=f"History bytes, one {HISTORY_TURNS}-turn conversation")
    for col in ("", "turn 1", f"turn {HISTORY_TURNS}", "ratio"):
        t.add_column(col, justify="right" if col else "left")
    a = h["agent_run"]
    t.add_row("AgentRun: adk.generate_content input bytes / call", f"{a['turn1']['model_input_bytes_per_call']:.0f}",
              f"{a['turn50']['model_input_bytes_per_call']:.0f}", f"{a['model_input_ratio']:.3f}")
    t.add_row("AgentRun: history bytes / model call", f"{a['turn1']['history_bytes_per_model_call']:.0f}",
              f"{a['turn50']['history_bytes_per_model_call']:.0f}", f"{a['history_per_model_call_ratio']:.3f}")
    t.add_row("AgentRun: workflow history bytes", f"{a['turn1']['history_bytes']}", f"{a['turn50']['history_bytes']}", "")
    s = h["session"]
    t.add_row("SessionWorkflow: total history bytes after turn", f"{s['after_turn1']['history_bytes']}",
              f"{s['after_turn50']['history_bytes']}", "")
    t.add_row("SessionWorkflow: bytes per turn (growth after turn 1)", "", f"{s['growth_bytes_per_turn_after_turn1']:.0f}",
              "CAN" if s["continued_as_new"] else "")
    t.add_row("SessionWorkflow: largest model input bytes", f"{s['after_turn1']['model_input_bytes_max']}",
              f"{s['after_turn50']['model_input_bytes_max']}", f"{s['model_input_ratio']:.3f}")
    console.print(t)

    c = results["concurrent"]
    t = Table(title=f"{c['concurrency']} concurrent, one worker ({results['worker_options']})")
    for col in ("", "per second", "mean latency ms", "CPU ms each", "CPU use", "ratio"):
        t.add_column(col, justify="right" if col else "left")
    t.add_row("W1 turns (SessionWorkflow)", f"{c['session']['per_second']:.1f}", f"{c['session']['mean_latency_ms']:.0f}",
              f"{c['session']['cpu_ms_per_turn']:.1f}", f"{c['session']['cpu_utilisation']:.0%}", f"{c['ratio_to_floor']:.2f}")
    t.add_row("floor workflows", f"{c['floor']['per_second']:.1f}", f"{c['floor']['mean_latency_ms']:.0f}",
              f"{c['floor']['cpu_ms_per_turn']:.1f}", f"{c['floor']['cpu_utilisation']:.0%}", "1.00")
    console.print(t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stock", action="store_true", help="dev server without transferProcessorMaxPollRPS")
    parser.add_argument("--turns", type=int, default=60,
                        help="measured sequential turns per kind (60: a 95%% interval of about +-0.05 here)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds each kind runs concurrently, in two halves (W1, floor, floor, W1)")
    parser.add_argument("--profile", action="store_true", help="cProfile extra AgentRun turns")
    parser.add_argument("--profile-turns", type=int, default=30)
    parser.add_argument("--profile-kind", choices=["session", "agent_run"], default="session")
    parser.add_argument("--kinds", type=lambda v: v.split(","), default=None,
                        help="with --quick: measure only these kinds (comma-separated, e.g. session), beside the floors")
    parser.add_argument("--quick", action="store_true", help="sequential turns only: no histories, concurrency or peer")
    parser.add_argument("--no-peer", action="store_true", help="skip temporalio's google-adk integration")
    parser.add_argument("--out", type=Path, default=None,
                        help="where the JSON goes (default bench/results/durable-<mode>[-quick].json)")
    args = parser.parse_args()
    console = Console(width=150)
    RESULTS.mkdir(parents=True, exist_ok=True)
    mode = "stock" if args.stock else "tuned"
    logging.basicConfig(level=logging.WARNING, filename=RESULTS / f"durable-{mode}.log", filemode="w",
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger().addHandler(WARNINGS)
    results = asyncio.run(run_bench(args, console))
    results["worker_warnings_logged"] = WARNINGS.count
    render(results, console)
    if WARNINGS.count:
        console.print(f"[yellow]{WARNINGS.count} warnings logged (worker task failures, retries): "
                      f"bench/results/durable-{mode}.log[/]")
    path = args.out or RESULTS / f"durable-{results['mode']}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"[dim]written {path}[/]")


if __name__ == "__main__":
    main()
