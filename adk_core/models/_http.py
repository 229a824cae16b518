"""Plumbing shared by the HTTP model providers: clients, keys, error mapping, SSE and response validation.

Providers retry nothing. Every failure becomes a ModelError carrying ``status``, ``retryable`` and
``retry_after``, and the caller (a Temporal activity in durable runs) owns the retry policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar, TypeVar

import httpx
from httpx_sse import ServerSentEvent, SSEError, aconnect_sse
from pydantic import BaseModel, ConfigDict, RootModel, ValidationError

from adk_core.errors import ModelError
from adk_core.runtime import wall_clock

from .. import telemetry
from .base import GenerateContentConfig
from .rules import ModelRules, Refusal, apply_model_rules, model_rules, refused_settings

_RETRYABLE_STATUSES = frozenset({408, 409, 429})
# As the official OpenAI and Anthropic SDKs pool: a worker's activity slots bound how many calls run
# at once, so the pool must not become a hidden queue below that.
_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)


def is_retryable(status: int) -> bool:
    """Whether the same request may succeed later: timeouts, conflicts, rate limits, server errors."""
    return status in _RETRYABLE_STATUSES or status >= 500


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if millis := headers.get("retry-after-ms"):
        with contextlib.suppress(ValueError):
            return max(0.0, float(millis) / 1000)
    value = headers.get("retry-after")
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    # Measure against the server's own Date header when it sent one, so our clock skew does not count.
    now = wall_clock()
    if date := headers.get("date"):
        with contextlib.suppress(TypeError, ValueError):
            now = parsedate_to_datetime(date).timestamp()
    return max(0.0, when - now)


def _retry_delay_from_body(error: dict[str, Any]) -> float | None:
    # Google APIs say how long to wait in a RetryInfo detail ("37s") rather than a header.
    for detail in error.get("details") or []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            with contextlib.suppress(ValueError):
                return float(delay[:-1])
    return None


def error_details(body: Any) -> tuple[str | None, str | None, float | None]:
    """(message, error type, retry delay) from a provider's JSON error body, in any of the common shapes."""
    if not isinstance(body, dict):
        return None, None, None
    error = body.get("error", body)
    if isinstance(error, str):
        return error, None, None
    if not isinstance(error, dict):
        return None, None, None
    message = error.get("message") or body.get("detail")
    kind = error.get("type") or error.get("status") or error.get("code")
    return (str(message) if message else None), (str(kind) if kind else None), _retry_delay_from_body(error)


def _hint(status: int, retry_after: float | None) -> str:
    if status == 401:
        return "check the API key"
    if status == 403:
        return "the API key is not allowed to use this model or project"
    if status == 404:
        return "check the model name and base_url"
    if is_retryable(status):
        wait = f" (the provider asked to wait {retry_after:g}s)" if retry_after is not None else ""
        return f"this may succeed if retried later{wait}"
    return "the provider rejected the request; fix it as the message says"


def status_error(
    status: int, body: Any, headers: httpx.Headers | None, *, provider: str, secret: str | None
) -> ModelError:
    """The ModelError for an HTTP error status (or an error the provider reported inside a stream)."""
    message, kind, body_delay = error_details(body)
    if message is None and isinstance(body, str) and body.strip():
        message = body.strip()[:500]
    retry_after = parse_retry_after(headers) if headers is not None else None
    if retry_after is None:
        retry_after = body_delay
    kind_text = f" ({kind})" if kind else ""
    message = (message or "no error message").strip().rstrip(".")
    text = f"{provider} returned HTTP {status}{kind_text}: {message}; {_hint(status, retry_after)}"
    return ModelError(
        redact(text, secret),
        status=status,
        retryable=is_retryable(status),
        retry_after=retry_after,
        provider=provider,
        error_type=kind,
    )


class WireModel(BaseModel):
    """Base for a provider's response shapes: requires the fields we read, ignores any others.

    Providers add fields all the time; only a field we read having the wrong type (or missing when we
    need it) makes a response unreadable.
    """

    model_config = ConfigDict(extra="ignore")


W = TypeVar("W", bound=BaseModel)


class _JsonObject(RootModel[dict[str, Any]]):
    """Any JSON object: for answers read field by field."""


