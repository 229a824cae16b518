"""A few connections held out of an engine's pool for the stores' hottest statements.

Every session commit of a durable turn is one small statement (an event append), run from a model
or tool activity while the turn's next workflow task runs on the same event loop. Through
SQLAlchemy, pool checkout and return, the autocommit switch and result handling cost more CPU
than the statement itself: about 1.1 ms per append against 0.4 ms here (``bench/bench_appends.py``).
Session reads are one statement too (``fetch_row_or_none``): the last 10 events of a session in 0.33 ms
against 0.70 through the engine (``bench/bench_session_scale.py``). ``held_connections(engine)`` checks a few connections out of the engine's pool,
in autocommit, and runs pre-compiled SQL on the psycopg connection underneath: the same database,
connect arguments and pool limits as the engine (a held connection counts against its pool).

One set per engine, shared by every store on it, so a store made per request holds nothing more.
``engine.dispose()`` returns them to the pool. The set does not keep its engine alive: a disposed
engine no one uses any more is collected, and its set with it. When every held connection is
busy, a call runs on an ordinary pooled connection instead of waiting, so holding never slows a
burst down. A connection that breaks, or that a cancellation leaves mid-statement, is invalidated
and replaced on next use. Errors are raised as SQLAlchemy ``DBAPIError`` s, as the engine raises
them, so ``store_errors`` sorts them the same way.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import psycopg
from sqlalchemy import event, exc
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.elements import ClauseElement

HELD_PER_ENGINE = 2
"""A worker's appends are short: two connections keep up with hundreds of turns a second, and the
rest of the pool stays free for everything else."""

Statement = tuple[str, Mapping[str, Any]]
"""Driver SQL (see ``driver_sql``) and its parameters."""
RowCheck = Callable[[int, tuple[Any, ...]], None]
"""Called with each statement's index and first row; raises to roll a transaction back."""

_DIALECT = postgresql.psycopg.dialect()
_Held = tuple[AsyncConnection, psycopg.AsyncConnection[Any]]
_BY_ENGINE: weakref.WeakKeyDictionary[Engine, HeldConnections] = weakref.WeakKeyDictionary()


def driver_sql(statement: ClauseElement) -> str:
    """``statement`` as psycopg takes it (``%(name)s`` placeholders); compile once and keep."""
    return str(statement.compile(dialect=_DIALECT))


def held_connections(engine: AsyncEngine, size: int = HELD_PER_ENGINE) -> HeldConnections:
    """The engine's held connections, made on first use (connecting to nothing until a call).
    ``size`` counts only on that first call: call it first with ``size=0`` for an engine whose
    connections must not be held (every call then checks one out of the pool)."""
    held = _BY_ENGINE.get(engine.sync_engine)
    if held is None:
        held = _BY_ENGINE[engine.sync_engine] = HeldConnections(engine, size)
    elif held._engine_ref() is None:  # made with another AsyncEngine of this sync engine, since collected
        held._engine_ref = weakref.ref(engine)
    return held


