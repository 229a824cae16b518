"""The web app's event streams on the process's shared LISTEN connection (adkt/listener.py).

The API's turn streams follow their rows through ``StreamHub`` (adkt/_stream_follow.py); the
simulator's live updates (``/api/events``) listen here, on the same listener, instead of a
connection per open page.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from adk_core.simulator.sql import CHANNEL, SqlSimulatorStore
from adk_core.simulator.store import SimulatorStore
from adkt.listener import shared_listener

ANY_SESSION = ""
"""The id a page gets when updates may have been lost (a reconnect): re-read whatever it shows."""


def simulator_changes(store: SimulatorStore) -> contextlib.AbstractAsyncContextManager[AsyncIterator[str]]:
    """``store.changes()``, on the shared listener when the store is in Postgres."""
    if isinstance(store, SqlSimulatorStore):
        return _shared_changes(store)
    return store.changes()


@contextlib.asynccontextmanager
async def _shared_changes(store: SqlSimulatorStore) -> AsyncIterator[AsyncIterator[str]]:
    url = store.engine.url.render_as_string(hide_password=False)
    async with shared_listener(url).subscribe(CHANNEL) as subscription:

        async def ids() -> AsyncIterator[str]:
            while True:
                notice = await subscription.get()
                if notice is None:
                    continue
                if notice.missed:
                    yield ANY_SESSION
                for session_id in notice.payloads:
                    yield session_id

        yield ids()
