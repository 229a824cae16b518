"""The apps one case runs, built deterministically from the case object (and cached per object).

    system   the system under test, intercepted (adk_core.eval.interception), app ``eval:<case>``
    users    the case's user agents, app ``eval:<case>:users`` (no interception)
    judges   the agents its metrics run (llm_judge), app ``eval:<case>:judges``

In-process, ``LocalCaseHost`` runs these apps. A durable worker registers the same three apps
(``register_app(apps.system)`` ...) after importing the module that defines the case: its tool
activity then finds the intercepted tools, its model activity the user agents and judges, by
name. Because the apps are cached per case object, the workflow and the activities of one worker
see the very same objects, as they do for ordinary apps.

``users`` and ``judges`` are holders: their root keeps the agents in ``sub_agents`` for lookup by
name, without becoming their parent (a user agent stays the root of its own tree, so its own
global instruction and transfers behave as written). Each agent runs as its own Runner's root.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from ..agents.base import BaseAgent
from ..agents.context import InvocationContext
from ..app import App
from ..errors import ConfigurationError
from ..types import Event
from .case import EvalCase
from .interception import Interception, intercept_app
from .metrics.base import agents_of

APP_PREFIX = "eval:"


@dataclass(frozen=True)
class CaseApps:
    system: App
    users: App
    judges: App

    def all(self) -> tuple[App, App, App]:
        return (self.system, self.users, self.judges)


class _Holder(BaseAgent):
    """Holds agents for lookup by name; never run."""

    def __init__(self, name: str, agents: Sequence[BaseAgent]) -> None:
        super().__init__(name=name, description="Holds eval agents for lookup; never runs.")
        self.sub_agents = list(agents)  # assigned after init on purpose: no parent links (module docstring)

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        raise ConfigurationError(f"{self.name!r} only holds eval agents; run one of them, not the holder")
        yield  # pragma: no cover


_cache: weakref.WeakKeyDictionary[EvalCase, CaseApps] = weakref.WeakKeyDictionary()


def case_apps(case: EvalCase) -> CaseApps:
    """The case's three apps (built once per case object)."""
    apps = _cache.get(case)
    if apps is None:
        apps = _build(case)
        _cache[case] = apps
    return apps


def _build(case: EvalCase) -> CaseApps:
    rule = Interception(case_name=case.name, tool_mocks=dict(case.tool_mocks))
    system = intercept_app(case.app, name=f"{APP_PREFIX}{case.name}", rule=rule)
    judges = agents_of(case.metrics)
    names = [a.name for a in judges]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"EvalCase {case.name!r}: two metrics run judge agents with the same name {names}")
    return CaseApps(
        system=system,
        users=App(name=f"{APP_PREFIX}{case.name}:users", root_agent=_Holder("eval_user_agents", case.user_agents.all())),
        judges=App(name=f"{APP_PREFIX}{case.name}:judges", root_agent=_Holder("eval_judges", judges)),
    )
