"""Create or upgrade the adk_* tables: ``await migrate(url)`` or ``upgrade(url)``. No alembic.ini needed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import NullPool

from .engine import SqlStore, postgres_url

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
VERSION_TABLE = "adk_alembic_version"
"""Alembic's record of the database's revision: a table of our own, so an application's Alembic history
in the same database is untouched (migrations/env.py)."""
HEAD_REVISION = "0010"
"""The newest migration's revision. A database already there is left alone without importing Alembic
or reading the migration scripts, which every worker and CLI command did at start-up (a fresh process
migrating a database at head: 1.63 -> 1.22 s, median of 5). Add a migration, and set this to its
revision: a test compares the two."""

# Serializes concurrent migrators (e.g. several workers starting at once) on one database.
_ADVISORY_LOCK_KEY = 0x61646B5F6D6967  # "adk_mig"


def alembic_config() -> Config:
    """An Alembic config pointing at the migrations shipped in this package."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def _upgrade_on(connection: sa.Connection, revision: str) -> None:
    connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK_KEY})
    if revision == "head" and _current_revision(connection) == HEAD_REVISION:
        return
    from alembic import command

    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _current_revision(connection: sa.Connection) -> str | None:
    """The revision Alembic recorded, or None when it never ran here (looked up first: a failed
    SELECT would abort the transaction the upgrade runs in)."""
    if connection.execute(sa.text("SELECT to_regclass(:table)"), {"table": VERSION_TABLE}).scalar() is None:
        return None
    return connection.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


async def migrate(url_or_engine: str | URL | AsyncEngine, revision: str = "head") -> None:
    """Bring the database to ``revision`` (default: the newest) in one transaction.

    Safe to call at every start-up and from several processes at once: migrators take turns on an
    advisory lock and a database already at ``revision`` is left as it is.
    """
    store = SqlStore(
        url_or_engine, None if isinstance(url_or_engine, AsyncEngine) else {"poolclass": NullPool}
    )
    try:
        async with store.engine.begin() as conn:
            await conn.run_sync(_upgrade_on, revision)
    finally:
        await store.close()


def upgrade(url: str | URL, revision: str = "head") -> None:
    """Synchronous ``migrate`` for scripts and deploy steps that run no event loop."""
    engine = sa.create_engine(postgres_url(url), poolclass=NullPool)
    try:
        with engine.begin() as conn:
            _upgrade_on(conn, revision)
    finally:
        engine.dispose()
