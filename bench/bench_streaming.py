"""Time to first token: a streamed answer durable (AdkClient.stream(partial=True)) vs in-process.

The model streams ``--tokens`` partials ``--token-ms`` apart after a first-token delay of
``--first-token-ms`` (a provider's own time to first token), then its complete response.

``--pacing provider`` (the default): token i leaves at ``first_token_ms + i * token_ms`` after the
call, whatever the caller does meanwhile, as a provider's server sends it (the tokens wait in the
socket). ``--pacing consumer``: each token ``token_ms`` after the caller asked for the next one, so
the caller's own work on every token adds to the answer's length; this bench's runs before
2026-11-27 paced so.

    in-process   InMemoryRunner.run_async with RunConfig(streaming_mode="sse")
    durable      SessionWorkflow on one headless dev server (TEMPORAL_DEV_ARGS), sessions and the
                 stream table in an embedded Postgres (fsync off), one in-process worker; the
                 client follows the turn's stream by LISTEN/NOTIFY (activities/streaming.py)
    new          the first message of a conversation (starts its workflow, creates the session)
    next         a later message of the same conversation

Time to first token (TTFT): from the send to the first partial event in the caller's hands. Time to
final: to the committed final event. Each figure is the median of ``--turns`` turns, one at a time.

Run:  cd /work/main && .venv/bin/python bench/bench_streaming.py [--turns 20] [--first-token-ms 300]
Writes bench/results/streaming.json (streaming-consumer-paced.json with ``--pacing consumer``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from adk_core import App, Content, InMemoryRunner, LlmAgent, LlmRequest, LlmResponse, RunConfig  # noqa: E402
from adk_core.models import text_response  # noqa: E402
from adk_core.types import Event  # noqa: E402

RESULTS = ROOT / "bench" / "results"
TASK_QUEUE = "bench-streaming"


class PacedStreamModel:
    """A provider stand-in: first token after ``first_token_s``, then one token every ``token_s``."""

    name = "paced-stream"

    def __init__(self, tokens: int, first_token_s: float, token_s: float, *, provider_paced: bool = True) -> None:
        self.tokens, self.first_token_s, self.token_s = tokens, first_token_s, token_s
        self.provider_paced = provider_paced
        self.called_at: list[float] = []
        """perf_counter() when each call began and when its first token left (the worker runs in
        this process, so the durable turn's steps share the client's clock)."""
        self.first_token_at: list[float] = []

    async def generate_content(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]:
        words = [f"t{i} " for i in range(self.tokens)]
        called = time.perf_counter()
        self.called_at.append(called)
        await asyncio.sleep(self.first_token_s)
        self.first_token_at.append(time.perf_counter())
        for i, word in enumerate(words):
            if i and self.provider_paced:
                await asyncio.sleep(max(0.0, called + self.first_token_s + i * self.token_s - time.perf_counter()))
            elif i:
                await asyncio.sleep(self.token_s)
            if stream:
                yield LlmResponse(content=Content.model(word), partial=True)
        yield text_response("".join(words))


async def _timed_turn(events: Callable[[], AsyncIterator[Event]], tokens: int,
                      steps: list[tuple[float, float]] | None = None, model: PacedStreamModel | None = None,
                      ) -> tuple[float, float]:  # fmt: skip
    """(seconds to the first partial, seconds to the final event) of one turn. With ``steps`` and
    ``model``, also appends (send -> model called, model's first token -> client got it) in seconds."""
    start = time.perf_counter()
    first_at = None
    first = final = None
    partials = 0
    async for event in events():
        if event.partial:
            partials += 1
            if first is None:
                first_at = time.perf_counter()
                first = first_at - start
        elif event.is_final_response():
            final = time.perf_counter() - start
    if first is None or final is None or partials != tokens:
        raise RuntimeError(f"expected {tokens} partials and a final event, got {partials} partials, final={final}")
    if steps is not None and model is not None and first_at is not None:
        steps.append((model.called_at[-1] - start, first_at - model.first_token_at[-1]))
    return first, final


def _summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    firsts, finals = [s[0] for s in samples], [s[1] for s in samples]
    return {
        "ttft_median_ms": statistics.median(firsts) * 1000,
        "ttft_max_ms": max(firsts) * 1000,
        "final_median_ms": statistics.median(finals) * 1000,
    }


async def run_bench(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    from _stack import bench_stack

    from adk_temporal.worker import build_worker
    from adkt.client import AdkClient, connect

    model = PacedStreamModel(args.tokens, args.first_token_ms / 1000, args.token_ms / 1000,
                             provider_paced=args.pacing == "provider")
    app = App(name="bench_streaming", root_agent=LlmAgent(name="streamer", model=model))
    sse = RunConfig(streaming_mode="sse")
    runs: dict[str, list[tuple[float, float]]] = {"in_process_new": [], "in_process_next": []}
    steps: dict[str, list[tuple[float, float]]] = {}

    console.print(f"in-process: {args.turns} turns of each kind")
    runner = InMemoryRunner(app=app)
    for _ in range(args.turns):
        session = uuid.uuid4().hex[:8]
        for kind in ("new", "next"):
            def turn(session: str = session) -> AsyncIterator[Event]:
                return runner.run_async(user_id="u", session_id=session, new_message=Content.user("go"), run_config=sse)

            runs[f"in_process_{kind}"].append(await _timed_turn(turn, args.tokens))

    async with bench_stack() as stack:
        url = stack.database_url
        client = await connect(stack.temporal.address, namespace=stack.temporal.namespace, database_url=url)
        worker = build_worker(client, [app], task_queue=TASK_QUEUE, **stack.services)
        task = asyncio.create_task(worker.run())
        adk = AdkClient(client, task_queue=TASK_QUEUE, database_url=url)
        try:
            console.print("durable: warm-up (3 conversations)")
            for _ in range(3):
                session = uuid.uuid4().hex[:8]
                for _ in range(2):
                    await _timed_turn(lambda s=session: adk.stream(app.name, "u", s, "go", partial=True), args.tokens)
            console.print(f"durable: {args.turns} turns of each kind")
            runs["durable_new"], runs["durable_next"] = [], []
            for _ in range(args.turns):
                session = uuid.uuid4().hex[:8]
                for kind in ("new", "next"):
                    sample = await _timed_turn(
                        lambda s=session: adk.stream(app.name, "u", s, "go", partial=True), args.tokens,
                        steps.setdefault(kind, []), model,
                    )
                    runs[f"durable_{kind}"].append(sample)
        finally:
            await worker.shutdown()
            await asyncio.gather(task, return_exceptions=True)
    summary = {name: _summary(samples) for name, samples in runs.items()}
    return {
        "turns": args.turns, "tokens": args.tokens, "first_token_ms": args.first_token_ms, "token_ms": args.token_ms,
        "pacing": args.pacing, "cpus": os.cpu_count(), "runs": summary,
        "ratios": {
            f"durable/in_process TTFT, {kind}": summary[f"durable_{kind}"]["ttft_median_ms"]
            / summary[f"in_process_{kind}"]["ttft_median_ms"]
            for kind in ("new", "next")
        },
        "added_ttft_ms": {
            kind: summary[f"durable_{kind}"]["ttft_median_ms"] - summary[f"in_process_{kind}"]["ttft_median_ms"]
            for kind in ("new", "next")
        },
        "added_final_ms": {
            kind: summary[f"durable_{kind}"]["final_median_ms"] - summary[f"in_process_{kind}"]["final_median_ms"]
            for kind in ("new", "next")
        },
        # Where the added time goes, durable, medians: send -> the model activity calls the model, and
        # the model's first token -> the client reads it (Postgres row, NOTIFY, LISTEN, read).
        "durable_steps_median_ms": {
            kind: {"send_to_model_call": statistics.median(d for d, _ in pairs) * 1000,
                   "first_token_to_client": statistics.median(t for _, t in pairs) * 1000}
            for kind, pairs in steps.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--first-token-ms", type=float, default=300.0)
    parser.add_argument("--token-ms", type=float, default=10.0)
    parser.add_argument("--pacing", choices=("provider", "consumer"), default="provider",
                        help="when each token leaves the model: on the provider's clock, or token-ms after the "
                             "caller asked for it (see the module's docstring)")
    args = parser.parse_args()
    console = Console()
    results = asyncio.run(run_bench(args, console))
    table = Table(title=f"time to first token: {args.tokens} tokens, model TTFT {args.first_token_ms:.0f} ms, "
                        f"{args.token_ms:.0f} ms per token")
    for column in ("run", "TTFT median ms", "TTFT max ms", "final median ms"):
        table.add_column(column)
    for name, row in results["runs"].items():
        table.add_row(name.replace("_", " "), f"{row['ttft_median_ms']:.1f}", f"{row['ttft_max_ms']:.1f}",
                      f"{row['final_median_ms']:.1f}")
    console.print(table)
    for name, ratio in results["ratios"].items():
        console.print(f"{name}: {ratio:.2f}x (+{results['added_ttft_ms'][name.rsplit(', ', 1)[1]]:.0f} ms)")
    for kind, added in results["added_final_ms"].items():
        console.print(f"final event, {kind}: durable minus in-process +{added:.0f} ms")
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "streaming.json" if args.pacing == "provider" else "streaming-consumer-paced.json"
    (RESULTS / name).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
