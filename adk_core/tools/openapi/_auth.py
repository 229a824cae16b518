"""How an OpenApiToolset authenticates: an API key, a bearer token, or OAuth2 client credentials.

Each is plain data the toolset applies to every request. Where the document already says it (the
API key's name and place, the token URL), it may be left out here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from ...errors import ConfigurationError
from ._errors import OpenApiCallError, OpenApiUnavailableError


@dataclass(frozen=True)
class ApiKeyAuth:
    """An API key. ``name``/``location`` default to the document's ``apiKey`` security scheme."""

    key: str
    name: str | None = None
    location: Literal["header", "query", "cookie"] | None = None


@dataclass(frozen=True)
class BearerAuth:
    """``Authorization: Bearer <token>``."""

    token: str


@dataclass(frozen=True)
class OAuth2ClientCredentials:
    """OAuth2 client credentials: a token fetched from ``token_url`` (default: the document's
    ``clientCredentials`` flow) and kept until shortly before it expires."""

    client_id: str
    client_secret: str
    token_url: str | None = None
    scopes: Sequence[str] = ()
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


Auth = ApiKeyAuth | BearerAuth | OAuth2ClientCredentials


class Authenticator:
    """Applies one Auth to requests, with what the document says about it."""

    def __init__(self, auth: Auth | None, schemes: dict[str, Any], base_url: str) -> None:
        self.auth = auth
        self._lock = asyncio.Lock()
        self._api_key_where: tuple[str, str] | None = None
        self._token_url: str | None = None
        if isinstance(auth, ApiKeyAuth):
            scheme: dict[str, Any] = next((s for s in schemes.values() if s.get("type") == "apiKey"), {})
            name, location = auth.name or scheme.get("name"), auth.location or scheme.get("in")
            if not name or location not in ("header", "query", "cookie"):
                raise ConfigurationError(
                    "ApiKeyAuth needs name= and location= ('header', 'query' or 'cookie'): the document has no "
                    "apiKey security scheme to take them from"
                )
            self._api_key_where = (name, location)
        if isinstance(auth, OAuth2ClientCredentials):
            flows = [s.get("flows", {}).get("clientCredentials") for s in schemes.values() if s.get("type") == "oauth2"]
            url = auth.token_url or next((f["tokenUrl"] for f in flows if f and f.get("tokenUrl")), None)
            if not url:
                raise ConfigurationError(
                    "OAuth2ClientCredentials needs token_url=: the document has no oauth2 clientCredentials flow"
                )
            self._token_url = str(httpx.URL(base_url).join(url))

    async def apply(self, client: httpx.AsyncClient, request: dict[str, Any]) -> None:
        auth = self.auth
        if auth is None:
            return
        if isinstance(auth, BearerAuth):
            request["headers"]["Authorization"] = f"Bearer {auth.token}"
        elif isinstance(auth, ApiKeyAuth):
            assert self._api_key_where is not None
            name, location = self._api_key_where
            target = {"header": "headers", "query": "params", "cookie": "cookies"}[location]
            request[target][name] = auth.key
        else:
            request["headers"]["Authorization"] = f"Bearer {await self._token(client, auth)}"

    def refused(self, request: dict[str, Any]) -> bool:
        """After the API answered 401 to ``request``: whether sending it again may help. With OAuth2 the
        token may have been revoked before it expired: the cached one (if ``request`` carried it) is
        dropped, so the next ``apply`` fetches another."""
        auth = self.auth
        if not isinstance(auth, OAuth2ClientCredentials):
            return False
        if request["headers"].get("Authorization") == f"Bearer {auth._cache.get('token')}":
            auth._cache.clear()
        return True

    async def _token(self, client: httpx.AsyncClient, auth: OAuth2ClientCredentials) -> str:
        async with self._lock:
            cached = auth._cache.get("token")
            if cached and auth._cache["expires"] > time.monotonic():
                return str(cached)
            assert self._token_url is not None
            data = {"grant_type": "client_credentials", "client_id": auth.client_id, "client_secret": auth.client_secret}
            if auth.scopes:
                data["scope"] = " ".join(auth.scopes)
            try:
                response = await client.post(self._token_url, data=data)
            except httpx.TransportError as error:
                raise OpenApiUnavailableError(f"could not reach the token URL {self._token_url}: {error}") from error
            if response.status_code >= 500:
                raise OpenApiUnavailableError(f"the token URL {self._token_url} answered {response.status_code}")
            try:
                body = response.json() if response.content else {}
            except ValueError:  # not a token endpoint (an HTML page): refused below, not retried
                body = {}
            body = body if isinstance(body, dict) else {}
            if not response.is_success or "access_token" not in body:
                raise OpenApiCallError(
                    f"the token URL {self._token_url} refused the client credentials ({response.status_code}: "
                    f"{body.get('error', response.text[:200])}); check client_id, client_secret and scopes"
                )
            # Renewed a little early, so a token never expires on its way to the API.
            auth._cache.update(token=body["access_token"], expires=time.monotonic() + float(body.get("expires_in", 3600)) - 30)
            return str(body["access_token"])
