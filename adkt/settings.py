"""The CLI's own knobs, read from the environment in one place.

Temporal's connection settings are not here: `adkt.client.connect` reads them with Temporal's
envconfig (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS, profiles in temporal.toml), and
`configured_temporal_address` asks the same loader whether an address is configured at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Settings", "WebSettings", "configured_temporal_address"]


@dataclass(frozen=True)
class WebSettings:
    """Who may reach the web app and API (`adkt web/api/sim/dev`; docs/security.md).

    Attributes:
        allowed_hosts: Host names served besides the loopback names and the bound address
            (ADK_ALLOWED_HOSTS, comma-separated; `--allowed-host` adds more).
        api_keys: API keys as ``user:key`` or ``user:key:operator``, comma-separated (ADK_API_KEYS).
        api_keys_file: a file of the same entries, one a line, ``#`` comments (ADK_API_KEYS_FILE).
        oidc_issuer: the OIDC issuer whose bearer tokens are accepted (ADK_OIDC_ISSUER).
        oidc_audience: the ``aud`` those tokens must carry (ADK_OIDC_AUDIENCE; required with an issuer).
        oidc_jwks_url: where the issuer's keys are (ADK_OIDC_JWKS_URL; default: its discovery document).
        oidc_roles_claim: the claim listing a token's roles (ADK_OIDC_ROLES_CLAIM, default ``roles``).
        oidc_operator_role: the role that makes a caller an operator (ADK_OIDC_OPERATOR_ROLE, default ``operator``).
    """

    allowed_hosts: tuple[str, ...] = ()
    api_keys: str | None = None
    api_keys_file: Path | None = None
    oidc_issuer: str | None = None
    oidc_audience: str | None = None
    oidc_jwks_url: str | None = None
    oidc_roles_claim: str = "roles"
    oidc_operator_role: str = "operator"

    @classmethod
    def load(cls, env: Mapping[str, str]) -> WebSettings:
        return cls(
            allowed_hosts=tuple(h.strip() for h in (env.get("ADK_ALLOWED_HOSTS") or "").split(",") if h.strip()),
            api_keys=env.get("ADK_API_KEYS") or None,
            api_keys_file=Path(env["ADK_API_KEYS_FILE"]) if env.get("ADK_API_KEYS_FILE") else None,
            oidc_issuer=env.get("ADK_OIDC_ISSUER") or None,
            oidc_audience=env.get("ADK_OIDC_AUDIENCE") or None,
            oidc_jwks_url=env.get("ADK_OIDC_JWKS_URL") or None,
            oidc_roles_claim=env.get("ADK_OIDC_ROLES_CLAIM") or "roles",
            oidc_operator_role=env.get("ADK_OIDC_OPERATOR_ROLE") or "operator",
        )


@dataclass(frozen=True)
class Settings:
    """Settings of the `adkt` commands.

    Attributes:
        database_url: the sessions database (ADK_DATABASE_URL); None means "use the embedded one".
        adk_dir: where embedded servers keep their data and `dev.json` (ADK_DIR, default `.adk`).
        task_queue: one Temporal task queue for every app (ADK_TASK_QUEUE); None, the default, gives
            each app its own queue (workflows.app_task_queue), so workers only get their apps' runs.
        debug: show tracebacks instead of one-line errors (ADK_DEBUG=1, or `adkt --debug`).
        model: ADK_MODEL, which the example apps (and those `adkt create` makes) read when imported.
        web: who may reach the web app and API (WebSettings).
    """

    database_url: str | None = None
    adk_dir: Path = Path(".adk")
    task_queue: str | None = None
    debug: bool = False
    model: str | None = None
    web: WebSettings = field(default_factory=WebSettings)

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        return cls(
            database_url=env.get("ADK_DATABASE_URL") or None,
            adk_dir=Path(env.get("ADK_DIR") or ".adk"),
            task_queue=env.get("ADK_TASK_QUEUE") or None,
            debug=(env.get("ADK_DEBUG") or "").strip().lower() in ("1", "true", "yes", "on"),
            model=env.get("ADK_MODEL") or None,
            web=WebSettings.load(env),
        )


def configured_temporal_address() -> str | None:
    """The Temporal address set by TEMPORAL_ADDRESS or an envconfig profile, else None."""
    from temporalio.envconfig import ClientConfig

    return ClientConfig.load_client_connect_config().get("target_host") or None
