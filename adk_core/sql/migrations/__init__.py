"""Alembic migrations of the adk_* tables; run them with ``adk_core.sql.migrate``."""
