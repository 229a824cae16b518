"""Replay checked-in histories (tests/replay/histories, recorded by tests/replay/record_histories.py)
against today's workflow code: a change that would break running workflows fails here, offline.

No server needed: the Replayer runs the workflow code against the recorded events, set up as a
worker is (adk_temporal.replay). Every workflow type is covered, and so are the paths a running
conversation can be in when a deploy lands: waiting on a confirmation or on a person in the
simulator, mid continue-as-new, a long turn in its child, a streamed turn, a compaction, a run renewed
while idle.
"""

from __future__ import annotations

import gzip
import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.workflow import NondeterminismError

from adk_core.tools.execution import ToolExecution
from adk_temporal.replay import ReplayFailedError, load_history, replay_histories, replayer
from adk_temporal.workflows.plugin import WORKFLOWS
from tests.replay import apps as replay_apps
from tests.replay import record_histories

HISTORIES = sorted([*record_histories.HISTORIES.glob("*.json"), *record_histories.HISTORIES.glob("*.json.gz")])
INLINE = ToolExecution(mode="inline", start_to_close_timeout=timedelta(seconds=1))


def _stem(path: Path) -> str:
    return path.name.split(".json")[0]


def _type(path: Path) -> str:
    raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    return data["events"][0]["workflowExecutionStartedEventAttributes"]["workflowType"]["name"]


def test_every_workflow_type_and_scenario_is_recorded() -> None:
    assert {_type(p) for p in HISTORIES} == {w.__temporal_workflow_definition.name for w in WORKFLOWS}  # type: ignore[attr-defined]
    stems = {_stem(p).split(".")[0] for p in HISTORIES}
    assert stems >= {*record_histories.SCENARIOS, "session_pending_confirmation", "simulator_answered"}
    long_turn = {_stem(p) for p in HISTORIES if _stem(p).startswith("long_turn")}
    assert "long_turn.1-AgentRunWorkflow.run2" in long_turn, "the long turn's child should have continued-as-new"


def test_the_answer_stored_history_holds_the_patch_and_turns_without_a_commit_of_their_own() -> None:
    """What session_answer_stored guards on replay: its model calls stored the answers (the patch
    marker is there) and no turn ended with a local activity storing them."""
    history = load_history(record_histories.HISTORIES / "session_answer_stored.json")
    markers = [e.marker_recorded_event_attributes for e in history.events if e.HasField("marker_recorded_event_attributes")]
    patches = [m.details["patch-data"].payloads[0].data for m in markers if m.marker_name == "core_patch"]
    assert any(b"model-call-stores-answer" in data for data in patches)
    local = [m.details["data"].payloads[0].data for m in markers if m.marker_name == "core_local_activity"]
    assert len(local) == 1 and b"adk.load_session" in local[0], "the session's load, and no commit after it"
    updates = [e for e in history.events if e.HasField("workflow_execution_update_completed_event_attributes")]
    assert len(updates) == 2


def _patches(name: str) -> list[bytes]:
    history = load_history(record_histories.HISTORIES / name)
    markers = [e.marker_recorded_event_attributes for e in history.events if e.HasField("marker_recorded_event_attributes")]
    return [m.details["patch-data"].payloads[0].data for m in markers if m.marker_name == "core_patch"]


def test_the_long_turns_are_recorded_deferring_once_and_deferring_again() -> None:
    """long_turn's model calls stop deferring once its events outgrew one write (the patch marker is
    there); long_turn_deferring_again was recorded before that and replays the old way."""
    assert any(b"defer-a-turns-first-events-only" in data for data in _patches("long_turn.json.gz"))
    assert not any(b"defer-a-turns-first-events-only" in data for data in _patches("long_turn_deferring_again.json.gz"))


def test_the_compactions_are_recorded_after_the_reply_and_before_it() -> None:
    """compaction's turns answered before their summaries were written (the patch marker is there);
    compaction_before_reply was recorded before that and replays the old way."""
    assert any(b"compact-after-the-reply" in data for data in _patches("compaction.json"))
    assert not any(b"compact-after-the-reply" in data for data in _patches("compaction_before_reply.json"))


def test_the_renewed_conversation_is_recorded_with_its_patch_and_the_runs_before_it_without() -> None:
    """session_renewed's long run asked for the renewal (the marker is there) and continued as new
    while idle; the conversations recorded before it never asked."""
    assert any(b"renew-idle-run" in data for data in _patches("session_renewed.json"))
    assert not any(b"renew-idle-run" in data for data in _patches("session_continue_as_new.json"))


