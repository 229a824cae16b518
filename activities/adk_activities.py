"""The activities: model calls, tool calls, session commits and loads, artifacts, memory.

Methods of one class that holds the worker's services (built once per worker). Provider
clients retry nothing: a ModelError becomes an ApplicationError that tells Temporal whether
and when to retry.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar, assert_never

from pydantic import BaseModel
from pydantic_core import to_json
from temporalio import activity
from temporalio.exceptions import ApplicationError

from adk_core import telemetry
from adk_core.agents.context import InvocationContext, ReadonlyContext, ToolContext
from adk_core.agents.llm_agent import LlmAgent
from adk_core.app import App
from adk_core.artifacts import ArtifactService
from adk_core.compaction.estimate import add_prompt_estimate, wants_estimate
from adk_core.errors import (
    AdkError,
    AlreadyExistsError,
    EventConflictError,
    ModelError,
    error_class_path,
    portable_args,
)
from adk_core.flow.contents import contents_for_ref
from adk_core.flow.functions import resumable_tail_start
from adk_core.flow.llm_flow import answer_event, response_of
from adk_core.memory import MemoryService
from adk_core.models.base import ContentsRef, LlmRequest, LlmResponse
from adk_core.models.pricing import COST_KEY, PriceTable
from adk_core.plugins import PluginManager
from adk_core.runtime import LocalRuntime
from adk_core.sessions import GetSessionConfig, Session, SessionService
from adk_core.tools.lookup import find_tool
from adk_core.types import Event
from adk_temporal.metrics import ActivityMetrics, activity_metrics

from . import contracts as c
from ._history import (
    ContentsMemo,
    RideAlongWriter,
    StoredEventsCache,
    has_compaction,
    index_of,
    store_span_attributes,
)
from .apps import AppRegistry
from .compaction_activities import (
    SUMMARIZE_EVENTS,
    SummarizeEventsInput,
    SummarizeEventsResult,
    events_after_ref,
    summarize_stored_events,
)
from .streaming import complete_responses, publish_committed, publisher_for

T = TypeVar("T")
R = TypeVar("R", bound=BaseModel)
Done = TypeVar("Done", c.ModelCallResult, c.ToolCallResult)


def model_error_to_application_error(error: ModelError) -> ApplicationError:
    """400/401/403/404 stop; 408/409/429/5xx and network errors retry, after Retry-After if given."""
    delay = timedelta(seconds=error.retry_after) if error.retry_after else None
    return ApplicationError(
        str(error),
        {"status": error.status, "provider": error.provider},
        type="ModelError",
        non_retryable=not error.retryable,
        next_retry_delay=delay,
    )


def _fail_fast_on_adk_errors(method: Callable[[Any, Any], Awaitable[T]]) -> Callable[[Any, Any], Awaitable[T]]:
    """An AdkError raised by a store or the engine is about the input (an invalid id or value, a
    missing session): the same call would fail again, so it stops the retries at once with the
    error's type and message. Anything else (a dropped connection, a crash) is retried under the
    activity's bounded retry policy."""

    @functools.wraps(method)
    async def call(self: Any, input: Any) -> T:
        try:
            return await method(self, input)
        except ModelError as e:
            raise model_error_to_application_error(e) from None
        except AdkError as e:
            raise ApplicationError(str(e), type=type(e).__name__, non_retryable=True) from None

    return call


_NO_PLUGINS = PluginManager(())
"""A tool's plugins run in the workflow (before/after_tool callbacks), never in this activity; one empty
manager serves every call, read only."""


def _fits(result: R) -> R:
    """``result`` if Temporal can carry it, else a non-retryable ``PayloadTooLarge``. Only for a result
    checked before something is stored: every other result is checked where it is encoded (the
    payload converter), without encoding it twice."""
    size = len(to_json(result, exclude_none=True))
    if size > c.MAX_PAYLOAD_BYTES:
        raise c.payload_too_large(size)
    return result


