"""In-process cost of one W1 turn: adk_core's InMemoryRunner vs google-adk's, same workload, one run.

W1 (shared WORKLOAD-W1.md): one agent "assistant", a zero-latency scripted model "w1-scripted",
two async tools; one turn = 4 model calls + 3 tool calls ending in the text "done".

Measures, for each framework:
  fresh    create a session, then run one turn in it (ms per turn)
  10-turn  ten turns in one session, averaged per turn (the transcript grows turn by turn)

Both frameworks run interleaved in rounds so machine noise hits them alike; every measured turn is
checked (tool results {"sum": 3}, {"value": "X"}, {"sum": 7}, final text "done").

Run:  /work/venv/bin/python bench/bench_inprocess.py [--fresh 200] [--sessions 20] [--rounds 4]
      add --profile to print where adk_core's time goes (cProfile, top functions).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import statistics
import sys
import time
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from adk_core import Content, InMemoryRunner  # noqa: E402
from examples import w1  # noqa: E402

GOAL_RATIO = 0.5

TurnFn = Callable[[str, bool], Awaitable[None]]
"""Run one turn in session ``session_id``; create the session first when the flag is set."""


# --- adk_core ------------------------------------------------------------------------------------
def ours() -> TurnFn:
    runner = InMemoryRunner(app=w1.app)
    runner.auto_create_session = False
    message = Content.user(w1.USER_MESSAGE)

    async def turn(session_id: str, create: bool) -> None:
        if create:
            await runner.session_service.create_session(app_name=runner.app_name, user_id="u", session_id=session_id)
        events = [e async for e in runner.run_async(user_id="u", session_id=session_id, new_message=message)]
        w1.check_turn(events)

    return turn


# --- google-adk ----------------------------------------------------------------------------------
def google_adk() -> TurnFn:
    warnings.filterwarnings("ignore")
    logging.getLogger("google_adk").setLevel(logging.ERROR)
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner as AdkRunner
    from google.genai import types

    class W1Scripted(BaseLlm):
        """W1's scripted model, as WORKLOAD-W1.md defines it."""

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            n = 0
            for content in reversed(llm_request.contents):
                parts = content.parts or []
                if content.role == "user" and any(p.text for p in parts):
                    break
                n += sum(1 for p in parts if p.function_response is not None)
            if n == 0:
                part = types.Part(function_call=types.FunctionCall(name="add", args={"a": 1, "b": 2}))
            elif n == 1:
                part = types.Part(function_call=types.FunctionCall(name="lookup", args={"key": "x"}))
            elif n == 2:
                part = types.Part(function_call=types.FunctionCall(name="add", args={"a": 3, "b": 4}))
            else:
                part = types.Part(text="done")
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    agent = LlmAgent(
        name="assistant",
        model=W1Scripted(model="w1-scripted"),
        instruction="You are a helpful assistant. Use the tools add and lookup when asked.",
        tools=[add, lookup],
    )
    runner = AdkRunner(agent=agent, app_name="w1")
    message = types.Content(role="user", parts=[types.Part(text=w1.USER_MESSAGE)])

    async def turn(session_id: str, create: bool) -> None:
        if create:
            await runner.session_service.create_session(app_name="w1", user_id="u", session_id=session_id)
        events = [e async for e in runner.run_async(user_id="u", session_id=session_id, new_message=message)]
        results = [r.response for e in events for r in e.get_function_responses()]
        assert results == w1.EXPECTED_TOOL_RESULTS, results
        finals = [e for e in events if e.is_final_response() and e.content and e.content.parts and e.content.parts[0].text]
        assert finals and finals[-1].content.parts[0].text == w1.EXPECTED_FINAL_TEXT

    return turn


# The same tools as examples/w1.py, without postponed annotations (google-adk reads them eagerly).
async def add(a: int, b: int) -> dict:
    """Add two integers."""
    return {"sum": a + b}


async def lookup(key: str) -> dict:
    """Look up a key."""
    return {"value": key.upper()}


# --- measuring -----------------------------------------------------------------------------------
class Counter:
    def __init__(self) -> None:
        self.n = 0

    def next(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}-{self.n}"


