"""Agents declared in config files (google-adk's Agent Config): YAML in, agents with tools bound by name out.

    # root_agent.yaml
    agent_class: LlmAgent
    name: weather
    model: gemini-2.5-flash
    instruction: Answer with the get_weather tool.
    tool_registry: my_project.tools:registry     # optional; names below are looked up here first
    tools:
      - get_weather                               # a registry name
      - my_project.tools:get_forecast             # a reference
    sub_agents:
      - config_path: helper.yaml
"""

from ._yaml import AgentConfigError
from .loader import import_root, load_agent_config, load_config_app
from .schema import AgentConfig, AgentRef

CONFIG_SUFFIXES = (".yaml", ".yml")
"""File names that hold an agent config."""

__all__ = [
    "CONFIG_SUFFIXES",
    "AgentConfig",
    "AgentConfigError",
    "AgentRef",
    "import_root",
    "load_agent_config",
    "load_config_app",
]
