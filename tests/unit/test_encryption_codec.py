"""The AES-256-GCM codec and its key ring, and the plugin keeping a user's codec (no servers)."""

from __future__ import annotations

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import DataConverter

from adk_core.errors import ConfigurationError
from adk_temporal.encryption import (
    ENCODING,
    KEY_ID,
    EncryptionCodec,
    KeyRing,
    key_ring_from_env,
    new_key_line,
)
from adk_temporal.workflows.converter import AdkPayloadConverter
from adk_temporal.workflows.plugin import AdkPlugin

PLAIN = Payload(metadata={"encoding": b"json/plain"}, data=b'{"note": "secret"}')


async def test_round_trip_with_a_fresh_nonce_and_the_key_id() -> None:
    codec = EncryptionCodec(KeyRing.from_keys({"k1": b"\x01" * 32}))
    first, second = await codec.encode([PLAIN, PLAIN])
    assert first.metadata["encoding"] == ENCODING and first.metadata[KEY_ID] == b"k1"
    assert b"secret" not in first.data and first.data != second.data
    assert await codec.decode([first, second]) == [PLAIN, PLAIN]


async def test_rotation_newest_encrypts_older_still_decrypts() -> None:
    old = EncryptionCodec(KeyRing.from_keys({"k1": b"\x01" * 32}))
    rotated = EncryptionCodec(KeyRing.from_keys([("k2", b"\x02" * 32), ("k1", b"\x01" * 32)]))
    (sealed_by_k1,) = await old.encode([PLAIN])
    (sealed_by_k2,) = await rotated.encode([PLAIN])
    assert sealed_by_k2.metadata[KEY_ID] == b"k2"
    assert await rotated.decode([sealed_by_k1, sealed_by_k2]) == [PLAIN, PLAIN]
    with pytest.raises(ConfigurationError, match="key 'k2', which this process does not have"):
        await old.decode([sealed_by_k2])


async def test_a_tampered_payload_or_wrong_key_is_refused() -> None:
    codec = EncryptionCodec(KeyRing.from_keys({"k1": b"\x01" * 32}))
    (sealed,) = await codec.encode([PLAIN])
    tampered = Payload(metadata=dict(sealed.metadata), data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    with pytest.raises(ConfigurationError, match="does not decrypt"):
        await codec.decode([tampered])
    impostor = EncryptionCodec(KeyRing.from_keys({"k1": b"\x09" * 32}))
    with pytest.raises(ConfigurationError, match="does not decrypt"):
        await impostor.decode([sealed])


async def test_unencrypted_payloads_still_read() -> None:
    codec = EncryptionCodec(KeyRing.from_keys({"k1": b"\x01" * 32}))
    assert await codec.decode([PLAIN]) == [PLAIN]


def test_keys_from_env_and_file(tmp_path) -> None:
    line = new_key_line("2026-11")
    assert key_ring_from_env({"ADK_ENCRYPTION_KEYS": line}).current()[0] == "2026-11"  # type: ignore[union-attr]
    keys = tmp_path / "keys"
    keys.write_text(f"# newest first\n{new_key_line('b')}\n{new_key_line('a')}\n")
    ring = key_ring_from_env({"ADK_ENCRYPTION_KEYS_FILE": str(keys)})
    assert ring is not None and [k for k, _ in ring.keys] == ["b", "a"]
    assert key_ring_from_env({}) is None
    with pytest.raises(ConfigurationError, match="32"):
        KeyRing.parse("k:" + "QUJD", source="test")
    with pytest.raises(ConfigurationError, match="listed twice"):
        KeyRing.parse(f"{new_key_line('a')},{new_key_line('a')}", source="test")
    with pytest.raises(ConfigurationError, match="cannot read"):
        key_ring_from_env({"ADK_ENCRYPTION_KEYS_FILE": str(tmp_path / "missing")})


def test_the_plugin_keeps_a_users_codec() -> None:
    # Before: AdkPlugin handed Temporal a DataConverter instance that replaced the client's, codec and all.
    codec = EncryptionCodec(KeyRing.from_keys({"k1": b"\x01" * 32}))
    configured = AdkPlugin().configure_client({"data_converter": DataConverter(payload_codec=codec)})  # type: ignore[typeddict-item]
    converter = configured["data_converter"]
    assert converter.payload_codec is codec
    assert converter.payload_converter_class is AdkPayloadConverter
