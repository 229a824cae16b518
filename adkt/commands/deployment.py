"""`adkt deployment promote` and `adkt deployment status`: ship a new worker version under running
conversations (docs/versioning.md). The logic lives in adk_temporal.deployments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from adkt.commands._common import run_async
from adkt.commands._render import err, out

if TYPE_CHECKING:
    from temporalio.client import Client

deployment = typer.Typer(help="Worker versions: promote a build, see what still runs on one (docs/versioning.md).",
                         no_args_is_help=True)  # fmt: skip

NameArg = Annotated[str, typer.Argument(help="the worker deployment's name (adkt worker --deployment-name)")]
BuildArg = Annotated[str, typer.Argument(help="the build id (adkt worker --build-id)")]
Address = Annotated[str | None, typer.Option("--address", help="Temporal address (default: TEMPORAL_ADDRESS, then .adk/dev.json)")]


@deployment.command()
def promote(name: NameArg, build_id: BuildArg, address: Address = None) -> None:
    """Make BUILD_ID current: new conversations start on it, idle ones move to it now, busy ones
    after their turn; runs that are mid-turn finish on the version they started on."""
    run_async(_promote(name, build_id, address))


@deployment.command()
def status(name: NameArg, build_id: BuildArg, address: Address = None) -> None:
    """List the runs still on BUILD_ID (its workers may stop when none is left)."""
    run_async(_status(name, build_id, address))


async def _client(address: str | None) -> Client:
    from adkt.client import connect
    from adkt.commands._devstate import resolve
    from adkt.settings import Settings

    target = resolve(Settings.load(), address=address)
    return await connect(target.address, namespace=target.namespace)


async def _promote(name: str, build_id: str, address: str | None) -> None:
    from adk_temporal.deployments import promote as promote_version
    from adk_temporal.worker import WorkerVersion

    version = WorkerVersion(name, build_id)
    done = await promote_version(await _client(address), version)
    out.print(f"{version} is current; {done.nudged} open conversations told to move "
              f"(idle ones now, busy ones after their turn)", markup=False)  # fmt: skip
    if not done.routed:
        err.print(f"the server was still routing the deployment's task queues to {version}: conversations woken "
                  "before it finished move at their next message; run this command again to wake them again",
                  markup=False)  # fmt: skip
    if done.failed:
        err.print(f"{done.failed} conversations ended before they could be told; they start on {version} "
                  "at their next message", markup=False)  # fmt: skip


async def _status(name: str, build_id: str, address: str | None) -> None:
    from adk_temporal.deployments import pinned_runs
    from adk_temporal.worker import WorkerVersion

    version = WorkerVersion(name, build_id)
    runs = await pinned_runs(await _client(address), version)
    if not runs:
        out.print(f"no run is left on {version}: its workers may stop", markup=False)
        return
    out.print(f"{len(runs)} runs still on {version}:", markup=False)
    for workflow_id in runs:
        out.print(f"  {workflow_id}", markup=False)
