"""InMemoryMemoryService: word-overlap search, for tests and in-process runs."""

from __future__ import annotations

import re

from ..ids import validate_id, validate_session_key
from ..sessions import Session
from .base import MemoryEntry, MemoryService, SearchMemoryResponse

_WORD = re.compile(r"[\w']+")


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


class InMemoryMemoryService(MemoryService):
    """An entry matches when it shares at least one word with the query (case-insensitive)."""

    def __init__(self) -> None:
        # (app, user) -> event id -> (entry, its words)
        self._entries: dict[tuple[str, str], dict[str, tuple[MemoryEntry, set[str]]]] = {}

    async def add_session_to_memory(self, session: Session) -> None:
        validate_session_key(session.app_name, session.user_id, session.id)
        bucket = self._entries.setdefault((session.app_name, session.user_id), {})
        for event in session.events:
            if not event.content or not event.text:
                continue
            entry = MemoryEntry(content=event.content, author=event.author, timestamp=event.timestamp, id=event.id)
            bucket[event.id] = (entry, words(event.text))

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        validate_id("app name", app_name)
        validate_id("user id", user_id)
        wanted = words(query)
        bucket = self._entries.get((app_name, user_id), {})
        return SearchMemoryResponse(
            memories=[entry.model_copy(deep=True) for entry, ws in bucket.values() if ws & wanted]
        )
