"""How an agent runs in a durable run. Plain data: the Temporal runtime reads it, adk_core ignores it.

``AgentExecution`` is to an agent what ``ToolExecution`` is to a tool: frozen, typed, engine-neutral
(retries are our ``RetryOptions``; workflows/ turns them into Temporal's RetryPolicy).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..errors import ConfigurationError
from ..tools.execution import RetryOptions

MODEL_RETRY = RetryOptions(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=60), maximum_attempts=8
)
"""Model calls back off to a minute between attempts and give up after 8: a provider that is down
longer than that fails the turn instead of holding it for hours."""


@dataclass(frozen=True)
class AgentExecution:
    """Per-agent options for durable runs.

    Example: ``LlmAgent(name="researcher", ..., execution=AgentExecution(child_workflow=True))``.
    """

    child_workflow: bool = False
    """Run this agent (a ParallelAgent branch, or an AgentTool's agent) as a child workflow, so the
    agent tree shows as a workflow tree. Off: it runs inside its parent's workflow."""
    model_timeout: timedelta = timedelta(minutes=10)
    """Bound on one attempt of one model call (the model activity's start-to-close timeout)."""
    model_heartbeat_timeout: timedelta | None = timedelta(seconds=10)
    """The model activity heartbeats while it waits on the provider, so a worker that dies mid-call is
    noticed within this, not after model_timeout. None turns the check off."""
    model_retry: RetryOptions = MODEL_RETRY
    model_task_queue: str | None = None
    """Run this agent's model calls on another worker's queue (e.g. one near the provider)."""

    def __post_init__(self) -> None:
        # Temporal would refuse these only when the first model call is scheduled, failing a turn.
        for name in ("model_timeout", "model_heartbeat_timeout"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, timedelta) or value <= timedelta(0)):
                raise ConfigurationError(
                    f"AgentExecution.{name} must be a positive timedelta, got {value!r}; e.g. timedelta(minutes=10)"
                    + (" (or None: no heartbeat check)" if name == "model_heartbeat_timeout" else "")
                )


DEFAULT_AGENT_EXECUTION = AgentExecution()

_RETRY_FIELDS = tuple(f.name for f in dataclasses.fields(RetryOptions))


def agent_execution(
    execution: AgentExecution | None, durable: Mapping[str, Any] | None, agent_name: str
) -> AgentExecution:
    """The agent's options from ``execution=``, or from the old ``durable={...}`` dict (converted, with a
    DeprecationWarning). Anything else is a ConfigurationError that shows the new form."""
    if durable is None:
        if execution is None:
            return DEFAULT_AGENT_EXECUTION
        if not isinstance(execution, AgentExecution):
            raise ConfigurationError(
                f"agent {agent_name!r}: execution must be an AgentExecution, got {type(execution).__name__}; "
                "use execution=AgentExecution(child_workflow=True, ...) (from adk_core import AgentExecution)"
            )
        return execution
    if execution is not None:
        raise ConfigurationError(
            f"agent {agent_name!r} got both execution= and durable=; durable is the old form of the same "
            "options: pass execution=AgentExecution(...) only"
        )
    if not isinstance(durable, Mapping):
        raise ConfigurationError(
            f"agent {agent_name!r}: durable= is the old form of execution=; pass "
            "execution=AgentExecution(child_workflow=True, ...) (from adk_core import AgentExecution)"
        )
    known = {f.name for f in dataclasses.fields(AgentExecution)}
    unknown = sorted(set(durable) - known)
    if unknown:
        raise ConfigurationError(
            f"agent {agent_name!r}: durable= has no option {', '.join(map(repr, unknown))}; durable= is the "
            f"old form of execution=AgentExecution(...), whose fields are {', '.join(sorted(known))}"
        )
    options = dict(durable)
    if "model_retry" in options:
        options["model_retry"] = _retry_options(options["model_retry"], agent_name)
    converted = AgentExecution(**options)
    suggestion = ", ".join(f"{name}={value!r}" for name, value in options.items())
    warnings.warn(
        f"agent {agent_name!r}: durable={{...}} is deprecated; pass execution=AgentExecution({suggestion}) "
        "(from adk_core import AgentExecution)",
        DeprecationWarning,
        stacklevel=4,
    )
    return converted


def _retry_options(value: Any, agent_name: str) -> RetryOptions:
    """A RetryOptions, or one built from an object with the same fields (a Temporal RetryPolicy, as the old
    ``durable["model_retry"]`` took)."""
    if isinstance(value, RetryOptions):
        return value
    if not all(hasattr(value, name) for name in _RETRY_FIELDS):
        raise ConfigurationError(
            f"agent {agent_name!r}: model_retry must be a RetryOptions (from adk_core.tools import RetryOptions), "
            f"got {type(value).__name__}"
        )
    fields = {name: getattr(value, name) for name in _RETRY_FIELDS}
    fields["non_retryable_error_types"] = tuple(fields["non_retryable_error_types"] or ())
    return RetryOptions(**fields)
