"""DatabaseMemoryService: memory entries in Postgres, found by full-text search."""

from __future__ import annotations

import json
import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adk_core.encryption import FROM_ENV, Sealer, is_sealed, open_json_text, resolve_sealer
from adk_core.ids import validate_id, validate_session_key
from adk_core.memory.base import MemoryEntry, MemoryService, SearchMemoryResponse
from adk_core.memory.in_memory import words
from adk_core.sessions import Session
from adk_core.sql import SqlStore, dumps_model, jsonb_param, store_errors
from adk_core.sql.schema import TEXT_SEARCH_CONFIG, memory_entries
from adk_core.types import Content

_WORD = re.compile(r"\w+")
MAX_QUERY_WORDS = 32


class DatabaseMemoryService(SqlStore, MemoryService):
    """Memory in the adk_memory_entries table (created by ``adk_core.sql.migrate``).

    Each event with text becomes one entry, keyed by app, user and event id: adding a session again
    (or after it grew) stores only the events not stored yet. Search is Postgres full-text search
    (English stemming, GIN index), within one app and user; like the in-memory service, an entry
    matches when it shares any word with the query, and entries sharing more words rank first.

    Ids are checked as everywhere (``adk_core.ids``); database errors are sorted as in the session
    store: permanent ones raise AdkErrors, transient ones are left for the caller to retry.

    Args:
        url_or_engine: a ``postgresql+psycopg://`` URL, or an ``AsyncEngine`` the caller owns.
        limit: the most entries one search returns.
        engine_kwargs: passed to ``create_async_engine`` when a URL is given.
        sealer: encrypts entries (``adk_core.encryption``): by default this process's keys when
            configured. An encrypted entry stores its content sealed and an empty ``text`` (so no
            search index of its words either): a search decrypts the user's sealed entries and
            matches their words here, as the in-memory service does. That costs a read of every
            sealed entry of the (app, user) per search; entries stored in clear are still found
            by the index.
    """

    def __init__(
        self,
        url_or_engine: str | URL | AsyncEngine,
        *,
        limit: int = 20,
        engine_kwargs: dict[str, Any] | None = None,
        sealer: Sealer | None | str = FROM_ENV,
    ) -> None:
        super().__init__(url_or_engine, engine_kwargs)
        self.limit = limit
        self._sealer = resolve_sealer(sealer)

    @store_errors
    async def add_session_to_memory(self, session: Session) -> None:
        validate_session_key(session.app_name, session.user_id, session.id)
        rows = [
            {
                "app_name": session.app_name,
                "user_id": session.user_id,
                "event_id": event.id,
                "session_id": session.id,
                "author": event.author,
                "timestamp": event.timestamp,
                **self._sealed_content(dumps_model(event.content, f"content of event {event.id!r}"), event.text),
            }
            for event in session.events
            if event.content and event.text
        ]
        if not rows:
            return
        stmt = pg_insert(memory_entries).values(
            app_name=sa.bindparam("app_name"),
            user_id=sa.bindparam("user_id"),
            event_id=sa.bindparam("event_id"),
            session_id=sa.bindparam("session_id"),
            author=sa.bindparam("author"),
            timestamp=sa.bindparam("timestamp"),
            content=jsonb_param("content"),
            text=sa.bindparam("text"),
        )
        async with self._engine.begin() as conn:
            await conn.execute(stmt.on_conflict_do_nothing(), rows)

    @store_errors
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        validate_id("app name", app_name)
        validate_id("user id", user_id)
        terms = _query_words(query)
        if not terms:
            return SearchMemoryResponse()
        # websearch syntax with only words and "or" between them: any word matches, nothing is an operator.
        tsquery = sa.func.websearch_to_tsquery(
            sa.literal_column(f"'{TEXT_SEARCH_CONFIG}'::regconfig"), " or ".join(terms)
        )
        rank = sa.func.ts_rank(memory_entries.c.tsv, tsquery)
        select = (
            sa.select(
                sa.cast(memory_entries.c.content, sa.Text),
                memory_entries.c.author,
                memory_entries.c.timestamp,
                memory_entries.c.event_id,
                rank,
            )
            .where(
                memory_entries.c.app_name == app_name,
                memory_entries.c.user_id == user_id,
                memory_entries.c.tsv.op("@@")(tsquery),
            )
            .order_by(rank.desc(), memory_entries.c.timestamp.desc())
            .limit(self.limit)
        )
        async with self._engine.connect() as conn:
            rows = [tuple(r) for r in (await conn.execute(select)).all()]
            if self._sealer is not None or await self._has_sealed(conn, app_name, user_id):
                # The query's words as the sealed entries' own are counted (the in-memory service's:
                # an apostrophe inside a word keeps it whole, O'Brien), not the index's terms.
                rows = self._rank(rows + await self._sealed_matches(conn, app_name, user_id, words(query)))
        return SearchMemoryResponse(
            memories=[
                MemoryEntry(
                    content=Content.model_validate_json(content), author=author, timestamp=ts, id=event_id
                )
                for content, author, ts, event_id, _ in rows
            ]
        )

    def _sealed_content(self, content_json: str, text: str) -> dict[str, str]:
        if self._sealer is None:
            return {"content": content_json, "text": text}
        return {"content": self._sealer.seal_json(content_json), "text": ""}

    async def _has_sealed(self, conn: AsyncConnection, app_name: str, user_id: str) -> bool:
        """Whether this user has sealed entries (written by a process with keys; this one has none:
        reading them will say which setting is missing)."""
        query = sa.select(sa.literal(1)).where(*_entries_of(app_name, user_id), memory_entries.c.text == "").limit(1)
        return (await conn.execute(query)).first() is not None

    async def _sealed_matches(
        self, conn: AsyncConnection, app_name: str, user_id: str, wanted: set[str]
    ) -> list[tuple[Any, ...]]:
        """The user's sealed entries sharing a word with ``wanted``, with how many they share."""
        query = sa.select(
            sa.cast(memory_entries.c.content, sa.Text),
            memory_entries.c.author,
            memory_entries.c.timestamp,
            memory_entries.c.event_id,
        ).where(*_entries_of(app_name, user_id), memory_entries.c.text == "")
        found = []
        for content, author, ts, event_id in (await conn.execute(query)).all():
            value = json.loads(content)
            if not is_sealed(value):
                continue
            plain = open_json_text(value, self._sealer) or content
            shared = len(words(Content.model_validate_json(plain).text or "") & wanted)
            if shared:
                found.append((plain, author, ts, event_id, float(shared)))
        return found

    def _rank(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """Index matches (ranked by ts_rank, < 1) and sealed ones (by words shared, >= 1) in one order:
        more shared words first, then newer."""
        return sorted(rows, key=lambda r: (-(r[4] or 0.0), -(r[2] or 0.0)))[: self.limit]


def _query_words(query: str) -> list[str]:
    """Distinct lower-case words of ``query``, at most MAX_QUERY_WORDS.

    "or" is dropped: it is websearch syntax (and an English stop word), so it cannot join or split terms.
    """
    words = [w for w in dict.fromkeys(w.lower() for w in _WORD.findall(query)) if w != "or"]
    return words[:MAX_QUERY_WORDS]


def _entries_of(app_name: str, user_id: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (memory_entries.c.app_name == app_name, memory_entries.c.user_id == user_id)
