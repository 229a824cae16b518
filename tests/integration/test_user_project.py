"""A user's project laid out as Temporal's samples lay one out: its own `workflows` (a module, and in a
second case a package), `activities.py` and `worker.py` beside its agent. Every `adkt` command runs
against the agent, and the user's own worker serves the agent and the user's workflow together.

Before adk-temporal installed its layers under `adk_temporal`, the project's `workflows.py` shadowed
ours (`cannot import name 'AdkPlugin' from 'workflows'`) and `adkt run` executed the user's
`worker.py` when it meant to import its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from adkt.client import AdkClient, connect
from tests.integration.processes import stop_process, wait_until

pytestmark = pytest.mark.integration

ADKT = str(Path(sys.executable).with_name("adkt"))

AGENT = '''
from adk_core import App, LlmAgent, ScriptedModel
from adk_core.eval import EvalCase, passthrough, tool_trajectory
from adk_core.models import function_call_response, text_response


def shout(text: str) -> dict:
    """Say it louder."""
    return {"loud": text.upper()}


def script(request):
    results = [r.response for c in request.contents for r in c.function_responses()]
    if not results:
        return function_call_response("shout", {"text": "hello"})
    return text_response(f"I said {results[-1]['loud']}")


app = App(name="greeter", root_agent=LlmAgent(name="greeter", model=ScriptedModel(script), tools=[shout]))
cases = [EvalCase("shouts", app_or_agent=app, tool_mocks=passthrough(shout), first_message="hi",
                  metrics=[tool_trajectory([{"name": "shout", "args": {"text": "hello"}}])])]
'''

# The user's own Temporal workflow: nothing of ours is named here, exactly as in Temporal's samples.
USER_WORKFLOWS = '''
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import compose_greeting


@workflow.defn
class GreetingWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(compose_greeting, name, start_to_close_timeout=timedelta(seconds=10))
'''

USER_ACTIVITIES = '''
from temporalio import activity


@activity.defn
async def compose_greeting(name: str) -> str:
    return f"Hello, {name}!"
'''

# Importing this module is a bug of ours (it leaves a marker); running it serves both.
USER_WORKER = '''
import asyncio
import os
from pathlib import Path

Path("worker-was-imported").write_text(__name__)


async def main() -> None:
    from temporalio.client import Client

    from activities import compose_greeting
    from adk_core.sessions.sql import DatabaseSessionService
    from adk_temporal.worker import build_worker
    from agent import app
    from workflows import GreetingWorkflow

    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"])
    sessions = DatabaseSessionService(os.environ["ADK_DATABASE_URL"])
    worker = build_worker(client, [app], session_service=sessions, task_queue="user-queue",
                          workflows=[GreetingWorkflow], activities=[compose_greeting])
    print("user worker polling", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
'''


def _project(root: Path, workflows_as: str) -> Path:
    root.mkdir()
    (root / "agent.py").write_text(textwrap.dedent(AGENT))
    (root / "activities.py").write_text(USER_ACTIVITIES)
    (root / "worker.py").write_text(USER_WORKER)
    if workflows_as == "module":
        (root / "workflows.py").write_text(USER_WORKFLOWS)
    else:
        (root / "workflows").mkdir()
        (root / "workflows" / "__init__.py").write_text("from .greeting import GreetingWorkflow\n")
        (root / "workflows" / "greeting.py").write_text(USER_WORKFLOWS)
    return root


def _env(project: Path, **extra: str) -> dict[str, str]:
    # As a user has it: no PYTHONPATH into this repository, nothing configured, HOME in the project.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_", "PYTHONPATH"))}
    return env | {"HOME": str(project), "COLUMNS": "200", "NO_COLOR": "1"} | extra


def _start(command: list[str], project: Path, log: Path, **env: str) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=project, env=_env(project, **env), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip


async def _adkt(project: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = [ADKT, *args]
    return await asyncio.to_thread(subprocess.run, command, cwd=project, env=_env(project), capture_output=True,
                                   text=True, timeout=timeout)  # fmt: skip


@pytest.mark.parametrize("workflows_as", ["module", "package"])
async def test_a_project_with_its_own_workflows_activities_and_worker(tmp_path: Path, workflows_as: str) -> None:
    project = _project(tmp_path / "proj", workflows_as)
    logs: list[Path] = []
    procs: list[subprocess.Popen] = []

    def start(name: str, command: list[str], **env: str) -> tuple[subprocess.Popen, Path]:
        log = tmp_path / f"{name}.log"
        procs.append(_start(command, project, log, **env))
        logs.append(log)
        return procs[-1], log

    try:
        # adkt dev: the embedded stack and a worker for the project's agent.
        dev, dev_log = start("dev", [ADKT, "dev", "--app", "agent.py", "--port", "0", "--ui-port", "0",
                                     "--sim-port", "0"])  # fmt: skip
        state_file = project / ".adk" / "dev.json"
        await wait_until(state_file.exists, "adkt dev", timeout=120, procs=[dev], logs=[dev_log])
        state = json.loads(state_file.read_text())

        # Side by side (each waits on its own process start): adkt run through the dev stack's worker,
        # adkt eval on the project's cases in-process, a second worker for the agent on a queue of its
        # own (adkt worker), and the user's own worker.py serving the agent and the user's workflow.
        worker, worker_log = start("adkt-worker", [ADKT, "worker", "--app", "agent:app", "--task-queue", "adkt-queue",
                                                   "--address", state["address"], "--database-url",
                                                   state["database_url"]])  # fmt: skip
        own, own_log = start("own-worker", [sys.executable, "worker.py"], TEMPORAL_ADDRESS=state["address"],
                             ADK_DATABASE_URL=state["database_url"])  # fmt: skip
        run, evaluated = await asyncio.gather(_adkt(project, "run", "agent.py", "hi", "--json"),
                                              _adkt(project, "eval", "run", "agent:cases"))  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        assert json.loads(run.stdout)["final_text"] == "I said HELLO"
        assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
        assert "shouts" in evaluated.stdout
        await wait_until(lambda: "worker for greeter" in worker_log.read_text(), "adkt worker", timeout=120, procs=[worker], logs=[worker_log])
        await wait_until(lambda: "user worker polling" in own_log.read_text(), "the user's worker", timeout=120, procs=[own], logs=[own_log])

        client = await connect(state["address"], namespace=state["namespace"])
        greeting = await client.execute_workflow("GreetingWorkflow", "Ada", id=f"greet-{uuid.uuid4().hex[:8]}",
                                                 task_queue="user-queue")  # fmt: skip
        assert greeting == "Hello, Ada!"
        for queue in ("adkt-queue", "user-queue"):
            turn = await asyncio.wait_for(AdkClient(client, task_queue=queue).send("greeter", "ann", queue, "hi"), 60)
            assert turn.final_text == "I said HELLO"

        failed = [w.id async for w in client.list_workflows('ExecutionStatus="Failed"')]
        assert failed == []
        # Only the user's own `python worker.py` ever ran their worker module.
        assert (project / "worker-was-imported").read_text() == "__main__"
        assert "Traceback" not in "".join(log.read_text() for log in logs)
    finally:
        for proc in reversed(procs):
            stop_process(proc)
