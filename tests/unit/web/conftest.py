"""Fixtures of the web tests: a real OIDC issuer on loopback (oidc_issuer.py)."""

from tests.unit.web.oidc_issuer import issuer

__all__ = ["issuer"]
