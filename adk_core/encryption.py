"""Keys, and encryption of what the Postgres stores write (docs/security.md, "Encryption at rest").

The key ring lives here so that both layers use the same keys: adk_temporal's payload codec
(``adk_temporal.encryption.EncryptionCodec``) encrypts what goes through Temporal, and the SQL
stores of adk_core (sessions, memory, artifacts) seal what they write with a ``Sealer`` on the
same ring. adk_core imports no temporalio, so the at-rest format is our own: AES-256-GCM, a fresh
96-bit nonce per value, the key id stored with the value and bound as associated data.

Keys:
    ADK_ENCRYPTION_KEYS       "id2:BASE64KEY,id1:BASE64KEY" (newest first; 32-byte keys, base64)
    ADK_ENCRYPTION_KEYS_FILE  a file with one "id:BASE64KEY" per line, newest first ('#' comments)

The newest key encrypts; every listed key decrypts. A value written before keys were configured
is read as it is, so turning encryption on needs no migration of old rows.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from adk_core.errors import ConfigurationError

KEYS_ENV = "ADK_ENCRYPTION_KEYS"
KEYS_FILE_ENV = "ADK_ENCRYPTION_KEYS_FILE"
NONCE_BYTES = 12
SEALED = "adk_sealed"
"""The key of a JSON object whose value is sealed (where a JSON column is expected)."""
_MAGIC = b"ADK1"  # the at-rest format's version, in front of every sealed blob


class KeyProvider(Protocol):
    """Where keys come from: a KMS-backed provider implements these two."""

    def current(self) -> tuple[str, bytes]:
        """The key id and key that encrypt new values."""
        ...

    def get(self, key_id: str) -> bytes | None:
        """The key with this id, or None when it is not known here."""
        ...


@dataclass(frozen=True)
class KeyRing:
    """Keys by id; the first one encrypts."""

    keys: tuple[tuple[str, bytes], ...]

    def __post_init__(self) -> None:
        if not self.keys:
            raise ConfigurationError(f"no encryption key given; set {KEYS_ENV}=id:BASE64KEY (adkt keygen makes one)")
        seen: set[str] = set()
        for key_id, key in self.keys:
            if not key_id or ":" in key_id or "," in key_id or len(key_id.encode()) > 255:
                raise ConfigurationError(
                    f"encryption key id {key_id!r} must be non-empty, at most 255 bytes, without ':' or ','"
                )
            if key_id in seen:
                raise ConfigurationError(f"encryption key id {key_id!r} is listed twice; each key needs its own id")
            if len(key) != 32:
                raise ConfigurationError(
                    f"encryption key {key_id!r} has {len(key)} bytes; AES-256 needs 32 (base64 of 32 random bytes)"
                )
            seen.add(key_id)

    @classmethod
    def from_keys(cls, keys: Mapping[str, bytes] | Sequence[tuple[str, bytes]]) -> KeyRing:
        items = list(keys.items()) if isinstance(keys, Mapping) else list(keys)
        return cls(tuple(items))

    @classmethod
    def parse(cls, text: str, *, source: str) -> KeyRing:
        """``id:BASE64,...`` or one ``id:BASE64`` per line (newest first)."""
        keys: list[tuple[str, bytes]] = []
        # Comments go first, line by line: a comment may hold commas (base64 holds neither '#' nor ',').
        entries = [e.strip() for line in text.splitlines() for e in line.split("#", 1)[0].split(",")]
        for number, entry in enumerate((e for e in entries if e), start=1):
            key_id, sep, encoded = entry.partition(":")
            if not sep:
                # Not echoed: it may be a key pasted without its id, and errors end up in logs.
                raise ConfigurationError(f"{source}: entry {number} is not 'id:BASE64KEY' (an id, ':', then the key)")
            try:
                key = base64.b64decode(encoded.strip(), validate=True)
            except binascii.Error:
                raise ConfigurationError(f"{source}: the key {key_id.strip()!r} is not valid base64") from None
            keys.append((key_id.strip(), key))
        return cls(tuple(keys))

    def current(self) -> tuple[str, bytes]:
        return self.keys[0]

    def get(self, key_id: str) -> bytes | None:
        return next((key for kid, key in self.keys if kid == key_id), None)


def key_ring_from_env(environ: Mapping[str, str] | None = None) -> KeyRing | None:
    """The key ring $ADK_ENCRYPTION_KEYS or $ADK_ENCRYPTION_KEYS_FILE names; None when neither is set."""
    env = os.environ if environ is None else environ
    if env.get(KEYS_ENV):
        return KeyRing.parse(env[KEYS_ENV], source=KEYS_ENV)
    if env.get(KEYS_FILE_ENV):
        path = Path(env[KEYS_FILE_ENV])
        try:
            text = path.read_text()
        except OSError as e:
            raise ConfigurationError(f"{KEYS_FILE_ENV}={path}: cannot read it ({e.strerror})") from None
        return KeyRing.parse(text, source=str(path))
    return None


def new_key_line(key_id: str) -> str:
    """A fresh ``id:BASE64`` entry: 32 random bytes."""
    return f"{key_id}:{base64.b64encode(os.urandom(32)).decode()}"


class Sealer:
    """Seals values the SQL stores write, and opens them again, with the keys of ``keys``.

    A sealed blob is ``ADK1``, the key id's length (one byte), the key id, the nonce and the
    AES-256-GCM ciphertext (the key id is the associated data). JSON values are stored as
    ``{"adk_sealed": BASE64}``, text as ``adk_sealed:BASE64``.
    """

    def __init__(self, keys: KeyProvider) -> None:
        self.keys = keys

    def seal(self, plain: bytes) -> bytes:
        key_id, key = self.keys.current()
        kid = key_id.encode()
        # os.urandom is the OS's CSPRNG (what ``secrets`` reads); stores run outside workflow code, so
        # the runtime seam's deterministic randomness would be wrong here: nonces must never repeat.
        nonce = os.urandom(NONCE_BYTES)
        return _MAGIC + bytes([len(kid)]) + kid + nonce + AESGCM(key).encrypt(nonce, plain, kid)

    def open(self, blob: bytes) -> bytes:
        if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + 1:
            raise ConfigurationError("a stored value is not in the sealed format (ADK1...): it was altered")
        start = len(_MAGIC) + 1
        kid = blob[start : start + blob[len(_MAGIC)]]
        body = blob[start + len(kid) :]
        key_id = kid.decode(errors="replace")
        key = self.keys.get(key_id)
        if key is None:
            raise ConfigurationError(
                f"a stored value is encrypted with key {key_id!r}, which this process does not have; add it to "
                f"{KEYS_ENV} (drop a key only once nothing encrypted with it is read)"
            )
        if len(body) < NONCE_BYTES + 16:  # a nonce and GCM's 16-byte tag at the least
            raise ConfigurationError(f"a stored value encrypted with key {key_id!r} is cut short: it was altered")
        try:
            return AESGCM(key).decrypt(body[:NONCE_BYTES], body[NONCE_BYTES:], kid)
        except InvalidTag:
            raise ConfigurationError(f"a stored value does not decrypt with key {key_id!r}: altered, or the wrong key") from None

    def seal_text(self, text: str) -> str:
        return f"{SEALED}:{base64.b64encode(self.seal(text.encode())).decode()}"

    def open_text(self, text: str) -> str:
        return self.open(base64.b64decode(text.removeprefix(f"{SEALED}:"))).decode()

    def seal_json(self, text: str, **plain: Any) -> str:
        """``{"adk_sealed": ...}`` for the JSON document ``text``, with ``plain`` fields alongside in clear
        (what SQL must still read: an event's id, author, timestamp)."""
        return json.dumps({**plain, SEALED: base64.b64encode(self.seal(text.encode())).decode()})

    def open_json_text(self, value: dict[str, Any]) -> str:
        return self.open(base64.b64decode(value[SEALED])).decode()


@functools.cache
def _sealer(keys: str | None, keys_file: str | None) -> Sealer | None:
    ring = key_ring_from_env({KEYS_ENV: keys or "", KEYS_FILE_ENV: keys_file or ""})
    return Sealer(ring) if ring is not None else None


def process_sealer() -> Sealer | None:
    """This process's sealer from its environment (read once per distinct setting), or None when no
    keys are configured: what the SQL stores use unless given a sealer explicitly."""
    return _sealer(os.environ.get(KEYS_ENV), os.environ.get(KEYS_FILE_ENV))


def is_sealed(value: Any) -> bool:
    """Whether a stored JSON value (parsed) is sealed."""
    return isinstance(value, dict) and SEALED in value


def is_sealed_text(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(f"{SEALED}:")


def _need(sealer: Sealer | None) -> Sealer:
    if sealer is None:
        raise ConfigurationError(f"a stored value is encrypted: set {KEYS_ENV} (or {KEYS_FILE_ENV}) to read it")
    return sealer


def open_json_text(value: Any, sealer: Sealer | None) -> str | None:
    """The JSON text sealed in ``value`` (parsed JSON), or None when ``value`` is not sealed."""
    return _need(sealer).open_json_text(value) if is_sealed(value) else None


def open_value(value: Any, sealer: Sealer | None) -> Any:
    """A stored JSON value (parsed), decrypted when it was sealed; plain values as they are."""
    text = open_json_text(value, sealer)
    return value if text is None else json.loads(text)


def open_text(value: str | None, sealer: Sealer | None) -> str | None:
    if value is None or not is_sealed_text(value):
        return value
    return _need(sealer).open_text(value)


def seal_state(state: Mapping[str, Any], sealer: Sealer | None) -> dict[str, Any]:
    """State with each value sealed and the keys in clear, so jsonb ``||`` still merges deltas key by
    key (concurrent writers keep each other's keys). Without a sealer, ``state`` as it is."""
    if sealer is None:
        return dict(state)
    return {k: {SEALED: base64.b64encode(sealer.seal(json.dumps(v).encode())).decode()} for k, v in state.items()}


def open_state(state: Mapping[str, Any] | None, sealer: Sealer | None) -> dict[str, Any]:
    """A stored state's values decrypted (values written before encryption was on read as they are)."""
    return {k: open_value(v, sealer) for k, v in (state or {}).items()}


FROM_ENV = "env"
"""A store's default ``sealer``: this process's keys (``process_sealer``), so every store a worker or a
client opens encrypts once keys are configured, without each caller passing them."""


def resolve_sealer(sealer: Sealer | None | str) -> Sealer | None:
    """A store's ``sealer`` argument: a Sealer, None (never encrypt) or FROM_ENV."""
    if sealer == FROM_ENV:
        return process_sealer()
    if sealer is None or isinstance(sealer, Sealer):
        return sealer
    raise ConfigurationError(f"sealer={sealer!r}: pass a Sealer, None (no encryption) or {FROM_ENV!r} (the environment's keys)")
