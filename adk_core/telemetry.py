"""OpenTelemetry spans for agents, model calls and tools, with gen_ai.* attributes.

When no tracer provider is configured the span helpers return a shared no-op context manager:
tracing that is off costs one attribute check per span.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from opentelemetry import trace

_tracer = trace.get_tracer("adk_core")
_NOOP = contextlib.nullcontext()


def tracing_enabled() -> bool:
    # Asked for every span, in workflow code too, so the answer is kept per installed provider.
    # The API's get_tracer_provider() reads os.environ on every call while no provider is set (for
    # OTEL_PYTHON_TRACER_PROVIDER): about 10 us a span in a worker, where tracing is usually off.
    # The installed provider (or None) is read where the API keeps it; the environment is read once
    # per provider, as OTel's own SDK reads its OTEL_* variables once at start.
    global _checked
    installed = getattr(trace, "_TRACER_PROVIDER", _UNKNOWN)
    if installed is _UNKNOWN or installed is not _checked[0]:
        provider = trace.get_tracer_provider()  # loads one named by OTEL_PYTHON_TRACER_PROVIDER
        # The API's default is a proxy that records nothing until an SDK provider is installed.
        enabled = not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
        _checked = (getattr(trace, "_TRACER_PROVIDER", _UNKNOWN), enabled)
    return _checked[1]


_UNKNOWN = object()
"""An OpenTelemetry API that keeps the installed provider elsewhere: every call asks the API."""
_checked: tuple[object, bool] = (object(), False)


def start_span(name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
    if not tracing_enabled():
        return _NOOP
    return _span(name, attributes)


@contextlib.contextmanager
def _span(name: str, attributes: dict[str, Any]) -> Iterator[trace.Span]:
    with _tracer.start_as_current_span(name, attributes={k: v for k, v in attributes.items() if v is not None}) as span:
        yield span


def set_attributes(span: Any, attributes: dict[str, Any]) -> None:
    """Set attributes on a span from start_span (a no-op when tracing is off)."""
    if span is None or not getattr(span, "is_recording", lambda: False)():
        return
    for key, value in attributes.items():
        if value is not None:
            span.set_attribute(key, value)


def agent_span_attributes(agent_name: str, description: str, invocation_id: str, session_id: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent_name,
        "gen_ai.agent.description": description,
        "gen_ai.conversation.id": session_id,
        "adk.invocation_id": invocation_id,
    }


def model_span_attributes(model: str, invocation_id: str, session_id: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "generate_content",
        "gen_ai.system": "adk",
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": session_id,
        "adk.invocation_id": invocation_id,
    }


def tool_span_attributes(tool_name: str, description: str, call_id: str | None) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool_name,
        "gen_ai.tool.description": description,
        "gen_ai.tool.call.id": call_id,
    }


def usage_attributes(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    return {
        "gen_ai.usage.input_tokens": usage.prompt_token_count,
        "gen_ai.usage.output_tokens": usage.candidates_token_count,
    }


@contextlib.contextmanager
def http_client_span(method: str, url: str, provider: str) -> Iterator[Any]:
    """A CLIENT span for one request to a model provider (a child of the current span: the model
    call). Not made current, so a streamed response may be read across awaits. The URL is recorded
    without its query, where some providers take the API key. Yields None when tracing is off."""
    if not tracing_enabled():
        yield None
        return
    parts = urlsplit(url)
    span = _tracer.start_span(method, kind=trace.SpanKind.CLIENT, attributes={
        "http.request.method": method,
        "url.full": urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
        "server.address": parts.hostname or "",
        "gen_ai.provider.name": provider,
    })  # fmt: skip
    try:
        yield span
    except GeneratorExit:  # the reader stopped reading a stream: not a failed request
        raise
    except BaseException as e:
        span.set_attribute("error.type", type(e).__name__)
        span.set_status(trace.Status(trace.StatusCode.ERROR, str(e)[:200]))
        raise
    finally:
        span.end()
