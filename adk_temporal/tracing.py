"""Export OpenTelemetry traces from a worker or the HTTP API (`--tracing`, ADK_TRACING=1).

The spans: Temporal's TracingInterceptor (AdkPlugin(tracing=True)) makes StartWorkflow /
RunWorkflow / RunActivity spans and carries the trace context across processes in Temporal headers;
the engine's spans (invoke_agent, generate_content, execute_tool, with gen_ai.* attributes) nest
in them. This module only installs the SDK's tracer provider with the OTLP exporter, configured
by the standard variables:

    OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT   where to send (HTTP/protobuf)
    OTEL_EXPORTER_OTLP_HEADERS                                         e.g. an API key
    OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES                        who is sending

The exporter is the optional `opentelemetry-exporter-otlp-proto-http` package
(``pip install 'adk-temporal[tracing]'``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from adk_core import telemetry
from adk_core.errors import ConfigurationError

DEFAULT_SERVICE_NAME = "adk-temporal"


def configure_tracing(service_name: str = DEFAULT_SERVICE_NAME) -> Any:
    """Install Temporal's replay-safe tracer provider (AdkPlugin(tracing=True) then uses the
    interceptor made for it), which batches spans to the OTLP endpoint of the OTEL_* variables and
    return it (``provider.shutdown()`` flushes what is left at exit). ``service_name`` applies when
    OTEL_SERVICE_NAME does not say."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise ConfigurationError(
            "tracing exports with OTLP, and the exporter is not installed: pip install 'adk-temporal[tracing]' "
            "(opentelemetry-exporter-otlp-proto-http), or run without --tracing / ADK_TRACING"
        ) from None
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from temporalio.contrib.opentelemetry import create_tracer_provider

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service_name}))
    # Temporal's replay-safe provider: ids drawn from the workflow's seeded random, spans started
    # on replay at their time in history and ended once, live (workflows/runtime.py TemporalRuntime.span).
    provider = create_tracer_provider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


@contextlib.contextmanager
def http_server_span(method: str, headers: Mapping[str, str]) -> Iterator[Any]:
    """A SERVER span for one HTTP API request, continuing the caller's trace when its headers carry
    one (W3C ``traceparent``); what the request does (a turn's Temporal calls) nests in it. Yields
    None when tracing is off. The caller names it by route once routed (``name_http_span``)."""
    if not telemetry.tracing_enabled():
        yield None
        return
    from opentelemetry import propagate, trace

    tracer = trace.get_tracer("adkt.web")
    with tracer.start_as_current_span(
        method, context=propagate.extract(dict(headers)), kind=trace.SpanKind.SERVER,
        attributes={"http.request.method": method},
    ) as span:
        yield span


def name_http_span(span: Any, method: str, route: str, status: int) -> None:
    """Name an ``http_server_span`` after its route template (never the ids in the path) and status."""
    if span is None:
        return
    span.update_name(f"{method} {route}")
    span.set_attribute("http.route", route)
    span.set_attribute("http.response.status_code", status)


def current_trace_context() -> object:
    """The OpenTelemetry context now (None when tracing is off), for work that runs later."""
    if not telemetry.tracing_enabled():
        return None
    from opentelemetry import context

    return context.get_current()


@contextlib.contextmanager
def in_trace_context(saved: object) -> Iterator[None]:
    """Run the block in a context from ``current_trace_context`` (nothing to do for None)."""
    if saved is None:
        yield
        return
    from opentelemetry import context

    token = context.attach(saved)  # type: ignore[arg-type]
    try:
        yield
    finally:
        context.detach(token)
