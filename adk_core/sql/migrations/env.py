"""Alembic environment for the adk_* tables.

``adk_core.sql.migrate`` passes an open connection in ``config.attributes["connection"]``;
without one (e.g. ``alembic`` run by hand with ``sqlalchemy.url`` set) a synchronous psycopg
connection is opened from the URL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context
from sqlalchemy.pool import NullPool

from adk_core.errors import ConfigurationError
from adk_core.sql.engine import postgres_url
from adk_core.sql.migrate import VERSION_TABLE
from adk_core.sql.schema import metadata

config = context.config


def _run(connection: sa.Connection) -> None:
    context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise ConfigurationError(
            "alembic has no database: set sqlalchemy.url, or run the migrations with adk_core.sql.upgrade(url) "
            "or `adkt migrate --database-url ...`"
        )
    engine = sa.create_engine(postgres_url(url), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
