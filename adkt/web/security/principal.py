"""Who a request is, as the web app's routes see it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from starlette.requests import HTTPConnection

from adk_core.errors import AdkError

PRINCIPAL_KEY = "adk.principal"
"""Where the authentication middleware puts the request's Principal in the ASGI scope."""

Via = Literal["loopback", "insecure", "api_key", "oidc"]


@dataclass(frozen=True)
class Principal:
    """The caller. ``user`` is the user id they act as (None: the developer on loopback, or anyone with
    ``--insecure``, who are operators). An operator reaches every user's data, the simulator and eval
    runs; anyone else only their own user's sessions, pending requests and streams."""

    user: str | None
    operator: bool
    via: Via

    def describe(self) -> str:
        role = "an operator" if self.operator else "not an operator"
        who = f"user {self.user!r}" if self.user is not None else "no user"
        return f"{who} ({role}, via {self.via.replace('_', ' ')})"


class AuthError(AdkError):
    """A request the web app refuses for who sent it: 401 (no or bad credentials) or 403 (not allowed)."""

    status = 401
    kind = "Unauthenticated"


class ForbiddenError(AuthError):
    status = 403
    kind = "Forbidden"


class IssuerUnavailableError(AuthError):
    """The OIDC issuer's keys could not be fetched: the token can be neither accepted nor refused."""

    status = 503
    kind = "IssuerUnavailable"


def principal_of(connection: HTTPConnection) -> Principal:
    """The request's Principal, set by the app's authentication middleware (adkt/web/security)."""
    principal = connection.scope.get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):
        raise RuntimeError(
            "no Principal on the request: build the app with create_site/create_app, which install "
            "the authentication middleware"
        )
    return principal


def require_operator(principal: Principal, what: str) -> None:
    """Refuse ``what`` (e.g. "the simulator's API") to a caller without the operator role."""
    if not principal.operator:
        raise ForbiddenError(
            f"{what} needs the operator role; you are {principal.describe()}. Use an API key configured "
            "as user:key:operator, or a token whose roles claim holds the operator role (docs/security.md)"
        )
