"""Errors of remote A2A agents. Both reach the user as the remote agent's error event; they differ in
whether a durable run tries the call again (RemoteA2aAgent retries only A2aUnavailableError).

    AdkError
    ├── A2aCallError          the remote answered with a refusal: a JSON-RPC error (unknown task,
    │                         invalid params), a 4xx, a task that ended failed/rejected/canceled,
    │                         or an agent card that is not a valid A2A card
    └── A2aUnavailableError   no answer: the remote could not be reached, timed out or answered 5xx
"""

from __future__ import annotations

from ..errors import AdkError

__all__ = ["A2aCallError", "A2aUnavailableError"]


class A2aCallError(AdkError):
    """The remote A2A agent refused the call or the task failed. Trying again gives the same answer."""


class A2aUnavailableError(AdkError):
    """The remote A2A agent gave no answer. A durable run retries (bounded), with the same message id."""
