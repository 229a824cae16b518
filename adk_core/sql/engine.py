"""Opening the async engine the SQL services share, and who disposes it."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from adk_core.errors import ConfigurationError

DRIVER = "postgresql+psycopg"


def postgres_url(url: str | URL) -> URL:
    """``url`` with the psycopg 3 driver; plain ``postgresql://`` / ``postgres://`` URLs are upgraded."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        return parsed.set(drivername=DRIVER)
    if parsed.drivername != DRIVER:
        raise ConfigurationError(
            f"database URL uses driver {parsed.drivername!r}; the SQL stores run on Postgres through "
            f"psycopg 3: use a '{DRIVER}://user:password@host/dbname' URL"
        )
    return parsed


def open_engine(url: str | URL, **engine_kwargs: Any) -> AsyncEngine:
    """An async engine on ``url`` (see ``postgres_url``); ``engine_kwargs`` go to ``create_async_engine``
    (pool size, ``poolclass``, ``isolation_level`` ...). Every engine the project opens comes from here,
    so the driver and URL rules have one home."""
    return create_async_engine(postgres_url(url), **engine_kwargs)


class SqlStore:
    """Holds the engine of a SQL-backed service.

    An engine passed in belongs to the caller and is never disposed here; an engine built from a
    URL belongs to the service and ``close()`` disposes it.
    """

    def __init__(self, url_or_engine: str | URL | AsyncEngine, engine_kwargs: dict[str, Any] | None = None):
        if isinstance(url_or_engine, AsyncEngine):
            if engine_kwargs:
                raise ConfigurationError(
                    "engine_kwargs were given together with an AsyncEngine; configure the engine you pass "
                    "in, or pass a URL and let the service build the engine"
                )
            self._engine = url_or_engine
            self._owns_engine = False
        else:
            self._engine = open_engine(url_or_engine, **(engine_kwargs or {}))
            self._owns_engine = True

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    async def close(self) -> None:
        """Dispose the engine if this service created it; an injected engine is left alone."""
        if self._owns_engine:
            await self._engine.dispose()
