"""The chaos bench: conversations keep running while worker processes are SIGKILLed at random.

    python -m bench.chaos.run --kills 100 --turns 100      # the hardening target
    python -m bench.chaos.run --kills 3 --turns 20         # a quick look

It starts its own embedded Temporal dev server (TEMPORAL_DEV_ARGS, in memory) and embedded Postgres,
``--workers`` worker processes for bench/chaos/app.py (``python worker.py``, or ``adkt worker`` with
``--entry adkt``), and ``--sessions`` conversations that send "deposit N" turns through AdkClient.
Every ``--kill-interval`` seconds (jittered; once every worker is up) it SIGKILLs a random worker and
starts a replacement. Timeouts are the defaults of the app and of Temporal: how fast a dead worker is
noticed is what this measures.

Conversations keep sending turns until ``--turns`` turns are done and every kill has happened (at
most ``--max-turns``), then the bench waits for the turns in flight, reads the Temporal histories, the
stored sessions and the tool's effects, prints a table and writes JSON to bench/chaos/results/.
Every wait is bounded (``--turn-timeout``, ``--deadline``): the bench always ends by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import text

from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TEMPORAL_DEV_ARGS, EmbeddedPostgres, TemporalDevServer
from adkt.services import open_services
from bench.chaos import _analysis as analysis
from bench.chaos.app import APP_NAME, SCHEMA
from bench.chaos.workers import WorkerPool

RESULTS = Path(__file__).resolve().parent / "results"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kills", type=int, default=100, help="SIGKILLs to deliver (default 100)")
    p.add_argument("--turns", type=int, default=100, help="turns to complete at least (default 100)")
    p.add_argument("--max-turns", type=int, default=None, help="turns to start at most (default 100 x --turns)")
    p.add_argument("--sessions", type=int, default=8, help="concurrent conversations (default 8)")
    p.add_argument("--workers", type=int, default=3, help="worker processes kept running (default 3)")
    p.add_argument("--kill-interval", type=float, default=2.0,
                   help="mean seconds between kills, counted once every worker is up (default 2)")
    p.add_argument("--think", type=float, default=0.2, help="mean pause between a session's turns (default 0.2 s)")
    p.add_argument("--tool-seconds", type=float, default=0.2,
                   help="time the tool spends before its effect: the window for mid-tool kills (default 0.2)")
    p.add_argument("--turn-timeout", type=float, default=900.0,
                   help="give up on one turn after this long (default 900 s: longer than the 10 min model timeout)")
    p.add_argument("--deadline", type=float, default=3600.0, help="stop starting turns and kills after this (default 3600 s)")
    p.add_argument("--resends", type=int, default=3,
                   help="times a turn is sent again (same message id) after a client error (default 3)")
    p.add_argument("--entry", choices=("worker.py", "adkt"), default="worker.py", help="how workers are started")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", type=Path, default=None, help="JSON file (default bench/chaos/results/chaos-<time>.json)")
    p.add_argument("--keep", action="store_true", help="keep the work folder (worker logs, traces)")
    return p  # fmt: skip


@dataclasses.dataclass
class Run:
    args: argparse.Namespace
    client: AdkClient
    pool: WorkerPool
    started: float = dataclasses.field(default_factory=time.time)
    turns: list[analysis.Turn] = dataclasses.field(default_factory=list)
    kills: list[analysis.Kill] = dataclasses.field(default_factory=list)
    restarts: list[int] = dataclasses.field(default_factory=list)
    """pids of workers that died without our kill (and were replaced)"""
    stop: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    history_events: list[int] = dataclasses.field(default_factory=list)
    """events in each run of each session workflow: what a worker replays after a kill"""

    @property
    def completed(self) -> int:
        return sum(1 for t in self.turns if t.done_at is not None)

    def past_deadline(self) -> bool:
        return time.time() - self.started > self.args.deadline

    def check_done(self) -> None:
        if self.past_deadline() or len(self.turns) >= self.args.max_turns:
            self.stop.set()
        elif self.completed >= self.args.turns and len(self.kills) >= self.args.kills:
            self.stop.set()


async def _send(run: Run, turn: analysis.Turn, user_id: str, attempts: int) -> bool:
    """Send ``turn``'s message up to ``attempts`` times with one message id, backing off between
    tries; every client error is recorded. True once a send returned the turn's result."""
    message_id = f"{turn.session_id}/{turn.index}"
    for attempt in range(attempts):
        if attempt:
            await asyncio.sleep(min(2.0**attempt, 10.0))
        try:
            result = await asyncio.wait_for(
                run.client.send(APP_NAME, user_id, turn.session_id, f"deposit {turn.index}", message_id=message_id),
                timeout=run.args.turn_timeout,
            )
        except TimeoutError:
            turn.client_errors.append(f"no result within {run.args.turn_timeout:g}s")
            continue
        except Exception as e:  # noqa: BLE001  (a failed send is a result: recorded, reported)
            turn.client_errors.append(f"{type(e).__name__}: {e}")
            continue
        turn.done_at = time.time()
        turn.event_ids = [e.id for e in result.events]
        turn.final_text = result.final_text
        return True
    return False


