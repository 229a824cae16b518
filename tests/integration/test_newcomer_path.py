"""The newcomer's path, as issue #10 walked it: `adkt dev` running, a second worker for your own
app started beside it, and conversations with both apps. Before per-app task queues, half of the
shop's sends landed on the dev worker ("this worker serves no app named 'shop'") and failed for good."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adkt.client import AdkClient, connect
from examples.w1 import EXPECTED_FINAL_TEXT, USER_MESSAGE
from tests.integration.processes import stop_process, wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _adkt(*args: str, cwd: Path, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    env |= {"HOME": str(cwd), "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"}
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "adkt.main", *args], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip


async def test_dev_and_a_second_worker_for_another_app_serve_twenty_sends(tmp_path: Path) -> None:
    dev_log, shop_log = tmp_path / "dev.log", tmp_path / "shop.log"
    state_file = tmp_path / ".adk" / "dev.json"
    dev = _adkt("dev", "--app", "examples.w1:app", "--port", "0", "--ui-port", "0", "--sim-port", "0", cwd=tmp_path,
                log=dev_log)
    procs, logs = [dev], [dev_log]
    try:
        await wait_until(state_file.exists, "adkt dev", timeout=120, procs=procs, logs=logs)
        state = json.loads(state_file.read_text())
        # The newcomer's own worker finds the dev stack by .adk/dev.json, like every other command.
        shop = _adkt("worker", "--app", "tests.integration.newcomer.shop:app", cwd=tmp_path, log=shop_log)
        procs.append(shop)
        logs.append(shop_log)
        await wait_until(lambda: "worker for shop" in shop_log.read_text(), "the shop worker", timeout=120, procs=procs, logs=logs)

        client = AdkClient(await connect(state["address"], namespace=state["namespace"]))

        async def ask(n: int) -> str:
            if n % 2:
                return (await client.send("shop", f"u{n}", f"s{n}", "Do you have a kettle?")).final_text
            return (await client.send("w1", f"u{n}", f"s{n}", USER_MESSAGE)).final_text

        answers = await asyncio.wait_for(asyncio.gather(*(ask(n) for n in range(20))), timeout=180)
        assert answers == [EXPECTED_FINAL_TEXT if n % 2 == 0 else "kettle: 3 in stock" for n in range(20)]
        # No conversation was refused or failed anywhere.
        failed = [w async for w in client.client.list_workflows('ExecutionStatus="Failed"')]
        assert failed == [], [w.id for w in failed]
        assert "serves no app" not in dev_log.read_text() + shop_log.read_text()
    finally:
        for proc in reversed(procs):
            stop_process(proc)
