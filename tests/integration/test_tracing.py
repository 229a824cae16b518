"""OpenTelemetry: spans link client -> workflow -> activities, and replay emits nothing twice."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adk_core import App
from adk_temporal.worker import build_worker
from adkt.client import AdkClient, connect
from adkt.embedded import EmbeddedPostgres, TemporalDevServer
from adkt.services import open_services
from examples.w1 import USER_MESSAGE, build_agent, check_turn

pytestmark = pytest.mark.integration


def _exporter() -> InMemorySpanExporter:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), "another test installed a non-SDK tracer provider"
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


async def test_spans_link_client_workflow_and_activities_without_replay_duplicates(
    temporal_server: TemporalDevServer, postgres: EmbeddedPostgres
) -> None:
    exporter = _exporter()
    url = await postgres.create_database(f"tracing_{uuid.uuid4().hex[:8]}")
    client = await connect(temporal_server.address, namespace=temporal_server.namespace, tracing=True)
    task_queue = f"trace-{uuid.uuid4().hex[:8]}"
    app = App(name=f"w1_trace_{uuid.uuid4().hex[:6]}", root_agent=build_agent())
    async with open_services(url) as services:
        # No workflow cache: every workflow task replays history from the start.
        worker = build_worker(client, [app], task_queue=task_queue, tracing=True, max_cached_workflows=0, **services)
        run = asyncio.create_task(worker.run())
        try:
            result = await AdkClient(client, task_queue=task_queue).run_once(app.name, "u1", "s1", USER_MESSAGE)
        finally:
            await worker.shutdown()
            await asyncio.gather(run, return_exceptions=True)
    check_turn(result.events)
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    trace_ids = {s.context.trace_id for s in spans if s.name.startswith(("StartWorkflow", "RunWorkflow", "RunActivity"))}
    assert "StartWorkflow:AgentRunWorkflow" in names and "RunWorkflow:AgentRunWorkflow" in names
    assert names.count("RunActivity:adk.generate_content") == 4
    assert names.count("RunActivity:adk.run_tool") == 3
    assert len(trace_ids) == 1, "client, workflow and activity spans share one trace"
    # The engine's spans are emitted once each although the workflow replayed after every task.
    assert names.count("generate_content w1-scripted") == 4, names
    assert names.count("execute_tool add") == 2 and names.count("execute_tool lookup") == 1, names