async def _session(run: Run, rng: random.Random, user_id: str, session_id: str) -> None:
    index = failed_in_a_row = 0
    while not run.stop.is_set() and failed_in_a_row < 3:
        index += 1
        turn = analysis.Turn(session_id, index, amount=index, sent_at=time.time())
        run.turns.append(turn)
        # A client error is a finding (recorded); then the client does what a caller would: send the
        # same message id again, which the workflow deduplicates.
        if await _send(run, turn, user_id, 1 + run.args.resends):
            failed_in_a_row = 0
        else:
            turn.error = turn.client_errors[-1]
            failed_in_a_row += 1
        run.check_done()
        await asyncio.sleep(run.args.think * rng.uniform(0.5, 1.5))
        run.check_done()


async def _send_failed_again(run: Run, users: dict[str, str]) -> None:
    """After the chaos: whether the turns that failed for their caller finish when sent once more."""
    failed = [t for t in run.turns if t.done_at is None]
    await asyncio.gather(*(_send(run, t, users[t.session_id], 1) for t in failed))
    for turn in failed:
        turn.finished_after_chaos = turn.done_at is not None


async def _chaos(run: Run, rng: random.Random) -> None:
    pool, args = run.pool, run.args
    # Warm up: every conversation has finished a turn before the first kill.
    while len({t.session_id for t in run.turns if t.done_at}) < args.sessions and not run.stop.is_set():
        await asyncio.sleep(0.05)
        run.check_done()
    while len(run.kills) < args.kills and not run.stop.is_set():
        for dead in pool.unexpected_exits():
            run.restarts.append(dead.pid)
            dead.killed_at = time.time()  # counted as gone; replaced below
            pool.start_one()
        await pool.wait_ready(args.workers, timeout=120)
        await asyncio.sleep(args.kill_interval * rng.uniform(0.5, 1.5))
        if run.stop.is_set():
            break
        victim = rng.choice(pool.ready())
        at = pool.kill(victim)
        run.kills.append(analysis.Kill(at=at, pid=victim.pid, identity=victim.identity))
        pool.start_one()
        print(f"  kill {len(run.kills)}/{args.kills}: worker {victim.pid} at +{at - run.started:.1f}s, "
              f"{run.completed} turns done", flush=True)  # fmt: skip
        run.check_done()
    while not run.stop.is_set():
        await asyncio.sleep(0.1)
        run.check_done()


async def _histories(run: Run, session_ids: list[tuple[str, str]]) -> list[analysis.WorkflowTimeline]:
    client = run.client.client
    timelines = []
    for user_id, session_id in session_ids:
        workflow_id = session_workflow_id(APP_NAME, user_id, session_id)
        runs = []
        async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
            history = await client.get_workflow_handle(workflow_id, run_id=execution.run_id).fetch_history()
            runs.append((execution.run_id, list(history.events)))
        timelines.append(analysis.timeline(workflow_id, runs))
        run.history_events += [len(events) for _, events in runs]
    return timelines


