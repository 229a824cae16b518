"""Removing what is kept only for a while: old streamed partials, old eval runs, stored payloads no
workflow references (docs/security.md, "Retention"). Each delete runs in bounded batches (one short
transaction each), so a pass never holds locks on a large table and writers carry on meanwhile.
``adk_temporal.retention`` runs these on a Temporal Schedule."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from adk_core.sql.schema import eval_runs, payloads, stream_chunks

MAX_BATCHES = 1000
"""A pass deletes at most this many batches per table; what is left waits for the next pass."""


async def _in_batches(engine: AsyncEngine, table: sa.Table, key: sa.Column[Any], where: sa.ColumnElement[bool], batch: int) -> int:
    """DELETE rows matching ``where``, ``batch`` at a time (SKIP LOCKED: rows a writer holds are left
    for the next pass), until none is left or MAX_BATCHES ran; returns how many went."""
    total = 0
    for _ in range(MAX_BATCHES):
        chosen = sa.select(key).where(where).limit(batch).with_for_update(skip_locked=True).scalar_subquery()
        async with engine.begin() as conn:
            deleted = (await conn.execute(sa.delete(table).where(key.in_(chosen)))).rowcount or 0
        total += deleted
        if deleted < batch:
            break
    return total


async def prune_stream_chunks(engine: AsyncEngine, *, before: float, batch: int = 1000) -> int:
    """Streamed partials written before ``before`` (epoch seconds): a finished turn's are deleted by its
    client; these are the ones of clients that went away."""
    return await _in_batches(engine, stream_chunks, stream_chunks.c.id, stream_chunks.c.create_time < before, batch)


async def prune_eval_runs(engine: AsyncEngine, *, before: float, batch: int = 100) -> int:
    """Eval runs started before ``before`` (their cases and trials cascade)."""
    return await _in_batches(engine, eval_runs, eval_runs.c.run_id, eval_runs.c.start_time < before, batch)


async def prune_payloads(engine: AsyncEngine, *, before: float, referenced: Collection[str], batch: int = 500) -> int:
    """Stored payloads written before ``before`` whose key is not in ``referenced`` (the keys the
    histories Temporal still keeps mention). ``before`` must leave time for a payload just stored to
    reach its history: a store happens before the event that references it is recorded. Walks the
    old keys in order, a batch at a time, and deletes the unreferenced ones of each batch."""
    total, after = 0, ""
    for _ in range(MAX_BATCHES):
        async with engine.begin() as conn:
            keys = (await conn.execute(
                sa.select(payloads.c.sha256)
                .where(payloads.c.create_time < before, payloads.c.sha256 > after)
                .order_by(payloads.c.sha256).limit(batch)
            )).scalars().all()
            unreferenced = [k for k in keys if k not in referenced]
            if unreferenced:
                # create_time checked again: a row stored again since it was read is young (READ
                # COMMITTED re-checks a row a concurrent store updated) and waits for a later pass.
                total += (await conn.execute(sa.delete(payloads).where(
                    payloads.c.sha256.in_(unreferenced), payloads.c.create_time < before
                ))).rowcount or 0
        if len(keys) < batch:
            break
        after = keys[-1]
    return total
