"""The sessions database of the commands that only read or migrate it (`sessions`, `pending`, `migrate`).

Configured (--database-url, ADK_DATABASE_URL) or a running `adkt dev`'s, else the embedded Postgres
under `.adk/postgres` that `adkt run` and `adkt chat` write to: started for the command if no one
runs it, or shared with whoever does (EmbeddedPostgres(shared=True)).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from adkt.commands._devstate import resolve_database_url
from adkt.settings import Settings


@contextlib.asynccontextmanager
async def database_url(explicit: str | None = None, *, create: bool = False) -> AsyncIterator[str]:
    """The URL of the sessions database, for the duration of the context.

    `create`: initialise `.adk/postgres` when it does not exist yet (migrate); the read commands
    instead say that nothing has run here.
    """
    from adk_core.errors import ConfigurationError

    settings = Settings.load()
    url = resolve_database_url(settings, explicit)
    if url is not None:
        yield url
        return
    folder = settings.adk_dir / "postgres"
    if not create and not (folder / "PG_VERSION").exists():
        raise ConfigurationError(
            f"no sessions database: nothing is configured and nothing has run here yet ({folder.absolute()} does "
            "not exist). Run `adkt run APP \"hi\"` or `adkt dev` from this folder, pass --database-url, "
            "or set ADK_DATABASE_URL=postgresql+psycopg://..."
        )
    from adkt.embedded import EmbeddedPostgres

    async with EmbeddedPostgres(folder, shared=True) as postgres:
        yield postgres.url
