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

from ._guard import LOOPBACK_HOSTS, CrossSiteGuard, HostAllowlist

WILDCARD_ADDRESSES = ("0.0.0.0", "::", "")


@dataclass(frozen=True)
class WebAccess:
    """What the app's middleware enforces. Build it with ``WebAccess.local()`` (loopback, no auth) or
    ``web_access(...)`` (from the command line and the environment)."""

    hosts: HostAllowlist

    @classmethod
    def local(cls, extra_hosts: Iterable[str] = ()) -> WebAccess:
        """Loopback only, no authentication: the single developer on this machine."""
        return cls(HostAllowlist([*LOOPBACK_HOSTS, *extra_hosts]))

    def middleware(self) -> Sequence[Middleware]:
        """The app's middleware, outermost first: the cross-site guard before anything reads the request."""
        return [Middleware(CrossSiteGuard, hosts=self.hosts)]


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


def web_access(bind_host: str, *, allowed_hosts: Iterable[str] = ()) -> WebAccess:
    """The access rules for a server bound to ``bind_host``."""
    extra = [h for h in allowed_hosts if h.strip()]
    for name in extra:
        if "/" in name or " " in name.strip():
            raise ConfigurationError(
                f"{name!r} is not a host name; --allowed-host and ADK_ALLOWED_HOSTS take names such as "
                "app.example.com, 192.168.1.20, .example.com (a domain and its subdomains) or *"
            )
    return WebAccess(HostAllowlist([*default_hosts(bind_host), *extra]))
