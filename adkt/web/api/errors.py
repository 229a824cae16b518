"""How failures become HTTP answers: JSON ``{"error", "message"}``, 4xx for anything the caller can
fix (bad ids, bad bodies, unknown sessions, a refused message), 5xx only for what the caller
cannot (Temporal unreachable, a failed turn, a bug)."""

from __future__ import annotations

import logging

from pydantic import ValidationError
from temporalio.client import RPCTimeoutOrCancelledError, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from adk_core.errors import (
    AdkError,
    AlreadyExistsError,
    ConfigurationError,
    InvalidInputError,
    SessionNotFoundError,
)
from adkt.client import MessageRejectedError, TurnFailedError, WorkersBusyError, WorkflowTaskFailedError

from ..security.principal import AuthError

log = logging.getLogger("adkt.web.api")


class ApiError(AdkError):
    """An answer the API gives on purpose, with its HTTP status."""

    status = 400


class NotFoundError(ApiError, LookupError):
    status = 404


class NoWorkerError(ApiError):
    """Nothing polls the app's task queue: a message sent now would wait for a worker."""

    status = 503


_STATUS: list[tuple[type[BaseException], int]] = [
    (ApiError, 0),  # its own status
    (AuthError, 0),  # 401, 403 (or 503: the OIDC issuer is down)
    (InvalidInputError, 400),
    (ConfigurationError, 400),
    (SessionNotFoundError, 404),
    (AlreadyExistsError, 409),
    (MessageRejectedError, 409),
    (TurnFailedError, 502),  # the turn ran and failed: the session stores an error event saying why
    (WorkflowTaskFailedError, 503),
    (WorkersBusyError, 503),  # the workers are overloaded: try again later
]


def error_body(error: BaseException) -> tuple[int, str, str]:
    """(status, kind, message) for ``error``."""
    for kind, status in _STATUS:
        if isinstance(error, kind):
            return (status or error.status, type(error).__name__, str(error))  # type: ignore[attr-defined]
    if isinstance(error, ValidationError):
        return 422, "ValidationError", first_error(error)
    if isinstance(error, RPCTimeoutOrCancelledError) or (
        isinstance(error, RPCError) and error.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED)
    ):
        return 503, "TemporalUnavailable", (
            f"Temporal did not answer ({error}); is the server running (`adkt dev`, or TEMPORAL_ADDRESS)? "
            "Try again when it is up"
        )
    if isinstance(error, RPCError | WorkflowQueryFailedError):
        message = getattr(error, "message", "") or str(error)
        return 502, "TemporalError", f"Temporal refused the call: {message}"
    if isinstance(error, AdkError):
        return 500, type(error).__name__, str(error)
    log.exception("unexpected error in the HTTP API", exc_info=error)
    return 500, "InternalError", f"{type(error).__name__}: {error} (a bug in adkt; the server log has the traceback)"


def first_error(error: ValidationError, hint: str = "") -> str:
    """The first of pydantic's errors, with where it is: enough to fix the request."""
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(body)"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}" + (f"; {hint}" if hint else "")