async def measure_fresh(turn: TurnFn, ids: Counter, n: int) -> list[float]:
    times = []
    for _ in range(n):
        sid = ids.next("fresh")
        start = time.perf_counter()
        await turn(sid, True)
        times.append(time.perf_counter() - start)
    return times


async def measure_long(turn: TurnFn, ids: Counter, sessions: int, turns: int = 10) -> list[float]:
    """Per-turn time averaged over each ``turns``-turn session (session creation included once)."""
    per_turn = []
    for _ in range(sessions):
        sid = ids.next("long")
        start = time.perf_counter()
        for i in range(turns):
            await turn(sid, i == 0)
        per_turn.append((time.perf_counter() - start) / turns)
    return per_turn


async def run(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    frameworks = {"adk_core": ours(), "google-adk": google_adk()}
    ids = Counter()
    for turn in frameworks.values():  # warm-up: imports, caches, first-call paths
        await measure_fresh(turn, ids, 30)
        await measure_long(turn, ids, 2)
    results: dict[str, dict[str, list[float]]] = {name: {"fresh": [], "long": []} for name in frameworks}
    for _ in range(args.rounds):
        for name, turn in frameworks.items():
            gc.collect()
            results[name]["fresh"] += await measure_fresh(turn, ids, args.fresh // args.rounds)
            gc.collect()
            results[name]["long"] += await measure_long(turn, ids, max(1, args.sessions // args.rounds))
    return results


def report(results: dict[str, dict[str, list[float]]], console: Console) -> None:
    table = Table(title="W1 in-process, ms per turn (4 model calls + 3 tool calls, scripted model)")
    table.add_column("measure")
    table.add_column("adk_core mean", justify="right")
    table.add_column("google-adk mean", justify="right")
    table.add_column("adk_core median", justify="right")
    table.add_column("google-adk median", justify="right")
    table.add_column("ratio (means)", justify="right")
    labels = {"fresh": "fresh session: create + 1 turn", "long": "10-turn session, per turn"}
    for key, label in labels.items():
        ours_ms = [t * 1000 for t in results["adk_core"][key]]
        theirs_ms = [t * 1000 for t in results["google-adk"][key]]
        ratio = statistics.mean(ours_ms) / statistics.mean(theirs_ms)
        style = "green" if ratio <= GOAL_RATIO else "red"
        table.add_row(
            f"{label} (n={len(ours_ms)})",
            f"{statistics.mean(ours_ms):.2f}",
            f"{statistics.mean(theirs_ms):.2f}",
            f"{statistics.median(ours_ms):.2f}",
            f"{statistics.median(theirs_ms):.2f}",
            f"[{style}]{ratio:.2f}[/{style}]",
        )
    console.print(table)
    console.print(
        f"ratio = adk_core / google-adk {_google_adk_version()}; goal <= {GOAL_RATIO}. "
        "Every measured turn was checked for both frameworks."
    )


def _google_adk_version() -> str:
    from importlib.metadata import version

    return version("google-adk")


async def profile_ours(console: Console) -> None:
    import cProfile
    import pstats

    turn = ours()
    ids = Counter()
    await measure_long(turn, ids, 2)
    profiler = cProfile.Profile()
    profiler.enable()
    await measure_fresh(turn, ids, 100)
    await measure_long(turn, ids, 10)
    profiler.disable()
    console.print("[bold]adk_core profile (100 fresh + 100 long-session turns), by own time[/bold]")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fresh", type=int, default=200, help="fresh-session turns per framework")
    parser.add_argument("--sessions", type=int, default=20, help="10-turn sessions per framework")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds the iterations are split into")
    parser.add_argument("--profile", action="store_true", help="also profile adk_core")
    args = parser.parse_args()
    console = Console(width=max(120, Console().width))
    start = time.perf_counter()
    report(asyncio.run(run(args)), console)
    console.print(f"bench took {time.perf_counter() - start:.1f} s")
    if args.profile:
        asyncio.run(profile_ours(console))


if __name__ == "__main__":
    main()
