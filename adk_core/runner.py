"""Runner: one user message in, the events it causes out, each stored as it happens.

Execution model (the seed's): get the session -> plugin on_user_message -> store the user's
event -> plugin before_run (may answer instead) -> pick the agent to run from history -> run it,
passing each event through plugin on_event and storing every non-partial one before yielding it
-> plugin after_run. temp: state lives for the invocation only. When the app compacts events,
the runner then summarizes older events into one compaction event (adk_core.compaction).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from .agents.base import BaseAgent
from .agents.context import InvocationContext
from .agents.llm_agent import LlmAgent
from .agents.run_config import RunConfig
from .app import App
from .artifacts import ArtifactService, InMemoryArtifactService
from .compaction import EventsCompactionConfig, compact_events, compaction_event
from .errors import ConfigurationError, InvalidInputError, ModelError, SessionNotFoundError
from .memory import InMemoryMemoryService, MemoryService
from .plugins import BasePlugin, PluginManager
from .runtime import LocalRuntime, Runtime
from .sessions import InMemorySessionService, Session, SessionService
from .sessions.base import clear_temp_state
from .types import Content, Event, EventActions

logger = logging.getLogger(__name__)


class Runner:
    """Runs an agent tree against a session store.

    Args:
        app: an App; or give ``app_name`` and ``agent`` instead.
        session_service / artifact_service / memory_service: where data lives.
        plugins: hooks over every run (with ``app``, its plugins come first).
        runtime: the runtime seam; in-process by default. The Temporal runtime passes its own.
        auto_create_session: create a missing session instead of raising SessionNotFoundError.
        events_compaction_config: compact the session's events after invocations (by default the
            app's ``events_compaction_config``).
    """

    def __init__(
        self,
        *,
        app: App | None = None,
        app_name: str | None = None,
        agent: BaseAgent | None = None,
        session_service: SessionService,
        artifact_service: ArtifactService | None = None,
        memory_service: MemoryService | None = None,
        plugins: Sequence[BasePlugin] = (),
        runtime: Runtime | None = None,
        auto_create_session: bool = False,
        events_compaction_config: EventsCompactionConfig | None = None,
    ) -> None:
        if app is not None and events_compaction_config is None:
            events_compaction_config = app.events_compaction_config
        if app is not None:
            if agent is not None:
                raise ConfigurationError("give either app= or agent=, not both")
            app_name, agent, plugins = app_name or app.name, app.root_agent, [*app.plugins, *plugins]
        if agent is None or not app_name:
            raise ConfigurationError("Runner needs app= or both app_name= and agent=")
        self.app_name = app_name
        self.agent = agent
        self.session_service = session_service
        self.artifact_service = artifact_service
        self.memory_service = memory_service
        self.plugin_manager = PluginManager(plugins)
        self.runtime: Runtime = runtime or LocalRuntime()
        self.auto_create_session = auto_create_session
        self.events_compaction_config = events_compaction_config

    async def run_async(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: Content | None,
        state_delta: dict[str, Any] | None = None,
        run_config: RunConfig | None = None,
    ) -> AsyncIterator[Event]:
        session = await self.session_service.get_session(app_name=self.app_name, user_id=user_id, session_id=session_id)
        if session is None:
            if not self.auto_create_session:
                raise SessionNotFoundError(
                    f"session {session_id!r} not found for app {self.app_name!r}, user {user_id!r}; create it with "
                    "session_service.create_session(...) first, or build the Runner with auto_create_session=True"
                )
            session = await self.session_service.create_session(
                app_name=self.app_name, user_id=user_id, session_id=session_id
            )
        ctx = self.new_invocation_context(session, run_config=run_config)
        async for event in self.run_invocation(ctx, new_message, state_delta):
            yield event
        await self.compact(ctx)

    async def compact(self, ctx: InvocationContext) -> Event | None:
        """After an invocation: store a compaction event when one is due (adk_core.compaction).

        A summarizer's model error is logged and the invocation's result stands: nothing is lost,
        and the next invocation plans the same compaction again. The durable workflows compact
        through an activity instead (workflows/_compaction.py).
        """
        config = self.events_compaction_config
        if config is None:
            return None
        try:
            compaction = await compact_events(ctx.session.events, config)
        except ModelError as error:
            logger.warning("compaction of session %s skipped, to be retried next invocation: %s", ctx.session.id, error)
            return None
        if compaction is None:
            return None
        event = compaction_event(compaction, invocation_id=ctx.invocation_id, timestamp=self.runtime.now())
        return await self.runtime.commit(ctx, event)

    def new_invocation_context(
        self, session: Session, *, run_config: RunConfig | None = None, invocation_id: str | None = None
    ) -> InvocationContext:
        return InvocationContext(
            runtime=self.runtime,
            session_service=self.session_service,
            session=session,
            invocation_id=invocation_id or "e-" + self.runtime.new_id(),
            agent=self.agent,
            root_agent=self.agent,
            plugin_manager=self.plugin_manager,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            run_config=run_config or RunConfig(),
            runtime_stores_session=self.runtime.stores_session(session),
            events_compaction_config=self.events_compaction_config,
        )

    async def run_invocation(
        self, ctx: InvocationContext, new_message: Content | None, state_delta: dict[str, Any] | None = None
    ) -> AsyncIterator[Event]:
        """The invocation itself, on a context the caller prepared (the durable runtime uses this)."""
        runtime = ctx.runtime
        try:
            with runtime.span("invocation", {"adk.invocation_id": ctx.invocation_id, "gen_ai.conversation.id": ctx.session.id}):
                if new_message is not None:
                    await self._append_user_message(ctx, new_message, state_delta)
                early = await ctx.plugin_manager.run("before_run_callback", invocation_context=ctx)
                if early is not None:
                    event = Event(
                        id=runtime.new_id(), invocation_id=ctx.invocation_id, author="model",
                        timestamp=runtime.now(), content=early,
                    )
                    yield await runtime.commit(ctx, event)
                else:
                    ctx.agent = find_agent_to_run(ctx.session, self.agent, ctx.user_content)
                    async for event in ctx.agent.run_async(ctx):
                        if ctx.plugin_manager.has("on_event_callback"):
                            replaced = await ctx.plugin_manager.run("on_event_callback", invocation_context=ctx, event=event)
                            event = replaced if replaced is not None else event
                        if not event.partial:
                            event = await runtime.commit(ctx, event)
                        yield event
                await ctx.plugin_manager.notify("after_run_callback", invocation_context=ctx)
        finally:
            clear_temp_state(ctx.session)

    async def _append_user_message(
        self, ctx: InvocationContext, message: Content, state_delta: dict[str, Any] | None
    ) -> None:
        if not isinstance(message, Content) or not message.parts:
            raise InvalidInputError("new_message must be a Content with at least one part, e.g. Content.user('hi')")
        replaced = await ctx.plugin_manager.run("on_user_message_callback", invocation_context=ctx, user_message=message)
        if replaced is not None:
            message = replaced
        if message.role is None:
            message = message.model_copy(update={"role": "user"})
        ctx.user_content = message
        event = Event(
            id=ctx.runtime.new_id(),
            invocation_id=ctx.invocation_id,
            author="user",
            timestamp=ctx.runtime.now(),
            content=message,
            actions=EventActions(state_delta=dict(state_delta or {})),
        )
        await ctx.runtime.commit(ctx, event)


def find_agent_to_run(session: Session, root: BaseAgent, user_content: Content | None = None) -> BaseAgent:
    """Who answers this message: the agent whose call a function response answers; else the last
    agent that spoke, if the user may talk to it directly; else the root."""
    if user_content is not None:
        ids = {r.id for r in user_content.function_responses() if r.id}
        if ids:
            for event in reversed(session.events):
                if any(c.id in ids for c in event.function_calls()):
                    agent = root.find_agent(event.author)
                    if agent is not None:
                        return agent
    for event in reversed(session.events):
        if event.author == "user":
            continue
        if event.author == root.name:
            return root
        agent = root.find_sub_agent(event.author)
        if agent is not None and _transferable_across_tree(agent):
            return agent
    return root


def _transferable_across_tree(agent: BaseAgent) -> bool:
    current: BaseAgent | None = agent
    while current is not None:
        if not isinstance(current, LlmAgent) or current.disallow_transfer_to_parent:
            return False
        current = current.parent_agent
    return True


class InMemoryRunner(Runner):
    """A Runner with in-memory sessions, artifacts and memory, for quick use and tests."""

    def __init__(self, agent: BaseAgent | None = None, *, app_name: str = "app", app: App | None = None, **kwargs: Any):
        kwargs.setdefault("session_service", InMemorySessionService())
        kwargs.setdefault("artifact_service", InMemoryArtifactService())
        kwargs.setdefault("memory_service", InMemoryMemoryService())
        kwargs.setdefault("auto_create_session", True)
        if app is not None:
            super().__init__(app=app, **kwargs)
        else:
            super().__init__(app_name=app_name, agent=agent, **kwargs)

    async def run(self, message: str | Content, *, user_id: str = "user", session_id: str = "session") -> list[Event]:
        """Send one message and collect the events (a convenience for scripts and tests)."""
        content = Content.user(message) if isinstance(message, str) else message
        return [e async for e in self.run_async(user_id=user_id, session_id=session_id, new_message=content)]
