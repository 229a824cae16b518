"""`adkt run` (one message) and `adkt chat` (a conversation), both through a SessionWorkflow."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from adkt.commands._common import app_ref, require_app, run_async
from adkt.commands._render import err, out, print_event
from adkt.settings import Settings

if TYPE_CHECKING:
    from adkt.client import AdkClient
    from adkt.commands._devstate import DevState

User = Annotated[str, typer.Option("--user", "-u", help="user id")]
SessionOpt = Annotated[str | None, typer.Option("--session", "-s", help="session id (default: a new one)")]
Address = Annotated[str | None, typer.Option("--address", help="Temporal address (default: TEMPORAL_ADDRESS, then .adk/dev.json)")]
DatabaseUrl = Annotated[str | None, typer.Option("--database-url", help="sessions database for an embedded stack")]


def _embedded_notice() -> None:
    err.print("[dim]no Temporal configured and no `adkt dev` running: starting an embedded stack for this command[/]")


def _dev_check(spec: str) -> Callable[[DevState], None]:
    def check(dev: DevState) -> None:
        if ":" in spec and spec not in dev.apps:
            err.print(f"[yellow]warning:[/] the running `adkt dev` serves {', '.join(dev.apps)}, not {spec}; "
                      f"restart it with --app {spec} or the turn will wait for a worker")  # fmt: skip

    return check


def run(
    app: Annotated[str, typer.Argument(help="module:attr of the App (or an app name a running worker serves)")],
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
    from adkt.commands._stack import app_client

    loaded, name = app_ref(spec)
    settings = Settings.load()
    apps = [loaded] if loaded is not None else []

    def embedded() -> None:
        require_app(loaded, spec)
        _embedded_notice()

    async with app_client(apps, settings, address=address, database_url=database_url, on_embedded=embedded,
                          on_dev=_dev_check(spec)) as client:
        result = await client.send(name, user, session, message)
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    for event in result.events:
        print_event(event)
    err.print(f"[dim]app {name} · user {user} · session {session}[/]")


def chat(
    app: Annotated[str, typer.Argument(help="module:attr of the App (or an app name a running worker serves)")],
    user: User = "user",
    session: SessionOpt = None,
    address: Address = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Talk to an app: one line per message; /quit or Ctrl-D ends."""
    run_async(_chat(app, user, session or uuid.uuid4().hex[:12], address, database_url))


async def _chat(spec: str, user: str, session: str, address: str | None, database_url: str | None) -> None:
    from adkt.commands._stack import app_client

    loaded, name = app_ref(spec)
    settings = Settings.load()

    def embedded() -> None:
        require_app(loaded, spec)
        _embedded_notice()

    apps = [loaded] if loaded is not None else []
    async with app_client(apps, settings, address=address, database_url=database_url, on_embedded=embedded,
                          on_dev=_dev_check(spec)) as client:
        out.print(f"[dim]app {name} · user {user} · session {session} — /quit or Ctrl-D to leave[/]")
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
            async for event in client.stream(name, user, session, line):
                print_event(event)
            await _answer_pending(client, name, user, session)


async def _answer_pending(client: AdkClient, app: str, user: str, session: str) -> None:
    """Ask the user about each thing the turn waits for, until nothing is pending."""
    while pending := await client.pending(app, user, session):
        request = pending[0]
        args = json.dumps(request.args, ensure_ascii=False)
        hint = f" — {request.hint}" if request.hint else ""
        response: dict[str, Any]
        if request.kind == "tool_confirmation":
            out.print(f"[magenta]? {request.agent or app} wants to run {request.name}({args}){hint}[/]")
            answer = (await _input("allow? [y/N] ")).strip().lower()
            response = {"confirmed": answer in ("y", "yes")}
        else:
            out.print(f"[magenta]? {request.name}({args}) waits for its result{hint}[/]")
            raw = (await _input("result as JSON: ")).strip() or "{}"
            try:
                response = json.loads(raw)
            except json.JSONDecodeError as e:
                out.print(f"[red]not JSON ({e}); try again[/]")
                continue
            response = response if isinstance(response, dict) else {"result": response}
        result = await client.reply(app, user, session, request.call_id, response)
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
