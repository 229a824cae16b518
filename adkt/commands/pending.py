"""`adkt pending` (what a conversation waits for) and `adkt reply` (answer it), outside `adkt chat`.

A conversation waits for a tool confirmation (`adk_request_confirmation`) or a long-running tool's
result. Both are stored events, so `pending` reads them from the sessions database and works after
an `adkt run` whose embedded stack has stopped; `reply` sends the answer through the conversation's
workflow (started again from the store when needed) and prints the rest of the turn.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from adkt.commands._common import app_ref, run_async
from adkt.commands._render import err, out, print_event
from adkt.commands.run import AppArg, DatabaseUrl

UserArg = Annotated[str, typer.Argument(help="user id")]
SessionArg = Annotated[str, typer.Argument(help="session id")]


def pending(app: AppArg, user: UserArg, session: SessionArg, database_url: DatabaseUrl = None) -> None:
    """Show what a conversation waits for, with the `adkt reply` command that answers each request."""
    run_async(_pending(app, user, session, database_url))


async def _pending(spec: str, user: str, session: str, database_url: str | None) -> None:
    from adkt.commands._apps import parse_app_spec
    from adkt.commands._conversation import print_waiting, stored_pending
    from adkt.commands._database import database_url as sessions_database

    parsed = parse_app_spec(spec)
    name = app_ref(spec)[1] if parsed.loadable else spec
    async with sessions_database(database_url) as url:
        requests = await stored_pending(url, name, user, session)
    if not requests:
        out.print(f"nothing waits in session {session!r} of app {name!r} for user {user!r}", markup=False)
        return
    print_waiting(requests, parsed, name, user, session)


def reply(
    app: AppArg,
    user: UserArg,
    session: SessionArg,
    call_id: Annotated[str, typer.Argument(help="the request's call id (see `adkt pending`)")],
    approve: Annotated[bool, typer.Option("--approve", help="confirm the tool call")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="refuse the tool call")] = False,
    answer: Annotated[
        str | None, typer.Option("--answer", help="a long-running tool's result, as JSON")
    ] = None,
    address: Annotated[str | None, typer.Option("--address", help="Temporal address (default: TEMPORAL_ADDRESS)")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Answer what a conversation waits for (--approve / --reject a confirmation, --answer JSON for a
    long-running tool); the turn goes on and its events are printed."""
    run_async(_reply(app, user, session, call_id, approve, reject, answer, address, database_url))


async def _reply(spec: str, user: str, session: str, call_id: str, approve: bool, reject: bool, answer: str | None,
                 address: str | None, database_url: str | None) -> None:  # fmt: skip
    from adk_core.errors import InvalidInputError
    from adkt.commands._conversation import open_connection, print_waiting, response_for, send_reply, waiting

    if sum((approve, reject, answer is not None)) != 1:
        raise InvalidInputError("give exactly one of --approve, --reject or --answer JSON")
    loaded, name, parsed = app_ref(spec)
    async with open_connection(loaded, parsed, name, address=address, database_url=database_url) as connection:
        requests = await waiting(connection, user, session)
        request = next((r for r in requests if r.call_id == call_id), None)
        if request is None:
            known = ", ".join(r.call_id for r in requests) or "none"
            raise InvalidInputError(
                f"session {session!r} does not wait for call {call_id!r} (waiting: {known}); "
                f"see `adkt pending {spec} {user} {session}`"
            )
        response = response_for(request, approve=approve, reject=reject, answer=answer)
        result = await send_reply(connection, user, session, call_id, response)
        left = await waiting(connection, user, session)
    for event in result.events:
        print_event(event)
    err.print(f"[dim]app {escape(name)} · user {escape(user)} · session {escape(session)}[/]")
    print_waiting(left, parsed, name, user, session)