async def heartbeating(work: Awaitable[T]) -> T:
    """Await ``work`` while heartbeating for it, so Temporal notices a dead worker within the
    activity's heartbeat timeout instead of its (much longer) start-to-close timeout. Beats come
    from the worker's event loop, whatever the model or tool does (sync tools run in a thread);
    the SDK throttles what it sends to the server. Without a heartbeat timeout (local
    activities) this is a plain await."""
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        return await work
    # A timer rather than a task beside the work: most calls end before the first beat, and then
    # this costs one timer, not a task and a wait per call.
    beats = _Beats(asyncio.get_running_loop(), max(0.2, min(timeout.total_seconds() / 4, 5.0)))
    try:
        return await work  # cancelling the activity (e.g. its heartbeat timed out) cancels the work
    finally:
        beats.stop()


class _Beats:
    """``activity.heartbeat()`` every ``interval`` seconds until ``stop()``. A class, not a closure
    that schedules itself: such a closure refers to itself through its own cell, a reference cycle
    that kept each call's activity context, timer and events alive until the cyclic garbage
    collector ran (about 350 objects a W1 turn, most of the worker's collections)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float) -> None:
        self._loop = loop
        self._interval = interval
        self._next = loop.call_later(interval, self._beat)

    def _beat(self) -> None:
        activity.heartbeat()  # a timer callback runs in the activity's context (copied when scheduled)
        self._next = self._loop.call_later(self._interval, self._beat)

    def stop(self) -> None:
        self._next.cancel()  # drops the timer's callback, the one reference back to self


class AdkActivities:
    """Register ``AdkActivities(...).all()`` with a worker (the AdkPlugin does it for you)."""

    def __init__(
        self,
        session_service: SessionService,
        *,
        artifact_service: ArtifactService | None = None,
        memory_service: MemoryService | None = None,
        apps: AppRegistry | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.apps = apps if apps is not None else AppRegistry()
        """The apps this worker serves; AdkPlugin hands the same registry to the workflows."""
        self.sessions = session_service
        self.artifacts = artifact_service
        self.memory = memory_service
        self._stored = StoredEventsCache(session_service)
        self._contents = ContentsMemo()
        self._writer = RideAlongWriter(session_service, self._stored)
        self.prices = prices if prices is not None else PriceTable.default()
        """Model prices: each call's cost goes on its response (``custom_metadata``) and into the metrics."""

    def all(self) -> list:
        return [
            self.generate_content,
            self.run_tool,
            self.append_events,
            self.load_session,
            self.artifact_call,
            self.memory_call,
            self.summarize_events,
        ]

    # --- sessions ---------------------------------------------------------------------------
    async def _with_commits(self, input: c.ModelCallInput | c.ToolCallInput, work: Callable[[], Awaitable[Done]], *,
                            store: bool = True, defer: bool = False,
                            then: Callable[[Done], list[Event]] | None = None) -> Done:
        """Do ``work`` while the events riding along with the call are stored (with ``store``); its
        result says how many of them are known stored (activities/_history.RideAlongWriter).
        ``then``: events the result adds, stored after them before this returns."""
        key = (input.key.app_name, input.key.user_id, input.key.session_id)
        result, stored = await heartbeating(
            self._writer.run(key, input.commit_after, input.commit, work, store=store, defer=defer, then=then)
        )
        if stored < len(input.commit):
            result.stored_commits = stored
        return result

    @activity.defn(name=c.APPEND_EVENTS)
    @_fail_fast_on_adk_errors
    async def append_events(self, input: c.AppendEventsInput) -> c.AppendEventsResult:
        async def counted() -> c.AppendEventsResult:
            return c.AppendEventsResult(appended=len(input.events))

        key = (input.key.app_name, input.key.user_id, input.key.session_id)
        result, _ = await self._writer.run(key, input.after, input.events, counted, wait=True)
        engine = getattr(self.sessions, "engine", None)
        if input.stream_to is not None and engine is not None:
            # The end of a followed turn: its client has the final answer from here, about a workflow
            # task and the update's result sooner than from the turn's result (docs/durability.md).
            await publish_committed(engine, input.stream_to, input.events)
        return result

    @activity.defn(name=c.LOAD_SESSION)
    @_fail_fast_on_adk_errors
    async def load_session(self, input: c.LoadSessionInput) -> c.LoadSessionResult:
        key = input.key
        get = dict(app_name=key.app_name, user_id=key.user_id, session_id=key.session_id)
        # One event more than asked for tells where the loaded tail starts.
        with telemetry.start_span("adk.session.load", store_span_attributes((key.app_name, key.user_id, key.session_id))):
            session = await self._create_if_new(input, get)
            created = session is not None
            if session is None:
                session = await self.sessions.get_session(
                    **get, config=GetSessionConfig(num_recent_events=input.tail_events + 1)
                )
        if session is None:
            if not input.create_if_missing:
                raise ApplicationError(
                    f"session {key.session_id!r} of app {key.app_name!r}, user {key.user_id!r} does not exist; "
                    "create it first or start the run with create_session=True",
                    type="SessionNotFoundError",
                    non_retryable=True,
                )
            session = await self.sessions.create_session(**get, state=input.initial_state)
            created = True
        # Bring into the workflow only the part of the session a new invocation reads (routing,
        # replies to pending calls); the rest stays in the store and reaches models by reference.
        # That keeps this activity's result, which lands in workflow history, from growing with
        # the conversation.
        events = session.events
        start = resumable_tail_start(events) if input.minimal_tail else 0
        if start == 0 and len(events) > input.tail_events:
            start = 1
        unloaded_through = events[start - 1].id if start > 0 else None
        session.events = events[start:]
        if created:
            self._stored.created((key.app_name, key.user_id, key.session_id))  # its first commit needs no read
        return c.LoadSessionResult(session=session, unloaded_through=unloaded_through, created=created)

    async def _create_if_new(self, input: c.LoadSessionInput, get: dict[str, str]) -> Session | None:
        """The session, created now, when the workflow expects a new one; None when it exists already."""
        if not (input.expect_new and input.create_if_missing):
            return None
        try:
            return await self.sessions.create_session(**get, state=input.initial_state)
        except AlreadyExistsError:
            return None  # read below, as any existing session

    # --- model ------------------------------------------------------------------------------
    @activity.defn(name=c.GENERATE_CONTENT)
    @_fail_fast_on_adk_errors
    async def generate_content(self, input: c.ModelCallInput) -> c.ModelCallResult:
        slot = None if input.stream else input.answer
        attempt = activity.info().attempt
        if slot is not None and attempt > 1:
            earlier = await self._answer_stored_earlier(input.key, slot)
            if earlier is not None:
                return earlier
        defer = self._defers(input)
        if slot is None or 0 < slot.last_attempt <= attempt:
            # The last attempt leaves its answer to the workflow's commit (AnswerSlot.last_attempt).
            result = await self._with_commits(input, lambda: self._generate(input, defer), defer=defer)
        else:
            try:
                result = await self._with_commits(input, lambda: self._generate(input, defer), defer=defer,
                                                  then=lambda result: _store_answer(slot, result))
            except EventConflictError as conflict:
                # Another attempt of this call, still running when this one started (its heartbeat
                # missed), stored its answer first: that one is the call's answer, the session keeps
                # one. Everything this call carried was stored with it or before it.
                earlier = await self._answer_stored_earlier(input.key, slot) if conflict.event_id == slot.event_id else None
                if earlier is None:
                    raise
                return earlier
        if slot is not None and attempt > 1 and not result.answer_stored:
            # This attempt stored no answer (the last one never does; a model that called a tool
            # this time has none), but an earlier attempt, still running when this one began (its
            # heartbeat missed), may have stored its own since. The turn would go on without it and
            # fail when storing its own event under that id: that answer is the call's.
            earlier = await self._answer_stored_earlier(input.key, slot)
            if earlier is not None:
                return earlier
        return result

    def _defers(self, input: c.ModelCallInput) -> bool:
        """Whether the call leaves its events unstored unless it stores its answer (ModelCallInput.
        defer_commit): only where the model can read them from the input instead, which needs the
        stored event they follow, and no compaction stored after them (events_after_ref)."""
        if not (input.defer_commit and input.commit and input.commit_after is not None and not input.stream):
            return False
        app = self.apps.get(input.app_name)
        return app is not None and app.events_compaction_config is None

    async def _answer_stored_earlier(self, key: c.SessionKey, slot: c.AnswerSlot) -> c.ModelCallResult | None:
        """The answer an earlier attempt of this call stored before its result was lost (a worker
        died, a timeout): returned as it is, so the session keeps one answer and the model is not
        called again. Everything the call carried was stored before it, in the same write."""
        # One event read by id (the worker's cache of the session is left as it is): a call retried
        # for another reason (a rate limit) finds nothing and costs one indexed read.
        session = await self.sessions.get_session(
            app_name=key.app_name, user_id=key.user_id, session_id=key.session_id,
            config=GetSessionConfig(through_event_id=slot.event_id, num_recent_events=1),
        )
        if session is None or not session.events or session.events[-1].id != slot.event_id:
            return None
        if session.events[-1].error_code is not None:
            return None  # the error event of a turn cancelled during this call holds the id (TemporalRuntime.unanswered)
        return c.ModelCallResult(responses=[response_of(session.events[-1])], answer_stored=True)

    async def _generate(self, input: c.ModelCallInput, deferred: bool = False) -> c.ModelCallResult:
        agent = self.apps.agent(input.app_name, input.agent_name)
        if not isinstance(agent, LlmAgent):
            raise ApplicationError(f"agent {input.agent_name!r} is not an LlmAgent", non_retryable=True)
        carried = (input.commit_after, input.commit) if deferred else None
        request = await self._resolve_history(input.request, input.app_name, carried)
        model = agent.canonical_model
        metrics = activity_metrics()
        labels = {"app": input.app_name, "agent": agent.name, "provider": _provider(model), "model": model.name}
        started = time.perf_counter()
        # The provider call itself, timed where it happens (the engine's generate_content span is
        # workflow code): OTel's gen_ai client span, under Temporal's RunActivity span.
        with telemetry.start_span(f"chat {model.name}", _call_span_attributes(input, labels)) as span:
            try:
                # Partials go to the turn's stream (activities/streaming.py), never into the result.
                publisher = publisher_for(getattr(self.sessions, "engine", None), input.stream_to,
                                          attempt=activity.info().attempt, author=agent.name)
                responses = await complete_responses(model.generate_content(request, stream=input.stream), publisher)
            except BaseException as e:
                metrics.model_calls.add(1, labels)
                metrics.model_duration.record(time.perf_counter() - started, labels)
                error = e.error_type if isinstance(e, ModelError) and e.error_type else type(e).__name__
                metrics.model_errors.add(1, {**labels, "error_type": error})
                telemetry.set_attributes(span, {"error.type": error})
                if isinstance(e, ModelError):
                    raise model_error_to_application_error(e) from None
                if isinstance(e, AdkError):
                    raise ApplicationError(str(e), type=type(e).__name__, non_retryable=True) from None
                raise
            metrics.model_calls.add(1, labels)
            metrics.model_duration.record(time.perf_counter() - started, labels)
            self._count_usage(responses, model.name, metrics, labels)
            app = self.apps.get(input.app_name)
            if wants_estimate(app.events_compaction_config if app is not None else None):
                add_prompt_estimate(request, responses)  # as LocalRuntime.generate_content does
            telemetry.set_attributes(span, _call_result_attributes(responses))
        return c.ModelCallResult(responses=responses)

    def _count_usage(self, responses: list[LlmResponse], model: str, metrics: ActivityMetrics, labels: dict) -> None:
        """Tokens and cost of the call into the metrics; the cost also onto the response that
        reports the usage, so its event records it (adk_core.models.pricing.turn_usage sums them)."""
        for response in responses:
            usage = response.usage_metadata
            if usage is None:
                continue
            metrics.model_tokens.add(usage.prompt_token_count or 0, {**labels, "type": "input"})
            # Parts of the input above, so a cache hit ratio is cached_input / input.
            if usage.cached_content_token_count:
                metrics.model_tokens.add(usage.cached_content_token_count, {**labels, "type": "cached_input"})
            if usage.cache_creation_token_count:
                metrics.model_tokens.add(usage.cache_creation_token_count, {**labels, "type": "cache_write_input"})
            output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
            metrics.model_tokens.add(output, {**labels, "type": "output"})
            cost = self.prices.cost(model, usage)
            if cost is not None:
                metrics.model_cost.record(cost, labels)
                response.custom_metadata = {**(response.custom_metadata or {}), COST_KEY: cost}

    async def _resolve_history(self, request: LlmRequest, app_name: str,
                               carried: tuple[str | None, list[Event]] | None = None) -> LlmRequest:
        """The request with its history reference replaced by the contents it stands for. With
        ``carried`` (the stored event they follow, and the events a deferred call carries unstored),
        a reference into those reads them from there."""
        ref = request.history
        if ref is None:
            return request
        key = (ref.app_name, ref.user_id, ref.session_id)
        app = self.apps.get(app_name)
        later = await events_after_ref(self.sessions, app, ref)  # compactions stored after
        at = index_of(carried[1], ref.through_event_id) if carried is not None else None
        if carried is not None and at is not None and carried[0] is not None:
            # A compaction among what follows the stored events may cover what a skipping read leaves out.
            skip = _may_skip_compacted(app, ref, later + carried[1][: at + 1])
            stored = [] if carried[0] == c.SESSION_START else await self._stored.through_stored(key, carried[0], skip_compacted=skip)
            events = stored + carried[1][: at + 1]
        else:
            events = await self._stored.through_stored(key, ref.through_event_id, skip_compacted=_may_skip_compacted(app, ref, later))
        if ref.current_turn_only:
            history = contents_for_ref(events, ref.agent_name, ref.branch, True, later=later)
        else:
            history = self._contents.contents(key, events, ref.agent_name, ref.branch, later=later)
        # In place: the request was decoded for this call alone (a copy would cost a model_copy a call).
        request.contents = history + request.contents
        request.history = None
        return request

    @activity.defn(name=SUMMARIZE_EVENTS)
    @_fail_fast_on_adk_errors
    async def summarize_events(self, input: SummarizeEventsInput) -> SummarizeEventsResult:
        """Plan and write the next compaction of a session (activities/compaction_activities.py)."""
        result = await heartbeating(summarize_stored_events(self._stored, self.apps.get(input.app_name), input))
        if result.compaction is not None:
            when = "before_model_call" if input.before_model_call else "after_invocation"
            activity_metrics().compactions.add(1, {"app": input.app_name, "when": when})
        return result

    # --- tools ------------------------------------------------------------------------------
    @activity.defn(name=c.RUN_TOOL)
    @_fail_fast_on_adk_errors
    async def run_tool(self, input: c.ToolCallInput) -> c.ToolCallResult:
        # A tool never reads the session's events, so the events riding along are left to the next
        # model call, which must have them and stores them together with the tool's own result
        # event: one statement for both (a W1 turn makes 5 writes instead of 8). The tool only
        # acknowledges what this worker already stored.
        return await self._with_commits(input, lambda: self._run_tool(input), store=False)

    async def _run_tool(self, input: c.ToolCallInput) -> c.ToolCallResult:
        app = self.apps.get(input.app_name)
        agent = self.apps.agent(input.app_name, input.agent_name)
        session = Session(
            id=input.key.session_id, app_name=input.key.app_name, user_id=input.key.user_id, state=input.state
        )
        ctx = InvocationContext(
            runtime=LocalRuntime(),
            session_service=self.sessions,
            session=session,
            invocation_id=input.invocation_id,
            agent=agent,
            root_agent=app.root_agent,
            plugin_manager=_NO_PLUGINS,
            artifact_service=self.artifacts,
            memory_service=self.memory,
            user_content=input.user_content,
            branch=input.branch,
        )
        tool = None
        if isinstance(agent, LlmAgent):
            # Toolsets are listed only when no plain tool or toolset names the tool itself (MCP and
            # OpenAPI toolsets do, from what the worker keeps); a toolset that fails raises ToolError.
            tool = await find_tool(agent, input.tool_name, ReadonlyContext(ctx))
        elif (own_call := getattr(agent, "tool_named", None)) is not None:
            tool = own_call(input.tool_name)  # an agent making its own remote calls (RemoteA2aAgent)
        if tool is None:
            raise ApplicationError(
                f"agent {input.agent_name!r} has no tool {input.tool_name!r} on this worker; "
                "deploy the same app version to every worker on the task queue",
                type="ToolNotFound",
                non_retryable=True,
            )
        tool_context = ToolContext(ctx, function_call_id=input.function_call_id, tool_confirmation=input.tool_confirmation)
        metrics = activity_metrics()
        labels = {"app": input.app_name, "agent": input.agent_name, "tool": input.tool_name}
        started = time.perf_counter()
        try:
            response = await tool.run_async(args=input.args, tool_context=tool_context)
        except Exception as e:
            metrics.tool_calls.add(1, labels)
            metrics.tool_duration.record(time.perf_counter() - started, labels)
            metrics.tool_errors.add(1, {**labels, "error_type": type(e).__name__})
            # The model is told about the error; the log is where a developer (the `adkt dev` console) sees it.
            activity.logger.warning("tool %s of agent %s failed: %s: %s", input.tool_name, input.agent_name,
                                    type(e).__name__, e)  # fmt: skip
            origin: dict[str, Any] = {"error_class": error_class_path(e), "error_args": portable_args(e)}
            if input.retry_errors:
                if isinstance(e, ApplicationError):
                    raise  # the tool chose its own retry behaviour
                # Same type name as Temporal would give the bare exception (retry policies match on
                # it), plus where its class lives so the workflow can rebuild it when retries end.
                raise ApplicationError(str(e), origin, type=type(e).__name__) from e
            return c.ToolCallResult(
                actions=tool_context.actions, error_type=type(e).__name__, error_message=str(e), **origin
            )
        metrics.tool_calls.add(1, labels)
        metrics.tool_duration.record(time.perf_counter() - started, labels)
        return c.ToolCallResult(response=response, actions=tool_context.actions)

    # --- artifacts and memory ---------------------------------------------------------------
    @activity.defn(name=c.ARTIFACTS)
    @_fail_fast_on_adk_errors
    async def artifact_call(self, input: c.ArtifactCallInput) -> c.ArtifactCallResult:
        if self.artifacts is None:
            raise ApplicationError("this worker has no artifact service configured", non_retryable=True)
        call = input.root
        key = dict(app_name=call.key.app_name, user_id=call.key.user_id, session_id=call.key.session_id)
        if isinstance(call, c.ArtifactFileOp) and not call.filename:
            # Not retryable: the same input would fail again.
            raise ApplicationError(f"artifact op {call.op!r} needs a filename", type="InvalidInputError", non_retryable=True)
        attributes = store_span_attributes((call.key.app_name, call.key.user_id, call.key.session_id), {"adk.artifact.op": call.op})
        with telemetry.start_span(f"adk.artifacts.{call.op}", attributes):
            return await self._artifact_call(call, key)

    async def _artifact_call(self, call: c.ArtifactOp, key: dict[str, str]) -> c.ArtifactCallResult:
        assert self.artifacts is not None  # checked by artifact_call
        try:
            match call:
                case c.SaveArtifact():
                    version = await self.artifacts.save_artifact(
                        **key, filename=call.filename, artifact=call.artifact, save_id=call.save_id
                    )
                    return c.ArtifactCallResult(version=version)
                case c.LoadArtifact():
                    part = await self.artifacts.load_artifact(**key, filename=call.filename, version=call.version)
                    return c.ArtifactCallResult(artifact=part)
                case c.ListArtifacts():
                    return c.ArtifactCallResult(names=await self.artifacts.list_artifact_keys(**key))
                case c.DeleteArtifact():
                    await self.artifacts.delete_artifact(**key, filename=call.filename)
                    return c.ArtifactCallResult()
                case c.ListArtifactVersions():
                    return c.ArtifactCallResult(versions=await self.artifacts.list_versions(**key, filename=call.filename))
                case _:
                    assert_never(call)
        except AdkError as e:
            raise ApplicationError(str(e), type=type(e).__name__, non_retryable=True) from None

    @activity.defn(name=c.MEMORY)
    @_fail_fast_on_adk_errors
    async def memory_call(self, input: c.MemoryCallInput) -> c.MemoryCallResult:
        if self.memory is None:
            raise ApplicationError("this worker has no memory service configured", non_retryable=True)
        attributes = store_span_attributes((input.key.app_name, input.key.user_id, input.key.session_id), {"adk.memory.op": input.op})
        with telemetry.start_span(f"adk.memory.{input.op}", attributes):
            return await self._memory_call(input)

    async def _memory_call(self, input: c.MemoryCallInput) -> c.MemoryCallResult:
        assert self.memory is not None  # checked by memory_call
        if input.op == "add_session":
            session = await self.sessions.get_session(
                app_name=input.key.app_name, user_id=input.key.user_id, session_id=input.key.session_id
            )
            if session is not None:
                await self.memory.add_session_to_memory(session)
            return c.MemoryCallResult()
        found = await self.memory.search_memory(
            app_name=input.key.app_name, user_id=input.key.user_id, query=input.query
        )
        return c.MemoryCallResult(memories=[m.model_dump(mode="json") for m in found.memories])