def malformed_response(provider: str, problem: str, secret: str | None) -> ModelError:
    """The non-retryable ModelError for an HTTP 200 answer we cannot read.

    Retrying would get the same answer, so the caller's retry policy must stop here.
    """
    text = (
        f"{provider} answered HTTP 200 but {problem}; the endpoint may not be {provider}-compatible, "
        "check base_url and the model name"
    )
    return ModelError(
        redact(text, secret), status=200, retryable=False, provider=provider, error_type="MalformedResponse"
    )


def read_wire(shape: type[W], data: Any, *, provider: str, what: str, secret: str | None) -> W:
    """``data`` validated as ``shape``, or a MalformedResponse ModelError naming ``what`` was wrong."""
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        problem = f"the {what} has an unexpected shape ({_summary(exc)})"
        raise malformed_response(provider, problem, secret) from exc


def _summary(exc: ValidationError, limit: int = 3) -> str:
    # Field paths and types only: the input values could be long, or echo something sensitive.
    errors = exc.errors(include_url=False)
    items = []
    for error in errors[:limit]:
        where = ".".join(map(str, error["loc"])) or "body"
        got = "" if error["type"] == "missing" else f", got {type(error['input']).__name__}"
        items.append(f"{where}: {error['msg']}{got}")
    more = f"; and {len(errors) - limit} more" if len(errors) > limit else ""
    return "; ".join(items) + more


def sse_json(event: ServerSentEvent, *, provider: str, secret: str | None) -> Any:
    """The JSON payload of one streamed event, or a MalformedResponse ModelError if it is not JSON."""
    try:
        return event.json()
    except ValueError as exc:
        raise malformed_response(
            provider, f"a streamed event is not JSON: {event.data[:80]!r}", secret
        ) from exc


def stream_error(data: Any, *, provider: str, secret: str | None) -> ModelError | None:
    """The ModelError for a ``{"error": {...}}`` event sent after the stream started, else None.

    Gemini and OpenAI-compatible servers send the HTTP error body they would have answered with; its
    numeric ``code`` stands in for the status the stream's response can no longer carry.
    """
    if not isinstance(data, dict) or "error" not in data:
        return None
    code = data["error"].get("code") if isinstance(data["error"], dict) else None
    return status_error(code if isinstance(code, int) else 500, data, None, provider=provider, secret=secret)


def redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def env_value(*names: str) -> str | None:
    """The first of the environment variables ``names`` that is set and non-empty."""
    return next((value for name in names if (value := os.environ.get(name))), None)


