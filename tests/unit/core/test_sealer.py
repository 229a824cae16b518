"""adk_core.encryption's Sealer (what the SQL stores encrypt at rest with): round trips, rotation, and
failures that name the key or the setting instead of returning garbage."""

from __future__ import annotations

import base64
import json

import pytest

from adk_core.encryption import (
    FROM_ENV,
    KEYS_ENV,
    KeyRing,
    Sealer,
    is_sealed,
    open_state,
    open_text,
    open_value,
    resolve_sealer,
    seal_state,
)
from adk_core.errors import ConfigurationError

K1 = ("k1", b"\x01" * 32)
K2 = ("k2", b"\x02" * 32)


def sealer(*keys: tuple[str, bytes]) -> Sealer:
    return Sealer(KeyRing.from_keys(list(keys)))


def test_round_trips_and_never_encrypts_twice_alike() -> None:
    s = sealer(K1)
    assert s.open(s.seal(b"secret")) == b"secret"
    assert s.seal(b"secret") != s.seal(b"secret")  # a fresh nonce each time
    assert s.open_text(s.seal_text("héllo")) == "héllo"
    stored = json.loads(s.seal_json('{"a": 1}', id="e1"))
    assert stored["id"] == "e1" and is_sealed(stored) and "secret" not in json.dumps(stored)
    assert open_value(stored, s) == {"a": 1}


def test_state_values_are_sealed_under_clear_keys() -> None:
    s = sealer(K1)
    sealed = seal_state({"name": "ada", "n": 2}, s)
    assert set(sealed) == {"name", "n"} and all(is_sealed(v) for v in sealed.values())
    assert "ada" not in json.dumps(sealed)
    assert open_state(sealed, s) == {"name": "ada", "n": 2}
    assert open_state({"plain": 1, **sealed}, s) == {"plain": 1, "name": "ada", "n": 2}  # mixed rows read
    assert seal_state({"a": 1}, None) == {"a": 1}


def test_rotation_and_missing_keys() -> None:
    old = sealer(K1).seal(b"x")
    assert sealer(K2, K1).open(old) == b"x"
    assert sealer(K2, K1).seal(b"y")[5:7] == b"k2"  # the newest key encrypts
    with pytest.raises(ConfigurationError, match="'k1'.*ADK_ENCRYPTION_KEYS"):
        sealer(K2).open(old)
    with pytest.raises(ConfigurationError, match="set ADK_ENCRYPTION_KEYS"):
        open_value(json.loads(sealer(K1).seal_json("1")), None)
    with pytest.raises(ConfigurationError, match="set ADK_ENCRYPTION_KEYS"):
        open_text(sealer(K1).seal_text("t"), None)


def test_tampering_is_refused() -> None:
    blob = bytearray(sealer(K1).seal(b"secret"))
    blob[-1] ^= 1
    with pytest.raises(ConfigurationError, match="does not decrypt with key 'k1'"):
        sealer(K1).open(bytes(blob))
    with pytest.raises(ConfigurationError, match="not in the sealed format"):
        sealer(K1).open(b"plain bytes")
    whole = sealer(K1).seal(b"secret")
    with pytest.raises(ConfigurationError, match="cut short"):  # not cryptography's bare ValueError
        sealer(K1).open(whole[:-20])


def test_stores_take_the_environments_keys_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADK_ENCRYPTION_KEYS_FILE", raising=False)
    monkeypatch.delenv(KEYS_ENV, raising=False)
    assert resolve_sealer(FROM_ENV) is None
    monkeypatch.setenv(KEYS_ENV, "k1:" + base64.b64encode(b"\x01" * 32).decode())
    found = resolve_sealer(FROM_ENV)
    assert found is not None and found.keys.current()[0] == "k1"
    assert resolve_sealer(None) is None
    with pytest.raises(ConfigurationError, match="pass a Sealer"):
        resolve_sealer("yes")
