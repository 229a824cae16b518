"""App: what a worker or runner serves — a name, a root agent, the plugins around it and the
app-wide settings (context compaction)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .agents.base import BaseAgent
from .compaction import EventsCompactionConfig, LlmEventsSummarizer
from .errors import ConfigurationError
from .plugins.base import BasePlugin


@dataclass
class App:
    """The unit users deploy. ``adkt worker --app module:attr`` loads one of these (or a bare agent)."""

    name: str
    root_agent: BaseAgent
    plugins: Sequence[BasePlugin] = field(default_factory=list)
    events_compaction_config: EventsCompactionConfig | None = None
    """Summarize older events every few invocations or once a prompt reaches a number of tokens
    (adk_core.compaction); None keeps every event in the model's contents."""
    strict_model_parameters: bool = False
    """Refuse, as the app is built, an agent whose generate_content_config sets what its model does
    not accept (adk_core.models.rules); otherwise each call leaves it out and warns once."""

    def __post_init__(self) -> None:
        if self.strict_model_parameters and (problems := check_model_parameters(self.root_agent)):
            from .models.rules import how_to_fix

            raise ConfigurationError(
                f"app {self.name!r} is strict about model parameters and {'; '.join(problems)}. "
                f"For each: {how_to_fix()}"
            )
        config = self.events_compaction_config
        if config is not None and config.summarizer is None:
            self.events_compaction_config = replace(config, summarizer=_default_summarizer(self.name, self.root_agent))

    def find_agent(self, name: str) -> BaseAgent | None:
        """An agent of the tree, or one reachable only through an AgentTool."""
        return find_agent_anywhere(self.root_agent, name)


def _default_summarizer(app_name: str, root: BaseAgent) -> LlmEventsSummarizer:
    """An LLM summarizer on the root agent's model (resolved when it is first used)."""
    from .agents.llm_agent import LlmAgent

    if not isinstance(root, LlmAgent):
        raise ConfigurationError(
            f"app {app_name!r} compacts events but its root agent {root.name!r} is not an LlmAgent, so there is "
            "no model to summarize with; pass EventsCompactionConfig(..., summarizer=LlmEventsSummarizer(model=...))"
        )
    model = root.model if root.model else root.canonical_model
    return LlmEventsSummarizer(model)


def check_model_parameters(root: BaseAgent) -> list[str]:
    """One line per agent of the tree whose generate_content_config sets what its model refuses.

    Resolves each agent's model (by name through the registry, or its own or an ancestor's Model);
    models without rules (ScriptedModel, your own Model classes) accept everything.
    """
    from .agents.llm_agent import LlmAgent
    from .models.rules import describe_refusals

    problems: list[str] = []
    for agent in _all_agents(root):
        if not isinstance(agent, LlmAgent) or agent.generate_content_config is None:
            continue
        model = agent.canonical_model
        check = getattr(model, "refused_settings", None)
        if check is not None and (refusals := check(agent.generate_content_config)):
            problems.append(f"agent {agent.name!r}: {describe_refusals(model.name, refusals)}")
    return problems


def _all_agents(root: BaseAgent) -> list[BaseAgent]:
    from .tools.agent_tool import AgentTool

    seen: dict[int, BaseAgent] = {}
    stack = [root]
    while stack:
        agent = stack.pop()
        if id(agent) not in seen:
            seen[id(agent)] = agent
            stack.extend(agent.sub_agents)
            stack.extend(t.agent for t in getattr(agent, "tools", ()) if isinstance(t, AgentTool))
    return list(seen.values())


def find_agent_anywhere(root: BaseAgent, name: str) -> BaseAgent | None:
    from .tools.agent_tool import AgentTool

    seen: set[int] = set()
    stack = [root]
    while stack:
        agent = stack.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        if agent.name == name:
            return agent
        stack.extend(agent.sub_agents)
        stack.extend(t.agent for t in getattr(agent, "tools", ()) if isinstance(t, AgentTool))
    return None
