"""Errors raised by adk_core. Every message says what went wrong and how to fix it.

    AdkError
    ├── ConfigurationError          an agent tree, tool or setting is wrong before anything runs
    │   └── StateKeyError           a state key breaks the naming rules
    ├── InvalidInputError           data given at run time cannot be used (oversized blob, bad JSON value)
    ├── SessionError
    │   ├── SessionNotFoundError
    │   └── AlreadyExistsError      a session id (or artifact version) that is already taken
    ├── ModelError                  a model provider failed; carries status, retryable, retry_after
    ├── ToolError                   a tool failed in a way the model cannot be told about
    ├── LlmCallsLimitExceededError  RunConfig.max_llm_calls was reached
    ├── OutputValidationError       a response did not match the agent's output_schema
    └── RemoteError                 an error raised elsewhere (an activity), carried back by type name
"""

from __future__ import annotations


class AdkError(Exception):
    """Root of every error adk_core raises on purpose."""


class ConfigurationError(AdkError):
    """The agent tree, a tool, or a setting is wrong; raised before any side effect."""


class StateKeyError(ConfigurationError, ValueError):
    """A state key breaks the naming rules (see adk_core.state.validate_state_key)."""


class InvalidInputError(AdkError, ValueError):
    """Run-time data that cannot be used as given; nothing was written."""


class SessionError(AdkError):
    """A session store operation could not be carried out."""


class SessionNotFoundError(SessionError, LookupError):
    """The session named does not exist."""


class AlreadyExistsError(SessionError):
    """An id that must be unique is already taken."""


class ModelError(AdkError):
    """A model provider call failed.

    Attributes:
        status: HTTP status, or None for transport failures.
        retryable: whether the same request may succeed later (408/409/429/5xx, network errors).
        retry_after: seconds the provider asked us to wait, if it said.
        provider: short provider name, e.g. "gemini".
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        provider: str = "",
        error_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.provider = provider
        self.error_type = error_type


class ToolError(AdkError):
    """A tool problem that must stop the run (not one the model can recover from)."""


class LlmCallsLimitExceededError(AdkError):
    """The invocation made more model calls than RunConfig.max_llm_calls allows."""


class OutputValidationError(AdkError, ValueError):
    """A model response did not validate against the agent's output_schema."""


class RemoteError(AdkError):
    """An exception raised where the engine could not catch it directly (e.g. in a Temporal
    activity), rebuilt from its type name and message so the engine reports it as it would have
    reported the original."""

    def __init__(self, message: str, *, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def error_type_name(error: BaseException) -> str:
    return error.error_type if isinstance(error, RemoteError) else type(error).__name__
