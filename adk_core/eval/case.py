"""EvalCase: one complete evaluation scenario."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agents.base import BaseAgent
from ..app import App
from ..errors import ConfigurationError
from ..ids import validate_id
from ..types import Content
from .bridge import Bridge
from .metrics.base import Metric, check_metrics
from .mocks import ToolMocks, validate_tool_mocks
from .scopes import flatten_scoped
from .streaming import DEFAULT_STREAMING_METRICS, StreamingMetric
from .termination import TerminateWhen
from .user_agents import UserAgents

DEFAULT_TERMINATE_WHEN = TerminateWhen(max_turns=20)
"""Without ``terminate_when``: at most 20 system turns, so a conversation that never ends is
reported as ``terminated`` instead of running forever (google-adk's simulator stops at 20 too)."""


@dataclass(eq=False)
class EvalCase:
    """A complete evaluation scenario: what runs, what it may touch, who plays the user, when it
    stops and how it is scored.

    Args (in this order; usually given by keyword):
        name: unique within a suite; names the case's apps and results (an id: no control characters).
        description: what the case checks.
        app_or_agent: the system under test (an App, its plugins kept, or a root agent); required.
        tool_mocks: tool name -> ToolMock (replace) or the real tool/function (run it). Every other
            tool raises EvalToolError when called; unmocked long-running tools are tool yields.
        user_agents: who answers loop yields and tool yields.
        bridge: custom prompt/response transforms (defaults: the seed's).
        initial_state: ``{scope: {key: value}}`` (``session``, ``user``, ``app`` or your own scopes,
            stored as ``scope:key``), copied into each trial's fresh main session.
        first_message: the user's first message; None lets ``user_agents.loop`` open the conversation.
        terminate_when: stop conditions (default: 20 turns).
        metrics: scored on the final trace, also after a terminated run.
        trials: how many independent runs (for pass^k).
        streaming_metrics: what to measure while it runs (adk_core.eval.streaming; default: time to
            first response, tool latency, tokens, cost); values in ``EvalResult.measurements``.

    Cases are compared by identity: the apps built for a case (adk_core.eval.apps) are cached per
    case object, which is what lets a durable worker rebuild its interception rule by name.
    """

    name: str
    description: str = ""
    app_or_agent: App | BaseAgent | None = None
    tool_mocks: ToolMocks = field(default_factory=dict)
    user_agents: UserAgents = field(default_factory=UserAgents)
    bridge: Bridge = field(default_factory=Bridge)
    initial_state: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    first_message: str | Content | None = None
    terminate_when: TerminateWhen = DEFAULT_TERMINATE_WHEN
    metrics: Sequence[Metric] = ()
    trials: int = 1
    streaming_metrics: Sequence[StreamingMetric] = DEFAULT_STREAMING_METRICS

    def __post_init__(self) -> None:
        validate_id("eval case name", self.name)
        if not isinstance(self.app_or_agent, App | BaseAgent):
            raise ConfigurationError(
                f"EvalCase {self.name!r}: app_or_agent= is required: the system under test, an App or a root agent"
            )
        if self.trials < 1:
            raise ConfigurationError(f"EvalCase {self.name!r}: trials must be >= 1, not {self.trials}")
        if self.first_message is None and self.user_agents.loop is None:
            raise ConfigurationError(
                f"EvalCase {self.name!r} has neither first_message nor a loop user agent; give first_message='...' "
                "or user_agents=UserAgents(loop=...) to open the conversation"
            )
        validate_tool_mocks(self.tool_mocks)
        self.user_agents.all()  # distinct names
        flatten_scoped(self.initial_state)
        check_metrics(self.metrics, where=f"EvalCase {self.name!r} metrics")
        names = [getattr(m, "name", None) for m in self.streaming_metrics]
        if not all(isinstance(m, StreamingMetric) for m in self.streaming_metrics) or len(set(names)) != len(names):
            raise ConfigurationError(
                f"EvalCase {self.name!r}: streaming_metrics must be StreamingMetrics (a name and watch()) with "
                f"distinct names, got {list(self.streaming_metrics)!r}; see adk_core.eval.streaming"
            )

    @property
    def app(self) -> App:
        """The system under test as an App (a bare agent gets an app named after it)."""
        if isinstance(self.app_or_agent, App):
            return self.app_or_agent
        assert self.app_or_agent is not None  # checked in __post_init__
        return App(name=self.app_or_agent.name, root_agent=self.app_or_agent)

    def initial_state_flat(self) -> dict[str, Any]:
        """``initial_state`` as ADK state keys (a fresh copy for each trial)."""
        return copy.deepcopy(flatten_scoped(self.initial_state))

    def first_content(self) -> Content | None:
        if self.first_message is None or isinstance(self.first_message, Content):
            return self.first_message
        return Content.user(self.first_message)
