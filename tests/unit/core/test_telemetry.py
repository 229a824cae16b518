"""OpenTelemetry spans of a W1 turn, and the free no-op when no tracer provider is installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adk_core import App, InMemoryRunner
from examples import w1


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    """Spans of this module's tests. The global provider can be set once per process: reuse an SDK
    provider someone already installed, else install ours."""
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), "another tracer provider is installed globally"
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()  # later modules keep the provider but stop filling this exporter


async def _w1_spans(exporter: InMemorySpanExporter) -> tuple[list[ReadableSpan], list]:
    exporter.clear()
    runner = InMemoryRunner(app=App(name="w1", root_agent=w1.build_agent()))
    events = await runner.run(w1.USER_MESSAGE, session_id="traced")
    w1.check_turn(events)
    return list(exporter.get_finished_spans()), events


async def test_a_w1_turn_emits_the_expected_spans(exporter: InMemorySpanExporter) -> None:
    spans, events = await _w1_spans(exporter)
    names = sorted(s.name for s in spans)
    assert names == sorted(
        ["invocation", "invoke_agent assistant"]
        + ["generate_content w1-scripted"] * 4
        + ["execute_tool add"] * 2
        + ["execute_tool lookup"]
    )
    by_name = {s.name: s for s in spans}
    session_id = "traced"
    invocation_id = events[0].invocation_id

    invocation = by_name["invocation"]
    assert invocation.attributes["adk.invocation_id"] == invocation_id
    assert invocation.attributes["gen_ai.conversation.id"] == session_id

    agent = by_name["invoke_agent assistant"]
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "assistant"
    assert agent.attributes["gen_ai.conversation.id"] == session_id

    models = [s for s in spans if s.name.startswith("generate_content")]
    for span in models:
        assert span.attributes["gen_ai.operation.name"] == "generate_content"
        assert span.attributes["gen_ai.request.model"] == "w1-scripted"
        assert span.attributes["adk.invocation_id"] == invocation_id

    tools = [s for s in spans if s.name.startswith("execute_tool")]
    call_ids = [c.id for e in events for c in e.function_calls()]
    assert [s.attributes["gen_ai.tool.call.id"] for s in sorted(tools, key=lambda s: s.start_time)] == call_ids
    for span in tools:
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == span.name.removeprefix("execute_tool ")
        assert span.attributes["gen_ai.tool.description"] in ("Add two integers.", "Look up a key.")


async def test_spans_nest_invocation_agent_then_calls(exporter: InMemorySpanExporter) -> None:
    spans, _ = await _w1_spans(exporter)
    by_name = {s.name: s for s in spans}
    invocation, agent = by_name["invocation"], by_name["invoke_agent assistant"]
    assert invocation.parent is None
    assert agent.parent is not None and agent.parent.span_id == invocation.context.span_id
    assert len({s.context.trace_id for s in spans}) == 1
    parents = {s.context.span_id: s.parent.span_id if s.parent else None for s in spans}

    def ancestors(span: ReadableSpan) -> list[int]:
        chain, current = [], parents[span.context.span_id]
        while current is not None:
            chain.append(current)
            current = parents.get(current)
        return chain

    for span in spans:
        if span.name.startswith("generate_content"):
            assert span.parent is not None and span.parent.span_id == agent.context.span_id
        if span.name.startswith("execute_tool"):
            # Like google-adk, the tool runs while the model call's generator is suspended inside its
            # span, so a tool span sits under the generate_content span that asked for it.
            assert agent.context.span_id in ancestors(span), span.name


def test_without_a_provider_start_span_is_the_shared_noop() -> None:
    # A fresh interpreter: this process may already have a provider installed (the fixture above).
    code = textwrap.dedent(
        """
        from adk_core import telemetry
        from adk_core.runtime import LocalRuntime
        assert not telemetry.tracing_enabled()
        span = telemetry.start_span("x", {"a": 1})
        assert span is telemetry._NOOP, span
        assert LocalRuntime().span("y", {}) is telemetry._NOOP
        with span as inner:
            assert inner is None
            telemetry.set_attributes(inner, {"k": "v"})  # tolerated on the no-op
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=_root())
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_tracing_off_reads_the_environment_once_and_sees_a_provider_installed_later() -> None:
    # OpenTelemetry's get_tracer_provider() reads os.environ on every call while no provider is set:
    # asked for every span (nine a W1 turn in workflow code), that was a cost of tracing being off.
    code = textwrap.dedent(
        """
        import os
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from adk_core import telemetry

        class Counting(dict):
            reads = 0
            def __contains__(self, key):
                Counting.reads += 1
                return super().__contains__(key)

        os.environ = Counting(os.environ)
        assert not any(telemetry.tracing_enabled() for _ in range(100))
        assert Counting.reads <= 1, Counting.reads
        trace.set_tracer_provider(TracerProvider())
        assert telemetry.tracing_enabled()
        assert telemetry.start_span("x", {}) is not telemetry._NOOP
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=_root())
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_a_provider_named_in_the_environment_is_loaded_on_the_first_span() -> None:
    code = textwrap.dedent(
        """
        import os
        os.environ["OTEL_PYTHON_TRACER_PROVIDER"] = "sdk_tracer_provider"
        from adk_core import telemetry
        assert telemetry.tracing_enabled()
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=_root())
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def _root() -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parents[3])
