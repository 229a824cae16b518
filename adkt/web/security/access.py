"""Who may reach the web app, decided once when it starts: the Host allowlist, how callers prove who
they are (API keys, OIDC tokens) and who a caller without credentials is.

The rule (docs/security.md): on a loopback address with no authentication configured, the one
developer at the keyboard is an operator, as before. With keys or OIDC configured, every data route
needs credentials. A server on any other address without authentication refuses to start unless
``--insecure`` says so on purpose.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from starlette.middleware import Middleware

from adk_core.errors import ConfigurationError
from adkt.settings import WebSettings

from ._authn import Authenticate
from ._guard import LOOPBACK_HOSTS, CrossSiteGuard, HostAllowlist
from .keys import ApiKeys
from .oidc import OidcVerifier
from .principal import Principal

LOCAL_DEVELOPER = Principal(user=None, operator=True, via="loopback")
ANYONE = Principal(user=None, operator=True, via="insecure")

WILDCARD_ADDRESSES = ("0.0.0.0", "::", "")


@dataclass(frozen=True)
class WebAccess:
    """What the app's middleware enforces. Build it with ``WebAccess.local()`` (loopback, no auth) or
    ``web_access(...)`` (from the command line and the environment)."""

    hosts: HostAllowlist
    keys: ApiKeys | None = None
    oidc: OidcVerifier | None = None
    anonymous: Principal | None = LOCAL_DEVELOPER
    """Who a caller is when neither keys nor OIDC are configured (with them, nobody is anonymous)."""

    @classmethod
    def local(cls, extra_hosts: Iterable[str] = ()) -> WebAccess:
        """Loopback only, no authentication: the single developer on this machine."""
        return cls(HostAllowlist([*LOOPBACK_HOSTS, *extra_hosts]))

    @property
    def authenticated(self) -> bool:
        return self.keys is not None or self.oidc is not None

    def middleware(self) -> Sequence[Middleware]:
        """The app's middleware, outermost first: the cross-site guard before anything reads the
        request, then authentication."""
        anonymous = None if self.authenticated else self.anonymous
        return [
            Middleware(CrossSiteGuard, hosts=self.hosts),
            Middleware(Authenticate, keys=self.keys, oidc=self.oidc, anonymous=anonymous),
        ]

    def describe(self) -> str:
        """One line for the console: how callers are authenticated."""
        ways = [f"{len(self.keys)} API key(s)"] if self.keys is not None else []
        if self.oidc is not None:
            ways.append(f"OIDC tokens from {self.oidc.issuer} for {self.oidc.audience!r}")
        if ways:
            return "authentication: " + ", ".join(ways)
        if self.anonymous is not None and self.anonymous.via == "insecure":
            return "NO AUTHENTICATION (--insecure): anyone who reaches this port is an operator"
        return "no authentication (loopback only: the developer on this machine)"


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def default_hosts(bind_host: str) -> list[str]:
    """The loopback names and the bound address (unless it is a wildcard such as 0.0.0.0)."""
    hosts = list(LOOPBACK_HOSTS)
    if bind_host.strip().strip("[]") not in WILDCARD_ADDRESSES:
        hosts.append(bind_host.strip())
    return hosts


def web_access(
    bind_host: str,
    settings: WebSettings | None = None,
    *,
    allowed_hosts: Iterable[str] = (),
    insecure: bool = False,
) -> WebAccess:
    """The access rules for a server bound to ``bind_host``: the Host allowlist (loopback names, the
    bound address, ``settings.allowed_hosts`` and ``allowed_hosts``), the API keys and OIDC issuer of
    ``settings``. Binding beyond loopback without either is refused unless ``insecure``."""
    settings = settings or WebSettings()
    keys, oidc = _api_keys(settings), _oidc(settings)
    loopback = is_loopback(bind_host)
    if keys is None and oidc is None and not loopback and not insecure:
        raise ConfigurationError(
            f"refusing to serve on {bind_host!r} without authentication: anyone who reaches it could read every "
            "conversation and run the agents' tools. Configure API keys (ADK_API_KEYS=user:key[:operator],... or "
            "ADK_API_KEYS_FILE) or OIDC (ADK_OIDC_ISSUER and ADK_OIDC_AUDIENCE); or bind --host 127.0.0.1; or, "
            "on a network you trust completely, pass --insecure (docs/security.md)"
        )
    extra = [h for h in [*settings.allowed_hosts, *allowed_hosts] if h.strip()]
    for name in extra:
        if "/" in name or " " in name.strip():
            raise ConfigurationError(
                f"{name!r} is not a host name; --allowed-host and ADK_ALLOWED_HOSTS take names such as "
                "app.example.com, 192.168.1.20, .example.com (a domain and its subdomains) or *"
            )
    anonymous = LOCAL_DEVELOPER if loopback else ANYONE
    return WebAccess(HostAllowlist([*default_hosts(bind_host), *extra]), keys, oidc, anonymous)


def _api_keys(settings: WebSettings) -> ApiKeys | None:
    found = []
    if settings.api_keys:
        found.append(ApiKeys.parse(settings.api_keys, source="ADK_API_KEYS"))
    if settings.api_keys_file is not None:
        found.append(ApiKeys.from_file(settings.api_keys_file))
    if not found:
        return None
    return found[0] if len(found) == 1 else ApiKeys.merge(found)


def _oidc(settings: WebSettings) -> OidcVerifier | None:
    if settings.oidc_issuer is None:
        if settings.oidc_audience or settings.oidc_jwks_url:
            raise ConfigurationError(
                "ADK_OIDC_AUDIENCE or ADK_OIDC_JWKS_URL is set without ADK_OIDC_ISSUER: set the issuer whose "
                "tokens to accept (its iss), or unset them"
            )
        return None
    return OidcVerifier(
        settings.oidc_issuer, settings.oidc_audience or "", jwks_url=settings.oidc_jwks_url,
        roles_claim=settings.oidc_roles_claim, operator_role=settings.oidc_operator_role,
    )  # fmt: skip
