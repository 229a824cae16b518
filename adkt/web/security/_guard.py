"""The cross-site guard: one ASGI middleware in front of the whole web app.

A page on another site can make the developer's browser send "simple" requests (GET, and POST with
a ``text/plain``, form or empty body) without asking first, and DNS rebinding lets it point a name
it owns at 127.0.0.1 and then read the answers. So:

- every request must name a Host in the allowlist (loopback names and the bound address by
  default), reads included: a rebinding page sends its own name;
- a write (POST, PUT, PATCH, DELETE) from a browser must come from this origin: ``Sec-Fetch-Site``
  (when the browser sends it) is ``same-origin`` or ``none``, and ``Origin`` (when sent) is the
  request's own Host;
- a write that carries a body, and every POST, must say ``Content-Type: application/json``. A
  cross-site page cannot send that without a CORS preflight, which this server never grants.

Clients that are not browsers (curl, httpx, AdkClient-like scripts) send neither Origin nor
Sec-Fetch-Site and pass by sending JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketClose

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SAME_ORIGIN_FETCH = frozenset({"same-origin", "none"})  # none: typed in, a bookmark; never another site
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
_DEFAULT_PORTS = {"80", "443"}


class HostAllowlist:
    """Host names this server answers for: exact names (case-insensitive, ports ignored), ``.example.com``
    for that domain and its subdomains, or ``*`` for any (only behind a proxy that checks Host itself)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(dict.fromkeys(_bare(n) for n in names if n.strip()))
        if not self.names:
            raise ValueError("the Host allowlist is empty; keep at least the loopback names")

    def allows(self, hostname: str) -> bool:
        name = hostname.lower().rstrip(".")
        for allowed in self.names:
            if allowed == "*" or allowed == name:
                return True
            if allowed.startswith(".") and (name == allowed[1:] or name.endswith(allowed)):
                return True
        return False

    def __repr__(self) -> str:
        return f"HostAllowlist({', '.join(self.names)})"


class CrossSiteGuard:
    """Refuses DNS-rebinding Hosts on every route and cross-site or non-JSON writes (module docstring)."""

    def __init__(self, app: ASGIApp, hosts: HostAllowlist) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.check(scope.get("method", "GET"), Headers(scope=scope))
        if refusal is not None:
            status, kind, message = refusal
            await refuse(scope, receive, send, status, {"error": kind, "message": message})
            return
        await self.app(scope, receive, send)

    def check(self, method: str, headers: Headers) -> tuple[int, str, str] | None:
        """(status, error kind, message) when the request is refused, else None."""
        refused = host_refusal(self.hosts, headers)
        if refused is not None:
            return refused
        host = headers.get("host", "")
        if method.upper() in SAFE_METHODS:
            return None
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site.lower() not in SAME_ORIGIN_FETCH:
            return (
                403,
                "CrossSiteRequest",
                (
                    f"refused a {method} sent by a page on another site (Sec-Fetch-Site: {fetch_site}); this server "
                    "takes writes only from its own pages and from clients that are not browsers"
                ),
            )
        origin = headers.get("origin")
        if origin is not None and _origin_netloc(origin) != _netloc(host):
            return (
                403,
                "CrossSiteRequest",
                (
                    f"refused a {method} from origin {origin!r}: this server takes writes only from its own origin "
                    f"({host}) and from clients that are not browsers (no Origin header)"
                ),
            )
        has_body = headers.get("content-length", "0") not in ("", "0") or "transfer-encoding" in headers
        if method.upper() == "POST" or has_body:
            content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if content_type != "application/json":
                got = f"Content-Type {content_type!r}" if content_type else "no Content-Type"
                return (
                    415,
                    "UnsupportedMediaType",
                    (
                        f"a {method} here must send JSON with Content-Type: application/json (got {got}; an empty "
                        "body is {}). Other types are refused because a page on another site can send them"
                    ),
                )
        return None


class HostGuard:
    """The Host allowlist alone, for a server that other origins call on purpose with CORS (the codec
    server: the Temporal UI POSTs to it from its own origin), where CrossSiteGuard's same-origin rule
    for writes would refuse its one client. DNS rebinding is still refused: the rebinding page's
    requests carry its own name as Host."""

    def __init__(self, app: ASGIApp, hosts: HostAllowlist) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = host_refusal(self.hosts, Headers(scope=scope)) if scope["type"] in ("http", "websocket") else None
        if refused is not None:
            status, kind, message = refused
            await refuse(scope, receive, send, status, {"error": kind, "message": message})
            return
        await self.app(scope, receive, send)


def host_refusal(hosts: HostAllowlist, headers: Headers) -> tuple[int, str, str] | None:
    """(status, error kind, message) when the request's Host is not one ``hosts`` allows, else None."""
    hostname = _hostname(headers.get("host", ""))
    if not hostname:
        return 400, "HostNotAllowed", "the request has no Host header; send one naming this server"
    if hosts.allows(hostname):
        return None
    return (
        400,
        "HostNotAllowed",
        (
            f"this server does not answer for host {hostname!r} (a guard against DNS rebinding); it answers "
            f"for {', '.join(hosts.names)}. If {hostname!r} is a name of this server, allow it: --allowed-host "
            f"{hostname} or ADK_ALLOWED_HOSTS={hostname} (docs/security.md)"
        ),
    )


async def refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    body: dict[str, str],
    headers: dict[str, str] | None = None,
) -> None:
    """Answer ``body`` as JSON with ``status``; a WebSocket is closed (policy violation) with the message."""
    if scope["type"] == "websocket":
        await WebSocketClose(code=1008, reason=body["message"][:120])(scope, receive, send)
        return
    await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)


def _bare(name: str) -> str:
    name = name.strip().lower()
    return name[1:-1] if name.startswith("[") and name.endswith("]") else name


def _hostname(host: str) -> str:
    """The name in a Host header, without its port or IPv6 brackets."""
    host = host.strip()
    if host.startswith("["):
        return host[1:].split("]", 1)[0].lower()
    return host.rsplit(":", 1)[0].lower().rstrip(".") if host.count(":") == 1 else host.lower().rstrip(".")


def _netloc(host: str) -> str:
    """host[:port] lower-cased, the default ports dropped (a TLS proxy may serve on 443 what runs on 80)."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]") + 1
        name, port = host[:end], host[end + 1 :] if host[end : end + 1] == ":" else ""
    elif host.count(":") == 1:
        name, port = host.split(":")
    else:
        name, port = host, ""
    return name if port in ("", *_DEFAULT_PORTS) else f"{name}:{port}"


def _origin_netloc(origin: str) -> str | None:
    if origin.strip().lower() == "null":  # sandboxed frames, file: pages, some redirects
        return None
    return _netloc(urlsplit(origin.strip()).netloc)
