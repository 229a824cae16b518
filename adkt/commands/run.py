"""`adkt run` (one message) and `adkt chat` (a conversation), both through a SessionWorkflow."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import Awaitable, Iterator
from typing import Annotated, Any

import typer
from rich.markup import escape

from adkt.commands._common import app_ref, error_line, run_async
from adkt.commands._conversation import (
    Connection,
    describe_request,
    interrupted_note,
    open_connection,
    print_waiting,
    response_for,
    send_reply,
    waiting,
)
from adkt.commands._render import err, out, print_event
from adkt.commands._stream_print import TokenPrinter

User = Annotated[str, typer.Option("--user", "-u", help="user id")]
SessionOpt = Annotated[str | None, typer.Option("--session", "-s", help="session id (default: a new one)")]
Address = Annotated[str | None, typer.Option("--address", help="Temporal address (default: TEMPORAL_ADDRESS, then .adk/dev.json)")]
DatabaseUrl = Annotated[str | None, typer.Option("--database-url", help="sessions database for an embedded stack")]
AppArg = Annotated[
    str,
    typer.Argument(help="the app: path/to/agent.py[:attr], an agent config (agent.yaml), a folder, module:attr, or the name of an app a worker serves"),
]


def run(
    app: AppArg,
    message: Annotated[str, typer.Argument(help="the user message")],
    user: User = "user",
    session: SessionOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the TurnResult as JSON")] = False,
    address: Address = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Send one message and print the turn's events."""
    run_async(_run(app, message, user, session or uuid.uuid4().hex[:12], as_json, address, database_url))


async def _run(spec: str, message: str, user: str, session: str, as_json: bool, address: str | None,
               database_url: str | None) -> None:  # fmt: skip
    from adkt.client import MessageRejectedError

    loaded, name, parsed = app_ref(spec)
    async with open_connection(loaded, parsed, name, address=address, database_url=database_url) as connection:
        if waits := await waiting(connection, user, session):
            print_waiting(waits, parsed, name, user, session)
            raise MessageRejectedError(
                f"session {session!r} waits for an answer to the request above; reply to it first (a new message "
                "would leave it waiting)"
            )
        with _interrupt_note(connection, user, session):
            result = await connection.client.send(name, user, session, message)
        waits = await waiting(connection, user, session)
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        for event in result.events:
            print_event(event)
        err.print(f"[dim]app {escape(name)} · user {escape(user)} · session {escape(session)}[/]")
    print_waiting(waits, parsed, name, user, session)


@contextlib.contextmanager
def _interrupt_note(connection: Connection, user: str, session: str) -> Iterator[None]:
    """On Ctrl-C (the event loop cancels the command), say what happens to the run and where to see it."""
    try:
        yield
    except (asyncio.CancelledError, KeyboardInterrupt):
        err.print(interrupted_note(connection, user, session), markup=False)
        raise


def chat(
    app: AppArg,
    user: User = "user",
    session: SessionOpt = None,
    address: Address = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Talk to an app: one line per message; /quit or Ctrl-D ends. A failed turn prints its error and
    the conversation goes on; with --session, what the conversation waits for is asked first."""
    run_async(_chat(app, user, session or uuid.uuid4().hex[:12], address, database_url))


async def _chat(spec: str, user: str, session: str, address: str | None, database_url: str | None) -> None:
    loaded, name, parsed = app_ref(spec)
    async with open_connection(loaded, parsed, name, address=address, database_url=database_url) as connection:
        out.print(f"[dim]app {escape(name)} · user {escape(user)} · session {escape(session)} — /quit or Ctrl-D to leave[/]")
        # A resumed conversation may wait for an answer: ask for it before anything new.
        if not await _turn(connection, user, session, _answer_pending(connection, user, session)):
            return
        while True:
            try:
                line = (await _input("you> ")).strip()
            except EOFError:
                out.print()
                return
            if line in ("/quit", "/exit"):
                return
            if not line:
                continue
            if not await _turn(connection, user, session, _stream(connection, user, session, line)):
                return


async def _stream(connection: Connection, user: str, session: str, line: str) -> None:
    tokens = TokenPrinter()
    partial = connection.client.database_url is not None  # partials are read from the sessions database
    async for event in connection.client.stream(connection.app, user, session, line, partial=partial):
        tokens.show(event)
    await _answer_pending(connection, user, session)


async def _turn(connection: Connection, user: str, session: str, step: Awaitable[None]) -> bool:
    """Run one step of the conversation; a failed turn is printed and the chat goes on. False: the
    input ended (Ctrl-D) while answering a request."""
    from temporalio.service import RPCError

    from adk_core.errors import AdkError

    try:
        with _interrupt_note(connection, user, session):
            await step
    except EOFError:
        out.print()
        return False
    except (AdkError, RPCError) as e:
        err.print(error_line(e), style="red", markup=False)
        err.print("the conversation goes on: send another message, or /quit", style="dim", markup=False)
    return True


async def _answer_pending(connection: Connection, user: str, session: str) -> None:
    """Ask the user about each thing the conversation waits for, until nothing is pending."""
    from adk_core.errors import InvalidInputError

    while pending := await waiting(connection, user, session):
        request = pending[0]
        out.print(describe_request(request, connection.app), style="magenta", markup=False)
        if request.kind == "tool_confirmation":
            answer = (await _input("allow? [y/N] ")).strip().lower()
            response: dict[str, Any] = response_for(request, approve=answer in ("y", "yes"),
                                                    reject=answer not in ("y", "yes"))  # fmt: skip
        else:
            raw = (await _input("result as JSON: ")).strip() or "{}"
            try:
                response = response_for(request, answer=raw)
            except InvalidInputError as e:
                out.print(f"{e}; try again", style="red", markup=False)
                continue
        result = await send_reply(connection, user, session, request.call_id, response)
        for event in result.events:
            print_event(event)


async def _input(prompt: str) -> str:
    """input() on a daemon thread: the event loop (and an in-process worker) keeps running, and
    Ctrl-C does not wait for a pending read the way a thread-pool thread would."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def settle(value: str | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value or "")

    def read() -> None:
        try:
            value = input(prompt)
        except BaseException as e:  # EOFError and friends go to the awaiting coroutine
            loop.call_soon_threadsafe(settle, None, e)
        else:
            loop.call_soon_threadsafe(settle, value, None)

    threading.Thread(target=read, name="adkt-input", daemon=True).start()
    return await future
