"""DurableCaseHost: what ``drive_case`` needs, inside an EvalCaseWorkflow (adk_core/eval/host.py).

Each trial gets its own sessions in the session store: the main session (the trace metrics read and
`adkt eval show` prints) and the user agents' session, both under app names of the trial's own
(``eval:<case>@<run>/<trial>``, and ``...:users@...``). Sessions alone would not isolate trials:
``app:`` state belongs to an app name, and every trial of a case runs the same registered app. So a
trial's sessions are *stored* under its own name while agents and tools are *looked up* under the
registered one (``TemporalRuntime(app_name=...)`` is what activities resolve). A system with
child-workflow branches or agent tools keeps the registered name (the child reads the session by
it), and then only session ids keep trials apart.

Model calls (system, user agents, judges) are ``adk.generate_content`` activities, or local
activities when the suite says ``model_calls="local_activity"`` (its default); passed-through tools
``adk.run_tool`` activities as the tool says, and mocked tools ``adk.run_tool`` local activities
(``mocks_run_locally``: no server task for a stand-in), by way of TemporalRuntime; scripted users,
bridges and metrics run here, in the workflow.

With local model calls, a trial's steps are recorded when its workflow task completes (at the latest
every few seconds, as the task heartbeats). A worker that dies before that leaves events in the store
that the task, run again, makes anew under the same ids; when they differ (a model answers otherwise),
the commit raises StoredByLostTask and EvalCaseWorkflow runs the trial again in sessions of its own
(``restart``: ``<trial>r<n>``), so a trial's stored trace is always the one it was scored on.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from adk_core.agents.base import BaseAgent
    from adk_core.agents.llm_agent import LlmAgent
    from adk_core.app import App
    from adk_core.eval import CaseApps, EvalCase
    from adk_core.eval.host import EventListener
    from adk_core.eval.interception import mocks_run_locally
    from adk_core.ids import MAX_ID_LENGTH
    from adk_core.runner import Runner
    from adk_core.runtime import Runtime
    from adk_core.sessions import InMemorySessionService, Session
    from adk_core.tools.agent_tool import AgentTool
    from adk_core.types import Content, Event
    from adk_temporal.activities import contracts as c

    from ._invocation import DurableInvoker
    from .runtime import TemporalRuntime, ToolExecutionFor
    from .services import (
        ActivityFailure,
        DurableArtifactService,
        DurableMemoryService,
        DurableSessionService,
        StoredByLostTask,
    )

EVAL_USER_ID = "eval-user"
MOCKS_LOCAL_PATCH = "eval-mocks-local-activities"
MAX_LLM_CALLS = 500


def trial_key(trial: int, attempt: int = 0, restart: int = 0) -> str:
    """What names a trial's sessions: ``<trial>``, or ``<trial>.<attempt>`` when a resumed suite runs
    it again (the cancelled attempt's sessions keep their events; a new attempt starts clean), with
    ``r<restart>`` when the trial started over after a lost workflow task (StoredByLostTask)."""
    named = f"{trial}.{attempt}" if attempt else str(trial)
    return f"{named}r{restart}" if restart else named


def storage_app_name(registered: str, run_id: str, trial: int | str) -> str:
    """``<registered>@<run>/<trial>``; hashed down when that is longer than an id may be."""
    name = f"{registered}@{run_id}/{trial}"
    if len(name) <= MAX_ID_LENGTH:
        return name
    return f"{registered[: MAX_ID_LENGTH - 18]}@{hashlib.sha256(name.encode()).hexdigest()[:17]}"


def uses_child_workflows(agent: BaseAgent) -> bool:
    if agent.execution.child_workflow:
        return True
    tools = getattr(agent, "tools", [])
    nested = [t.agent for t in tools if isinstance(t, AgentTool)]
    return any(uses_child_workflows(a) for a in [*agent.sub_agents, *nested])


class _TrialInvoker(DurableInvoker):
    """A DurableInvoker whose session is stored under ``key`` (the trial's app name) while agents
    and tools resolve under ``app.name``. With ``shared``, it runs ``agent`` on the other invoker's
    session, services and runtime (user agents take turns on, or share, one session).

    DurableInvoker's constructor uses one name for both, so this sets the same attributes itself.
    """

    def __init__(self, app: App, key: c.SessionKey, *, agent: BaseAgent | None = None,
                 shared: _TrialInvoker | None = None, tool_execution: ToolExecutionFor | None = None,
                 model_calls_local: bool = False) -> None:  # fmt: skip
        self.key = key
        self.sessions = shared.sessions if shared else DurableSessionService(key)
        if shared is None:  # a shared invoker runs on the other's session and runtime, as they were made
            self.sessions.restart_on_conflict = model_calls_local
        self.runtime = shared.runtime if shared else TemporalRuntime(
            app_name=app.name, sessions=self.sessions, tool_execution=tool_execution, model_calls_local=model_calls_local,
        )
        self.session = shared.session if shared else None
        self.runner = Runner(
            app_name=app.name, agent=agent or app.root_agent, plugins=app.plugins, session_service=self.sessions,
            artifact_service=DurableArtifactService(key), memory_service=DurableMemoryService(key, self.sessions),
            runtime=self.runtime,
        )

    async def run(self, message: Content, state_delta: dict[str, Any] | None,
                  on_event: EventListener | None = None) -> list[Event]:  # fmt: skip
        events: list[Event] = _Heard(on_event) if on_event is not None else []
        # With local model calls the invocation's last events ride along with the session's next model
        # call, or are stored with the trial's record (DurableCaseHost.unstored): a local activity less.
        await self.invoke(message, state_delta=state_delta, max_llm_calls=MAX_LLM_CALLS, events=events,
                          flush=not self.runtime.model_calls_local)  # fmt: skip
        return [e for e in events if not e.partial]


class _Heard(list[Event]):
    """The list DurableInvoker.invoke appends each event to as it comes: telling ``on_event`` at
    that moment is what lets streaming metrics time them (``workflow.now()`` of that task)."""

    def __init__(self, on_event: EventListener) -> None:
        super().__init__()
        self._on_event = on_event

    def append(self, event: Event) -> None:
        super().append(event)
        self._on_event(event)


class DurableCaseHost:
    """One trial of ``case`` in the current workflow (adk_core.eval.CaseHost)."""

    def __init__(
        self, case: EvalCase, apps: CaseApps, *, run_id: str, trial: int, attempt: int = 0,
        mocks_local: bool | None = None, model_calls_local: bool = False, restart: int = 0,
    ) -> None:
        self.case = case
        self.apps = apps
        isolate = not uses_child_workflows(apps.system.root_agent)
        named = trial_key(trial, attempt, restart)

        def key(app: App, session: str) -> c.SessionKey:
            app_name = storage_app_name(app.name, run_id, named) if isolate else app.name
            return c.SessionKey(app_name=app_name, user_id=EVAL_USER_ID, session_id=f"{run_id}/{named}/{session}")

        # A suite says; otherwise a patch, so trials started before mocks ran locally replay as they ran
        # (the patch costs a marker and a search-attribute upsert, which a suite's children skip).
        if mocks_local is None:
            mocks_local = workflow.patched(MOCKS_LOCAL_PATCH)
        local_mocks = mocks_run_locally if mocks_local else None
        self._main = _TrialInvoker(apps.system, key(apps.system, "main"), tool_execution=local_mocks,
                                   model_calls_local=model_calls_local)  # fmt: skip
        self._users = _TrialInvoker(apps.users, key(apps.users, "users"), model_calls_local=model_calls_local)
        self._users_ready = asyncio.Lock()
        self._user_invokers: dict[str, _TrialInvoker] = {}
        # Judges read a transcript and answer once: a scratch session in the workflow is enough.
        self._judge_key = key(apps.judges, "judge")

    @property
    def runtime(self) -> Runtime:
        return self._main.runtime

    def unstored(self) -> list[c.AppendEventsInput]:
        """The trial's session events not stored yet (only with local model calls: the invocations
        leave their last events queued), each session's in order."""
        sessions = [self._main.sessions, *([self._users.sessions] if self._users.session is not None else [])]
        return [
            c.AppendEventsInput(key=s.key, events=s.take_commits(), after=s.commit_after()) for s in sessions if s.unacked
        ]

    def stored(self, batches: list[c.AppendEventsInput]) -> None:
        """``batches`` (from ``unstored``) are stored."""
        by_key = {(s.key.app_name, s.key.session_id): s for s in (self._main.sessions, self._users.sessions)}
        for batch in batches:
            by_key[(batch.key.app_name, batch.key.session_id)].acknowledge(batch.events)

    async def flush(self) -> None:
        """Store what ``unstored`` holds, as the sessions' own commits (a trial that records nothing)."""
        await self._main.sessions.flush()
        await self._users.sessions.flush()

    def check_lost_task(self, error: ActivityFailure) -> None:
        """StoredByLostTask when ``error`` is a store refusing this trial's events (local model calls)."""
        self._main.sessions.check_lost_task(error)

    async def start(self, *, initial_state: dict[str, Any]) -> None:
        loaded = await self._main.load(create=True, initial_state=initial_state, expect_new=True)
        _check_new(loaded, self._main.sessions)

    async def _user_session(self) -> Session:
        """The user agents' session, created when a user agent first runs (many cases have none)."""
        async with self._users_ready:  # parallel tool yields ask at once; one load
            if self._users.session is None:
                loaded = await self._users.load(create=True, initial_state=None, expect_new=True)
                _check_new(loaded, self._users.sessions)
        assert self._users.session is not None
        return self._users.session

    async def run_system(self, message: Content, state_delta: dict[str, Any] | None,
                         on_event: EventListener | None = None) -> list[Event]:  # fmt: skip
        return await self._main.run(message, state_delta, on_event)

    async def run_user_agent(self, agent: BaseAgent, message: Content) -> list[Event]:
        await self._user_session()
        invoker = self._user_invokers.get(agent.name)
        if invoker is None:
            invoker = _TrialInvoker(self.apps.users, self._users.key, agent=agent, shared=self._users)
            self._user_invokers[agent.name] = invoker
        return await invoker.run(message, None)

    async def main_session(self) -> Session:
        assert self._main.session is not None, "start() loads the sessions first"
        return self._main.session

    async def user_session(self) -> Session:
        return await self._user_session()

    async def run_judge(self, agent: LlmAgent, message: Content) -> list[Event]:
        runtime = TemporalRuntime(app_name=self.apps.judges.name, sessions=DurableSessionService(self._judge_key),
                                  model_calls_local=self._main.runtime.model_calls_local)  # fmt: skip
        runner = Runner(
            app_name=self._judge_key.app_name, agent=agent, runtime=runtime, auto_create_session=True,
            session_service=InMemorySessionService(clock=runtime.now, id_factory=runtime.new_id),
        )
        session_id = f"judge-{runtime.new_id()}"
        events = runner.run_async(user_id=EVAL_USER_ID, session_id=session_id, new_message=message)
        return [e async for e in events if not e.partial]


def _check_new(session: Session, sessions: DurableSessionService) -> None:
    if session.events and sessions.restart_on_conflict:
        # Local model calls: a workflow task that stored this trial's first steps was lost (or, rarely,
        # the run id was used before); either way the trial starts over in sessions of its own.
        raise StoredByLostTask(sessions.key, "already holds events of a run Temporal did not record")
    if session.events:
        # A trial's sessions are new; finding events means the run id was used before.
        raise ApplicationError(
            f"eval session {session.id!r} of app {session.app_name!r} already has events; start the suite with a "
            "new run id",
            type="ConfigurationError",
            non_retryable=True,
        )