class HttpModel:
    """Base for the providers: holds the model name, key, base URL and client, and does the HTTP calls.

    Each instance keeps one httpx client per event loop, built on first use and reused by every call
    on that loop, so connections (and their TLS handshakes) are pooled across calls. One per loop
    because the registry shares an instance per model name, possibly across event loops, and an httpx
    client must not outlive or leave its loop. An injected client is used as given (its own timeout
    and limits apply) and never closed here.
    """

    provider: ClassVar[str]
    api_key_env: ClassVar[tuple[str, ...]] = ()
    api_key_help: ClassVar[str] = ""
    provider_rules: ClassVar[ModelRules]
    """What the provider's API can carry at all, and the rules for a model no table row matches."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None,
        http_client: httpx.AsyncClient | None,
        timeout: float,
        rules: ModelRules | None = None,
    ) -> None:
        self._model = model
        self._rules = rules
        self._api_key = api_key
        self._base_url = base_url.rstrip("/") if base_url else None
        self._http_client = http_client
        self._timeout = timeout
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    @property
    def name(self) -> str:
        return self._model

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r})"

    def _defaults(self) -> ModelRules:
        return self.provider_rules

    def applied_rules(self, config: GenerateContentConfig) -> tuple[GenerateContentConfig, ModelRules]:
        """``config`` without what this model refuses (each warned about once), and the rules used."""
        return apply_model_rules(self._model, config, self._defaults(), self._rules)

    def refused_settings(self, config: GenerateContentConfig) -> list[Refusal]:
        """What ``config`` sets that this model refuses; for checks at load time (nothing is logged)."""
        defaults = self._defaults()
        return refused_settings(config, self._rules or model_rules(self._model) or defaults, defaults)

    def _key(self, *, required: bool = True) -> str | None:
        key = self._api_key or env_value(*self.api_key_env)
        if key is None and required:
            names = " or ".join(self.api_key_env)
            raise ModelError(
                f"no API key for {self.provider} model {self._model!r}: set {names} "
                f"({self.api_key_help}) or pass api_key= to {type(self).__name__}",
                provider=self.provider,
                error_type="missing_api_key",
            )
        return key

    def _client(self) -> httpx.AsyncClient:
        if self._http_client is not None:
            return self._http_client
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            # A closed loop's client cannot be closed from here, and its connections ended with the loop.
            for old in [known for known in list(self._clients) if known.is_closed()]:
                self._clients.pop(old, None)
            client = self._clients[loop] = httpx.AsyncClient(timeout=self._timeout, limits=_LIMITS)
        return client

    async def aclose(self) -> None:
        """Close the HTTP client this model opened on the running event loop.

        An injected ``http_client`` is left open: its owner closes it. The model stays usable; a later
        call opens a new client.
        """
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    def _transport_error(self, exc: httpx.TransportError, secret: str | None) -> ModelError:
        if isinstance(exc, httpx.TimeoutException):
            text = f"{self.provider} did not answer in time ({type(exc).__name__}); retry, or raise timeout="
        else:
            text = f"could not reach {self.provider} ({type(exc).__name__}: {exc}); check the network and base_url"
        return ModelError(
            redact(text, secret), retryable=True, provider=self.provider, error_type="transport"
        )

    async def _request(self, method: str, url: str, headers: dict[str, str], body: dict[str, Any] | None = None
                       ) -> httpx.Response:  # fmt: skip
        """One request in its HTTP client span; a transport failure or an error status is a ModelError."""
        secret = self._key(required=False)
        with telemetry.http_client_span(method, url, self.provider) as span:
            try:
                response = await self._client().request(method, url, json=body, headers=headers)
            except httpx.TransportError as exc:
                raise self._transport_error(exc, secret) from exc
            telemetry.set_attributes(span, {"http.response.status_code": response.status_code})
        if not response.is_success:
            raise status_error(
                response.status_code, _body(response), response.headers, provider=self.provider, secret=secret
            )
        return response

    async def _post_json(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        response = await self._request("POST", url, headers, body)
        try:
            return response.json()
        except ValueError as exc:
            raise ModelError(
                f"{self.provider} answered HTTP {response.status_code} with a body that is not JSON; "
                "check base_url points at the provider's API",
                status=response.status_code,
                provider=self.provider,
                error_type="invalid_response",
            ) from exc

    async def _get_json(self, url: str, headers: dict[str, str]) -> Any:
        response = await self._request("GET", url, headers)
        secret = self._key(required=False)
        try:
            data = response.json()
        except ValueError as exc:
            raise malformed_response(self.provider, "the body is not JSON", secret) from exc
        return read_wire(_JsonObject, data, provider=self.provider, what="response", secret=secret).root

    async def _post_sse(
        self, url: str, body: dict[str, Any], headers: dict[str, str]
    ) -> AsyncIterator[ServerSentEvent]:
        secret = self._key(required=False)
        try:
            with telemetry.http_client_span("POST", url, self.provider) as span:
                async with aconnect_sse(self._client(), "POST", url, json=body, headers=headers) as source:
                    response = source.response
                    telemetry.set_attributes(span, {"http.response.status_code": response.status_code})
                    if not response.is_success:
                        await response.aread()
                        raise status_error(
                            response.status_code,
                            _body(response),
                            response.headers,
                            provider=self.provider,
                            secret=secret,
                        )
                    async for event in source.aiter_sse():
                        yield event
        except SSEError as exc:  # an httpx.TransportError subclass, but a wrong answer, not a lost one
            raise ModelError(
                f"{self.provider} did not answer with an event stream ({exc}); check base_url",
                provider=self.provider,
                error_type="invalid_response",
            ) from exc
        except httpx.TransportError as exc:
            raise self._transport_error(exc, secret) from exc


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text
