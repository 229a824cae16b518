"""The SQL layer every Postgres store shares: engine, JSON for jsonb columns, error sorting, tables, migrations.

Sessions (``adk_core.sessions.sql``), memory, artifacts, eval results, the simulator and the workflow
payload store all build on this one package and one Alembic history (``migrations/``)::

    from adk_core.sql import migrate

    await migrate("postgresql+psycopg://localhost/app")   # once per deploy; idempotent

Stores import from this package (or ``adk_core.sql.schema`` for the tables), never from its
``_private`` modules.
"""

from ._errors import classify, is_transient, permanent_error, store_errors
from ._json import concat, dumps, dumps_model, jsonb, jsonb_param
from .engine import DRIVER, SqlStore, open_engine, postgres_url
from .migrate import MIGRATIONS_DIR, alembic_config, migrate, upgrade

__all__ = [
    "DRIVER",
    "MIGRATIONS_DIR",
    "SqlStore",
    "alembic_config",
    "classify",
    "concat",
    "dumps",
    "dumps_model",
    "is_transient",
    "jsonb",
    "jsonb_param",
    "migrate",
    "open_engine",
    "permanent_error",
    "postgres_url",
    "store_errors",
    "upgrade",
]
