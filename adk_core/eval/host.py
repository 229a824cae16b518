"""CaseHost: everything ``drive_case`` needs from the world, and the in-process host.

``drive_case`` (the conversation loop) reaches the world only through a host and the host's
runtime: it creates nothing and calls no model or tool itself. ``LocalCaseHost`` runs the case's
apps in-process (in-memory stores, ``LocalRuntime``). A durable host runs the same apps through
the Temporal runtime (each session a ``DurableInvoker`` in the case's workflow), so the same
``drive_case`` runs inside an ``EvalCaseWorkflow``.

Contract for a host:
  - ``runtime``: the clock and ids of the loop (``workflow.now()`` / ``workflow.uuid4()`` when durable);
  - ``start(initial_state)``: create the trial's fresh main session with that state and an empty
    user-agent session (other trials and cases never share them);
  - ``run_system(message, state_delta, on_event)``: one invocation of ``case_apps(case).system`` on
    the main session; calls ``on_event`` (when given) with every event the moment the runner yields
    it (streaming metrics time them); returns its non-partial events; raises what the run raised;
  - ``run_user_agent(agent, message)``: one invocation of that user agent (the root of its own
    Runner, app ``case_apps(case).users``) on the shared user-agent session. May be called
    concurrently for several agents (parallel tool yields);
  - ``main_session()`` / ``user_session()``: the session now, state and events (the main one in
    full at the end: metrics read it);
  - ``run_judge(agent, message)``: one invocation of a judge agent (app ``case_apps(case).judges``)
    in a scratch session of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..agents.base import BaseAgent
from ..agents.llm_agent import LlmAgent
from ..artifacts import InMemoryArtifactService
from ..memory import InMemoryMemoryService
from ..runner import Runner
from ..runtime import LocalRuntime, Runtime
from ..sessions import InMemorySessionService, Session
from ..types import Content, Event
from .apps import CaseApps, case_apps
from .case import EvalCase

EventListener = Callable[[Event], None]
"""Called with each event of a system turn as the runner yields it."""

EVAL_USER_ID = "eval-user"
MAIN_SESSION_ID = "main"
USER_AGENTS_SESSION_ID = "user-agents"


class CaseHost(Protocol):
    @property
    def runtime(self) -> Runtime: ...

    async def start(self, *, initial_state: dict[str, Any]) -> None: ...

    async def run_system(
        self, message: Content, state_delta: dict[str, Any] | None, on_event: EventListener | None = None
    ) -> list[Event]: ...

    async def run_user_agent(self, agent: BaseAgent, message: Content) -> list[Event]: ...

    async def main_session(self) -> Session: ...

    async def user_session(self) -> Session: ...

    async def run_judge(self, agent: LlmAgent, message: Content) -> list[Event]: ...


async def _collect(
    runner: Runner, user_id: str, session_id: str, message: Content, state_delta: Any = None,
    on_event: EventListener | None = None,
) -> list[Event]:
    events = []
    async for e in runner.run_async(user_id=user_id, session_id=session_id, new_message=message, state_delta=state_delta):
        if on_event is not None:
            on_event(e)
        if not e.partial:
            events.append(e)
    return events


class LocalCaseHost:
    """Runs one trial of a case in-process: fresh in-memory stores for the trial, ``LocalRuntime``.

    Args:
        case: the case.
        runtime: the runtime seam (default LocalRuntime()).
        user_id: the user id of both sessions.
    """

    def __init__(self, case: EvalCase, *, runtime: Runtime | None = None, user_id: str = EVAL_USER_ID) -> None:
        self.case = case
        self.apps: CaseApps = case_apps(case)
        self._runtime = runtime or LocalRuntime()
        self.user_id = user_id
        rt = self._runtime
        # Separate stores: the user agents' session cannot see the main one, nor app:/user: state.
        self.main_sessions = InMemorySessionService(clock=rt.now, id_factory=rt.new_id)
        self.user_sessions = InMemorySessionService(clock=rt.now, id_factory=rt.new_id)
        self.system_runner = Runner(
            app=self.apps.system,
            session_service=self.main_sessions,
            artifact_service=InMemoryArtifactService(),
            memory_service=InMemoryMemoryService(),
            runtime=rt,
        )
        self._user_runners: dict[str, Runner] = {}

    @property
    def runtime(self) -> Runtime:
        return self._runtime

    async def start(self, *, initial_state: dict[str, Any]) -> None:
        await self.main_sessions.create_session(
            app_name=self.apps.system.name, user_id=self.user_id, session_id=MAIN_SESSION_ID, state=initial_state
        )
        await self.user_sessions.create_session(
            app_name=self.apps.users.name, user_id=self.user_id, session_id=USER_AGENTS_SESSION_ID
        )

    async def run_system(
        self, message: Content, state_delta: dict[str, Any] | None, on_event: EventListener | None = None
    ) -> list[Event]:
        return await _collect(self.system_runner, self.user_id, MAIN_SESSION_ID, message, state_delta, on_event)

    async def run_user_agent(self, agent: BaseAgent, message: Content) -> list[Event]:
        runner = self._user_runners.get(agent.name)
        if runner is None:
            runner = Runner(app_name=self.apps.users.name, agent=agent, session_service=self.user_sessions,
                            runtime=self._runtime)
            self._user_runners[agent.name] = runner
        return await _collect(runner, self.user_id, USER_AGENTS_SESSION_ID, message)

    async def main_session(self) -> Session:
        return await self._get(self.main_sessions, self.apps.system.name, MAIN_SESSION_ID)

    async def user_session(self) -> Session:
        return await self._get(self.user_sessions, self.apps.users.name, USER_AGENTS_SESSION_ID)

    async def _get(self, service: InMemorySessionService, app_name: str, session_id: str) -> Session:
        session = await service.get_session(app_name=app_name, user_id=self.user_id, session_id=session_id)
        assert session is not None, "start() creates both sessions first"
        return session

    async def run_judge(self, agent: LlmAgent, message: Content) -> list[Event]:
        runner = Runner(
            app_name=self.apps.judges.name,
            agent=agent,
            session_service=InMemorySessionService(clock=self._runtime.now, id_factory=self._runtime.new_id),
            runtime=self._runtime,
            auto_create_session=True,
        )
        return await _collect(runner, self.user_id, "judge-" + self._runtime.new_id(), message)
