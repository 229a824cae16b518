"""OIDC bearer tokens: a JWT is accepted when its signature checks against the issuer's published keys
(JWKS) and its ``iss``, ``aud`` and ``exp`` are right. Its ``sub`` is the user; the roles claim (default
``roles``: a list, or a space-separated string) says whether it is an operator.

The keys are fetched over HTTP(S) (the issuer's discovery document names them, or ADK_OIDC_JWKS_URL)
and cached for ``cache_seconds``. A token signed with a key id the cache lacks (the issuer rotated)
refetches at most once per ``min_refresh_seconds``, so a flood of tokens with made-up key ids cannot
make this server hammer the issuer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx
import jwt

from adk_core.errors import ConfigurationError, InvalidInputError
from adk_core.ids import validate_id

from .principal import AuthError, IssuerUnavailableError, Principal

log = logging.getLogger("adkt.web.security")

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Asymmetric algorithms only: ``none`` and the HMAC ones (a public key misused as a shared secret) never verify."""
LEEWAY_SECONDS = 30
KEY_ALGORITHMS = {"RSA": ALGORITHMS[:6], "EC": ("ES256", "ES384", "ES512"), "OKP": ("EdDSA",)}
"""The algorithms each kind of key (JWK ``kty``) verifies. PyJWT handed a key of another kind raises
TypeError or ValueError rather than a token error, so a token's ``alg`` is checked against its key first."""


