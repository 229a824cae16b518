"""What the Temporal restart tests share (test_restarts.py, test_client_restarts.py): a client whose
SDK stops retrying an unreachable server within a second, and a folder for the restarted server's
database."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from temporalio.client import Client
from temporalio.service import RetryConfig, ServiceClient

SDK_RETRIES = RetryConfig(initial_interval_millis=100, max_interval_millis=300, max_elapsed_time_millis=500, max_retries=3)
"""temporalio's own retries of each call, cut from about 11 s by default (10 tries, 0.1 s growing
1.5x to 5 s, 10 s in all) to under a second. An outage of a few seconds then outlasts them, as a
15 s one outlasts the defaults, so AdkClient has to ride it out with its own retries: what the
tests prove, without a 15 s outage. The short outage also matters for the worker: its pollers back
off from 0.2 s doubling to 10 s (sdk-core's task poll policy, not configurable), so after 15 s
down they came back up to 12 s after the server (measured 5-9 s); after ~5 s down, within ~2 s."""


async def with_sdk_retries(client: Client, retries: RetryConfig = SDK_RETRIES) -> Client:
    """``client`` (plugins, converter, namespace) on a new connection retrying as ``retries`` says."""
    service = await ServiceClient.connect(dataclasses.replace(client.service_client.config, retry_config=retries))
    return Client(**{**client.config(), "service_client": service})


@contextmanager
def server_data_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder for a dev server's SQLite database that outlives the server process: in memory
    (tmpfs) where there is one, since the file only has to survive a restart, not a reboot. On disk
    every write waits for fsync: test_temporal_restarted_mid_run took 21 s there, 13 s on tmpfs (on
    disk with `--sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal` also 13 s)."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        with tempfile.TemporaryDirectory(prefix="adk-restart-", dir="/dev/shm") as folder:
            yield Path(folder)
    else:
        yield tmp_path / "temporal"
