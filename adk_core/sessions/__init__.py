"""Session storage: the SessionService contract and its in-memory backend.

The Postgres backend lives in ``adk_core.sessions.sql`` (imported on demand: it needs SQLAlchemy).
"""

from .base import GetSessionConfig, ListSessionsResponse, Session, SessionService
from .in_memory import InMemorySessionService

__all__ = ["GetSessionConfig", "InMemorySessionService", "ListSessionsResponse", "Session", "SessionService"]
