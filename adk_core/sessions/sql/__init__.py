"""Sessions on Postgres: ``DatabaseSessionService`` and the migrations that create its tables.

from adk_core.sessions.sql import DatabaseSessionService, migrate

await migrate("postgresql+psycopg://localhost/app")   # once per deploy; idempotent
sessions = DatabaseSessionService("postgresql+psycopg://localhost/app")
"""

from .migrate import migrate, upgrade
from .service import DatabaseSessionService

__all__ = ["DatabaseSessionService", "migrate", "upgrade"]
