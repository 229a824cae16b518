"""OpenApiToolset: the operations of an OpenAPI 3.x document as tools.

The document is read once, when the toolset is built, so the tools are the same in every process and
every replay: listing them needs no call. Each call is a tool call through the runtime (under
Temporal an ``adk.run_tool`` activity, retried for OpenApiUnavailableError only) made with this
toolset's httpx client, and carries the call's idempotency key as the ``Idempotency-Key`` header.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from ...errors import ConfigurationError
from ...models.base import FunctionDeclaration
from ..base import BaseTool
from ..execution import ToolExecution, remote_tool_execution
from ._auth import Auth, Authenticator
from ._errors import OpenApiCallError, OpenApiUnavailableError
from ._spec import BODY, Operation, is_json, read_operations

if TYPE_CHECKING:
    from ...agents.context import ReadonlyContext, ToolContext

DEFAULT_EXECUTION = remote_tool_execution("OpenApiCallError")
IDEMPOTENCY_HEADER = "Idempotency-Key"


class OpenApiToolset:
    """One tool per operation of an OpenAPI 3.x document.

    Args:
        spec: the document, as a dict or its JSON (or YAML, with pyyaml installed) text.
        base_url: where the API is (default: the document's first ``servers`` URL).
        name: names the toolset in errors.
        auth: ``ApiKeyAuth``, ``BearerAuth`` or ``OAuth2ClientCredentials``, applied to every call.
        allow / deny: operation (tool) names or ``fnmatch`` patterns to expose / hide.
        headers: sent with every call.
        timeout: of one HTTP request.
        execution: how durable runs run each call (default ``DEFAULT_EXECUTION``).
        http_client: an httpx client to use instead of the toolset's own (its owner closes it).

    Each operation's arguments are its parameters by name, plus ``body`` for a JSON request body
    (any JSON media type) or a url-encoded form. An argument given as null is left out.
    """

    def __init__(
        self,
        spec: Mapping[str, Any] | str,
        *,
        base_url: str | None = None,
        name: str = "openapi",
        auth: Auth | None = None,
        allow: Collection[str] | None = None,
        deny: Collection[str] = (),
        headers: Mapping[str, str] | None = None,
        timeout: timedelta = timedelta(seconds=30),
        execution: ToolExecution | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        doc = _load(spec)
        servers = doc.get("servers") or []
        url = base_url or (_server_url(servers[0]) if servers else None)
        if not url or not url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"OpenApiToolset {name!r} needs an absolute base_url= (the document's servers give {url!r})"
            )
        self.name = name
        self.base_url = url.rstrip("/")
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.execution = execution or DEFAULT_EXECUTION
        self._auth = Authenticator(auth, (doc.get("components") or {}).get("securitySchemes") or {}, self.base_url)
        self._http_client = http_client
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}
        operations = read_operations(doc)
        self.tools = [
            RestApiTool(self, op) for op in operations
            if (allow is None or any(fnmatch.fnmatchcase(op.name, p) for p in allow))
            and not any(fnmatch.fnmatchcase(op.name, p) for p in deny)
        ]  # fmt: skip
        self._by_name = {t.name: t for t in self.tools}

    async def get_tools(self, readonly_context: ReadonlyContext) -> list[BaseTool]:
        return list(self.tools)

    def tool_named(self, name: str) -> BaseTool | None:
        return self._by_name.get(name)

    def client(self) -> httpx.AsyncClient:
        """The toolset's HTTP client on the running event loop (one per loop, reused by every call)."""
        if self._http_client is not None:
            return self._http_client
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            for old in [known for known in list(self._clients) if known.is_closed()]:
                self._clients.pop(old, None)
            client = self._clients[loop] = httpx.AsyncClient(timeout=self.timeout.total_seconds())
        return client

    async def close(self) -> None:
        """Close the HTTP client this toolset opened on the running loop (a worker does it when it stops)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    def __repr__(self) -> str:
        return f"OpenApiToolset(name={self.name!r}, tools={sorted(self._by_name)})"


class RestApiTool(BaseTool):
    """One operation of an OpenAPI document."""

    def __init__(self, toolset: OpenApiToolset, operation: Operation) -> None:
        super().__init__(name=operation.name, description=operation.description, execution=toolset.execution)
        self.toolset = toolset
        self.operation = operation

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(name=self.name, description=self.description, parameters=self.operation.parameters)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        toolset, op = self.toolset, self.operation
        request = self._request(args)
        request["headers"][IDEMPOTENCY_HEADER] = tool_context.idempotency_key
        client = toolset.client()
        await toolset._auth.apply(client, request)  # noqa: SLF001
        self._cookies_as_header(request)
        response = await self._send(client, request)
        if response.status_code == 401 and toolset._auth.refused(request):  # noqa: SLF001
            # A token revoked before its expiry: once more with a new one (a 401 changed nothing).
            await toolset._auth.apply(client, request)  # noqa: SLF001
            response = await self._send(client, request)
        return self._result(response, f"{op.method} {request['url']}")

    async def _send(self, client: httpx.AsyncClient, request: dict[str, Any]) -> httpx.Response:
        op = self.operation
        target = f"{op.method} {request['url']}"
        try:
            return await client.request(op.method, **request)
        except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as error:
            raise OpenApiCallError(f"{target} cannot be sent: {type(error).__name__}: {error}") from error
        except httpx.TransportError as error:
            raise OpenApiUnavailableError(f"{target} failed: {type(error).__name__}: {error}") from error
        except Exception as error:
            # The request itself is unusable (httpx.InvalidURL for a URL too long, a header value
            # that is not ASCII, an invalid port ...): the same request fails the same way. A durable
            # run retries every error type but OpenApiCallError, so it must become one.
            raise OpenApiCallError(f"{target} cannot be sent: {type(error).__name__}: {error}") from error

    @staticmethod
    def _result(response: httpx.Response, target: str) -> Any:
        status = response.status_code
        if status in (408, 429) or status >= 500:
            raise OpenApiUnavailableError(f"{target} answered {status}: {_snippet(response)}")
        if not response.is_success:
            raise OpenApiCallError(f"{target} answered {status}: {_snippet(response)}")
        if not response.content:
            return {"status": status}
        try:
            body = response.json()
        except ValueError:
            return {"result": response.text}
        return body if isinstance(body, dict) else {"result": body}

    def _request(self, args: dict[str, Any]) -> dict[str, Any]:
        op = self.operation
        path = op.path
        request: dict[str, Any] = {"headers": dict(self.toolset.headers), "params": {}, "cookies": {}}
        for name, value in args.items():
            where = op.locations.get(name)
            if where is None:
                raise OpenApiCallError(f"{self.name} takes no argument {name!r}; it takes {sorted(op.locations)}")
            if value is None:
                # Models send null for an argument they mean to leave out: not the text "null". A
                # required one left out this way is reported missing below.
                continue
            if where == "path":
                path = path.replace("{" + name + "}", _path_segment(value))
            elif where == BODY:
                self._body(request, value)
            else:
                target = {"query": "params", "header": "headers", "cookie": "cookies"}[where]
                request[target][name] = value if isinstance(value, str | list) else json.dumps(value)
        missing = [n for n in op.parameters.get("required", []) if args.get(n) is None]
        if missing:
            raise OpenApiCallError(f"{self.name} needs the argument(s) {missing}")
        request["url"] = self.toolset.base_url + path
        return request

    def _body(self, request: dict[str, Any], value: Any) -> None:
        media_type = self.operation.body_media_type or "application/json"
        if not any(k.lower() == "content-type" for k in request["headers"]):
            request["headers"]["Content-Type"] = media_type  # as documented: application/merge-patch+json ...
        if is_json(media_type):
            request["json"] = value
            return
        # A url-encoded form: OpenAPI's default encoding sends a list as repeated fields and an
        # object (or a list's objects) as JSON text.
        if not isinstance(value, dict):
            raise OpenApiCallError(
                f"{self.name} takes its form body as an object of fields, not {type(value).__name__}"
            )
        request["data"] = {
            k: ([_form_value(x) for x in v] if isinstance(v, list) else _form_value(v))
            for k, v in value.items() if v is not None
        }  # fmt: skip

    @staticmethod
    def _cookies_as_header(request: dict[str, Any]) -> None:
        # httpx deprecates per-request cookies (they would persist on the shared client): one header instead.
        cookies = request.pop("cookies")
        if cookies:
            request["headers"]["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())


def _load(spec: Mapping[str, Any] | str) -> dict[str, Any]:
    if not isinstance(spec, str):
        return dict(spec)
    try:
        loaded = json.loads(spec)
    except ValueError:
        try:
            import yaml  # type: ignore[import-untyped]  # noqa: PLC0415  (optional: only for YAML documents)
        except ImportError as error:
            raise ConfigurationError("this OpenAPI document is not JSON; install pyyaml to read YAML") from error
        loaded = yaml.safe_load(spec)
    if not isinstance(loaded, dict):
        raise ConfigurationError("an OpenAPI document is a JSON/YAML object")
    return loaded


def _server_url(server: Mapping[str, Any]) -> str | None:
    """A server object's URL with each ``{variable}`` replaced by its default."""
    url = server.get("url")
    if not isinstance(url, str):
        return None
    for variable, spec in (server.get("variables") or {}).items():
        if isinstance(spec, Mapping) and "default" in spec:
            url = url.replace("{" + variable + "}", str(spec["default"]))
    return url


def _path_segment(value: Any) -> str:
    """``value`` as one path segment. ``quote`` leaves ``.`` alone, and httpx removes ``.`` and ``..``
    segments (RFC 3986), so ``..`` would lead to another endpoint: those go percent-encoded."""
    segment = quote(str(value), safe="")
    return segment.replace(".", "%2E") if segment in (".", "..") else segment


def _form_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)  # numbers as written, true/false, objects as JSON


def _snippet(response: httpx.Response) -> str:
    return response.text[:500] or "(empty body)"


__all__ = ["DEFAULT_EXECUTION", "IDEMPOTENCY_HEADER", "OpenApiToolset", "RestApiTool"]
