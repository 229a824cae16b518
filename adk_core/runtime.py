"""The runtime seam: the only way adk_core touches the clock, ids, randomness and the outside world.

The engine (runner, agents, flow, tools dispatch, callbacks, plugins) calls these methods and
nothing else with side effects. ``LocalRuntime`` does the work in-process; the Temporal runtime
in ``workflows/`` does the same through workflow APIs and activities, so one engine serves both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random as _random
import time as _time
import uuid as _uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .agents.base import BaseAgent
    from .agents.context import InvocationContext
    from .compaction import EventsCompactionConfig
    from .models.base import LlmRequest, LlmResponse, Model
    from .sessions import Session
    from .tools.base import BaseTool
    from .tools.tool_context import ToolContext
    from .types import Event, EventCompaction


_logger = logging.getLogger(__name__)


def wall_clock() -> float:
    """Seconds since the epoch. Services outside the engine (stores) may use it; the engine may not."""
    return _time.time()


def random_id() -> str:
    return str(_uuid.uuid4())


class Runtime(Protocol):
    """What the engine needs from the world. Implementations must keep ``now``/``new_id``/``random``
    deterministic where they run deterministically (inside a workflow)."""

    def now(self) -> float: ...

    def new_id(self) -> str: ...

    def random(self) -> float: ...

    def generate_content(
        self, model: Model, request: LlmRequest, *, stream: bool, ctx: InvocationContext
    ) -> AsyncIterator[LlmResponse]:
        """Call the model. Errors surface as adk_core.errors.ModelError."""
        ...

    def model_event_stamp(self, response: LlmResponse) -> tuple[str, float] | None:
        """The id and timestamp of the event for ``response``, when the runtime fixed them: a
        durable model call that stored its answer as that event itself (workflows/runtime.py).
        None: the engine stamps the event as any other (``new_id``, ``now``)."""
        ...

    def stores_session(self, session: Session) -> bool:
        """Whether this runtime persists ``session`` itself (a durable run's own session, its
        scope), so model calls may refer to its stored events instead of carrying them. The
        runner records the answer on each InvocationContext (``runtime_stores_session``)."""
        ...

    def history_cursor(self, ctx: InvocationContext) -> str | None:
        """For a session the runtime stores: the id of the newest stored event that is *not*
        loaded in ``ctx.session.events`` (the session holds only a recent tail), or None when the
        loaded events are the whole story."""
        ...

    async def run_tool(self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run one tool; its state/artifact changes land in ``tool_context.actions``."""
        ...

    async def run_sync(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Call a blocking function (a sync tool) without stalling other work: in-process and in
        activities it runs in a thread; inside a workflow, where threads are not allowed, it is
        called directly (only pure, quick functions run there)."""
        ...

    def run_agent(self, agent: BaseAgent, ctx: InvocationContext) -> AsyncIterator[Event]:
        """Run a sub-agent (a ParallelAgent branch). A runtime may run it elsewhere, e.g. as a child
        workflow when the agent asks for it; the events come back either way."""
        ...

    async def commit(self, ctx: InvocationContext, event: Event) -> Event:
        """Store a non-partial event in the session (idempotent by event id) and apply it to ctx.session."""
        ...

    async def summarize_before_model_call(
        self, ctx: InvocationContext, config: EventsCompactionConfig
    ) -> EventCompaction | None:
        """The compaction the token trigger plans inside an invocation (``plan_compaction`` with
        ``before_model_call``), its summary written; None when none is due, or when the summary
        failed (logged: the next model call plans it again). The flow stores its event."""
        ...

    async def wait_for(self, kind: str, key: str, ctx: InvocationContext) -> Any | None:
        """Wait for an answer from outside (a tool confirmation, a long-running tool's result).

        Returns the answer, or None when this runtime cannot wait: the engine then ends the
        invocation and the answer arrives later as a new message (ADK's resumable pattern).
        """
        ...

    def span(self, name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
        """A telemetry span (or a no-op); must not emit twice when a workflow replays."""
        ...


class LocalRuntime:
    """Runs everything in-process: the plain ``Runner``."""

    def now(self) -> float:
        return _time.time()

    def new_id(self) -> str:
        return str(_uuid.uuid4())

    def random(self) -> float:
        return _random.random()

    async def generate_content(
        self, model: Model, request: LlmRequest, *, stream: bool, ctx: InvocationContext
    ) -> AsyncIterator[LlmResponse]:
        from .compaction.estimate import add_prompt_estimate, wants_estimate

        estimate = wants_estimate(ctx.events_compaction_config)
        async for response in model.generate_content(request, stream=stream):
            if estimate:
                add_prompt_estimate(request, [response])
            yield response

    def model_event_stamp(self, response: LlmResponse) -> tuple[str, float] | None:
        return None

    def stores_session(self, session: Session) -> bool:
        return False  # in-process, sessions live in the session service: contents go by value

    def history_cursor(self, ctx: InvocationContext) -> str | None:
        return None

    async def run_tool(self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return await tool.run_async(args=args, tool_context=tool_context)

    async def run_sync(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    def run_agent(self, agent: BaseAgent, ctx: InvocationContext) -> AsyncIterator[Event]:
        return agent.run_async(ctx)

    async def commit(self, ctx: InvocationContext, event: Event) -> Event:
        return await ctx.session_service.append_event(ctx.session, event)

    async def summarize_before_model_call(
        self, ctx: InvocationContext, config: EventsCompactionConfig
    ) -> EventCompaction | None:
        from .compaction import compact_events
        from .errors import ModelError

        try:
            return await compact_events(ctx.session.events, config, before_model_call=True)
        except ModelError as error:
            _logger.warning("compaction of session %s before a model call skipped, planned again at the next: %s",
                            ctx.session.id, error)
            return None

    async def wait_for(self, kind: str, key: str, ctx: InvocationContext) -> Any | None:
        return None

    def span(self, name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
        from .telemetry import start_span

        return start_span(name, attributes)


@contextlib.contextmanager
def no_span() -> Iterator[None]:
    yield None