class HeldConnections:
    """Up to ``size`` autocommit connections from ``engine``'s pool, for ``fetch_first_rows``."""

    def __init__(self, engine: AsyncEngine, size: int = HELD_PER_ENGINE) -> None:
        # Weakly: _BY_ENGINE keeps this set while the engine lives, and an engine held from here
        # would live (with its pool) as long as the process. Once disposed (nothing held), an
        # engine no one else uses is collected, and its entry goes with it. A held connection does
        # refer to its engine: an engine dropped without dispose() while holding stays.
        self._engine_ref = weakref.ref(engine)
        self._size = size
        self._free: list[_Held] = []
        self._held = 0
        self._generation = 0
        """Bumped by engine.dispose(): a connection held before it goes back when its call ends."""
        event.listen(engine.sync_engine, "engine_disposed", self._on_engine_disposed)

    async def fetch_first_rows(
        self, statements: Sequence[Statement], check: RowCheck | None = None
    ) -> list[tuple[Any, ...]]:
        """Run each (sql, params) statement, in ONE transaction when there are several (all or
        nothing); returns each statement's first row (every statement must return one).
        ``check(index, row)`` sees each row as it comes; what it raises rolls the transaction back."""
        check = check or _accept
        async with self._connection() as (pooled, driver):
            if driver is None:
                return await _run_pooled(pooled, statements, check)
            sql = ""
            try:
                if len(statements) == 1:
                    sql = statements[0][0]
                    row = _one_row(await _fetchone(driver, *statements[0]))
                    check(0, row)
                    return [row]
                rows = []
                async with driver.transaction():
                    for index, (sql, params) in enumerate(statements):
                        rows.append(_one_row(await _fetchone(driver, sql, params)))
                        check(index, rows[-1])
                return rows
            except psycopg.Error as e:
                raise _as_dbapi_error(sql, e, driver) from e

    async def fetch_row_or_none(self, sql: str, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """One statement's first row, or None when it returns no row: a read of something that may
        not exist (a session), without a pool checkout or SQLAlchemy's result handling."""
        async with self._connection() as (pooled, driver):
            if driver is None:
                conn = await pooled.execution_options(isolation_level="AUTOCOMMIT")
                row = (await conn.exec_driver_sql(sql, dict(params))).first()
                return None if row is None else tuple(row)
            try:
                return await _fetchone(driver, sql, params)
            except psycopg.Error as e:
                raise _as_dbapi_error(sql, e, driver) from e

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[tuple[AsyncConnection, psycopg.AsyncConnection[Any] | None]]:
        generation = self._generation
        held = await self._take()
        if held is None:
            # Every held connection is busy: an ordinary pooled one.
            async with self._engine().connect() as pooled:
                yield pooled, None
            return
        pooled, driver = held
        try:
            yield held
        except BaseException:
            idle = driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            if driver.broken or driver.closed or not idle:
                # Broken, or left mid-statement by a cancellation: never handed out again.
                await self._release(pooled, invalidate=True)
            else:
                await self._give_back(held, generation)
            raise
        await self._give_back(held, generation)

    async def _take(self) -> _Held | None:
        if self._free:
            return self._free.pop()
        if self._held >= self._size:
            return None
        self._held += 1
        try:
            pooled = await self._engine().connect()
        except BaseException:
            self._held -= 1
            raise
        try:
            pooled = await pooled.execution_options(isolation_level="AUTOCOMMIT")
            driver = (await pooled.get_raw_connection()).driver_connection
            assert isinstance(driver, psycopg.AsyncConnection), "the engine runs on psycopg 3 (adk_core.sql.open_engine)"
        except BaseException:
            await self._release(pooled, invalidate=False)
            raise
        return pooled, driver

    def _engine(self) -> AsyncEngine:
        engine = self._engine_ref()
        # Callers reach this set through held_connections(engine), and hold that engine meanwhile.
        assert engine is not None, "the engine of held connections was collected while in use"
        return engine

    async def _give_back(self, held: _Held, generation: int) -> None:
        if generation == self._generation:
            self._free.append(held)
        else:  # the engine was disposed during the call: close it, as dispose closed the others
            await self._release(held[0], invalidate=True)

    async def _release(self, pooled: AsyncConnection, *, invalidate: bool) -> None:
        self._held -= 1
        with contextlib.suppress(Exception):
            if invalidate:
                await pooled.invalidate()
            await pooled.close()

    def _on_engine_disposed(self, _engine: Engine) -> None:
        # Runs inside AsyncEngine.dispose()'s greenlet, where the sync calls may await the driver.
        # The pool was just emptied of the connections checked in: close the held ones as well.
        self._generation += 1
        free, self._free = self._free, []
        self._held -= len(free)
        for pooled, _ in free:
            sync = pooled.sync_connection
            with contextlib.suppress(Exception):
                assert sync is not None
                sync.invalidate()  # closes the database connection; the pool discards it at close
                sync.close()


async def _fetchone(driver: psycopg.AsyncConnection[Any], sql: str, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
    cursor = await driver.execute(sql, params)
    return await cursor.fetchone()


def _one_row(row: tuple[Any, ...] | None) -> tuple[Any, ...]:
    assert row is not None, "the statements of fetch_first_rows always return one row"
    return row


def _as_dbapi_error(sql: str, error: psycopg.Error, driver: psycopg.AsyncConnection[Any]) -> exc.StatementError:
    """As the engine raises it, so ``store_errors`` sorts it the same way."""
    return exc.DBAPIError.instance(
        sql, None, error, psycopg.Error, hide_parameters=True, connection_invalidated=driver.broken
    )


def _accept(index: int, row: tuple[Any, ...]) -> None:
    pass


async def _run_pooled(pooled: AsyncConnection, statements: Sequence[Statement], check: RowCheck) -> list[tuple[Any, ...]]:
    if len(statements) == 1:
        conn = await pooled.execution_options(isolation_level="AUTOCOMMIT")
        sql, params = statements[0]
        row = tuple((await conn.exec_driver_sql(sql, dict(params))).one())
        check(0, row)
        return [row]
    rows = []
    async with pooled.begin():
        for index, (sql, params) in enumerate(statements):
            rows.append(tuple((await pooled.exec_driver_sql(sql, dict(params))).one()))
            check(index, rows[-1])
    return rows
