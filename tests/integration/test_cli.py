"""The `adkt` command line: `run` as a subprocess the way a user runs it (it starts and stops its own
servers); `sessions` in-process with typer's CliRunner, against the test session's Postgres."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import migrate
from adk_core.types import Content, Event
from adkt.main import app
from examples.w1 import EXPECTED_FINAL_TEXT, USER_MESSAGE

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def adkt(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    # A clean environment: no configured Temporal or database, HOME and .adk inside the test's folder.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    env |= {"HOME": str(cwd), "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "adkt.main", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


async def invoke(*args: str) -> Result:
    # On a thread: the command runs its own event loop (asyncio.run), which must not be this one.
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


def test_run_starts_its_own_stack_and_stops_it(tmp_path: Path) -> None:
    result = adkt("run", "examples.w1:app", USER_MESSAGE, "--json", "--session", "s1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    turn = json.loads(result.stdout)
    assert turn["final_text"] == EXPECTED_FINAL_TEXT
    calls = [p["function_call"]["name"] for e in turn["events"] for p in e["content"]["parts"] if p.get("function_call")]
    assert calls == ["add", "lookup", "add"]
    assert (tmp_path / ".adk" / "postgres" / "PG_VERSION").exists()
    assert not (tmp_path / ".adk" / "dev.json").exists()
    # Everything the command started is gone: no server still uses its data folder.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in ps


async def test_sessions_list_and_show(database_url: str) -> None:
    await migrate(database_url)
    service = DatabaseSessionService(database_url)
    try:
        session = await service.create_session(app_name="w1", user_id="ann", session_id="s-42", state={"topic": "sums"})
        await service.append_event(session, Event(id="e1", author="user", timestamp=1.0, content=Content.user("add 1 and 2")))
        await service.append_event(session, Event(id="e2", author="assistant", timestamp=2.0,
                                                  content=Content.model("the sum is 3")))  # fmt: skip
    finally:
        await service.close()

    listed = await invoke("sessions", "list", "w1", "--user", "ann", "--database-url", database_url)
    assert listed.exit_code == 0, listed.output
    assert "s-42" in listed.stdout and "ann" in listed.stdout

    shown = await invoke("sessions", "show", "w1", "ann", "s-42", "--last", "1", "--database-url", database_url)
    assert shown.exit_code == 0, shown.output
    assert "the sum is 3" in shown.stdout and "add 1 and 2" not in shown.stdout
    assert "sums" in shown.stdout

    missing = await invoke("sessions", "show", "w1", "ann", "nope", "--database-url", database_url)
    assert missing.exit_code == 1
    assert "no session 'nope'" in missing.stderr
