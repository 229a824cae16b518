"""Per-run settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class RunConfig(BaseModel):
    """Settings for one ``run_async`` call.

    Attributes:
        max_llm_calls: model calls allowed in one invocation; going past it stores an error
            event (error_code "LlmCallsLimitExceededError") from the agent that asked, then ends
            the run with LlmCallsLimitExceededError. 0 or less means no limit.
        streaming_mode: "none" for whole responses, "sse" to stream partial events.
        custom_metadata: copied into the invocation context for callbacks and plugins.
    """

    max_llm_calls: int = 500
    streaming_mode: Literal["none", "sse"] = "none"
    custom_metadata: dict[str, Any] = Field(default_factory=dict)
