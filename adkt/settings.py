"""The CLI's own knobs, read from the environment in one place.

Temporal's connection settings are not here: `adkt.client.connect` reads them with Temporal's
envconfig (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS, profiles in temporal.toml), and
`configured_temporal_address` asks the same loader whether an address is configured at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Settings", "configured_temporal_address"]


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
    """

    database_url: str | None = None
    adk_dir: Path = Path(".adk")
    task_queue: str | None = None
    debug: bool = False
    model: str | None = None

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        return cls(
            database_url=env.get("ADK_DATABASE_URL") or None,
            adk_dir=Path(env.get("ADK_DIR") or ".adk"),
            task_queue=env.get("ADK_TASK_QUEUE") or None,
            debug=(env.get("ADK_DEBUG") or "").strip().lower() in ("1", "true", "yes", "on"),
            model=env.get("ADK_MODEL") or None,
        )


def configured_temporal_address() -> str | None:
    """The Temporal address set by TEMPORAL_ADDRESS or an envconfig profile, else None."""
    from temporalio.envconfig import ClientConfig

    return ClientConfig.load_client_connect_config().get("target_host") or None
