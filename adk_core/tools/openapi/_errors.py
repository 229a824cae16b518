"""Errors of OpenAPI tools. Both reach the model as the tool's error; a durable run retries only
OpenApiUnavailableError (see adk_core.tools.execution.remote_tool_execution).

    AdkError
    ├── OpenApiCallError          the API answered 4xx (other than 408 and 429): the call as made is refused
    └── OpenApiUnavailableError   no usable answer: unreachable, timed out, 408, 429 or 5xx
"""

from __future__ import annotations

from ...errors import AdkError


class OpenApiCallError(AdkError):
    """The API refused the call (4xx). The same call would be refused again, so it is not retried."""


class OpenApiUnavailableError(AdkError):
    """The API gave no usable answer; a durable run tries again (bounded) with the same Idempotency-Key."""
