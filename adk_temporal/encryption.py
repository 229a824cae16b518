"""Payload encryption: AES-256-GCM with key ids and rotation (docs/security.md, "Encryption").

Everything adk-temporal sends through Temporal (messages, model requests and answers, tool arguments
and results, session events in workflow input) passes through the client's payload codec before it
leaves the process, and payloads too large for Temporal are stored in Postgres *after* the codec ran,
so they are encrypted too. Temporal's server, its history and its UI see ciphertext; the codec server
(``codec_server_app``) lets the UI show plain text to whoever may read it.

Keys:
    ADK_ENCRYPTION_KEYS       "id2:BASE64KEY,id1:BASE64KEY" (newest first; 32-byte keys, base64)
    ADK_ENCRYPTION_KEYS_FILE  a file with one "id:BASE64KEY" per line, newest first ('#' comments)

The newest key encrypts; every listed key decrypts, so rotating is: add a new key in front, deploy,
and drop the old one once nothing encrypted with it is still read (histories past retention). A key
management service plugs in as a ``KeyRing`` built from keys it hands out (``KeyRing.from_keys``), or
any object with ``current()`` and ``get(key_id)``.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

# The key ring is shared with the SQL stores' encryption at rest (adk_core must not import this module).
from adk_core.encryption import (
    KEYS_ENV,
    KEYS_FILE_ENV,
    NONCE_BYTES,
    KeyProvider,
    KeyRing,
    key_ring_from_env,
    new_key_line,
)
from adk_core.errors import ConfigurationError

ENCODING = b"binary/encrypted"
"""The ``encoding`` metadata of an encrypted payload (Temporal's convention for codec output)."""
KEY_ID = "encryption-key-id"

__all__ = [
    "ENCODING",
    "KEYS_ENV",
    "KEYS_FILE_ENV",
    "KEY_ID",
    "NONCE_BYTES",
    "SEALED",
    "EncryptionCodec",
    "KeyProvider",
    "KeyRing",
    "codec_from_env",
    "key_ring_from_env",
    "new_key_line",
    "open_json",
    "process_codec",
    "seal_json",
]


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM per payload: a fresh 96-bit nonce each, the key id in the metadata (so any key of
    the ring decrypts what it encrypted), the original payload (metadata included) as plaintext, and
    the key id bound as associated data. Payloads already encrypted pass through unchanged."""

    def __init__(self, keys: KeyProvider) -> None:
        self.keys = keys

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") == ENCODING:
            return payload
        key_id, key = self.keys.current()
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = AESGCM(key).encrypt(nonce, payload.SerializeToString(), key_id.encode())
        return Payload(metadata={"encoding": ENCODING, KEY_ID: key_id.encode()}, data=nonce + sealed)

    def decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # written before encryption was on: still readable
        key_id = payload.metadata.get(KEY_ID, b"").decode()
        key = self.keys.get(key_id)
        if key is None:
            raise ConfigurationError(
                f"a payload is encrypted with key {key_id!r}, which this process does not have; add it to "
                f"{KEYS_ENV} (keys are dropped only after nothing encrypted with them is read)"
            )
        data = bytes(payload.data)
        try:
            plain = AESGCM(key).decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], key_id.encode())
        except InvalidTag:
            raise ConfigurationError(f"a payload does not decrypt with key {key_id!r}: altered, or the wrong key") from None
        return Payload.FromString(plain)


def codec_from_env(environ: Mapping[str, str] | None = None) -> EncryptionCodec | None:
    """The codec for the configured keys, or None when encryption is not configured."""
    ring = key_ring_from_env(environ)
    return EncryptionCodec(ring) if ring is not None else None


SEALED = "adk_sealed"
"""The one key of a JSON value that ``seal_json`` encrypted (stored where a JSON column is expected)."""


@functools.cache
def _process_codec(keys: str | None, keys_file: str | None) -> EncryptionCodec | None:
    return codec_from_env({KEYS_ENV: keys or "", KEYS_FILE_ENV: keys_file or ""})


def process_codec() -> EncryptionCodec | None:
    """This process's codec from its environment (read once per distinct setting): what encrypts the
    rows adk-temporal writes to Postgres itself, outside Temporal's payloads (stream chunks)."""
    return _process_codec(os.environ.get(KEYS_ENV), os.environ.get(KEYS_FILE_ENV))


def seal_json(text: str, codec: EncryptionCodec | None) -> str:
    """A JSON document to store: ``text`` itself without a codec, else ``{"adk_sealed": BASE64}``."""
    if codec is None:
        return text
    sealed = codec.encrypt(Payload(metadata={"encoding": b"json/plain"}, data=text.encode()))
    return json.dumps({SEALED: base64.b64encode(sealed.SerializeToString()).decode()})


def open_json(value: Any, codec: EncryptionCodec | None) -> Any:
    """The JSON value ``seal_json`` stored (parsed), decrypted when it was sealed."""
    if not (isinstance(value, dict) and SEALED in value):
        return value
    if codec is None:
        raise ConfigurationError(f"a stored value is encrypted: set {KEYS_ENV} (or {KEYS_FILE_ENV}) to read it")
    payload = codec.decrypt(Payload.FromString(base64.b64decode(value[SEALED])))
    return json.loads(payload.data)
