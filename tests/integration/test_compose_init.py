"""docker-compose.yml's `temporal-init` step (deploy/temporal/init.sh), run for real with the `temporal`
CLI against the session's dev server: it creates a namespace, registers AdkApp / AdkUser there, waits
until they are usable, and a second run changes nothing."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from adkt.embedded import TemporalDevServer, temporal_binary
from adkt.search_attributes import adk_search_attributes

pytestmark = pytest.mark.integration

INIT = Path(__file__).resolve().parents[2] / "deploy" / "temporal" / "init.sh"


async def _init(address: str, namespace: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{Path(temporal_binary()).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TEMPORAL_ADDRESS": address,
        "NAMESPACE": namespace,
        "TRIES": "30",
    }
    env.pop("TEMPORAL_NAMESPACE", None)
    return await asyncio.to_thread(
        subprocess.run, ["sh", str(INIT)], env=env, capture_output=True, text=True, timeout=120
    )


async def test_init_makes_the_namespace_and_its_search_attributes(temporal_server: TemporalDevServer) -> None:
    namespace = f"compose-{uuid.uuid4().hex[:8]}"
    first = await _init(temporal_server.address, namespace)
    assert first.returncode == 0, first.stderr
    assert f"namespace {namespace} is ready" in first.stdout
    assert first.stdout.count("Search attributes have been added") == 2, first.stdout

    # A workflow started with the attributes is accepted and listed by them, right away.
    client = await Client.connect(temporal_server.address, namespace=namespace)
    handle = await client.start_workflow(
        "SessionWorkflow", id="w1", task_queue=f"nobody-{uuid.uuid4().hex[:6]}",
        search_attributes=adk_search_attributes("shop", "u1"),
    )
    try:
        again = await _init(temporal_server.address, namespace)
        assert again.returncode == 0, again.stderr
        assert "Search attributes have been added" not in again.stdout, "the second run registers nothing"
    finally:
        await handle.terminate("test over")
