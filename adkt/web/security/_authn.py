"""The authentication middleware: puts the request's Principal in the scope (principal.py), or
answers 401 before any route runs. Pages and static files need no credentials (they hold no data);
every data route does, when authentication is configured."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ._guard import refuse
from .keys import ApiKeys
from .oidc import OidcVerifier
from .principal import PRINCIPAL_KEY, AuthError, Principal

PUBLIC_PATHS = ("/", "/sim", "/api/v1/openapi.json", "/.well-known/agent-card.json")
PUBLIC_PREFIXES = ("/static/", "/sim/sessions/", "/sessions/")
"""The pages (HTML, JS, CSS), the API's schema and an A2A server's agent card (adkt a2a: how to reach
it, no data). Whatever the pages show comes from the API, which checks."""


class Authenticate:
    """Resolves who the request is. With neither API keys nor OIDC, everyone is ``anonymous``."""

    def __init__(
        self, app: ASGIApp, *, keys: ApiKeys | None, oidc: OidcVerifier | None, anonymous: Principal | None
    ) -> None:
        self.app, self.keys, self.oidc, self.anonymous = app, keys, oidc, anonymous

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        try:
            principal = await self.principal(scope)
        except AuthError as e:
            headers = {"WWW-Authenticate": 'Bearer realm="adkt"'} if e.status == 401 else None
            body = {"error": e.kind, "message": str(e)}
            await refuse(scope, receive, send, e.status, body, headers)
            return
        if principal is not None:
            scope[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)

    async def principal(self, scope: Scope) -> Principal | None:
        """The caller; None for a public path without credentials (its route needs none)."""
        if self.keys is None and self.oidc is None:
            return self.anonymous
        authorization = Headers(scope=scope).get("authorization")
        if authorization is None:
            path = scope.get("path", "")
            reading = scope.get("method", "GET") in ("GET", "HEAD")  # a public path is public to read only
            if reading and (path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)):
                return None
            raise AuthError(
                "this server requires authentication: send Authorization: Bearer <API key or OIDC token> "
                "(docs/security.md)"
            )
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthError("the Authorization header must be 'Bearer <API key or OIDC token>'")
        if self.keys is not None:
            principal = self.keys.authenticate(token)
            if principal is not None:
                return principal
        if self.oidc is not None and token.count(".") == 2:
            return await self.oidc.authenticate(token)
        raise AuthError(
            "the bearer token is not a known API key"
            + (" and not a JWT" if self.oidc is not None else "")
            + "; check the key, or ask the operator for one (docs/security.md)"
        )