def test_workflow_ids_are_read_from_the_histories() -> None:
    from adk_temporal.workflows import session_workflow_id

    pending = load_history(record_histories.HISTORIES / "session_pending_confirmation.json")
    assert pending.workflow_id == session_workflow_id("replay_confirm", record_histories.USER_ID, "confirm-session")
    assert load_history(record_histories.HISTORIES / "children.json").workflow_id == "replay-children"


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ("children", "replay-children"),  # from the ids of the children it started
        ("session_pending_confirmation", "adk-session/replay_confirm/replay-user/confirm-session"),  # from its input
    ],
)
def test_without_the_id_in_the_start_event_it_is_inferred(history: str, expected: str, tmp_path: Path) -> None:
    """Older servers leave the workflow id out of the start event of an exported history."""
    data = json.loads((record_histories.HISTORIES / f"{history}.json").read_text())
    del data["events"][0]["workflowExecutionStartedEventAttributes"]["workflowId"]
    stripped = tmp_path / "exported.json"
    stripped.write_text(json.dumps(data))
    assert load_history(stripped).workflow_id == expected


@pytest.mark.parametrize("path", HISTORIES, ids=_stem)
async def test_history_replays(path: Path) -> None:
    [verdict] = await replay_histories([path], apps=replay_apps.apps())
    assert verdict.ok and verdict.workflow_type == _type(path)


@pytest.mark.parametrize(
    ("history", "changed_app"),
    [
        ("agent_run_w1", lambda: replay_apps.w1_inline_add),
        ("session_confirm", lambda: replay_apps.build_confirm_app(tool_execution=INLINE)),
        ("session_pending_confirmation", lambda: replay_apps.build_confirm_app(tool_execution=INLINE)),
        ("children", lambda: replay_apps.build_children_app(child_workflow=False)),
    ],
)
async def test_changed_app_fails_replay(history: str, changed_app) -> None:
    """A tool moved from an activity into the workflow, or agents no longer run as child workflows:
    the commands change, and replay says so."""
    changed = changed_app()
    apps = [changed, *(app for app in replay_apps.apps() if app.name != changed.name)]
    path = record_histories.HISTORIES / f"{history}.json"
    with pytest.raises(NondeterminismError, match="Nondeterminism error"):
        await replayer(apps).replay_workflow(load_history(path), raise_on_replay_failure=True)


async def test_a_nondeterministic_framework_change_fails_replay_naming_the_workflow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A change in our own workflow code (tools as local activities by default) breaks every
    history with a tool call; the error names each workflow and the core's reason."""
    from adk_temporal.workflows import runtime

    monkeypatch.setattr(runtime, "DEFAULT_TOOL_EXECUTION", ToolExecution(mode="local_activity"))
    paths = [record_histories.HISTORIES / f"{name}.json" for name in ("agent_run_w1", "streamed_turn")]
    with pytest.raises(ReplayFailedError) as caught:
        await replay_histories(paths, apps=replay_apps.apps())
    [failure] = caught.value.failures  # the streamed turn calls no tool: unaffected
    assert failure.workflow_id == "replay-w1" and failure.workflow_type == "AgentRunWorkflow"
    assert isinstance(failure.failure, NondeterminismError)
    assert "[TMPRL1100] Nondeterminism error" in failure.reason
    assert "workflow replay-w1 (AgentRunWorkflow)" in str(caught.value)


async def test_a_callback_reading_the_clock_fails_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `adkt check` catches before it ships: a callback that decides by the wall clock decided
    otherwise when the history was recorded (the promotion had not ended; by now it has, whatever
    this machine's clock says)."""
    monkeypatch.setattr(replay_apps, "PROMO_ENDS", time.time() - 1)
    [verdict] = await replay_histories(
        [record_histories.HISTORIES / "agent_run_w1.json"], apps=[replay_apps.w1_clock_callback],
        raise_on_failure=False,
    )
    assert not verdict.ok and isinstance(verdict.failure, NondeterminismError), verdict.reason


async def test_a_history_of_an_app_not_given_says_which_app_to_add() -> None:
    paths = [record_histories.HISTORIES / f"{name}.json" for name in ("agent_run_w1", "session_confirm")]
    ok, missing = await replay_histories(paths, apps=[replay_apps.w1_app], raise_on_failure=False)
    assert ok.ok
    assert not missing.ok and missing.workflow_type == "SessionWorkflow"
    assert "it ran app 'replay_confirm', which is not among the apps given (w1); pass that app too" in missing.reason
