"""Memory services. The Postgres one lives in ``adk_core.memory.sql`` (needs SQLAlchemy)."""

from .base import MemoryEntry, MemoryService, SearchMemoryResponse
from .in_memory import InMemoryMemoryService

__all__ = ["InMemoryMemoryService", "MemoryEntry", "MemoryService", "SearchMemoryResponse"]
