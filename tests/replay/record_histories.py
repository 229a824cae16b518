"""Record the workflow histories that tests/integration/test_replay.py replays.

    python -m tests.replay.record_histories

Starts a fresh embedded stack (Temporal dev server, Postgres, an in-process worker), runs W1 once
through AgentRunWorkflow and a two-turn conversation with a tool confirmation through
SessionWorkflow, and writes each history to tests/replay/histories/<name>.json. Re-record only
on purpose: a history that no longer replays means running workflows would break on deploy.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import FunctionTool
from examples import w1

HISTORIES = Path(__file__).parent / "histories"
USER_ID = "replay-user"
CONFIRM_APP, CONFIRM_SESSION = "replay_confirm", "confirm-session"
WORKFLOW_IDS = {
    # A SessionWorkflow checks that its id is its session's, so replay needs the real ids.
    "agent_run_w1": "replay-w1",
    "session_confirm": f"adk-session/{CONFIRM_APP}/{USER_ID}/{CONFIRM_SESSION}",
}


def transfer_money(amount: int) -> dict:
    """Send money."""
    return {"sent": amount}


def _confirm_script(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("transfer_money", {"amount": 50})
    return text_response(f"result: {done[-1]}")


def build_confirm_app(*, tool_execution: Any = None) -> App:
    """The conversation's app; ``tool_execution`` lets the replay test build a changed variant."""
    tool = FunctionTool(transfer_money, require_confirmation=True, execution=tool_execution)
    return App(
        name="replay_confirm",
        root_agent=LlmAgent(
            name="banker", model=ScriptedModel(_confirm_script, name="confirm-scripted"), tools=[tool]
        ),
    )


def apps() -> list[App]:
    return [w1.app, build_confirm_app()]


async def record(out: Path = HISTORIES) -> list[Path]:
    from adk_temporal.worker import build_worker
    from adk_temporal.workflows import SessionWorkflow, SessionWorkflowInput, session_workflow_id
    from adkt.client import AdkClient, connect
    from adkt.embedded import TEMPORAL_DEV_ARGS, EmbeddedPostgres, TemporalDevServer
    from adkt.services import open_services

    out.mkdir(parents=True, exist_ok=True)
    task_queue = "replay-recording"
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            TemporalDevServer(port=0, headless=True, extra_args=TEMPORAL_DEV_ARGS) as server,
            EmbeddedPostgres(Path(tmp) / "postgres", durable=False) as postgres,
            open_services(postgres.url) as services,
        ):
            client = await connect(server.address, namespace=server.namespace)
            adk = AdkClient(client, task_queue=task_queue)
            worker = build_worker(client, apps(), task_queue=task_queue, **services)
            async with worker:
                run_id = WORKFLOW_IDS["agent_run_w1"]
                result = await adk.run_once(
                    w1.app.name, USER_ID, "w1-session", w1.USER_MESSAGE, workflow_id=run_id
                )
                w1.check_turn(result.events)
                written.append(await _write(client, run_id, out / "agent_run_w1.json"))

                app_name, session_id = CONFIRM_APP, CONFIRM_SESSION
                handle = await client.start_workflow(
                    SessionWorkflow.run,
                    SessionWorkflowInput(
                        app_name=app_name, user_id=USER_ID, session_id=session_id, idle_timeout_seconds=1
                    ),
                    id=session_workflow_id(app_name, USER_ID, session_id),
                    task_queue=task_queue,
                )
                await adk.send(app_name, USER_ID, session_id, "send 50")
                [pending] = await adk.pending(app_name, USER_ID, session_id)
                turn = await adk.reply(app_name, USER_ID, session_id, pending.call_id, {"confirmed": True})
                assert turn.final_text == "result: {'sent': 50}", turn.final_text
                await handle.result()  # ends after the idle timeout: a complete history
                written.append(await _write(client, handle.id, out / "session_confirm.json"))
    return written


async def _write(client: Any, workflow_id: str, path: Path) -> Path:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    path.write_text(history.to_json() + "\n")
    return path


if __name__ == "__main__":
    for path in asyncio.run(record()):
        print(f"wrote {path}")
