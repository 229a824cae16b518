"""KeyRing.parse: a key file's comments may hold commas, and a malformed entry's error never repeats
the entry (it may be a key pasted without its id)."""

from __future__ import annotations

import base64

import pytest

from adk_core.encryption import KeyRing, new_key_line
from adk_core.errors import ConfigurationError


def test_a_comment_with_a_comma_is_a_comment() -> None:
    k2, k1 = new_key_line("k2"), new_key_line("k1")
    text = f"# rotated 2026-11, drop k1 after December\n{k2}  # new, encrypts\n{k1}\n"
    assert [kid for kid, _ in KeyRing.parse(text, source="keys").keys] == ["k2", "k1"]


def test_the_comma_separated_form_still_reads() -> None:
    assert [kid for kid, _ in KeyRing.parse(f"{new_key_line('b')},{new_key_line('a')}", source="env").keys] == ["b", "a"]


def test_a_key_without_its_id_is_not_echoed() -> None:
    secret = base64.b64encode(b"s" * 32).decode()
    with pytest.raises(ConfigurationError) as raised:
        KeyRing.parse(secret, source="ADK_ENCRYPTION_KEYS")
    assert secret[:6] not in str(raised.value)
    assert "id:BASE64KEY" in str(raised.value)
