"""The web app's security: the cross-site guard (Host allowlist, same-origin JSON writes), and who a
request is. docs/security.md says who can do what and how to configure it."""

from ._guard import CrossSiteGuard, HostAllowlist
from .access import WebAccess, default_hosts, is_loopback, web_access

__all__ = ["CrossSiteGuard", "HostAllowlist", "WebAccess", "default_hosts", "is_loopback", "web_access"]