async def _effects(database_url: str) -> dict[str, Any]:
    from adk_core.sql import open_engine

    engine = open_engine(database_url)
    try:
        async with engine.connect() as conn:
            raw, keys = (await conn.execute(text("SELECT count(*), count(DISTINCT key) FROM chaos_executions"))).one()
            effects, effect_keys = (await conn.execute(text("SELECT count(*), count(DISTINCT key) FROM chaos_effects"))).one()
            balance, naive = (
                await conn.execute(text("SELECT coalesce(sum(balance), 0), coalesce(sum(naive_balance), 0) FROM chaos_accounts"))
            ).one()
            applied = (await conn.execute(text("SELECT coalesce(sum(amount), 0) FROM chaos_effects"))).scalar_one()
    finally:
        await engine.dispose()
    return {
        "raw_executions": raw,
        "distinct_keys": keys,
        "re_executions": raw - keys,
        "effect_rows": effects,
        "duplicate_effects_after_dedupe": int((effects - effect_keys) + (balance - applied)),
        # What a tool without the dedupe would have added on top of the right balances.
        "naive_overcount": int(naive - balance),
    }  # fmt: skip


async def main(args: argparse.Namespace) -> dict[str, Any]:
    args.max_turns = args.max_turns or 100 * args.turns
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="adk-chaos-"))
    (work / "logs").mkdir()
    (work / "trace").mkdir()
    print(f"chaos: {args.kills} kills, >= {args.turns} turns, {args.sessions} sessions, {args.workers} workers; "
          f"work folder {work}", flush=True)  # fmt: skip
    async with (
        TemporalDevServer(port=0, headless=True, extra_args=TEMPORAL_DEV_ARGS) as temporal,
        EmbeddedPostgres(work / "postgres", durable=False) as postgres,
    ):
        url = await postgres.create_database("chaos")
        async with open_services(url) as services:  # migrates the session tables
            async with services["session_service"].engine.begin() as conn:
                for statement in SCHEMA:
                    await conn.execute(text(statement))
        task_queue = f"chaos-{uuid.uuid4().hex[:8]}"
        pool = WorkerPool(
            temporal.address, temporal.namespace, url, task_queue, work / "logs", entry=args.entry,
            env={"CHAOS_DATABASE_URL": url, "CHAOS_TRACE_DIR": str(work / "trace"),
                 "CHAOS_TOOL_SECONDS": str(args.tool_seconds)},
        )  # fmt: skip
        try:
            for _ in range(args.workers):
                pool.start_one()
            await pool.wait_ready(args.workers, timeout=120)
            client = AdkClient(await connect(temporal.address, namespace=temporal.namespace), task_queue=task_queue)
            run = Run(args, client, pool)
            session_ids = [(f"u{i}", f"s{i}-{uuid.uuid4().hex[:6]}") for i in range(args.sessions)]
            sessions = [asyncio.create_task(_session(run, rng, u, s)) for u, s in session_ids]
            chaos = asyncio.create_task(_chaos(run, rng))
            await asyncio.wait([chaos, *sessions], timeout=args.deadline + args.turn_timeout + 60)
            run.stop.set()
            for task in (chaos, *sessions):
                if not task.done():
                    task.cancel()
            await asyncio.gather(chaos, *sessions, return_exceptions=True)
            if chaos.done() and not chaos.cancelled() and chaos.exception() is not None:
                raise chaos.exception()  # type: ignore[misc]
            elapsed = time.time() - run.started
            await _send_failed_again(run, dict((s, u) for u, s in session_ids))
            timelines = await _histories(run, session_ids)
            async with open_services(url) as services:
                stored = {}
                for user_id, session_id in session_ids:
                    session = await services["session_service"].get_session(
                        app_name=APP_NAME, user_id=user_id, session_id=session_id
                    )
                    stored[session_id] = session.events if session is not None else []
            effects = await _effects(url)
        finally:
            await pool.stop()
        attempts = analysis.read_attempts(work / "trace")
        analysis.recoveries(run.kills, timelines, attempts)
    report = _report(run, elapsed, stored, effects, work)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return report


