"""Where the commands find Temporal and Postgres: configured, or a running `adkt dev`.

Order of precedence for each address: the command-line option, then the environment (Temporal's
envconfig for Temporal, ADK_DATABASE_URL for Postgres), then the `dev.json` a running `adkt dev`
wrote into the .adk folder. Kept free of heavy imports: `adkt sessions` uses it without Temporal.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path

from adkt.settings import Settings, configured_temporal_address

DEV_STATE_FILE = "dev.json"


@dataclass
class DevState:
    """What a running `adkt dev` tells the other commands (`.adk/dev.json`)."""

    address: str
    database_url: str
    task_queue: str | None
    """One queue for every app, or None: each app on its own (workflows.app_task_queue)."""
    namespace: str = "default"
    ui_url: str | None = None
    sim_url: str | None = None
    """The agent simulator's page and API, served by `adkt dev` too."""
    apps: list[str] = field(default_factory=list)
    pid: int = 0
    adk_model: str | None = None
    """ADK_MODEL as `adkt dev` saw it when it loaded the apps (commands note a different one)."""
    encryption_keys_file: str | None = None
    """`adkt dev --encrypt`'s key file: the other commands encrypt and decrypt with it too."""

    def write(self, adk_dir: Path) -> Path:
        path = adk_dir / DEV_STATE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return path

    @classmethod
    def read(cls, adk_dir: Path) -> DevState | None:
        """The state of a dev stack that is still running, else None (a stale file is ignored)."""
        path = adk_dir / DEV_STATE_FILE
        try:
            state = cls(**json.loads(path.read_text()))
        except FileNotFoundError:
            return None
        return state if _alive(state.pid) and _listening(state.address) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return pid > 0


def _listening(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Target:
    """Resolved addresses; None means nothing configured and no dev stack running."""

    address: str | None
    database_url: str | None
    task_queue: str | None
    namespace: str | None = None
    dev: DevState | None = None


def resolve(settings: Settings, *, address: str | None = None, database_url: str | None = None) -> Target:
    dev = DevState.read(settings.adk_dir)
    configured = address or configured_temporal_address()
    if configured is None and dev is not None:
        _use_dev_keys(dev)
        return Target(dev.address, database_url or settings.database_url or dev.database_url,
                      dev.task_queue, dev.namespace, dev)  # fmt: skip
    return Target(configured, database_url or settings.database_url or (dev.database_url if dev else None),
                  settings.task_queue)  # fmt: skip




def _use_dev_keys(dev: DevState) -> None:
    """Talking to an `adkt dev --encrypt` stack: its key file, unless keys are configured here. The
    sessions database is encrypted at rest with them too (adk_core.encryption)."""
    from adk_temporal.encryption import KEYS_ENV, KEYS_FILE_ENV

    if dev.encryption_keys_file and not (os.environ.get(KEYS_ENV) or os.environ.get(KEYS_FILE_ENV)):
        os.environ[KEYS_FILE_ENV] = dev.encryption_keys_file  # this process talks to an encrypted stack


def resolve_database_url(settings: Settings, explicit: str | None = None) -> str | None:
    """The sessions database, without asking anything about Temporal."""
    if explicit or settings.database_url:
        return explicit or settings.database_url
    dev = DevState.read(settings.adk_dir)
    if dev is None:
        return None
    _use_dev_keys(dev)  # `adkt sessions show` reads rows the dev stack sealed
    return dev.database_url
