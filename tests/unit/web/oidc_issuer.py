"""A real OIDC issuer on loopback for the web security tests (the `issuer` fixture, conftest.py): a discovery document and a JWKS served
by uvicorn, RSA keys made with ``cryptography``, tokens signed with them. Verification in the tests
goes through the same HTTP fetch and signature check as in production; nothing is mocked."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import jwt
import pytest_asyncio
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adkt.web.serve import bind

AUDIENCE = "adkt-api"


_KEYS: list[rsa.RSAPrivateKey] = []
_next_key = 0


def _rsa() -> rsa.RSAPrivateKey:
    """A key none of the last few rotations used: made once per test session (a 2048-bit key takes
    50-150 ms here, and every issuer makes one), then taken in turn."""
    global _next_key
    if len(_KEYS) < 8:
        _KEYS.append(rsa.generate_private_key(public_exponent=65537, key_size=2048))
        return _KEYS[-1]
    _next_key = (_next_key + 1) % len(_KEYS)
    return _KEYS[_next_key]


@dataclass
class Issuer:
    """An OIDC issuer: ``token(sub, ...)`` signs a JWT with its current key; ``rotate()`` publishes a
    new key and signs with it; ``down`` makes its endpoints answer 503."""

    url: str = ""
    keys: dict[str, rsa.RSAPrivateKey] = field(default_factory=dict)
    current: str = ""
    jwks_requests: int = 0
    discovery_requests: int = 0
    down: bool = False

    def rotate(self, *, keep_old: bool = True) -> str:
        kid = uuid.uuid4().hex[:8]
        if not keep_old:
            self.keys.clear()
        self.keys[kid] = _rsa()
        self.current = kid
        return kid

    def jwks(self) -> dict[str, Any]:
        published = []
        for kid, key in self.keys.items():
            jwk = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
            published.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": published}

    def token(
        self, sub: str | None, *, roles: list[str] | str | None = None, aud: str = AUDIENCE, iss: str | None = None,
        expires_in: float = 300, kid: str | None = None, key: rsa.RSAPrivateKey | None = None,
        algorithm: str = "RS256", **claims: Any,
    ) -> str:  # fmt: skip
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": iss or self.url,
            "aud": aud,
            "iat": now,
            "exp": now + int(expires_in),
            **claims,
        }
        if sub is not None:
            body["sub"] = sub
        if roles is not None:
            body["roles"] = roles
        kid = kid or self.current
        return jwt.encode(body, key or self.keys[self.current], algorithm=algorithm, headers={"kid": kid})


@pytest_asyncio.fixture
async def issuer() -> AsyncIterator[Issuer]:
    """An issuer of the test's own: it may rotate keys or go down."""
    async with running_issuer() as state:
        yield state


@contextlib.asynccontextmanager
async def running_issuer() -> AsyncIterator[Issuer]:
    """An issuer served until the block ends (starting and stopping uvicorn takes about 0.3 s: tests
    that only sign tokens share one, see test_access_by_user.py)."""
    state = Issuer()
    state.rotate()

    async def discovery(request: Request) -> Response:
        state.discovery_requests += 1
        if state.down:
            return JSONResponse({"error": "down"}, status_code=503)
        return JSONResponse({"issuer": state.url, "jwks_uri": f"{state.url}/keys"})

    async def keys(request: Request) -> Response:
        state.jwks_requests += 1
        if state.down:
            return JSONResponse({"error": "down"}, status_code=503)
        return JSONResponse(state.jwks())

    app = Starlette(routes=[Route("/.well-known/openid-configuration", discovery), Route("/keys", keys)])
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
        state.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        yield state
    finally:
        server.should_exit = True
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 10)
        sock.close()
