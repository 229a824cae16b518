"""InMemoryArtifactService: versions kept in a dict."""

from __future__ import annotations

from ..ids import validate_session_key
from ..types import Part
from .base import (
    DEFAULT_MAX_ARTIFACT_BYTES,
    ArtifactService,
    check_artifact,
    scope_session_id,
    validate_filename,
    visible_to,
)

_Key = tuple[str, str, str, str]


class InMemoryArtifactService(ArtifactService):
    def __init__(self, *, max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES) -> None:
        self.max_artifact_bytes = max_artifact_bytes
        self._versions: dict[_Key, list[Part]] = {}
        self._saves: dict[_Key, dict[str, int]] = {}
        """Each filename's save ids and the versions they stored (see ArtifactService.save_artifact)."""

    def _key(self, app_name: str, user_id: str, session_id: str, filename: str) -> _Key:
        """Where ``filename`` lives, once the ids and the name are checked."""
        validate_session_key(app_name, user_id, session_id)
        validate_filename(filename)
        return (app_name, user_id, scope_session_id(filename, session_id), filename)

    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part,
        save_id: str | None = None,
    ) -> int:
        key = self._key(app_name, user_id, session_id, filename)
        check_artifact(filename, artifact, self.max_artifact_bytes)
        saves = self._saves.setdefault(key, {})
        if save_id is not None and save_id in saves:
            return saves[save_id]  # a repeat of a save already stored
        versions = self._versions.setdefault(key, [])
        versions.append(artifact.model_copy(deep=True))
        if save_id is not None:
            saves[save_id] = len(versions) - 1
        return len(versions) - 1

    async def load_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Part | None:
        versions = self._versions.get(self._key(app_name, user_id, session_id, filename), [])
        if not versions:
            return None
        if version is None:
            return versions[-1].model_copy(deep=True)
        return versions[version].model_copy(deep=True) if 0 <= version < len(versions) else None

    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        validate_session_key(app_name, user_id, session_id)
        return sorted(
            name
            for (app, user, scope, name), versions in self._versions.items()
            if app == app_name and user == user_id and visible_to(session_id, scope, name) and versions
        )

    async def delete_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None:
        key = self._key(app_name, user_id, session_id, filename)
        self._versions.pop(key, None)
        self._saves.pop(key, None)  # as the Postgres store: the save ids go with the rows

    async def list_versions(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> list[int]:
        return list(range(len(self._versions.get(self._key(app_name, user_id, session_id, filename), []))))
