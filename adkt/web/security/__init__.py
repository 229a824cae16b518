"""The web app's security: the cross-site guard (Host allowlist, same-origin JSON writes), who a
request is (API keys, OIDC bearer tokens) and what they may reach. docs/security.md says who can do
what and how to configure it."""

from ._guard import CrossSiteGuard, HostAllowlist, HostGuard
from .access import WebAccess, default_hosts, is_loopback, web_access
from .keys import ApiKeys
from .oidc import OidcVerifier
from .principal import (
    AuthError,
    ForbiddenError,
    IssuerUnavailableError,
    Principal,
    principal_of,
    require_operator,
)

__all__ = [
    "ApiKeys", "AuthError", "CrossSiteGuard", "ForbiddenError", "HostAllowlist", "HostGuard", "IssuerUnavailableError",
    "OidcVerifier", "Principal", "WebAccess", "default_hosts", "is_loopback", "principal_of", "require_operator",
    "web_access",
]  # fmt: skip
