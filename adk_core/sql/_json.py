"""JSON text for jsonb columns: what Postgres cannot store is refused before anything is written.

Every JSON the SQL stores write (session state at create, state deltas, events, memory content,
artifact parts) goes through ``dumps`` or ``dumps_model``, so a NUL, NaN or unserializable value is an
InvalidInputError naming the field, never a database error halfway through a transaction.
"""

from __future__ import annotations

import json
import re
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.dialects.postgresql import JSONB

from adk_core.errors import InvalidInputError
from adk_core.sessions.base import model_json

# An escaped NUL (\u0000) not itself preceded by an escaping backslash: jsonb rejects it.
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _check_nul(text: str, what: str) -> str:
    if "\\u0000" in text and _ESCAPED_NUL.search(text):
        raise InvalidInputError(
            f"{what} contains a NUL character (\\u0000), which Postgres cannot store in JSON; remove it "
            "or encode the value (e.g. base64)"
        )
    return text


def dumps(value: Any, what: str) -> str:
    """Compact JSON for plain data (state deltas)."""
    try:
        text = json.dumps(value, allow_nan=False, separators=(",", ":"))
    except ValueError as e:
        # json raises ValueError for NaN/Infinity (allow_nan=False) and for circular references.
        raise InvalidInputError(
            f"{what} cannot be stored as Postgres JSON ({e}): NaN and Infinity have no JSON form (use None "
            "or a string), and a value may not contain itself"
        ) from None
    except TypeError as e:
        raise InvalidInputError(
            f"{what} is not JSON-serializable ({e}); store plain dicts, lists, strings, numbers, booleans or None"
        ) from None
    return _check_nul(text, what)


def dumps_model(model: BaseModel, what: str) -> str:
    """JSON for a pydantic model (bytes as base64, as the model's config says). A NaN or Infinity
    in it is refused by name (``model_json``), not written as null as pydantic would."""
    return _check_nul(model_json(model, what), what)


def jsonb(text: str) -> sa.ColumnElement[Any]:
    """A bound JSON text cast to jsonb in SQL, so it is serialized once, by us."""
    return sa.cast(sa.literal(text, sa.Text), JSONB)


def concat(column: sa.ColumnElement[Any], other: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """``column || other`` on jsonb: the keys of ``other`` replace or join those of ``column``."""
    return column.op("||", return_type=JSONB)(other)


def jsonb_param(name: str) -> sa.ColumnElement[Any]:
    """A named JSON-text parameter cast to jsonb, for executemany inserts."""
    return sa.cast(sa.bindparam(name, type_=sa.Text), JSONB)
