"""The span of each request to a provider: a CLIENT span under the model call, its status code, and
the URL without its query (where a key may travel)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from model_wire import SECRET, Wire, collect, simple_request
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adk_core.errors import ModelError
from adk_core.models.gemini import GeminiModel
from adk_core.models.openai import OpenAIModel


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    """The global provider can be set once per process: reuse an SDK provider already installed."""
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), "another tracer provider is installed globally"
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()


@pytest.mark.parametrize(("fixture", "stream"), [("gemini_text.json", False), ("gemini_stream.sse", True)])
async def test_a_provider_request_is_a_client_span_under_the_model_call(
    exporter: InMemorySpanExporter, wire: Wire, fixture: str, stream: bool
) -> None:
    exporter.clear()
    wire.reply(fixture)
    model = GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=wire.client)
    with trace.get_tracer("test").start_as_current_span("chat gemini-2.5-flash") as call:
        await collect(model, simple_request(), stream=stream)
    [request] = [s for s in exporter.get_finished_spans() if s.name == "POST"]
    assert request.kind == trace.SpanKind.CLIENT
    assert request.parent is not None and request.parent.span_id == call.get_span_context().span_id
    attributes = dict(request.attributes or {})
    assert attributes["http.response.status_code"] == 200
    assert attributes["gen_ai.provider.name"] == "gemini"
    assert attributes["server.address"] == wire.request.url.host
    assert attributes["url.full"] == str(wire.request.url.copy_with(query=None))
    assert SECRET not in str(attributes)


async def test_a_refused_or_lost_request_ends_its_span_in_error(exporter: InMemorySpanExporter, wire: Wire) -> None:
    exporter.clear()
    wire.reply("openai_error_429.json", status=429)
    wire.reply_raw(httpx.ConnectError("refused"))
    model = OpenAIModel("gpt-4o-mini", api_key=SECRET, http_client=wire.client)
    for _ in range(2):
        with pytest.raises(ModelError):
            await collect(model, simple_request())
    refused, lost = [s for s in exporter.get_finished_spans() if s.name == "POST"]
    assert dict(refused.attributes or {})["http.response.status_code"] == 429
    assert dict(lost.attributes or {})["error.type"] == "ModelError"
    assert lost.status.status_code == trace.StatusCode.ERROR
