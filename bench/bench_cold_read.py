"""A model call's read of a long compacted session on a worker without it cached: whole vs skipping.

Starts an embedded Postgres (fsync off: this measures the queries, not the disk), migrates, and
stores one session per --sizes entry (default 1,000, 10,000 and 40,000 events) through
DatabaseSessionService, shaped as a compacting conversation: turns of --turn-events events
(default 8, as W1), and after every --interval turns (default 5) a compaction covering all but the
newest turn (overlap 1), nested in the next as the planner writes them. Then ANALYZE (autovacuum
does it on a live table), and, interleaved round by round (--rounds, default 20):

  whole     a fresh StoredEventsCache reads through the newest event (what every model call on
            an uncached session did before skip_compacted)
  skipping  the same with skip_compacted=True (what a compacting app's model call does now)

each followed by building the model's contents from what was read, as the model activity does.
Checks once per size that both give the same contents. Reports mean and median ms per size and
mode, events read, and skipping at the largest size / at the smallest (flat means bounded).

Run:  python bench/bench_cold_read.py [--sizes 1000 10000 40000] [--rounds 20]
Writes bench/results/cold-read.json (or --out).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402

from adk_core.compaction import compaction_event  # noqa: E402
from adk_core.flow.contents import build_contents  # noqa: E402
from adk_core.sessions.sql import DatabaseSessionService  # noqa: E402
from adk_core.sql import migrate  # noqa: E402
from adk_core.types import Content, Event, EventCompaction  # noqa: E402
from adk_temporal.activities._history import StoredEventsCache  # noqa: E402
from adkt.embedded import EmbeddedPostgres  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
APP, USER, AGENT = "cold", "u1", "agent"


def conversation(n_events: int, turn_events: int, interval: int) -> list[Event]:
    """About ``n_events`` events: turns of a user message and the agent's events, a compaction
    after every ``interval`` turns covering every turn but the newest."""
    events: list[Event] = []
    turn_starts: list[float] = []
    t = 1_700_000_000.0
    turn = 0
    while len(events) < n_events:
        turn += 1
        turn_starts.append(t)
        for k in range(turn_events):
            author = "user" if k == 0 else AGENT
            text = f"turn {turn} part {k}: " + "words of an ordinary length " * 6
            content = Content.user(text) if k == 0 else Content.model(text)
            events.append(Event(id=f"t{turn}.{k}", invocation_id=f"inv{turn}", author=author, timestamp=t, content=content))
            t += 0.01
        if turn % interval == 0:
            summary = EventCompaction(start_timestamp=turn_starts[0], end_timestamp=turn_starts[-1] - 0.005,
                                      compacted_content=Content.model("the conversation so far, in brief " * 20))
            events.append(compaction_event(summary, invocation_id=f"inv{turn}", timestamp=t))
            t += 0.01
    return events


async def store(service: DatabaseSessionService, session_id: str, events: list[Event]) -> None:
    session = await service.create_session(app_name=APP, user_id=USER, session_id=session_id)
    for i in range(0, len(events), 400):
        await service.append_events(session, events[i:i + 400])
        session.events.clear()


async def cold_read(service: DatabaseSessionService, session_id: str, through: str, skip: bool) -> tuple[float, int, Any]:
    started = time.perf_counter()
    events = await StoredEventsCache(service).through((APP, USER, session_id), through, skip_compacted=skip)
    assert events is not None and events[-1].id == through
    contents = build_contents(events, AGENT, None)
    return (time.perf_counter() - started) * 1000, len(events), contents


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": args.sizes, "rounds": args.rounds, "turn_events": args.turn_events,
                               "interval": args.interval, "cpus": os.cpu_count(), "load_average_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-cold-read-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pg", durable=False)
        await server.start()
        try:
            await migrate(server.url)
            service = DatabaseSessionService(server.url)
            try:
                newest: dict[str, str] = {}
                for size in args.sizes:
                    events = conversation(size, args.turn_events, args.interval)
                    await store(service, f"s{size}", events)
                    newest[f"s{size}"] = events[-1].id
                    print(f"stored {len(events):,} events", flush=True)
                async with service.engine.connect() as conn:
                    await conn.execution_options(isolation_level="AUTOCOMMIT")
                    await conn.execute(sa.text("VACUUM ANALYZE adk_events"))
                samples: dict[str, dict[str, list[float]]] = {sid: {"whole": [], "skipping": []} for sid in newest}
                read: dict[str, dict[str, int]] = {sid: {} for sid in newest}
                for r in range(args.rounds + 2):  # the first 2 rounds warm connections and plans
                    for sid, through in newest.items():
                        contents = {}
                        for mode in ("whole", "skipping"):
                            ms, count, contents[mode] = await cold_read(service, sid, through, mode == "skipping")
                            read[sid][mode] = count
                            if r >= 2:
                                samples[sid][mode].append(ms)
                        if r == 0:
                            assert contents["whole"] == contents["skipping"], sid
                results["events_read"] = read
                results["measured_ms"] = {
                    sid: {mode: {"mean": round(statistics.fmean(v), 2), "median": round(statistics.median(v), 2)}
                          for mode, v in modes.items()}
                    for sid, modes in samples.items()
                }
                first, last = f"s{args.sizes[0]}", f"s{args.sizes[-1]}"
                results["skipping_largest_over_smallest_median"] = round(
                    results["measured_ms"][last]["skipping"]["median"] / results["measured_ms"][first]["skipping"]["median"], 2)
                results["whole_over_skipping_median_at_largest"] = round(
                    results["measured_ms"][last]["whole"]["median"] / results["measured_ms"][last]["skipping"]["median"], 1)
            finally:
                await service.close()
        finally:
            await server.stop()
    results["load_average_at_end"] = os.getloadavg()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 40_000])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--turn-events", type=int, default=8)
    parser.add_argument("--interval", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "cold-read.json")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: results[k] for k in ("events_read", "measured_ms", "skipping_largest_over_smallest_median",
                                              "whole_over_skipping_median_at_largest")}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
