"""The one rule for app names, user ids and session ids, applied everywhere they enter:
the client, the workflows, every store and the CLI.

An id is a string of 1 to 256 characters with no leading or trailing whitespace, no control
characters (NUL included) and no lone surrogates. Anything else is refused with an InvalidInputError that says how to
fix it: never stripped or rewritten silently, so the id a caller creates with is the id that
reads, writes and deletes. Slashes and other punctuation are allowed; where ids are joined into
one string (Temporal workflow ids) each part is escaped, so distinct triples never collide.
"""

from __future__ import annotations

import re

from .errors import InvalidInputError

MAX_ID_LENGTH = 256
_BAD_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""Control characters (C0, DEL and C1) and lone surrogates. Ids are checked on every store call:
one regex search instead of a Python loop over the characters."""


def validate_id(kind: str, value: object) -> str:
    """Return ``value`` if it is a valid ``kind`` ("app name", "user id", "session id"), else raise."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{kind} {value!r} is a {type(value).__name__}; ids are strings")
    if not value:
        raise InvalidInputError(f"{kind} is empty; give a non-empty {kind}")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidInputError(
            f"{kind} {value[:40]!r}... is {len(value)} characters; the limit is {MAX_ID_LENGTH}"
        )
    if value != value.strip():
        raise InvalidInputError(
            f"{kind} {value!r} has leading or trailing whitespace; pass {value.strip()!r} instead"
        )
    bad = _BAD_CHARACTER.search(value)
    if bad is not None:
        code = ord(bad.group())
        if code >= 0xD800:
            raise InvalidInputError(f"{kind} {value!r} contains a lone surrogate (code {code}), which is not valid text")
        raise InvalidInputError(
            f"{kind} {value!r} contains a control character (code {code}); ids may hold letters, "
            "digits, spaces inside and punctuation, but no NUL, tab or newline"
        )
    return value


def validate_session_key(app_name: object, user_id: object, session_id: object) -> None:
    """Check all three ids of a session; the first bad one raises."""
    validate_id("app name", app_name)
    validate_id("user id", user_id)
    validate_id("session id", session_id)


def escape_id_part(value: str) -> str:
    """``value`` with '%' and '/' percent-encoded, so parts joined with '/' split back uniquely."""
    return value.replace("%", "%25").replace("/", "%2F")
