"""`adkt replay` on a history exported as a user would: `temporal workflow show --output json` of a
running conversation on the dev server, replayed against the app it ran (exit 0) and against a
changed app (exit 1, naming the workflow and the nondeterminism)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from adk_temporal.replay import ReplayFailedError, replay_histories
from adk_temporal.workflows import session_workflow_id
from adkt.embedded import TemporalDevServer
from adkt.embedded.temporal import temporal_binary
from examples import w1
from tests.integration.conftest import DurableStack
from tests.replay import apps as replay_apps

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def adkt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    env |= {"PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "adkt.main", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_replay_help_says_what_it_takes() -> None:
    shown = adkt("replay", "--help")
    assert shown.returncode == 0, shown.stderr
    assert "temporal workflow show" in shown.stdout and "--app" in shown.stdout
    assert "replay [OPTIONS] {HISTORY.json}..." in shown.stdout


async def test_an_exported_conversation_replays_and_a_changed_app_is_refused(
    durable_stack: DurableStack, temporal_server: TemporalDevServer, tmp_path: Path
) -> None:
    durable_stack.register(w1.app)
    session = f"s-{uuid.uuid4().hex[:8]}"
    w1.check_turn((await durable_stack.client.send(w1.app.name, "u1", session, w1.USER_MESSAGE)).events)
    workflow_id = session_workflow_id(w1.app.name, "u1", session)
    history = tmp_path / "conversation.json"
    shown = await asyncio.to_thread(subprocess.run, [
        temporal_binary(), "workflow", "show", "--workflow-id", workflow_id, "--output", "json",
        "--address", temporal_server.address, "--namespace", temporal_server.namespace,
    ], capture_output=True, text=True, timeout=30)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    history.write_text(shown.stdout)

    ok = await asyncio.to_thread(adkt, "replay", str(history), "--app", "examples.w1:app")
    assert ok.returncode == 0, ok.stderr
    assert f"ok      {history}: workflow {workflow_id} (SessionWorkflow)" in ok.stderr

    changed = await asyncio.to_thread(adkt, "replay", str(history), "--app", "tests.replay.apps:w1_inline_add")
    assert changed.returncode == 1, changed.stderr
    assert f"FAILED  {history}: workflow {workflow_id} (SessionWorkflow): NondeterminismError: [TMPRL1100]" in changed.stderr
    assert "1 of 1 histories no longer replay" in changed.stderr

    # The pytest helper reaches the same verdicts.
    [verdict] = await replay_histories([history], apps=[w1.app])
    assert verdict.ok and verdict.workflow_id == workflow_id
    with pytest.raises(ReplayFailedError, match=f"workflow {workflow_id} \\(SessionWorkflow\\): NondeterminismError"):
        await replay_histories([history], apps=[replay_apps.w1_inline_add])
