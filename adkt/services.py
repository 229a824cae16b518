"""Opening the worker's stores: Postgres at a URL (migrated on start), sharing one engine."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from adk_core.artifacts.sql import DatabaseArtifactService
from adk_core.errors import ConfigurationError
from adk_core.memory.sql import DatabaseMemoryService
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import migrate, open_engine
from adk_temporal.workflows.payload_storage import PostgresPayloadDriver
from adkt.settings import Settings


def database_url(explicit: str | None = None) -> str | None:
    return explicit or Settings.load().database_url


@contextlib.asynccontextmanager
async def open_services(url: str | None) -> AsyncIterator[dict[str, Any]]:
    """Session, artifact and memory services and payload storage on one engine, as keyword
    arguments for build_worker."""
    url = database_url(url)
    if not url:
        raise ConfigurationError(
            "no sessions database: pass --database-url or set ADK_DATABASE_URL=postgresql+psycopg://..., "
            "or use `adkt dev`, which starts an embedded Postgres for you"
        )
    await migrate(url)
    engine = open_engine(url, pool_size=10, max_overflow=20)
    try:
        yield {
            "session_service": DatabaseSessionService(engine),
            "artifact_service": DatabaseArtifactService(engine),
            "memory_service": DatabaseMemoryService(engine),
            "payload_storage": PostgresPayloadDriver(engine),
        }
    finally:
        await engine.dispose()
