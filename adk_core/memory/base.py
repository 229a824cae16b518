"""Memory: what agents can recall from past sessions."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ..types import Content

if TYPE_CHECKING:
    from ..sessions import Session


class MemoryEntry(BaseModel):
    content: Content
    author: str | None = None
    timestamp: float | None = None
    id: str | None = None
    """The source event id; adding the same session twice does not duplicate an entry."""


class SearchMemoryResponse(BaseModel):
    memories: list[MemoryEntry] = Field(default_factory=list)


class MemoryService(abc.ABC):
    @abc.abstractmethod
    async def add_session_to_memory(self, session: Session) -> None:
        """Index the session's events with text. Idempotent per event id."""

    @abc.abstractmethod
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """Entries of this app and user relevant to ``query``."""
