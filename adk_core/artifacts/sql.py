"""DatabaseArtifactService: versioned artifacts in Postgres (bytes in a bytea column)."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from adk_core.artifacts.base import (
    DEFAULT_MAX_ARTIFACT_BYTES,
    USER_SCOPE,
    USER_SCOPE_PREFIX,
    ArtifactService,
    check_artifact,
    scope_session_id,
    validate_filename,
)
from adk_core.encryption import FROM_ENV, Sealer, is_sealed, open_json_text, open_text, resolve_sealer
from adk_core.ids import validate_session_key
from adk_core.runtime import wall_clock
from adk_core.sql import SqlStore, dumps_model, jsonb, store_errors
from adk_core.sql.schema import artifacts
from adk_core.types import Part


class DatabaseArtifactService(SqlStore, ArtifactService):
    """Artifacts in the adk_artifacts table (created by ``adk_core.sql.migrate``).

    A save takes a transaction-scoped advisory lock on its (app, user, scope, filename) and inserts
    version max + 1, so concurrent saves of one name get distinct, gap-free versions. A save with a
    ``save_id`` stores it beside the version (in clear, sealed or not); a unique index makes a repeat
    of it insert nothing, and the version the first one stored is returned. Ids, names and
    sizes are checked before anything is written; database errors are sorted as in the session
    store (permanent ones raise AdkErrors, transient ones are left for the caller to retry).

    Args:
        url_or_engine: a ``postgresql+psycopg://`` URL, or an ``AsyncEngine`` the caller owns.
        max_artifact_bytes: the largest inline data or text one version may hold.
        engine_kwargs: passed to ``create_async_engine`` when a URL is given.
        sealer: encrypts every version saved (``adk_core.encryption``): by default this process's
            keys when configured. Encrypted, ``data``, ``text``, ``file_uri`` and ``part`` are sealed;
            the ids, filename, version, mime type and time stay in clear. A sealed ``part`` marks
            the row as sealed, so versions saved before keys were configured read as they are.
    """

    def __init__(
        self,
        url_or_engine: str | URL | AsyncEngine,
        *,
        max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES,
        engine_kwargs: dict[str, Any] | None = None,
        sealer: Sealer | None | str = FROM_ENV,
    ) -> None:
        super().__init__(url_or_engine, engine_kwargs)
        self.max_artifact_bytes = max_artifact_bytes
        self._sealer = resolve_sealer(sealer)

    @store_errors
    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part,
        save_id: str | None = None,
    ) -> int:
        validate_session_key(app_name, user_id, session_id)
        check_artifact(filename, artifact, self.max_artifact_bytes)
        # Bytes and text get their own columns; the rest of the Part (names, flags) stays JSON.
        rest = artifact.model_copy(deep=True)
        rest.text = None
        if rest.inline_data is not None:
            rest.inline_data.data = b""
        part_json = dumps_model(rest, f"artifact {filename!r}")
        data = artifact.inline_data.data if artifact.inline_data is not None else None
        text, file_uri = artifact.text, (artifact.file_data.file_uri if artifact.file_data is not None else None)
        if self._sealer is not None:
            sealer = self._sealer
            part_json = sealer.seal_json(part_json)
            data = sealer.seal(data) if data is not None else None
            text = sealer.seal_text(text) if text is not None else None
            file_uri = sealer.seal_text(file_uri) if file_uri is not None else None
        key = _key(app_name, user_id, session_id, filename)
        lock_key = sa.func.hashtextextended(
            sa.func.jsonb_build_array(*[sa.literal(v, sa.Text) for v in key]).cast(sa.Text), 0
        )
        file_data = artifact.file_data
        next_version = (
            sa.select(sa.func.coalesce(sa.func.max(artifacts.c.version) + 1, 0))
            .where(*_where(key))
            .scalar_subquery()
        )
        insert = pg_insert(artifacts).values(
            app_name=key[0],
            user_id=key[1],
            session_id=key[2],
            filename=key[3],
            version=next_version,
            mime_type=artifact.inline_data.mime_type
            if artifact.inline_data is not None
            else (file_data.mime_type if file_data is not None else None),
            data=data,
            text=text,
            file_uri=file_uri,
            part=jsonb(part_json),
            create_time=wall_clock(),
            save_id=save_id,
        )
        if save_id is not None:
            # A repeat (a retried activity whose first attempt committed) inserts nothing.
            insert = insert.on_conflict_do_nothing(
                index_elements=["app_name", "user_id", "session_id", "filename", "save_id"],
                index_where=artifacts.c.save_id.is_not(None),
            )
        async with self._engine.begin() as conn:
            await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(lock_key)))
            version = (await conn.execute(insert.returning(artifacts.c.version))).scalar_one_or_none()
            if version is None:  # only with a save_id: the version its first save stored
                stored = sa.select(artifacts.c.version).where(*_where(key), artifacts.c.save_id == save_id)
                version = (await conn.execute(stored)).scalar_one()
            return int(version)

    @store_errors
    async def load_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Part | None:
        key = _key(app_name, user_id, session_id, filename)
        if version is not None and version < 0:
            return None
        query = sa.select(
            sa.cast(artifacts.c.part, sa.Text), artifacts.c.data, artifacts.c.text, artifacts.c.file_uri
        ).where(
            *_where(key)
        )
        if version is None:
            query = query.order_by(artifacts.c.version.desc()).limit(1)
        else:
            query = query.where(artifacts.c.version == version)
        async with self._engine.connect() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            return None
        part_json, data, text, file_uri = row
        stored = json.loads(part_json)
        if is_sealed(stored):  # then every value column of the row is sealed
            part_json = open_json_text(stored, self._sealer) or part_json
            data = self._sealer.open(bytes(data)) if self._sealer is not None and data is not None else data
            text, file_uri = open_text(text, self._sealer), open_text(file_uri, self._sealer)
        part = Part.model_validate_json(part_json)
        if data is not None and part.inline_data is not None:
            part.inline_data.data = bytes(data)
        if file_uri is not None and part.file_data is not None:
            part.file_data.file_uri = file_uri
        part.text = text
        return part

    @store_errors
    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        validate_session_key(app_name, user_id, session_id)
        query = (
            sa.select(artifacts.c.filename)
            .distinct()
            .where(
                artifacts.c.app_name == app_name,
                artifacts.c.user_id == user_id,
                # As base.visible_to: a session called "user" shares the scope but not its names.
                sa.or_(
                    artifacts.c.session_id == session_id,
                    sa.and_(
                        artifacts.c.session_id == USER_SCOPE,
                        artifacts.c.filename.startswith(USER_SCOPE_PREFIX, autoescape=True),
                    ),
                ),
            )
        )
        async with self._engine.connect() as conn:
            names = (await conn.execute(query)).scalars().all()
        return sorted(names)  # Python's order, not the database collation's, as the in-memory store

    @store_errors
    async def delete_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None:
        key = _key(app_name, user_id, session_id, filename)
        async with self._engine.begin() as conn:
            await conn.execute(sa.delete(artifacts).where(*_where(key)))

    @store_errors
    async def list_versions(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> list[int]:
        query = (
            sa.select(artifacts.c.version)
            .where(*_where(_key(app_name, user_id, session_id, filename)))
            .order_by(artifacts.c.version)
        )
        async with self._engine.connect() as conn:
            return list((await conn.execute(query)).scalars().all())


def _key(app_name: str, user_id: str, session_id: str, filename: str) -> tuple[str, str, str, str]:
    """Where ``filename`` lives, once the ids and the name are checked."""
    validate_session_key(app_name, user_id, session_id)
    validate_filename(filename)
    return (app_name, user_id, scope_session_id(filename, session_id), filename)


def _where(key: tuple[str, str, str, str]) -> tuple[sa.ColumnElement[bool], ...]:
    app_name, user_id, scope, filename = key
    return (
        artifacts.c.app_name == app_name,
        artifacts.c.user_id == user_id,
        artifacts.c.session_id == scope,
        artifacts.c.filename == filename,
    )
