"""API keys: ``user:key`` or ``user:key:operator`` entries from ADK_API_KEYS (comma-separated) or a
file (ADK_API_KEYS_FILE, one entry a line, ``#`` comments). Only SHA-256 digests are kept in memory;
a presented key is compared with every digest in constant time, so timing tells nothing about which
key, or how much of one, matched."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

from adk_core.errors import ConfigurationError, InvalidInputError
from adk_core.ids import validate_id

from .principal import Principal

MIN_KEY_LENGTH = 24
GENERATE = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


@dataclass(frozen=True)
class _Key:
    digest: bytes
    user: str
    operator: bool


class ApiKeys:
    """The configured API keys; ``authenticate(token)`` is the Principal of a known key, else None."""

    def __init__(self, entries: list[_Key]) -> None:
        if not entries:
            raise ConfigurationError(
                "no API keys configured; give ADK_API_KEYS=user:key[:operator],... or a file"
            )
        self._keys = tuple(entries)

    def __len__(self) -> int:
        return len(self._keys)

    @classmethod
    def parse(cls, text: str, *, source: str) -> ApiKeys:
        """Entries separated by commas or newlines; ``source`` names where they came from in errors."""
        entries: list[_Key] = []
        seen: set[bytes] = set()
        for number, raw in enumerate(text.replace(",", "\n").splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            entry = _parse_entry(line, f"{source}, entry {number}")
            if entry.digest in seen:
                raise ConfigurationError(
                    f"{source}, entry {number}: this key is given twice; each key names one user"
                )
            seen.add(entry.digest)
            entries.append(entry)
        if not entries:
            raise ConfigurationError(
                f"{source} holds no API keys; write one user:key[:operator] entry a line"
            )
        return cls(entries)

    @classmethod
    def merge(cls, sets: list[ApiKeys]) -> ApiKeys:
        """The keys of ADK_API_KEYS and of the file together; a key in both must name one user."""
        entries = [key for keys in sets for key in keys._keys]
        if len({k.digest for k in entries}) != len(entries):
            raise ConfigurationError(
                "a key is in both ADK_API_KEYS and ADK_API_KEYS_FILE; keep it in one place"
            )
        return cls(entries)

    @classmethod
    def from_file(cls, path: Path) -> ApiKeys:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigurationError(
                f"cannot read the API keys file {str(path)!r} ({e.strerror}); fix ADK_API_KEYS_FILE"
            ) from None
        return cls.parse(text, source=f"API keys file {str(path)!r}")

    def authenticate(self, token: str) -> Principal | None:
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        found: _Key | None = None
        for key in self._keys:  # no early exit: every key is compared
            if hmac.compare_digest(digest, key.digest):
                found = key
        if found is None:
            return None
        return Principal(user=found.user, operator=found.operator, via="api_key")


def _parse_entry(line: str, where: str) -> _Key:
    parts = line.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2].strip() != "operator"):
        raise ConfigurationError(
            f"{where}: an API key entry is user:key or user:key:operator (keys hold no ':' or ','); "
            f"generate a key with {GENERATE}"
        )
    user, key = parts[0].strip(), parts[1].strip()
    try:
        validate_id("user id", user)
    except InvalidInputError as e:
        raise ConfigurationError(f"{where}: {e}") from None
    if len(key) < MIN_KEY_LENGTH:
        raise ConfigurationError(
            f"{where}: the key for user {user!r} has {len(key)} characters; use at least {MIN_KEY_LENGTH} random "
            f"ones, e.g. {GENERATE}"
        )
    return _Key(hashlib.sha256(key.encode()).digest(), user, len(parts) == 3)
