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

from typing import Any

from adk_core.errors import ConfigurationError

DEFAULT_SERVICE_NAME = "adk-temporal"


def configure_tracing(service_name: str = DEFAULT_SERVICE_NAME) -> Any:
    """Install a tracer provider that batches spans to the OTLP endpoint of the OTEL_* variables and
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
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service_name}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider
