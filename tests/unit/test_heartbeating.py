"""activities.adk_activities.heartbeating: beats while the work runs, none after it ends,
cancelling the activity cancels the work, and a call leaves nothing for the cyclic garbage collector."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import weakref
from datetime import timedelta

import pytest
from temporalio import activity
from temporalio.testing import ActivityEnvironment

from adk_temporal.activities.adk_activities import heartbeating


def _env(heartbeat_timeout: timedelta | None) -> tuple[ActivityEnvironment, list[float]]:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=heartbeat_timeout)
    beats: list[float] = []
    env.on_heartbeat = lambda *details: beats.append(asyncio.get_running_loop().time())
    return env, beats


async def test_it_beats_every_quarter_of_the_timeout_while_the_work_runs_and_stops_after() -> None:
    env, beats = _env(timedelta(seconds=0.8))  # a beat every 0.2 s

    async def call() -> str:
        return await heartbeating(asyncio.sleep(0.7, "done"))

    assert await env.run(call) == "done"
    count = len(beats)
    assert 2 <= count <= 3, beats  # at 0.2, 0.4 and 0.6 s; a loaded machine may delay the third past 0.7
    await asyncio.sleep(0.5)
    assert len(beats) == count, "no beat after the work ended"


async def test_without_a_heartbeat_timeout_it_is_a_plain_await() -> None:
    env, beats = _env(None)

    async def call() -> str:
        return await heartbeating(asyncio.sleep(0.3, "done"))

    assert await env.run(call) == "done" and beats == []


async def test_cancelling_the_activity_cancels_the_work_and_the_beats() -> None:
    env, beats = _env(timedelta(seconds=0.8))
    cancelled = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def call() -> None:
        await heartbeating(work())

    task = asyncio.ensure_future(env.run(call))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()
    count = len(beats)
    await asyncio.sleep(0.5)
    assert len(beats) == count <= 1, "no beat after the cancel"


async def test_a_call_leaves_no_reference_cycle_behind() -> None:
    """Every model call heartbeats. A beat that kept itself alive through a cycle left the call's
    activity context, timer and copied contextvars to the cyclic collector: about 350 objects a W1
    turn, and most of the worker's collections (0.8 ms a turn of the 1 ms a turn it spent in them).
    Each call's activity context must be freed when the call ends, with the collector off. (Counting
    what a collection finds would also count garbage other tests' workers leave behind meanwhile.)"""
    env, _ = _env(timedelta(seconds=0.8))
    contexts: list[weakref.ref] = []

    async def call() -> str:
        contexts.append(weakref.ref(activity._Context.current()))
        return await heartbeating(asyncio.sleep(0, "done"))

    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            assert await env.run(call) == "done"
        assert len(contexts) == 5
        await asyncio.sleep(0)  # the loop drops the last call's cancelled timer (and the context it copied)
        assert [ref() for ref in contexts] == [None] * 5, "a heartbeating call's context outlived it, in a cycle"
    finally:
        gc.enable()
