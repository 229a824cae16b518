"""Artifacts: versioned files an agent saves and loads. ``user:``-prefixed names are shared by all
of a user's sessions; other names belong to one session. App names, user ids and session ids
follow ``adk_core.ids`` in every call."""

from __future__ import annotations

import abc

from ..errors import InvalidInputError
from ..types import Part

USER_SCOPE_PREFIX = "user:"
DEFAULT_MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
MAX_FILENAME_BYTES = 255


def validate_filename(filename: object) -> str:
    """Return ``filename`` if it is a safe artifact name, else raise InvalidInputError saying why."""
    if not isinstance(filename, str) or not filename.strip():
        raise InvalidInputError("artifact filename is empty; give a name such as 'report.pdf'")
    if "/" in filename or "\\" in filename or ".." in filename:
        raise InvalidInputError(
            f"artifact filename {filename!r} contains '/', '\\' or '..'; names are flat: use 'report_v2.pdf'"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in filename):
        raise InvalidInputError(f"artifact filename {filename!r} contains a control character")
    if len(filename.encode()) > MAX_FILENAME_BYTES:
        raise InvalidInputError(f"artifact filename is {len(filename.encode())} bytes; the limit is {MAX_FILENAME_BYTES}")
    return filename


def artifact_size(artifact: Part) -> int:
    if artifact.inline_data is not None:
        return len(artifact.inline_data.data)
    if artifact.text is not None:
        return len(artifact.text.encode())
    return 0


def check_artifact(filename: str, artifact: Part, max_bytes: int) -> None:
    validate_filename(filename)
    if artifact.inline_data is None and artifact.text is None and artifact.file_data is None:
        raise InvalidInputError(
            f"artifact {filename!r} has no data; save a Part with inline_data, text or file_data"
        )
    size = artifact_size(artifact)
    if size > max_bytes:
        raise InvalidInputError(
            f"artifact {filename!r} is {size} bytes, over this store's {max_bytes}-byte limit; "
            "store it elsewhere and save a file_data reference, or raise max_artifact_bytes"
        )


USER_SCOPE = "user"


def scope_session_id(filename: str, session_id: str) -> str:
    """Where an artifact lives: user-scoped names share one pseudo-session."""
    return USER_SCOPE if filename.startswith(USER_SCOPE_PREFIX) else session_id


def visible_to(session_id: str, scope: str, filename: str) -> bool:
    """Whether an artifact stored under ``scope`` is listed for ``session_id``. A session may itself
    be called "user": its own names share the pseudo-session's scope but are not the user's."""
    return scope == session_id or (scope == USER_SCOPE and filename.startswith(USER_SCOPE_PREFIX))


class ArtifactService(abc.ABC):
    @abc.abstractmethod
    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part,
        save_id: str | None = None,
    ) -> int:
        """Store a new version and return its number (0, 1, 2, ...).

        ``save_id`` makes a retried save idempotent: a save repeating the ``save_id`` of one
        already stored for this filename stores nothing and returns that save's version (durable
        runs give each save one, as a retried activity may repeat a save that committed). None:
        every call stores a new version."""

    @abc.abstractmethod
    async def load_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Part | None:
        """The given version (latest when None), or None when there is none."""

    @abc.abstractmethod
    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        """Names visible to the session: its own and the user's, sorted."""

    @abc.abstractmethod
    async def delete_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None:
        """Delete every version."""

    @abc.abstractmethod
    async def list_versions(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> list[int]:
        """Version numbers, ascending."""