def _may_skip_compacted(app: App, ref: ContentsRef, following: list[Event]) -> bool:
    """Whether a model call may read its stored events less what their newest compaction hides
    (StoredEventsCache.through): the app compacts, the contents are the whole conversation's (the
    current turn alone is no prefix of it), and no compaction follows them (it might cover events
    the read left out)."""
    return (
        app.events_compaction_config is not None
        and not ref.current_turn_only
        and not has_compaction(following)
    )


def _store_answer(slot: c.AnswerSlot, result: c.ModelCallResult) -> list[Event]:
    """The answer event a model call stores itself (ModelCallInput.answer): its one response, when
    that is final and calls no function; none otherwise (the workflow stores what comes of it)."""
    if len(result.responses) != 1:
        return []
    response = result.responses[0]
    if response.partial or (response.content is not None and response.content.function_calls()):
        return []  # asked of the response, whose content the event would be: most calls of a turn end here
    _fits(result)  # before it is stored: one too large to return fails the call with nothing stored
    event = answer_event(
        response, event_id=slot.event_id, timestamp=slot.timestamp, invocation_id=slot.invocation_id,
        author=slot.author, branch=slot.branch,
    )
    result.answer_stored = True  # the result is only returned once the event is stored
    return [event]


def _provider(model: object) -> str:
    """The provider label of a model: its ``provider`` ("gemini", "openai", "anthropic"), else its
    class name without "Model" ("scripted" for ScriptedModel)."""
    provider = getattr(model, "provider", None)
    if isinstance(provider, str) and provider:
        return provider
    return type(model).__name__.removesuffix("Model").lower() or "unknown"


def _call_span_attributes(input: c.ModelCallInput, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": labels["provider"],
        "gen_ai.request.model": labels["model"],
        "gen_ai.agent.name": labels["agent"],
        "gen_ai.conversation.id": input.key.session_id,
        "adk.app": input.app_name,
        "adk.attempt": activity.info().attempt,
    }


def _call_result_attributes(responses: list[LlmResponse]) -> dict[str, Any]:
    usage = [r.usage_metadata for r in responses if r.usage_metadata is not None]
    cost = [r.custom_metadata[COST_KEY] for r in responses if r.custom_metadata and COST_KEY in r.custom_metadata]
    return {
        "gen_ai.response.finish_reasons": [r.finish_reason for r in responses if r.finish_reason] or None,
        "gen_ai.usage.input_tokens": sum(u.prompt_token_count or 0 for u in usage) if usage else None,
        "gen_ai.usage.output_tokens": sum((u.candidates_token_count or 0) + (u.thoughts_token_count or 0)
                                          for u in usage) if usage else None,  # fmt: skip
        "adk.cost_usd": sum(cost) if cost else None,
    }
