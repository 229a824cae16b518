"""`adkt dev --encrypt` (issue #24, item 1): a key file under .adk, every payload encrypted, other
commands find the keys through .adk/dev.json, and the Temporal UI is pointed at a local codec server
that decrypts for it."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from adk_temporal.workflows import session_workflow_id
from adkt.embedded.temporal import temporal_binary
from examples.w1 import EXPECTED_FINAL_TEXT, USER_MESSAGE
from tests.integration.processes import stop_process, wait_until
from tests.integration.test_encryption import _payloads, _plain_text
from tests.integration.test_newcomer_path import REPO, _adkt

pytestmark = pytest.mark.integration


async def test_dev_encrypt_encrypts_and_the_ui_decodes_through_its_codec_server(tmp_path: Path) -> None:
    log = tmp_path / "dev.log"
    dev = _adkt("dev", "--encrypt", "--app", "examples.w1:app", "--port", "0", "--ui-port", "0", "--sim-port", "0",
                cwd=tmp_path, log=log)  # fmt: skip
    state_file = tmp_path / ".adk" / "dev.json"
    try:
        await wait_until(state_file.exists, "adkt dev --encrypt", timeout=120, procs=[dev], logs=[log])
        state = json.loads(state_file.read_text())
        keys = Path(state["encryption_keys_file"])
        assert keys.parent == tmp_path / ".adk" and stat.S_IMODE(keys.stat().st_mode) == 0o600

        env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
        env |= {"HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
        run = subprocess.run([sys.executable, "-m", "adkt.main", "run", "w1", USER_MESSAGE, "--json", "--session", "e1"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        assert json.loads(run.stdout)["final_text"] == EXPECTED_FINAL_TEXT

        shown = subprocess.run(
            [str(temporal_binary()), "workflow", "show", "--output", "json", "--address", state["address"],
             "--namespace", state["namespace"], "--workflow-id", session_workflow_id("w1", "user", "e1")],
            capture_output=True, text=True, timeout=60, check=True,
        )
        history = json.loads(shown.stdout)
        assert "look up x" not in _plain_text(history).lower()  # part of the W1 message, never in clear

        # The UI knows where to decode, and that codec server decodes for the UI's origin.
        settings = httpx.get(f"{state['ui_url']}/api/v1/settings", timeout=10).json()
        endpoint = settings["Codec"]["Endpoint"]
        encrypted = [p for p in _payloads(history) if "encryption-key-id" in p["metadata"]]
        decoded = httpx.post(f"{endpoint}/decode", json={"payloads": encrypted[:5]}, timeout=10,
                             headers={"Origin": state["ui_url"]})  # fmt: skip
        assert decoded.status_code == 200 and decoded.headers["access-control-allow-origin"] == state["ui_url"]
        text = "".join(base64.b64decode(p["data"]).decode("utf-8", "replace") for p in decoded.json()["payloads"])
        assert "look up x" in text.lower()
    finally:
        stop_process(dev)
