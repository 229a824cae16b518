"""Which database errors a retry can cure, and what the SQL stores raise for the others.

The session, memory and artifact stores run inside Temporal activities, and Temporal retries
every failure that is not an AdkError turned non-retryable. So the stores sort what the database
(SQLAlchemy over psycopg 3) raises into two kinds:

Transient: the same call may succeed later. Re-raised unchanged (a SQLAlchemy ``DBAPIError``,
never an AdkError), so the activity is retried:
    - connection lost or refused, server shutting down or restarting (SQLSTATE classes 08, 57;
      a client-side ``OperationalError`` or ``InterfaceError`` without a SQLSTATE);
    - serialization failure, deadlock (class 40); lock timeout (55P03), object in use (55006);
    - too many connections, out of memory or disk (class 53); I/O and system errors (class 58);
    - a read-only server, e.g. during a failover (25006).

Permanent: retrying sends the same data to the same database and fails the same way. Raised as
an AdkError that says what to fix, with the database's error as its ``__cause__``:
    - InvalidInputError: Postgres refused a value (class 22, e.g. a NUL character in a text
      field, a number out of range; class 54, a value over a size limit), or the driver could not
      encode it (a lone surrogate, which has no UTF-8 form);
    - ConfigurationError: the database is not set up for these stores (missing table, column or
      function: run ``migrate()``; no privilege; wrong password; no such database);
    - SessionError: any other statement Postgres rejected by rule (integrity, syntax classes 23
      and 42), which points at a bug rather than at the data.

Anything else (an unknown SQLSTATE, an internal error) is re-raised unchanged: retried until the
activity's retry policy gives up. Wrongly retrying a permanent error costs retries; wrongly
failing a transient one would fail a user's turn, so doubt falls on the retrying side.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Literal, ParamSpec, TypeVar

from sqlalchemy import exc

from adk_core.errors import AdkError, ConfigurationError, InvalidInputError, SessionError

Kind = Literal["transient", "data", "setup", "rejected", "unknown"]

_TRANSIENT_CLASSES = {"08", "40", "53", "57", "58"}
_TRANSIENT_CODES = {"55P03", "55006", "25006"}
_DATA_CLASSES = {"22", "54"}
# Missing table, column, function or object (migrations not run), no privilege, bad login or database.
_SETUP_CODES = {"42P01", "42703", "42883", "42704", "42501", "3D000"}
_SETUP_CLASSES = {"28"}
_REJECTED_CLASSES = {"23", "42"}

_MAX_DETAIL = 300


def classify(error: BaseException) -> Kind:
    """The kind of a database error (see the module docstring); "unknown" for anything else."""
    if isinstance(error, UnicodeEncodeError):
        return "data"  # psycopg encodes text parameters itself and lets this through unwrapped
    if not isinstance(error, exc.DBAPIError):
        return "unknown"
    if error.connection_invalidated:
        return "transient"
    state: str | None = getattr(error.orig, "sqlstate", None)
    if state:
        return _kind_of_sqlstate(state)
    # No SQLSTATE: psycopg refused before sending (a NUL in a text parameter, an int too big),
    # or the connection itself failed.
    if isinstance(error, exc.DataError):
        return "data"
    if isinstance(error, (exc.OperationalError, exc.InterfaceError)):
        return "transient"
    return "unknown"


def _kind_of_sqlstate(state: str) -> Kind:
    group = state[:2]
    if group in _TRANSIENT_CLASSES or state in _TRANSIENT_CODES:
        return "transient"
    if group in _DATA_CLASSES:
        return "data"
    if state in _SETUP_CODES or group in _SETUP_CLASSES:
        return "setup"
    if group in _REJECTED_CLASSES:
        return "rejected"
    return "unknown"


def is_transient(error: BaseException) -> bool:
    """True when the store re-raises ``error`` unchanged because a retry may succeed."""
    return classify(error) == "transient"


def permanent_error(error: BaseException, doing: str) -> AdkError | None:
    """The AdkError to raise instead of ``error``, or None to re-raise ``error`` as it is."""
    kind = classify(error)
    detail = _detail(error)
    if kind == "data":
        return InvalidInputError(
            f"{doing}: Postgres refused a value ({detail}); retrying will not help. Check ids, state "
            "values, event fields and artifact text for NUL characters, unpaired surrogates, numbers "
            "out of range or oversized values, and encode such data (e.g. base64) before storing it"
        )
    if kind == "setup":
        return ConfigurationError(
            f"{doing}: the database is not set up for the adk stores ({detail}). Run "
            "`await adk_core.sql.migrate(url)` against it, and connect as a role that may "
            "read and write the adk_* tables"
        )
    if kind == "rejected":
        return SessionError(
            f"{doing}: Postgres rejected the statement ({detail}); retrying will not help. If the "
            "database schema was changed by hand, restore it with migrate(); otherwise report this "
            "as an adk_core bug"
        )
    return None


def _detail(error: BaseException) -> str:
    """The database's own message, first line only: the full SQLAlchemy text repeats the
    statement and its parameters (whole events)."""
    orig = getattr(error, "orig", None) or error
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."


P = ParamSpec("P")
R = TypeVar("R")


def store_errors(method: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Decorate a store method: permanent database errors become AdkErrors naming the method;
    transient and unknown ones pass through untouched."""

    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except (exc.DBAPIError, UnicodeEncodeError) as e:
            replacement = permanent_error(e, _doing(method, args))
            if replacement is None:
                raise
            raise replacement from e

    return call


def _doing(method: Callable[..., Any], args: tuple[Any, ...]) -> str:
    owner = type(args[0]).__name__ if args else ""
    return f"{owner}.{method.__name__}" if owner else method.__name__
