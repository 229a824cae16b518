"""`adkt replay`: replay exported workflow histories against this code, to catch a change that
would break running conversations before it is deployed (docs/replay.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from adkt.commands._common import run_async
from adkt.commands._render import err


def replay(
    histories: Annotated[
        list[Path],
        typer.Argument(metavar="HISTORY.json", help="history files from `temporal workflow show -w ID --output json` (.json.gz too)", exists=True, dir_okay=False),
    ],
    app: Annotated[
        list[str],
        typer.Option("--app", help="an app this build serves: path/to/agent.py[:attr], a folder or module:attr (repeatable)"),
    ],
) -> None:
    """Replay workflow histories against this code and these apps, as a worker of this build would.

    Exit code 0 when every history replays; 1 when one does not, naming its workflow id and the
    reason (a nondeterminism error means running workflows with that history would fail on this build).
    """
    failed = run_async(_replay(histories, app))
    if failed:
        raise typer.Exit(1)


async def _replay(paths: list[Path], specs: list[str]) -> int:
    from adk_temporal.replay import replay_histories
    from adkt.commands._apps import load_app

    apps = [load_app(spec) for spec in specs]
    verdicts = await replay_histories(paths, apps=apps, raise_on_failure=False)
    for verdict in verdicts:
        if verdict.ok:
            err.print(f"ok      {verdict.source}: workflow {verdict.workflow_id} ({verdict.workflow_type})", markup=False)
        else:
            err.print(
                f"FAILED  {verdict.source}: workflow {verdict.workflow_id} ({verdict.workflow_type}): {verdict.reason}",
                markup=False,
            )
    failed = sum(not v.ok for v in verdicts)
    if failed:
        err.print(
            f"{failed} of {len(verdicts)} histories no longer replay: running workflows like them would fail on this "
            "build. Keep their old behaviour (workflow.patched) or deploy as a new worker version (docs/versioning.md).",
            markup=False,
        )
    else:
        err.print(f"all {len(verdicts)} histories replay on this code", markup=False)
    return failed
