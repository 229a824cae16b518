"""The fields of an agent config file (google-adk's Agent Config shape), as pydantic models."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from ..agents.execution import AgentExecution
from ..models.base import GenerateContentConfig

AgentClass = Literal["LlmAgent", "Agent", "SequentialAgent", "ParallelAgent", "LoopAgent"]
LLM_ONLY_FIELDS = (
    "model", "instruction", "global_instruction", "tools", "tool_validation", "generate_content_config", "output_key",
    "include_contents", "disallow_transfer_to_parent", "disallow_transfer_to_peers", "before_model_callbacks",
    "after_model_callbacks", "before_tool_callbacks", "after_tool_callbacks",
)  # fmt: skip
"""Fields only an LlmAgent takes; set on a workflow agent they are an error, not ignored."""


def _reference(value: Any) -> str:
    """A name or ``package.module:attr``, written as is or as google-adk's ``{name: ...}``."""
    if isinstance(value, dict) and "args" in value:
        raise PydanticCustomError(
            "reference_args",
            "args (google-adk's arguments for a tool factory) are not supported; build the tool in Python, "
            "register it in the tool_registry and name it here",
        )
    if isinstance(value, dict) and set(value) == {"name"}:
        value = value["name"]
    if not isinstance(value, str) or not value.strip():
        raise PydanticCustomError(  # pydantic's own error type: the loader reports it with its line
            "reference",
            "write a name or package.module:attr (or a mapping with only name:), not {value}",
            {"value": repr(value)},
        )
    return value.strip()


Reference = Annotated[str, BeforeValidator(_reference)]


class AgentRef(BaseModel):
    """A sub-agent kept elsewhere: another config file, or an agent built in Python."""

    model_config = ConfigDict(extra="forbid")

    config_path: str | None = None
    """A YAML file, relative to the file that names it."""
    code: str | None = None
    """``package.module:attr``: an agent object."""

    @model_validator(mode="after")
    def _exactly_one(self) -> AgentRef:
        if (self.config_path is None) == (self.code is None):
            raise PydanticCustomError(  # pydantic's own error type: the loader reports it with its line
                "one_reference", "give exactly one of config_path (a YAML file) or code (package.module:attr)"
            )
        return self


class ExecutionConfig(BaseModel):
    """How the agent runs in a durable run (adk_core.AgentExecution). Durations: seconds, or ISO 8601 (PT5M)."""

    model_config = ConfigDict(extra="forbid")

    child_workflow: bool = False
    model_timeout: timedelta = timedelta(minutes=10)
    model_heartbeat_timeout: timedelta | None = timedelta(seconds=10)
    model_task_queue: str | None = None

    def build(self) -> AgentExecution:
        return AgentExecution(**self.model_dump())


class AgentConfig(BaseModel):
    """One agent. ``sub_agents`` items are inline AgentConfigs or AgentRefs (validated one by one
    by the loader, so an error points at the sub-agent's own line)."""

    model_config = ConfigDict(extra="forbid")

    agent_class: AgentClass = "LlmAgent"
    name: str
    description: str = ""
    model: str = ""
    """A model name (gemini-2.5-flash, claude-..., gpt-..., openai/...) or ``package.module:attr``
    holding a Model (or a model name); empty inherits the parent's."""
    instruction: str = ""
    global_instruction: str = ""
    tools: list[Reference] = Field(default_factory=list)
    """Tool names: in the tool registry, built in (exit_loop, load_memory, load_artifacts), or ``package.module:attr``."""
    tool_registry: str | None = None
    """``package.module:attr`` holding a ToolRegistry; sub-agents without their own use this one."""
    tool_validation: Literal["strict", "permissive"] = "strict"
    sub_agents: list[dict[str, Any]] = Field(default_factory=list)
    generate_content_config: GenerateContentConfig | None = None
    output_key: str | None = None
    include_contents: Literal["default", "none"] = "default"
    disallow_transfer_to_parent: bool = False
    disallow_transfer_to_peers: bool = False
    execution: ExecutionConfig | None = None
    max_iterations: int | None = Field(default=None, ge=1)
    """LoopAgent only."""
    before_agent_callbacks: list[Reference] = Field(default_factory=list)
    after_agent_callbacks: list[Reference] = Field(default_factory=list)
    before_model_callbacks: list[Reference] = Field(default_factory=list)
    after_model_callbacks: list[Reference] = Field(default_factory=list)
    before_tool_callbacks: list[Reference] = Field(default_factory=list)
    after_tool_callbacks: list[Reference] = Field(default_factory=list)

