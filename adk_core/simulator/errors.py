"""Errors of the simulator. Each names the rule that was broken and what to do instead.

    AdkError
    └── SimulatorError
        ├── SimulatorNotFoundError      no simulator session (or turn) with that id          -> HTTP 404
        ├── SimulatorInputError         a value breaks a rule of the entities                -> HTTP 422
        │                               (a bad UUIDv4, an agent name, a payload that is not
        │                               exactly one of request/response, no candidates, a
        │                               function call that its tool's schema refuses)
        ├── SimulatorConflictError      the value is fine but the session's state refuses it -> HTTP 409
        │   ├── SessionCompletedError   the session is completed; it takes nothing more
        │   ├── AskerGoneError          the run that asked has ended: its request is closed
        │   ├── NotHeadOfQueueError     only the oldest pending request may be answered
        │   └── TurnAlreadyAnsweredError a turn has at most one response
        └── SimulatorDeliveryTimeoutError no worker took a decision for a durable run in time -> HTTP 504
                                        (the request stays pending; answer again once a worker runs)
"""

from __future__ import annotations

from adk_core.errors import AdkError


class SimulatorError(AdkError):
    """Root of the simulator's errors. ``http_status`` is what the web API answers with."""

    http_status = 400


class SimulatorNotFoundError(SimulatorError, LookupError):
    http_status = 404


class SimulatorInputError(SimulatorError, ValueError):
    http_status = 422


class SimulatorConflictError(SimulatorError):
    http_status = 409


class SessionCompletedError(SimulatorConflictError):
    pass


class AskerGoneError(SimulatorConflictError):
    """Nobody waits for the request any more (the run that asked was cancelled or ended). The
    service closes the request (``abandoned_response``) so the ones behind it can be answered."""


class NotHeadOfQueueError(SimulatorConflictError):
    pass


class TurnAlreadyAnsweredError(SimulatorConflictError):
    pass


class SimulatorDeliveryTimeoutError(SimulatorError, TimeoutError):
    """A decision for a durable run was not accepted in time (no worker is polling its task queue)."""

    http_status = 504