def _report(run: Run, elapsed: float, stored: dict[str, list[Any]], effects: dict[str, Any], work: Path) -> dict[str, Any]:
    turns, kills = run.turns, run.kills
    failed = [t for t in turns if t.error is not None]
    latencies = [t.done_at - t.sent_at for t in turns if t.done_at is not None and t.error is None]
    stalling = [k for k in kills if k.stalled]
    recovered = [k.recovery_s for k in stalling if k.recovery_s is not None]
    stalls = [why for k in kills for why in k.stalled.values()]
    return {
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(run.args).items()},
        "elapsed_s": round(elapsed, 1),
        "all_runs_finished": not failed and all(not k.unrecovered for k in kills),
        "turns": {"started": len(turns), "completed": len(turns) - len(failed),
                  "failed": [f"{t.session_id} turn {t.index}: {t.error}" for t in failed],
                  "failed_then_finished_when_sent_after_the_chaos": sum(1 for t in failed if t.finished_after_chaos)},
        "client_errors": [f"{t.session_id} turn {t.index}: {e}" for t in turns for e in t.client_errors],
        "turns_resent": sum(1 for t in turns if t.client_errors and t.done_at is not None),
        "turn_latency_s": analysis.summary(latencies),
        "kills": len(kills),
        "kills_that_stalled_work": len(stalling),
        "stalled_conversations_by_cause": {
            "workflow task in flight": stalls.count("a"), "activity in flight": stalls.count("b"),
            "sticky to the dead worker": stalls.count("c")},
        "recovery_s": analysis.summary(recovered),
        "unrecovered": [w for k in kills for w in k.unrecovered],
        "unexpected_worker_exits": run.restarts,
        "workflow_runs": len(run.history_events),
        "history_events_per_run_max": max(run.history_events, default=0),
        "events": analysis.check_events(turns, stored),
        "answers": analysis.check_answers(turns, stored),
        "tool_effects": effects,
        "per_kill": [{"at_s": round(k.at - run.started, 2), "pid": k.pid, "recovery_s": k.recovery_s,
                      "stalled": k.stalled} for k in kills],
        "work_folder": str(work) if run.args.keep else None,
    }  # fmt: skip


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_table(report: dict[str, Any]) -> None:
    rec, lat, ev, fx = report["recovery_s"], report["turn_latency_s"], report["events"], report["tool_effects"]
    ans = report["answers"]
    causes = report["stalled_conversations_by_cause"]
    rows = [
        ("every run finished", "yes" if report["all_runs_finished"] else "NO"),
        ("turns completed / started", f"{report['turns']['completed']} / {report['turns']['started']}"),
        ("failed turns done when resent after", f"{report['turns']['failed_then_finished_when_sent_after_the_chaos']}"
                                                f" / {len(report['turns']['failed'])}"),
        ("client errors (turns then resent ok)", f"{len(report['client_errors'])} ({report['turns_resent']})"),
        ("kills (stalled work / total)", f"{report['kills_that_stalled_work']} / {report['kills']}"),
        ("stalls: wft / activity / sticky", f"{causes['workflow task in flight']} / {causes['activity in flight']} / "
                                            f"{causes['sticky to the dead worker']}"),
        ("recovery s, median / max", f"{_fmt(rec['median'])} / {_fmt(rec['max'])}"),
        ("turn latency s, median / p95 / max", f"{_fmt(lat['median'])} / {_fmt(lat['p95'])} / {_fmt(lat['max'])}"),
        ("events lost / doubled", f"{ev['lost']} / {ev['doubled']}"),
        ("events stored, not returned to the sender", str(ev["stored_not_returned"])),
        ("stored balances off (exactly-once broken)", str(len(ans["stored_sum_errors"]))),
        ("answers empty / differing from the store", f"{len(ans['empty_answers'])} / "
                                                     f"{len(ans['answers_differing_from_store'])}"),
        ("tool executions / distinct keys", f"{fx['raw_executions']} / {fx['distinct_keys']}"),
        ("duplicate effects after dedupe", str(fx["duplicate_effects_after_dedupe"])),
        ("session workflow runs, longest history", f"{report['workflow_runs']}, "
                                                   f"{report['history_events_per_run_max']} events"),
        ("elapsed s", f"{report['elapsed_s']:.0f}"),
    ]  # fmt: skip
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def _run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    report = asyncio.run(main(args))
    print_table(report)
    out = args.out or RESULTS / f"chaos-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\nresults: {out}")
    ev, ans = report["events"], report["answers"]
    ok = (report["all_runs_finished"] and not report["client_errors"] and ev["lost"] == ev["doubled"] == 0
          and ev["stored_not_returned"] == 0 and not any(ans.values())
          and report["tool_effects"]["duplicate_effects_after_dedupe"] == 0)  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(_run())
