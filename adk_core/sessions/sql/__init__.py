"""Sessions on Postgres: ``DatabaseSessionService``.

from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import migrate

await migrate("postgresql+psycopg://localhost/app")   # once per deploy; idempotent
sessions = DatabaseSessionService("postgresql+psycopg://localhost/app")

The engine, tables and migrations belong to ``adk_core.sql``, shared with the other stores;
``migrate`` and ``upgrade`` are re-exported here so code written against this module keeps working.
"""

from adk_core.sql import migrate, upgrade

from .service import DatabaseSessionService

__all__ = ["DatabaseSessionService", "migrate", "upgrade"]
