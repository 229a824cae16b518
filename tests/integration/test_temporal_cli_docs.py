"""docs/temporal-cli.md cannot rot: its `bash` blocks run, in order, with the real `temporal` CLI
against the session's dev server and the shared worker serving the page's `shop` app.

The page's names are made unique for this run (app `shop` -> `shop_<hex>`, its task queue
`adk.shop` -> the test worker's queue), and `<call_id>` takes the value the `pending` query
returned. `sh` blocks are setup for readers (starting a server, registering attributes) and are
not run here.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from adkt.embedded import TemporalDevServer, temporal_binary
from tests.integration.cli_docs_app import shop_app
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "temporal-cli.md"
COMMAND_TIMEOUT = 60.0
TURN_WAIT_SECONDS = 15.0
"""How long the `turn` query is repeated until the queued turn is done, as the page says to."""


@dataclass
class Ran:
    command: str
    returncode: int
    stdout: str
    stderr: str


def bash_blocks(markdown: str) -> list[str]:
    return [block.strip() for block in re.findall(r"^```bash\n(.*?)^```", markdown, flags=re.S | re.M)]


def _succeeded(*expected: str) -> Callable[[Ran], None]:
    def check(ran: Ran) -> None:
        assert ran.returncode == 0, f"{ran.command}\nexit {ran.returncode}: {ran.stderr}"
        for text in expected:
            assert text in ran.stdout, f"{ran.command}\nexpected {text!r} in:\n{ran.stdout}"

    return check


def _refused(ran: Ran) -> None:
    assert ran.returncode != 0, ran.stdout
    assert "must have the workflow id 'adk-session/shop_" in ran.stderr, ran.stderr
    assert "MessageRejected" in ran.stderr


# One expectation per `bash` block of the page, in order (the names are the unique ones).
EXPECTATIONS: list[tuple[str, Callable[[Ran], None]]] = [
    ("execute-update-with-start", _succeeded('"final_text": "Invoice 42 was sent on 3 March."', '"message_id": "m1"')),
    ("signal-with-start", _succeeded()),
    ("--name turn", _succeeded('"state": "done"', '"message_id": "m2"', '"name": "adk_request_confirmation"')),
    ("--name pending", _succeeded('"kind": "tool_confirmation"', '"name": "refund"')),
    ("--name reply", _succeeded("\"final_text\": \"Done: {'refunded': 42}\"", '"message_id": "r1"')),
    ("workflow list", _succeeded("adk-session/shop_", "SessionWorkflow")),
    ("workflow describe", _succeeded(" · user u1 · session s1")),
    ("workflow metadata", _succeeded("**Turn 3** (done)", "**Last message** confirmation: approved")),
    ("--type AgentRunWorkflow", _succeeded('"final_text": "Invoice 42 was sent on 3 March."', '"session_id": "s2"')),
    ("workflow list", _succeeded("adk-run/shop_", "AgentRunWorkflow")),
    ("my-own-id", _refused),
]


async def test_the_documented_commands_work(durable_stack: DurableStack, temporal_server: TemporalDevServer) -> None:
    blocks = bash_blocks(DOC.read_text())
    matched = len(blocks) == len(EXPECTATIONS) and all(hint in b for b, (hint, _) in zip(blocks, EXPECTATIONS, strict=False))
    assert matched, "docs/temporal-cli.md's bash blocks changed: update EXPECTATIONS to match them"

    app = durable_stack.register(shop_app(f"shop_{uuid.uuid4().hex[:6]}"))
    env = {
        **os.environ,
        "PATH": f"{Path(temporal_binary()).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TEMPORAL_ADDRESS": temporal_server.address,
        "TEMPORAL_NAMESPACE": temporal_server.namespace,
    }
    call_id = ""
    for block, (_, check) in zip(blocks, EXPECTATIONS, strict=True):
        command = re.sub(r"\bshop\b", app.name, block.replace("adk.shop", durable_stack.task_queue))
        command = command.replace("<call_id>", call_id)
        ran = await _run(command, env)
        if "--name turn" in command:
            ran = await _until_done(command, env, ran)
        check(ran)
        if "--name pending" in command:
            call_id = json.loads(ran.stdout)["queryResult"][0][0]["call_id"]


async def _until_done(command: str, env: dict[str, str], ran: Ran) -> Ran:
    deadline = time.monotonic() + TURN_WAIT_SECONDS
    while '"state": "done"' not in ran.stdout and '"state": "failed"' not in ran.stdout and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        ran = await _run(command, env)
    return ran


async def _run(command: str, env: dict[str, str]) -> Ran:
    # In a thread: the worker serving the commands runs on this event loop.
    done = await asyncio.to_thread(
        subprocess.run, ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT
    )
    return Ran(command, done.returncode, done.stdout, done.stderr)
