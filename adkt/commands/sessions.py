"""`adkt sessions list|show|cancel|delete` and `adkt users delete`: read conversations straight from the sessions
database; stop a conversation; delete a session or a user everywhere (adk_temporal.deletion)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from adkt.commands._common import run_async
from adkt.commands._database import database_url as sessions_database
from adkt.commands._render import out, short_json, summary, timestamp
from adkt.commands.serve import DatabaseUrl

if TYPE_CHECKING:
    from adk_core.sessions.sql import DatabaseSessionService
    from adkt.commands._devstate import Target

sessions = typer.Typer(help="Inspect sessions stored in Postgres.", no_args_is_help=True, rich_markup_mode=None)


@contextlib.asynccontextmanager
async def session_service(database_url: str | None) -> AsyncIterator[DatabaseSessionService]:
    """The session store: configured, a running `adkt dev`'s, else the embedded one under .adk."""
    from adk_core.sessions.sql import DatabaseSessionService

    async with sessions_database(database_url) as url:
        service = DatabaseSessionService(url)
        try:
            yield service
        finally:
            await service.close()


@sessions.command("list")
def list_sessions(
    app_name: Annotated[str, typer.Argument(help="the app's name (App.name)")],
    user: Annotated[str | None, typer.Option("--user", "-u", help="only this user's sessions")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """List an app's sessions, newest first."""
    run_async(_list(app_name, user, database_url))


async def _list(app_name: str, user: str | None, database_url: str | None) -> None:
    async with session_service(database_url) as service:
        found = (await service.list_sessions(app_name=app_name, user_id=user)).sessions
    table = Table(title=f"sessions of {app_name}" + (f" for {user}" if user else ""))
    for column in ("session", "user", "updated", "state"):
        table.add_column(column)
    for session in sorted(found, key=lambda s: s.last_update_time, reverse=True):
        table.add_row(session.id, session.user_id, timestamp(session.last_update_time), short_json(session.state, 80))
    out.print(table if found else f"no sessions for app {app_name!r}" + (f", user {user!r}" if user else ""))


@sessions.command("show")
def show(
    app_name: Annotated[str, typer.Argument(help="the app's name (App.name)")],
    user: Annotated[str, typer.Argument(help="user id")],
    session_id: Annotated[str, typer.Argument(help="session id")],
    last: Annotated[int | None, typer.Option("--last", "-n", help="only the last N events")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Show a session's state and events."""
    run_async(_show(app_name, user, session_id, last, database_url))


async def _show(app_name: str, user: str, session_id: str, last: int | None, database_url: str | None) -> None:
    from adk_core.errors import SessionNotFoundError
    from adk_core.sessions import GetSessionConfig

    async with session_service(database_url) as service:
        config = GetSessionConfig(num_recent_events=last) if last else None
        session = await service.get_session(app_name=app_name, user_id=user, session_id=session_id, config=config)
    if session is None:
        raise SessionNotFoundError(f"no session {session_id!r} for app {app_name!r}, user {user!r}; see `adkt sessions list {app_name}`")
    out.print(f"[bold]{app_name}[/] · user {user} · session {session.id} · updated {timestamp(session.last_update_time)}")
    out.print(f"state: {json.dumps(session.state, ensure_ascii=False, default=str)}")
    out.print(await _where_it_runs(app_name, user, session_id), markup=False)
    table = Table()
    for column in ("#", "time", "author", "content"):
        table.add_column(column, overflow="fold")
    for index, event in enumerate(session.events, 1):
        table.add_row(str(index), timestamp(event.timestamp), event.author, summary(event))
    out.print(table)


async def _where_it_runs(app_name: str, user: str, session_id: str) -> str:
    """The conversation's workflow and the worker version its run is on (docs/versioning.md), when a
    Temporal server is configured or `adkt dev` runs; a line saying why not otherwise."""
    import asyncio

    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError, RPCStatusCode

    from adk_temporal.deployments import run_version
    from adk_temporal.workflows import session_workflow_id
    from adkt.client import connect
    from adkt.commands._devstate import resolve
    from adkt.settings import Settings

    workflow_id = session_workflow_id(app_name, user, session_id)
    target = resolve(Settings.load())
    if target.address is None and target.dev is None:
        return f"workflow {workflow_id} (no Temporal configured: set TEMPORAL_ADDRESS to see where it runs)"
    try:
        async with asyncio.timeout(5):
            client = await connect(target.address, namespace=target.namespace)
            description = await client.get_workflow_handle(workflow_id).describe()
            version = await run_version(client, workflow_id)
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return f"workflow {workflow_id}: not started (the next message starts it)"
        return f"workflow {workflow_id}: Temporal answered {e.message}"
    except (TimeoutError, OSError, RuntimeError) as e:
        return f"workflow {workflow_id}: Temporal not reachable ({type(e).__name__}: {e})"
    if description.status != WorkflowExecutionStatus.RUNNING:
        state = description.status.name.lower() if description.status else "unknown"
        return f"workflow {workflow_id}: {state} (the next message starts it again)"
    return f"workflow {workflow_id}: running on {version or 'an unversioned worker'}"


YES = Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")]
NO_WAIT = Annotated[bool, typer.Option(
    "--no-wait", help="return once Temporal accepted the deletions, without waiting for the histories to go")]


@sessions.command("delete")
def delete_session(
    app_name: Annotated[str, typer.Argument(help="the app's name (App.name)")],
    user: Annotated[str, typer.Argument(help="user id")],
    session_id: Annotated[str, typer.Argument(help="session id")],
    yes: YES = False,
    no_wait: NO_WAIT = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Delete a session everywhere: its Temporal workflows (terminated, histories deleted), events,
    memory entries, artifacts, large payloads, streamed partials, simulator and eval sessions.
    Safe to run again."""
    if not yes:
        typer.confirm(f"Delete session {session_id!r} of user {user!r} in app {app_name!r} everywhere?", abort=True)
    run_async(_delete(app_name, user, session_id, database_url, wait=not no_wait))


@sessions.command("cancel")
def cancel_session(
    app_name: Annotated[str, typer.Argument(help="the app's name (App.name)")],
    user: Annotated[str, typer.Argument(help="user id")],
    session_id: Annotated[str, typer.Argument(help="session id")],
) -> None:
    """Stop a conversation's workflow (Temporal's cancel): a running turn stores its events and an
    error event CancelledError, queued messages are answered as not run. The session stays, and
    the next message starts the conversation again."""
    run_async(_cancel(app_name, user, session_id))


async def _cancel(app_name: str, user: str, session_id: str) -> None:
    from adkt.client import AdkClient, connect

    target = _temporal_target("cancelling needs the Temporal service the conversation runs on")
    client = AdkClient(await connect(target.address, namespace=target.namespace))
    stopped = await client.cancel(app_name, user, session_id)
    what = f"session {session_id!r} of user {user!r} in app {app_name!r}"
    out.print(f"cancelled {what}" if stopped else f"{what} is not running: nothing to cancel", markup=False)


def _temporal_target(needs: str, database_url: str | None = None) -> Target:
    """Where Temporal and the sessions database are (configured, or a running `adkt dev`); a
    ConfigurationError starting with ``needs`` and saying how to configure it when no Temporal is known."""
    from adk_core.errors import ConfigurationError
    from adkt.commands._devstate import resolve
    from adkt.settings import Settings

    target = resolve(Settings.load(), database_url=database_url)
    if target.address is None and target.dev is None:
        raise ConfigurationError(
            f"{needs}: set TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE), or run this where `adkt dev` runs"
        )
    return target


users = typer.Typer(help="Delete a user's data.", no_args_is_help=True, rich_markup_mode=None)


@users.command("delete")
def delete_user(
    app_name: Annotated[str, typer.Argument(help="the app's name (App.name)")],
    user: Annotated[str, typer.Argument(help="user id")],
    yes: YES = False,
    no_wait: NO_WAIT = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Delete everything of one user of one app: their Temporal workflows, sessions, events, user:
    state, memory, artifacts, large payloads, streamed partials, simulator and eval sessions.
    Safe to run again."""
    if not yes:
        typer.confirm(f"Delete every session and all data of user {user!r} in app {app_name!r}?", abort=True)
    run_async(_delete(app_name, user, None, database_url, wait=not no_wait))


async def _delete(app_name: str, user: str, session_id: str | None, database_url: str | None, *, wait: bool) -> None:
    """Temporal first (nothing of theirs runs on), then the rows: adk_temporal.deletion."""
    from adk_core.sql import open_engine
    from adk_temporal import deletion
    from adkt.client import connect

    target = _temporal_target(
        "deleting needs the Temporal service too (the conversations' workflows and histories go first)", database_url
    )
    async with sessions_database(target.database_url or database_url) as url:
        client = await connect(target.address, namespace=target.namespace, database_url=url)
        engine = open_engine(url)
        try:
            if session_id is None:
                report = await deletion.delete_user(client, engine, app_name, user, wait=wait)
            else:
                report = await deletion.delete_session(client, engine, app_name, user, session_id, wait=wait)
        finally:
            await engine.dispose()
    rows = ", ".join(f"{table} {count}" for table, count in report.rows.items() if count) or "none"
    what = f"session {session_id!r} of user {user!r}" if session_id else f"user {user!r}"
    out.print(f"deleted {what} in app {app_name!r}: {len(report.workflows)} workflow(s); rows: {rows}", markup=False)
    if report.histories_pending:
        out.print(f"Temporal is still removing the histories of {len(report.histories_pending)} workflow(s) (terminated; "
                  f"their deletion is accepted): {', '.join(report.histories_pending[:5])}", markup=False)
    if report.payloads_left_to_retention:
        out.print(f"{report.payloads_left_to_retention} large payload(s) left to retention: without encryption they "
                  "may be shared with other conversations (docs/security.md, 'Deleting a session or a user')",
                  markup=False)  # fmt: skip
