"""A turn's trace id on its timeline: a client that traces (AdkPlugin(tracing=True)) sends a W1 turn
inside a span; the timeline read back from the stored events and the workflow's history carries that
span's trace id, and its model and tool bars carry their activities' attempts."""

from __future__ import annotations

import uuid

import pytest
from opentelemetry.sdk.trace import TracerProvider

from adk_core import App
from adkt.client import AdkClient, connect
from adkt.web.api.backend import ApiBackend
from adkt.web.api.timeline_history import session_timeline
from examples import w1
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def test_the_timeline_carries_the_turns_trace_id(durable_stack: DurableStack) -> None:
    app = durable_stack.register(App(name=f"w1_{uuid.uuid4().hex[:6]}", root_agent=w1.build_agent()))
    traced = await connect(durable_stack.address, namespace=durable_stack.client.client.namespace,
                           database_url=durable_stack.database_url, tracing=True)  # fmt: skip
    client = AdkClient(traced, task_queue=durable_stack.client.task_queue)
    # A provider of the test's own (not the process's global one): the span's context is what the
    # client's interceptor puts in the update's header.
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("caller") as span:
        result = await client.send(app.name, "u", "s1", w1.USER_MESSAGE)
    w1.check_turn(result.events)
    backend = ApiBackend(client=durable_stack.client, sessions=durable_stack.sessions)
    timeline = await session_timeline(backend, app.name, "u", "s1")
    [turn] = timeline.turns
    assert timeline.history and turn.trace_id == format(span.get_span_context().trace_id, "032x")
    kinds = [s.kind for s in turn.spans]
    assert kinds.count("model") == 4 and kinds.count("tool") == 3, kinds
    assert all(s.attempts == 1 for s in turn.spans if s.kind in ("model", "tool")), [(s.kind, s.name, s.attempts, s.error) for s in turn.spans]
    assert timeline.totals.turns == 1 and timeline.totals.tool_calls == 3
