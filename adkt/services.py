"""Opening the worker's stores: Postgres at a URL (migrated on start), sharing one engine."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy.ext.asyncio import create_async_engine

from adk_core.artifacts.sql import DatabaseArtifactService
from adk_core.errors import ConfigurationError
from adk_core.memory.sql import DatabaseMemoryService
from adk_core.sessions.sql import DatabaseSessionService, migrate
from adk_core.sessions.sql.engine import postgres_url

DATABASE_URL_ENV = "ADK_DATABASE_URL"


def database_url(explicit: str | None = None) -> str | None:
    return explicit or os.environ.get(DATABASE_URL_ENV) or None


@contextlib.asynccontextmanager
async def open_services(url: str | None) -> AsyncIterator[dict[str, Any]]:
    """Session, artifact and memory services on one engine, as keyword arguments for build_worker."""
    url = database_url(url)
    if not url:
        raise ConfigurationError(
            f"no sessions database: pass --database-url or set {DATABASE_URL_ENV}=postgresql+psycopg://..., "
            "or use `adkt dev`, which starts an embedded Postgres for you"
        )
    await migrate(url)
    engine = create_async_engine(postgres_url(url), pool_size=10, max_overflow=20)
    try:
        yield {
            "session_service": DatabaseSessionService(engine),
            "artifact_service": DatabaseArtifactService(engine),
            "memory_service": DatabaseMemoryService(engine),
        }
    finally:
        await engine.dispose()
