"""The floor carrying W1's recorded bytes (bench_w1_threads.py), in a module of its own: the sandboxed
floor's module (_floor.py) is imported afresh for each of its workflows, so it stays as small as it was."""

from __future__ import annotations

import dataclasses
import time
import uuid
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

from adk_core.sessions import Session, SessionService
from adk_core.types import Event

# The floor's 7 sequential activities carrying what a W1 turn's 7 activities carry: each call's
# recorded input and result, as plain JSON values (no models decoded, no engine). Against the floor
# this is what W1's bytes cost Temporal; with ``store``, the last call also appends the 8 events a W1
# turn stores, in one write, as W1's last model call does: what that write adds.

W1_CALLS: list[tuple[Any, Any]] = []
"""A recorded W1 turn: (input, result) of each of its activities, in order (set by the bench)."""

W1_EVENTS: list[Event] = []
"""The events a recorded W1 turn stored (set by the bench); stored again with new ids."""


@dataclasses.dataclass
class BytesFloorStore:
    """Where the bytes floor's last call writes: a session of its own (set by the bench)."""

    sessions: SessionService | None = None
    session: Session | None = None


STORE = BytesFloorStore()


@activity.defn(name="bench.echo")
async def echo(index: int, payload: Any) -> Any:
    return W1_CALLS[index][1]


@activity.defn(name="bench.echo_store")
async def echo_store(index: int, payload: Any) -> Any:
    assert STORE.sessions is not None and STORE.session is not None, "record_w1_turn sets the store first"
    now = time.time()
    events = [e.model_copy(update={"id": str(uuid.uuid4()), "timestamp": now}) for e in W1_EVENTS]
    await STORE.sessions.append_events(STORE.session, events)
    STORE.session.events.clear()  # only the write is measured, not a copy that grows
    return W1_CALLS[index][1]


@workflow.defn(name="BenchW1BytesFloorWorkflow", sandboxed=False)
class W1BytesFloorWorkflow:
    """Unsandboxed, like the floor it is compared with, and because it reads the bench's recording
    (module globals, which a sandbox would import afresh, empty)."""

    @workflow.run
    async def run(self, store: bool) -> int:
        last = len(W1_CALLS) - 1
        for i, (payload, _) in enumerate(W1_CALLS):
            await workflow.execute_activity(
                "bench.echo_store" if store and i == last else "bench.echo", args=[i, payload],
                start_to_close_timeout=timedelta(seconds=30),
            )
        return len(W1_CALLS)
