"""Postgres session stores side by side: adk_core's DatabaseSessionService vs google-adk's.

Measures, for each store, on the same Postgres server (each store in its own database):
  append, 1 session     sequential appends into one session (appends/s)
  append, 50 sessions   50 concurrent writers, one session each (appends/s, all writers together)
  last 20 of 100        get_session(num_recent_events=20) on a 100-event session (ms per read)
  last 20 of 10,000     the same on a 10,000-event session (ms per read)

Each measurement runs for --seconds (default 2) per store, split into rounds that alternate the two
stores so machine noise hits both alike. The big sessions are bulk-loaded, not appended one by one,
so set-up stays short. Every append carries a session key and a user: key (each writer is its own
user); app: keys are left out on purpose: every store serializes writers on the one app-state row.

google-adk's service is synchronous SQLAlchemy behind async methods: its calls block the event loop,
so its "concurrent" writers take turns; that is part of what is measured.

Run:  /work/venv/bin/python bench/bench_sessions.py [--seconds 2] [--database-url postgresql+psycopg://...]
      Without --database-url an embedded Postgres (adkt.embedded, fsync on) runs in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from adk_core.sessions import GetSessionConfig  # noqa: E402
from adk_core.sessions.sql import DatabaseSessionService  # noqa: E402
from adk_core.sql import migrate, open_engine  # noqa: E402
from adk_core.sql.schema import events as events_table  # noqa: E402
from adk_core.sql.schema import sessions as sessions_table  # noqa: E402
from adk_core.types import Content, Event, EventActions  # noqa: E402
from adkt.embedded import EmbeddedPostgres  # noqa: E402

WRITERS = 50
RECENT = 20
SIZES = (100, 10_000)


class Store:
    """The operations the benchmark needs, for one framework."""

    name: str

    async def create(self, app: str, user: str, session_id: str) -> Any: ...
    async def append(self, session: Any, i: int) -> None: ...
    async def bulk_load(self, session: Any, n: int) -> None: ...
    async def last(self, app: str, user: str, session_id: str, n: int) -> list[str]: ...
    async def close(self) -> None: ...


class Ours(Store):
    name = "adk_core"

    def __init__(self, url: str) -> None:
        self.url = url
        self.service = DatabaseSessionService(url)

    async def create(self, app: str, user: str, session_id: str) -> Any:
        return await self.service.create_session(app_name=app, user_id=user, session_id=session_id)

    async def append(self, session: Any, i: int) -> None:
        delta = {f"k{i % 10}": i, "user:last": i}
        event = Event(
            id=str(uuid.uuid4()),
            author="user",
            invocation_id="inv",
            timestamp=time.time(),
            content=Content.user(f"message {i}"),
            actions=EventActions(state_delta=delta),
        )
        await self.service.append_event(session, event)
        session.events.clear()  # both stores keep appended events on the copy; keep memory flat

    async def bulk_load(self, session: Any, n: int) -> None:
        start = time.time()
        rows = [
            {
                "app_name": session.app_name,
                "user_id": session.user_id,
                "session_id": session.id,
                "id": f"e{i}",
                "seq": i,
                "invocation_id": "inv",
                "author": "user",
                "branch": None,
                "timestamp": start + i * 1e-3,
                "event": Event(
                    id=f"e{i}", author="user", invocation_id="inv", timestamp=start + i * 1e-3,
                    content=Content.user(f"message {i}"),
                ).model_dump(mode="json"),
            }
            for i in range(1, n + 1)
        ]  # fmt: skip
        async with self.service.engine.begin() as conn:
            await conn.execute(sa.insert(events_table), rows)
            await conn.execute(
                sa.update(sessions_table)
                .where(sessions_table.c.app_name == session.app_name, sessions_table.c.id == session.id)
                .values(last_seq=n)
            )
            await conn.execute(sa.text("ANALYZE adk_events"))

    async def last(self, app: str, user: str, session_id: str, n: int) -> list[str]:
        got = await self.service.get_session(
            app_name=app, user_id=user, session_id=session_id, config=GetSessionConfig(num_recent_events=n)
        )
        assert got is not None
        return [e.id for e in got.events]

    async def close(self) -> None:
        await self.service.close()


class GoogleAdk(Store):
    name = "google-adk"

    def __init__(self, url: str) -> None:
        from google.adk.sessions import DatabaseSessionService as AdkDatabaseSessionService

        self.service = AdkDatabaseSessionService(url)  # creates its tables (create_all) itself

    async def create(self, app: str, user: str, session_id: str) -> Any:
        return await self.service.create_session(app_name=app, user_id=user, session_id=session_id)

    async def append(self, session: Any, i: int) -> None:
        from google.adk.events import Event as AdkEvent
        from google.adk.events import EventActions as AdkEventActions
        from google.genai import types

        delta = {f"k{i % 10}": i, "user:last": i}
        event = AdkEvent(
            author="user",
            invocation_id="inv",
            content=types.Content(role="user", parts=[types.Part(text=f"message {i}")]),
            actions=AdkEventActions(state_delta=delta),
        )
        await self.service.append_event(session, event)
        session.events.clear()

    async def bulk_load(self, session: Any, n: int) -> None:
        from google.adk.events import Event as AdkEvent
        from google.adk.sessions.database_session_service import StorageEvent
        from google.genai import types

        start = time.time()
        rows = [
            StorageEvent.from_event(
                session,
                AdkEvent(
                    id=f"e{i}", author="user", invocation_id="inv", timestamp=start + i * 1e-3,
                    content=types.Content(role="user", parts=[types.Part(text=f"message {i}")]),
                ),
            )
            for i in range(1, n + 1)
        ]  # fmt: skip
        columns = [c.key for c in StorageEvent.__table__.columns]
        with self.service.database_session_factory() as db:
            db.execute(sa.insert(StorageEvent), [{c: getattr(row, c) for c in columns} for row in rows])
            db.commit()
            db.execute(sa.text("ANALYZE events"))
            db.commit()

    async def last(self, app: str, user: str, session_id: str, n: int) -> list[str]:
        from google.adk.sessions.base_session_service import GetSessionConfig as AdkConfig

        got = await self.service.get_session(
            app_name=app, user_id=user, session_id=session_id, config=AdkConfig(num_recent_events=n)
        )
        assert got is not None
        return [e.id for e in got.events]

    async def close(self) -> None:
        self.service.db_engine.dispose()


Step = Callable[[int], Awaitable[None]]


async def until(deadline: float, step: Step) -> int:
    """Call ``step(i)`` until ``deadline`` (a perf_counter value); the number of calls made.

    Concurrent callers share one deadline: google-adk's calls never yield to the event loop, so its
    first writer runs the whole window and the others find it over, which is what it can do.
    """
    i = 0
    while time.perf_counter() < deadline:
        await step(i)
        i += 1
    return i


def for_seconds(seconds: float, step: Step) -> Awaitable[int]:
    return until(time.perf_counter() + seconds, step)


async def prepare(store: Store) -> dict[str, Callable[[float], Awaitable[int]]]:
    """Create the sessions for every measurement; return, per measurement, a function that runs it
    for a while and returns how many operations it completed."""
    app = f"bench-{uuid.uuid4().hex[:8]}"
    one = await store.create(app, "u0", "one")
    await store.append(one, -1)  # warm the pool and the statement caches
    writers = [await store.create(app, f"w{w}", f"w{w}") for w in range(WRITERS)]
    for session in writers:
        await store.append(session, -1)

    def appends_one(seconds: float) -> Awaitable[int]:
        return for_seconds(seconds, lambda i: store.append(one, i))

    async def appends_many(seconds: float) -> int:
        deadline = time.perf_counter() + seconds
        counts = await asyncio.gather(*(until(deadline, _appender(store, s)) for s in writers))
        return sum(counts)

    runs: dict[str, Callable[[float], Awaitable[int]]] = {
        "append, 1 session (appends/s)": appends_one,
        f"append, {WRITERS} sessions (appends/s)": appends_many,
    }
    for size in SIZES:
        session_id = f"big{size}"
        session = await store.create(app, "reader", session_id)
        await store.bulk_load(session, size)
        expected = [f"e{i}" for i in range(size - RECENT + 1, size + 1)]
        assert await store.last(app, "reader", session_id, RECENT) == expected, store.name
        runs[f"last {RECENT} of {size:,} (ms/read)"] = _reader(store, app, session_id)
    return runs


def _appender(store: Store, session: Any) -> Step:
    return lambda i: store.append(session, i)


def _reader(store: Store, app: str, session_id: str) -> Callable[[float], Awaitable[int]]:
    async def step(i: int) -> None:
        await store.last(app, "reader", session_id, RECENT)

    return lambda seconds: for_seconds(seconds, step)


async def measure_all(stores: list[Store], seconds: float, rounds: int) -> dict[str, dict[str, float]]:
    runs = {store.name: await prepare(store) for store in stores}
    totals: dict[str, dict[str, list[float]]] = {s.name: {k: [0, 0.0] for k in runs[s.name]} for s in stores}
    for key in runs[stores[0].name]:
        for r in range(rounds):
            for store in stores if r % 2 == 0 else reversed(stores):
                started = time.perf_counter()
                done = await runs[store.name][key](seconds / rounds)
                totals[store.name][key][0] += done
                totals[store.name][key][1] += time.perf_counter() - started
    results: dict[str, dict[str, float]] = {}
    for name, per_key in totals.items():
        results[name] = {
            key: (count / elapsed if "appends/s" in key else elapsed * 1000 / count)
            for key, (count, elapsed) in per_key.items()
        }
    return results


async def create_database(admin_url: str, name: str) -> str:
    engine = open_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    finally:
        await engine.dispose()
    return str(sa.make_url(admin_url).set(database=name).render_as_string(hide_password=False))


async def run(args: argparse.Namespace) -> None:
    warnings.filterwarnings("ignore")
    logging.getLogger("google_adk").setLevel(logging.ERROR)
    console = Console()
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        server: EmbeddedPostgres | None = None
        admin_url = args.database_url
        if admin_url is None:
            server = EmbeddedPostgres(Path(tmp) / "pg", database="postgres")
            await server.start()
            admin_url = server.url
            console.print(f"[dim]embedded Postgres on port {server.port} (fsync on)[/dim]")
        try:
            suffix = uuid.uuid4().hex[:8]
            ours_url = await create_database(admin_url, f"bench_ours_{suffix}")
            theirs_url = await create_database(admin_url, f"bench_google_adk_{suffix}")
            await migrate(ours_url)
            stores: list[Store] = [Ours(ours_url), GoogleAdk(theirs_url)]
            try:
                results = await measure_all(stores, args.seconds, args.rounds)
            finally:
                for store in stores:
                    await store.close()
        finally:
            if server is not None:
                await server.stop()

    table = Table(title=f"Postgres session stores ({args.seconds:g} s per measurement)")
    table.add_column("measurement")
    table.add_column("adk_core", justify="right")
    table.add_column("google-adk", justify="right")
    table.add_column("adk_core advantage", justify="right")
    for key, ours_value in results["adk_core"].items():
        theirs_value = results["google-adk"][key]
        higher_is_better = "appends/s" in key
        ratio = ours_value / theirs_value if higher_is_better else theirs_value / ours_value
        table.add_row(key, f"{ours_value:,.2f}", f"{theirs_value:,.2f}", f"{ratio:.1f}x")
    console.print(table)
    ours_growth = (
        results["adk_core"][f"last {RECENT} of 10,000 (ms/read)"]
        / results["adk_core"][f"last {RECENT} of 100 (ms/read)"]
    )
    theirs_growth = (
        results["google-adk"][f"last {RECENT} of 10,000 (ms/read)"]
        / results["google-adk"][f"last {RECENT} of 100 (ms/read)"]
    )
    console.print(
        f"last {RECENT} events, 10,000-event vs 100-event session: adk_core {ours_growth:.2f}x slower, "
        f"google-adk {theirs_growth:.2f}x slower"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each measurement, per store")
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds the seconds are split into")
    parser.add_argument(
        "--database-url",
        help="a Postgres server to use (postgresql+psycopg://user@host/db); two databases are created on it",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