class OidcVerifier:
    """Checks bearer tokens of one issuer for one audience."""

    def __init__(
        self, issuer: str, audience: str, *, jwks_url: str | None = None, roles_claim: str = "roles",
        operator_role: str = "operator", algorithms: Sequence[str] = ALGORITHMS, cache_seconds: float = 600.0,
        min_refresh_seconds: float = 30.0, timeout_seconds: float = 5.0,
    ) -> None:  # fmt: skip
        if not issuer.startswith(("https://", "http://")):
            raise ConfigurationError(
                f"ADK_OIDC_ISSUER {issuer!r} is not a URL; give the issuer's https:// URL"
            )
        if not audience:
            raise ConfigurationError(
                "ADK_OIDC_ISSUER is set without ADK_OIDC_AUDIENCE: set the audience (client id or API identifier) "
                "your tokens are issued for; tokens for other audiences must not be accepted"
            )
        bad = [a for a in algorithms if a not in ALGORITHMS]
        if bad:
            raise ConfigurationError(
                f"OIDC algorithms {bad} are not accepted; use asymmetric ones from {ALGORITHMS}"
            )
        self.issuer, self.audience, self.jwks_url = issuer, audience, jwks_url
        self.roles_claim, self.operator_role, self.algorithms = roles_claim, operator_role, list(algorithms)
        self.cache_seconds, self.min_refresh_seconds, self.timeout = (
            cache_seconds,
            min_refresh_seconds,
            timeout_seconds,
        )
        self._keys: jwt.PyJWKSet | None = None
        self._published: dict[str, str] = {}  # kid -> the alg the issuer publishes for it, when it does
        self._fetched_at = float("-inf")
        self._error: str | None = None
        self._lock = asyncio.Lock()
        self.fetches = 0  # how many times the keys were fetched (the bounded refresh is tested by it)

    async def authenticate(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as e:
            raise AuthError(
                f"the bearer token is not a JWT ({e}); send an OIDC access token or an API key"
            ) from None
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise AuthError(
                f"the token is signed with {algorithm!r}; this server accepts {', '.join(self.algorithms)}"
            )
        key = await self._key(header.get("kid"))
        kid = key.key_id
        published = self._published.get(kid) if kid is not None else None
        fits = algorithm == published if published else algorithm in KEY_ALGORITHMS.get(key.key_type or "", ())
        if not fits:
            raise AuthError(
                f"the token is signed with {algorithm!r}, which does not fit the issuer's key {kid!r} "
                f"({key.key_type}" + (f", for {published}" if published else "") + "); get a token from the issuer"
            )
        try:
            claims = jwt.decode(
                token, key.key, algorithms=[algorithm], audience=self.audience, issuer=self.issuer,
                leeway=LEEWAY_SECONDS, options={"require": ["exp", "iss", "aud", "sub"]},
            )  # fmt: skip
        except jwt.ExpiredSignatureError:
            raise AuthError("the token has expired; get a new one from the issuer") from None
        except jwt.InvalidAudienceError:
            raise AuthError(f"the token is not for this server (its aud is not {self.audience!r})") from None
        except jwt.InvalidIssuerError:
            raise AuthError(f"the token was not issued by {self.issuer!r}") from None
        except jwt.InvalidTokenError as e:
            raise AuthError(f"the token is not valid: {e}") from None
        except (jwt.PyJWTError, TypeError, ValueError) as e:  # anything else a made-up token trips in PyJWT: 401, not 500
            raise AuthError(f"the token cannot be verified with the issuer's key: {e}") from None
        try:
            user = validate_id("user id", claims["sub"])
        except InvalidInputError as e:
            raise AuthError(f"the token's subject cannot be a user id here: {e}") from None
        return Principal(
            user=user, operator=self.operator_role in _roles(claims.get(self.roles_claim)), via="oidc"
        )

    async def _key(self, kid: str | None) -> jwt.PyJWK:
        now = time.monotonic()
        if self._keys is None or now - self._fetched_at > self.cache_seconds:
            await self._refresh(force=True)
        key = self._find(kid)
        if key is None and time.monotonic() - self._fetched_at >= self.min_refresh_seconds:
            await self._refresh(force=False)  # the issuer may have rotated its keys
            key = self._find(kid)
        if key is None:
            raise AuthError(
                f"the token's key id {kid!r} is not among the issuer's published keys; get a fresh token"
                if kid
                else "the token names no key id (kid) and the issuer publishes several keys"
            )
        return key

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        keys = self._keys.keys if self._keys is not None else []
        if kid is None:
            return keys[0] if len(keys) == 1 else None
        return next((k for k in keys if k.key_id == kid), None)

    async def _refresh(self, *, force: bool) -> None:
        async with self._lock:
            age = time.monotonic() - self._fetched_at
            if self._keys is not None and age < (self.cache_seconds if force else self.min_refresh_seconds):
                return  # another request refreshed them while this one waited
            if self._keys is None and self._error is not None and age < self.min_refresh_seconds:
                raise IssuerUnavailableError(
                    self._error
                )  # the issuer failed just now: do not ask it again yet
            try:
                jwks = await self._fetch_jwks()
                self._keys = jwt.PyJWKSet.from_dict(jwks)
                self._published = _published_algorithms(jwks)
            except (httpx.HTTPError, ValueError, jwt.PyJWKSetError, KeyError) as e:
                self._fetched_at = time.monotonic()  # a failing issuer is asked again only after the bound
                if self._keys is not None:
                    log.warning("could not refresh the OIDC issuer's keys (%s); keeping the cached ones", e)
                    return
                self._error = (
                    f"could not fetch the OIDC issuer's keys ({type(e).__name__}: {e}); is {self.issuer} reachable "
                    "from this server (ADK_OIDC_ISSUER, ADK_OIDC_JWKS_URL)? Try again when it is"
                )
                raise IssuerUnavailableError(self._error) from None
            self._fetched_at = time.monotonic()
            self._error = None
            self.fetches += 1

    async def _fetch_jwks(self) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as http:
            url = self.jwks_url
            if url is None:
                discovery = await http.get(self.issuer.rstrip("/") + "/.well-known/openid-configuration")
                discovery.raise_for_status()
                document = discovery.json()
                if document.get("issuer") != self.issuer:
                    raise ValueError(
                        f"the discovery document names issuer {document.get('issuer')!r}, not {self.issuer!r} "
                        "(ADK_OIDC_ISSUER must be exactly the issuer's iss)"
                    )
                url = document["jwks_uri"]
            response = await http.get(url)
            response.raise_for_status()
            jwks = response.json()
        if not isinstance(jwks, dict):
            raise ValueError("the JWKS is not a JSON object")
        return jwks


def _published_algorithms(jwks: dict[str, Any]) -> dict[str, str]:
    """kid -> alg of the keys that name both (PyJWK guesses an alg when none is published: RS256 for any
    RSA key, which would refuse a PS256 token the issuer meant)."""
    keys = jwks.get("keys")
    entries = keys if isinstance(keys, list) else []
    return {k["kid"]: k["alg"] for k in entries
            if isinstance(k, dict) and isinstance(k.get("kid"), str) and isinstance(k.get("alg"), str)}  # fmt: skip


def _roles(claim: object) -> set[str]:
    if isinstance(claim, str):
        return set(claim.split())
    if isinstance(claim, list):
        return {r for r in claim if isinstance(r, str)}
    return set()
